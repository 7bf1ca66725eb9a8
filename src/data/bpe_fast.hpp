// src/data/bpe_fast.hpp: the fast byte pair encoding, private to src/data (data/bpe.hpp).
//
// train_fast and encode_fast give exactly what BytePairEncoding::train_reference and
// encode_reference give, without recounting the whole text for every merge: both keep the text
// as a doubly linked list of symbols, so a merge touches only the positions it changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tapegrad/data/bpe.hpp"

namespace tapegrad::data::detail {

/// The pair (left, right) as one hash key.
inline std::uint64_t pair_key(std::uint32_t left, std::uint32_t right) {
  return (std::uint64_t(left) << 32) | right;
}

/// Up to `num_merges` merges learned from `pieces` (fewer when no pair is left): consecutive
/// stretches of one text, in order, with no pair counted across two of them.
std::vector<BytePairEncoding::Merge> train_fast(const std::vector<std::string_view>& pieces,
                                                std::size_t num_merges);

/// `text` (one piece) encoded with `merges`; `ranks` maps pair_key(left, right) to the merge's index.
std::vector<std::uint32_t> encode_fast(
    std::string_view text, const std::vector<BytePairEncoding::Merge>& merges,
    const std::unordered_map<std::uint64_t, std::uint32_t>& ranks);

}  // namespace tapegrad::data::detail
