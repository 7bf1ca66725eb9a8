// examples/gpt/model_size.hpp: the bounds of the GPT programs' sizes, and what a config costs,
// counted from its sizes before anything is allocated. A flag or a checkpoint's note outside a
// bound is refused with the figure, instead of a build that runs for minutes or ends in bad_alloc.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include <tapegrad/tapegrad.hpp>

namespace gpt {

namespace tt = tapegrad::nn::transformer;

/// Each size's range, for the flags of gpt and for the notes gpt_sample reads back.
struct Limits {
  static constexpr std::int64_t kMaxLayers = 1000, kMaxHeads = 1024, kMaxWidth = 65536,
                                kMaxBlockSize = 65536, kMaxVocab = 1'114'112;  // every code point
  /// nanoGPT's GPT-2 small has 124 M parameters: more is not a model for a CPU program.
  static constexpr double kMaxParameters = 200e6;
  /// The share of the memory this process may use (tapegrad::machine_memory_bytes) that one
  /// training step may hold; the rest is left for the data, the program and the system.
  static constexpr double kTrainingShareOfMemory = 0.8;
};

/// The parameters of a GPT of config `c`, the tied token table once: GPT::num_params(false) of the
/// model once built (tests/examples/test_gpt.cpp checks every choice).
inline double parameter_count(const tt::GPTConfig& c) {
  const double V = double(c.vocab_size()), T = double(c.block_size()), C = double(c.n_embd()),
               L = double(c.n_layer());
  const double norm = c.norm() == "rmsnorm" ? C : 2 * C;       // weight (and LayerNorm's bias)
  const double attention = (3 * C * C + 3 * C) + (C * C + C);  // c_attn, c_proj
  const double hidden = std::max(1.0, std::floor(2 * (4 * C) / 3));                // SwiGLU's width
  const double mlp = c.mlp() == "swiglu" ? 3 * C * hidden + 2 * hidden + C         // w1, w3, w2
                                         : (4 * C * C + 4 * C) + (4 * C * C + C);  // c_fc, c_proj
  const double positions = c.position() == "learned" ? T * C : 0.0;
  return V * C + positions + L * (2 * norm + attention + mlp) + norm;
}

/// About the bytes one training step of `batch` windows holds: 16 per parameter (weight, gradient,
/// AdamW's exp_avg and exp_avg_sq) and 4 per activation kept for backward, per position about 18
/// values of width C and 2 attention rows of length T per head in each block, and 3 of width V
/// for the logits and their softmax.
inline double training_bytes(const tt::GPTConfig& c, std::int64_t batch) {
  const double T = double(c.block_size()), C = double(c.n_embd()), H = double(c.n_head()),
               V = double(c.vocab_size()), L = double(c.n_layer());
  const double per_position = L * (18 * C + 2 * H * T) + 3 * V + 4 * C;
  return 16 * parameter_count(c) + 4 * double(batch) * T * per_position;
}

inline std::string figure(double x) {
  std::ostringstream os;
  os.precision(3);
  os << x;
  return os.str();
}

/// Throws ValueError naming the figure when the model of `c` has more parameters than
/// Limits::kMaxParameters (`what` says where the config came from: "the flags", a file).
inline void check_parameter_count(const tt::GPTConfig& c, const std::string& what) {
  const double n = parameter_count(c);
  if (n > Limits::kMaxParameters)
    throw tapegrad::ValueError(what + " describe a GPT of " + figure(n) +
                               " parameters, more than the " + figure(Limits::kMaxParameters) +
                               " this program builds (n_layer " + std::to_string(c.n_layer()) +
                               ", n_embd " + std::to_string(c.n_embd()) + ", vocabulary " +
                               std::to_string(c.vocab_size()) + ")");
}

/// Throws ValueError naming the estimate, the machine's memory and the flags that lower it when a
/// training step would hold more than Limits::kTrainingShareOfMemory of the memory this process
/// may use (read from the system now: the machine's, or its container's limit).
inline void check_training_memory(const tt::GPTConfig& c, std::int64_t batch) {
  const double bytes = training_bytes(c, batch);
  const double memory = double(tapegrad::machine_memory_bytes());
  const double allowed = Limits::kTrainingShareOfMemory * memory;
  if (bytes > allowed)
    throw tapegrad::ValueError(
        "--batch-size, --block-size, --n-layer, --n-embd: a training step would hold about " +
        tapegrad::memory_text(bytes) + " (weights, gradients, AdamW's moments and activations), " +
        "more than the " + tapegrad::memory_text(allowed) + " it may take (" +
        figure(100 * Limits::kTrainingShareOfMemory) + " % of the " +
        tapegrad::memory_text(memory) + " of memory this machine gives the process); lower " +
        "--batch-size (--grad-accum K keeps the batch with K times smaller steps), " +
        "--block-size, --n-layer or --n-embd");
}

}  // namespace gpt
