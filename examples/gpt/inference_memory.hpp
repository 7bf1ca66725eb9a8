// examples/gpt/inference_memory.hpp: what gpt_eval and gpt_sample hold in memory to run a GPT (or a
// Llama) without recording, counted from the sizes before anything is allocated, against what the
// machine gives the process (tapegrad::machine_memory_bytes: its memory, or its container's or
// its own limit when lower) less what the process holds already. A model whose context is a
// million positions makes a window, a cache of keys and values or one pass over the full context
// take terabytes; the programs refuse it at once, naming the figure and the flag that lowers it,
// instead of being killed halfway through.
//
// A forward pass of B windows of T positions, without the tape, holds at its peak (float32):
//   - about 12 values of width C per position in the block that runs: the residual stream, the
//     normalised input, the queries, keys and values (3 C), the attention's output, and the MLP's
//     hidden layer before and after its GELU (4 C each);
//   - the attention's weights, (B, n_head, T, T): what grows with the square of the window;
//   - the logits of the rows computed at once, and about three more arrays of that size in the
//     cross entropy (a reshaped copy, the log-softmax).
// Measured with gpt_eval on GPT-2's 50,257 tokens (/usr/bin/time -v, the largest resident size):
// 2.34 GB where this counts 2.44 GB (1 x 2 heads x 17,077 positions, width 8), 1.12 GB where it
// counts 1.21 GB (4 x 4 heads x 4,096 positions, width 64).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/train.hpp>

namespace gpt {

namespace tt = tapegrad::nn::transformer;

/// The share of the machine's memory a run plans to use: the rest stays for the system and the
/// page cache.
inline constexpr double kUsableShare = 0.8;

/// The memory this run may still plan to use, in bytes: kUsableShare of what the machine gives
/// the process, less what the process holds already (the weights, the tokenizer, the text).
inline double usable_memory_bytes() {
  return kUsableShare * double(tapegrad::machine_memory_bytes()) -
         double(tapegrad::process_memory_bytes());
}

/// "80 % of 23.54 GiB, less the 41.20 MiB this process holds": where usable_memory_bytes() comes
/// from.
inline std::string usable_memory_text() {
  return std::to_string(int(kUsableShare * 100)) + " % of " +
         tapegrad::memory_text(double(tapegrad::machine_memory_bytes())) + ", less the " +
         tapegrad::memory_text(double(tapegrad::process_memory_bytes())) + " this process holds";
}

/// About the bytes one forward pass of `batch` windows of `T` positions holds beyond the weights,
/// its logits computed `rows` rows (of batch * T) at a time. (A Llama's block holds its own
/// widths per position: train::sizes_of.)
inline double forward_bytes(const tapegrad::train::ModelSizes& c, double batch, double T,
                            double rows) {
  const double A = double(c.activation_width), H = double(c.heads), V = double(c.vocab);
  const double positions = batch * T;
  return 4.0 * (A * positions + batch * H * T * T + 4.0 * std::min(rows, positions) * V);
}
inline double forward_bytes(const tt::GPTConfig& c, double batch, double T, double rows) {
  return forward_bytes(tapegrad::train::sizes_of(c), batch, T, rows);
}

/// The longest window in [1, longest] whose forward pass (`batch` windows, logits `rows` at a
/// time when rows > 0, else all at once) fits in `budget` bytes; 0 if none does.
inline std::int64_t longest_window(const tapegrad::train::ModelSizes& c, std::int64_t batch,
                                   std::int64_t longest, std::int64_t rows, double budget) {
  const auto fits = [&](std::int64_t T) {
    const double r = rows > 0 ? double(rows) : double(batch) * double(T);
    return forward_bytes(c, double(batch), double(T), r) <= budget;
  };
  if (!fits(1)) return 0;
  std::int64_t lo = 1, hi = longest;  // fits(lo); the answer is in [lo, hi]
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}
inline std::int64_t longest_window(const tt::GPTConfig& c, std::int64_t batch, std::int64_t longest,
                                   std::int64_t rows, double budget) {
  return longest_window(tapegrad::train::sizes_of(c), batch, longest, rows, budget);
}

/// About the bytes forward_cached holds beside its cache for `n` new positions: their
/// activations (a query's scores are made one row at a time) and the logits of the last one.
inline double cached_pass_bytes(const tapegrad::train::ModelSizes& c, double n) {
  return 4.0 * (double(c.activation_width) * n + 4.0 * double(c.vocab));
}

/// The bytes of the cache of keys and values for `batch` rows once `positions` are cached. The
/// GPT's attention allocates (batch, block_size, C) for the keys and as much for the values, the
/// whole context at once, however few positions are sampled; a Llama's grows by doubling (at
/// least 16 rows, at most the context) and holds its K key/value heads only.
inline double cache_bytes(const tapegrad::train::ModelSizes& c, double batch, double positions) {
  const double rows = c.cache_whole_context
                          ? double(c.context)
                          : std::min(double(c.context), std::max(16.0, 2.0 * positions));
  return 4.0 * 2.0 * double(c.layers) * batch * rows * double(c.cache_width);
}
inline double cache_bytes(const tt::GPTConfig& c, double batch) {
  return cache_bytes(tapegrad::train::sizes_of(c), batch, double(c.block_size()));
}

}  // namespace gpt
