// src/data/small_file.hpp (private to src/data): a tokenizer's file read whole, with a bound on
// its size, for the readers that parse it in one piece (GPT2Tokenizer's vocab.json and
// merges.txt, HFTokenizer's tokenizer.json).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tapegrad::data::detail {

/// The bytes of `path`: a DataError starting with `who` unless it is a regular file (a FIFO would
/// block the read for ever, /dev/zero would never end) of at most `max_bytes`, which the message
/// names as "the <max_bytes in MiB> MiB <what> may have" ("a tokenizer.json").
std::string read_small_file(const std::string& path, std::string_view who, std::uint64_t max_bytes,
                            std::string_view what);

}  // namespace tapegrad::data::detail
