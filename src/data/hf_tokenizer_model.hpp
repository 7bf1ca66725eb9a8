// src/data/hf_tokenizer_model.hpp: what an HFTokenizer holds once its tokenizer.json is read;
// private to src/data (data/hf_tokenizer.hpp). hf_tokenizer_json.cpp fills it from the file and
// writes it back; hf_tokenizer.cpp encodes and decodes with it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "regex.hpp"
#include "tapegrad/data/hf_tokenizer.hpp"

namespace tapegrad::data::detail {

/// A hash that lets an unordered_map keyed by std::string be searched with a string_view.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct HFTokenizerModel {
  /// One pre-tokenizer, in the order the file's Sequence gives them; ByteLevel is the last.
  struct Step {
    enum class Kind { split, digits, byte_level };
    Kind kind = Kind::byte_level;
    std::shared_ptr<const Regex> regex;  ///< split: the file's; digits: \p{N} or \p{N}+
    bool individual_digits = false;      ///< digits
    bool add_prefix_space = false;       ///< byte_level: " " before a piece without one
    bool use_regex = true;               ///< byte_level: cut with GPT-2's pattern
  };
  /// What the merge of a pair does: its rank (index in the file's merges) and the id it makes.
  struct Merge {
    std::uint32_t rank, id;
  };

  std::vector<std::string> spelled;  ///< id -> as model.vocab spells it (an added token: content)
  std::vector<std::string> bytes;    ///< id -> the bytes it stands for
  std::vector<bool> in_vocab;        ///< id -> in model.vocab (else only in added_tokens)
  StringMap<std::uint32_t> vocab;    ///< model.vocab: spelling -> id
  std::array<std::uint32_t, 256> byte_ids{};        ///< byte -> the id of its one-character token
  std::unordered_map<std::uint64_t, Merge> merges;  ///< pair_key(left, right) -> the merge
  std::vector<std::array<std::uint32_t, 2>> merge_pairs;  ///< (left, right) in rank order
  bool ignore_merges = false;
  std::vector<Step> steps;
  std::vector<HFTokenizer::AddedToken> added;  ///< in id order
  StringMap<std::uint32_t> added_ids;          ///< content -> id
  std::string post_processor = "null";         ///< as read (JSON), kept for to_json
};

/// The printable character GPT-2's files spell byte `b` with, as UTF-8 (one or two bytes).
const std::string& byte_spelling(std::uint8_t b);

}  // namespace tapegrad::data::detail
