// include/tapegrad/transformer/causal_lm.hpp
//
// CausalLM: what generate() needs from a decoder-only language model, so that the sampler with
// its cache of keys and values works for any such model, not only the GPT. A model implements
// four things:
//
//     vocab_size(), block_size()      the ids it knows and the longest context it takes
//     forward(idx)                    idx (B, T) at positions 0 .. T-1 -> logits (B, T, vocab)
//     forward_cached(tokens)          tokens (B, n) APPENDED after what its cache holds, at
//                                     positions L .. L+n-1 (L = positions cached so far) -> the
//                                     logits (B, vocab) of the last of them; it caches their keys
//                                     and values (or whatever its layers need) for the next call
//     reset_cache()                   forget everything cached: the next call starts at position 0
//
// and may override last_logits(idx) (the logits after idx with nothing cached; by default the
// last position of forward(idx)) to compute only that position, and supports_cache() (default
// true) to say that forward_cached cannot run, so that generate() samples without the cache. generate() resets the cache
// before it starts and when it is done, and never lets positions reach block_size. The GPT
// implements it (transformer/gpt.hpp); tests/transformer/test_generate.cpp has a model of
// a few lines that does too.
#pragma once

#include <cstdint>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn::transformer {

class CausalLM : public Module {
 public:
  /// Number of token ids: the last dimension of the logits.
  virtual std::int64_t vocab_size() const = 0;
  /// The longest context (positions 0 .. block_size - 1).
  virtual std::int64_t block_size() const = 0;
  /// idx (B, T), 1 <= T <= block_size -> logits (B, T, vocab_size), with nothing cached.
  virtual Tensor forward(const IndexArray& idx) = 0;
  /// tokens (B, n), n >= 1, after the L positions already cached (L + n <= block_size) -> the
  /// logits (B, vocab_size) of the last new position; the cache then holds L + n positions.
  virtual Array forward_cached(const IndexArray& tokens) = 0;
  /// Empties the cache (and frees it).
  virtual void reset_cache() = 0;
  /// Whether forward_cached runs (default true); generate() samples without the cache if not.
  virtual bool supports_cache() const { return true; }
  /// The logits (B, vocab_size) of the last position of idx (B, T), with nothing cached: the
  /// sampler's path without the cache. By default the last position of forward(idx).
  virtual Array last_logits(const IndexArray& idx);

  /// Activation recompute (Hugging Face's gradient_checkpointing_enable): when on, each block's
  /// forward runs under autograd::checkpoint, which keeps only the block's input for backward
  /// and runs the block again there; the gradients are the same bits. The GPT and
  /// LlamaForCausalLM implement it; by default a model refuses (ValueError naming it).
  virtual void recompute(bool on);
  /// Whether recompute is on (default false).
  virtual bool recompute() const { return false; }
};

}  // namespace tapegrad::nn::transformer
