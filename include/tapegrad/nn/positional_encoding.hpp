// include/tapegrad/nn/positional_encoding.hpp
//
// The sinusoidal positional encoding of the seed tutorials and The Annotated Transformer
// (docs/semantics.md#positionalencoding): y = dropout(x + pe[:, :L]) for x (B, L, d_model), with
// the fixed table
//
//     pe[0, pos, 2i]   = sin(pos / 10000^(2i / d_model))
//     pe[0, pos, 2i+1] = cos(pos / 10000^(2i / d_model))
//
// `pe` (1, max_len, d_model) is a BUFFER: saved with the model (unless persistent(false)), never
// a parameter, never given a gradient, never written by training. fingerprint() and verify() let
// a program check that promise; an odd d_model is supported (its last column is a sine).
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn {

class PositionalEncodingOptions {
 public:
  PositionalEncodingOptions(std::int64_t d_model, double dropout)
      : d_model_(d_model), dropout_(dropout) {}

  /// Width of the encoded vectors, > 0: x's last dimension.
  TAPEGRAD_ARG(std::int64_t, d_model);
  /// Dropout probability after the addition, in [0, 1].
  TAPEGRAD_ARG(double, dropout);
  /// Longest sequence the table covers, > 0; default 5000, as the tutorials.
  TAPEGRAD_ARG(std::int64_t, max_len) = 5000;
  /// "pe" is in state_dict(); default true (false: loads into a model of another max_len).
  TAPEGRAD_ARG(bool, persistent) = true;
};

/// The table (1, max_len, d_model): angle = pos * exp(i * -(ln 10000 / d_model)) with
/// i = j - j % 2, computed in double, then float(sin(angle)) for even j, float(cos(angle)) for odd j.
Array sinusoid_table(std::int64_t max_len, std::int64_t d_model);

class PositionalEncoding : public Module {
 public:
  /// The tutorials' arguments. d_model <= 0 or max_len <= 0 is a ValueError; dropout is checked
  /// by Dropout. The generator (the default one if null) drives the dropout masks.
  PositionalEncoding(std::int64_t d_model, double dropout, std::int64_t max_len = 5000,
                     std::shared_ptr<Generator> generator = nullptr);
  explicit PositionalEncoding(PositionalEncodingOptions options,
                              std::shared_ptr<Generator> generator = nullptr);

  /// x (B, L, d_model) -> (B, L, d_model). ShapeError for another rank or width, and for L > max_len.
  Tensor forward(const Tensor& x);
  /// pe.fingerprint(): equal before and after training, since nothing may write pe.
  std::uint64_t fingerprint() const { return pe.fingerprint(); }
  /// Recomputes the table and compares it with pe bit for bit; InvariantError naming the first
  /// differing (pos, j) and both values otherwise (e.g. after loading a PyTorch-made table).
  void verify() const;
  const PositionalEncodingOptions& options() const { return options_; }

  std::shared_ptr<Dropout> dropout;  ///< registered as "dropout"
  Buffer pe;                         ///< registered as "pe", (1, max_len, d_model)

  std::string type_name() const override { return "PositionalEncoding"; }

 private:
  PositionalEncodingOptions options_;
};

}  // namespace tapegrad::nn
