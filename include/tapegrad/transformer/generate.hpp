// include/tapegrad/transformer/generate.hpp
//
// generate(): sampling text from any CausalLM (causal_lm.hpp), nanoGPT's sampler, with or without
// the model's cache. GenerateOptions says how it samples.
#pragma once

#include <cstdint>
#include <optional>

#include "tapegrad/transformer/causal_lm.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn::transformer {

/// How generate() samples.
struct GenerateOptions {
  explicit GenerateOptions(std::int64_t max_new_tokens) : max_new_tokens_(max_new_tokens) {}
  /// Tokens to append (>= 0).
  TAPEGRAD_ARG(std::int64_t, max_new_tokens);
  /// Logits are divided by it before the softmax (> 0; default 1). Small: nearly greedy.
  TAPEGRAD_ARG(double, temperature) = 1.0;
  /// Sample only among the k most likely tokens (>= 1; ties at the k-th value are kept, as
  /// nanoGPT's torch.topk threshold does). Unset: all tokens. top_k(1) is greedy decoding.
  TAPEGRAD_ARG(std::optional<std::int64_t>, top_k) = std::nullopt;
  /// Keep the keys and values of earlier positions (default true): each new token then costs one
  /// position. false re-runs the model on the whole context for every token (same tokens), as
  /// does a model whose supports_cache() is false.
  TAPEGRAD_ARG(bool, use_cache) = true;
};

/// Appends options.max_new_tokens() sampled tokens to idx (B, t), t >= 1, drawing from `gen`
/// (one uniform double per row per token, rows in order), under NoGradGuard and in eval mode (no
/// dropout; the model's mode is restored afterwards, even after an exception). The context is the
/// last block_size tokens; when it is full it restarts from its last block_size / 2 tokens (whose
/// keys and values are then computed again), so a cached token costs about two positions, not
/// block_size. The uncached path follows the same rule and gives the same tokens.
/// -> (B, t + max_new_tokens). ValueError naming the option, ShapeError for a prompt of another
/// shape, IndexError for an id outside [0, vocab_size).
IndexArray generate(CausalLM& model, const IndexArray& idx, const GenerateOptions& options,
                    Generator& gen);

}  // namespace tapegrad::nn::transformer
