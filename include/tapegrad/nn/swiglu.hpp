// include/tapegrad/nn/swiglu.hpp
//
// SwiGLU: the gated feed-forward of LLaMA (Shazeer, "GLU Variants Improve Transformer", 2020),
//
//     y = w2(silu(w1(x)) * w3(x))        x (*, in) -> (*, out)
//
// three Linear layers: w1 and w3 (hidden, in) make the value and its gate side by side, silu
// (ops/activation.hpp) gates one with the other elementwise, and w2 (out, hidden) projects back.
// The names and registration order (w1, w2, w3) are LLaMA's FeedForward's, so its keys load as
// they are. Three matrices instead of an MLP's two: LLaMA keeps the parameter count of a 4C MLP
// with hidden = 2 * 4C / 3. Each Linear initialises itself as nn::Linear does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/unary_module.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn {

struct SwiGLUOptions {
  SwiGLUOptions(std::int64_t in_features, std::int64_t hidden_features)
      : in_features_(in_features), hidden_features_(hidden_features) {}
  /// Width of the input (>= 1).
  TAPEGRAD_ARG(std::int64_t, in_features);
  /// Width of the gated hidden layer (>= 1): the rows of w1 and w3.
  TAPEGRAD_ARG(std::int64_t, hidden_features);
  /// Width of the output (>= 1); unset: in_features.
  TAPEGRAD_ARG(std::optional<std::int64_t>, out_features) = std::nullopt;
  /// Whether the three Linears learn a bias (default false, as LLaMA's).
  TAPEGRAD_ARG(bool, bias) = false;
};

class SwiGLU : public UnaryModule {
 public:
  /// ValueError naming the field for a size < 1. A null generator means the default one.
  explicit SwiGLU(SwiGLUOptions options, std::shared_ptr<Generator> generator = nullptr);

  /// x (*, in_features) -> (*, out_features). ShapeError (from w1) for another last dimension.
  Tensor forward(const Tensor& x) override;
  const SwiGLUOptions& options() const { return options_; }

  std::shared_ptr<Linear> w1;  ///< "w1": Linear(in, hidden), passed through silu
  std::shared_ptr<Linear> w2;  ///< "w2": Linear(hidden, out), the output projection
  std::shared_ptr<Linear> w3;  ///< "w3": Linear(in, hidden), the gate's other factor

  std::string type_name() const override { return "SwiGLU"; }

 private:
  SwiGLUOptions options_;
};

}  // namespace tapegrad::nn
