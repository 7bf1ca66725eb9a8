// examples/tokenize_memory.hpp: the memory examples/tokenize holds, counted from sizes before
// anything is read or allocated, against what the machine gives the process
// (tapegrad::machine_memory_bytes: its memory, or its container's or its own limit when lower),
// less what the process holds already (tapegrad::process_memory_bytes).
// A text too large to train on is refused at once, with the figure and what to do, instead of a
// run that the kernel kills halfway through training.
//
// Training holds the whole text and about 28 bytes for each of its bytes (measured below).
// Encoding and decoding go block by block (at most kBlockBytes of text at a time, cut where the
// ids stay those of the whole text), so their memory does not grow with the text; a text with no
// place to cut it is bounded by what one block of that size needs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <tapegrad/core/memory.hpp>

namespace tokenize {

/// The share of the machine's memory a run plans to use: the rest stays for the system, the
/// program itself and the page cache.
inline constexpr double kUsableShare = 0.8;

/// What BytePairEncoding::train holds at its peak per byte of text: the text (1), its symbols as
/// a doubly linked list (three 4-byte arrays: 12), each pair's list of places (4 bytes a place,
/// and the spare room of vectors that grew: up to 8), and with GPT-2's pretokenizer its pieces (16
/// bytes each, one per 4 or 5 bytes). Measured (/usr/bin/time -v, the largest resident size over
/// the text's size): 21.0 with --pretokenizer none and 22.4 with gpt2 on the fortunes repeated to
/// 50 MB, 23.1 on 20 MB of random bytes.
inline constexpr double kTrainingBytesPerByte = 28;
/// What encoding a block holds per byte of it: BytePairEncoding::encode's linked list (12) and its
/// heap of pending merges (8 a place, up to twice that while it grows), and the ids (4 a token).
inline constexpr double kEncodingBytesPerByte = 32;
/// The program itself, the model and the tables beside the text.
inline constexpr double kBaseBytes = 64.0 * (1 << 20);
/// The text encoded (or decoded) at a time, when it can be cut there.
inline constexpr std::uintmax_t kBlockBytes = std::uintmax_t(16) << 20;

/// The memory this run may still plan to use, in bytes: kUsableShare of what the machine gives
/// the process, less what the process holds already.
inline double usable_bytes() {
  return kUsableShare * double(tapegrad::machine_memory_bytes()) -
         double(tapegrad::process_memory_bytes());
}

/// "80 % of 23.54 GiB, less the 41.20 MiB this process holds": where usable_bytes() comes from.
inline std::string usable_text() {
  return std::to_string(int(kUsableShare * 100)) + " % of " +
         tapegrad::memory_text(double(tapegrad::machine_memory_bytes())) + ", less the " +
         tapegrad::memory_text(double(tapegrad::process_memory_bytes())) + " this process holds";
}

/// About the bytes --train-bpe holds for a text of `text_bytes`.
inline double training_bytes(std::uintmax_t text_bytes) {
  return kBaseBytes + kTrainingBytesPerByte * double(text_bytes);
}

/// The largest text whose training fits in `usable` bytes (0 if none does).
inline std::uintmax_t largest_training_text(double usable) {
  return usable <= kBaseBytes ? 0 : std::uintmax_t((usable - kBaseBytes) / kTrainingBytesPerByte);
}

/// The largest block of text that encodes at once within `usable` bytes (0 if none does).
inline std::uintmax_t largest_encoding_block(double usable) {
  return usable <= kBaseBytes ? 0 : std::uintmax_t((usable - kBaseBytes) / kEncodingBytesPerByte);
}

}  // namespace tokenize
