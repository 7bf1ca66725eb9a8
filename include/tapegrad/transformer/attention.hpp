// include/tapegrad/transformer/attention.hpp
//
// MultiHeadedAttention(h, d_model, dropout): The Annotated Transformer's multi-head attention.
// Four Linear(d_model, d_model) layers in a ModuleList "linears" (query, key, value projections and
// the output projection, keys "linears.0.weight" ... "linears.3.bias" as in the tutorial), and a
// "dropout" on the attention weights. The heads are not split by copies: the fused
// ops::scaled_dot_product_attention reads head i as columns [i * d_k, (i + 1) * d_k) of each
// projection, which is exactly what the tutorial's view(B, -1, h, d_k).transpose(1, 2) selects.
//
//     query (B, Tq, d_model), key and value (B, Tk, d_model), mask broadcastable to (B, Tq, Tk)
//     (true = may attend) -> (B, Tq, d_model); `attn` keeps the last weights (B, h, Tq, Tk).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/module_list.hpp"
#include "tapegrad/ops/attention.hpp"

namespace tapegrad::nn::transformer {

class MultiHeadedAttention : public Module {
 public:
  /// ValueError unless h >= 1 divides d_model (the tutorial asserts d_model % h == 0).
  /// The generator (default one if null) initialises the linears and drives the dropout.
  MultiHeadedAttention(std::int64_t h, std::int64_t d_model, double dropout = 0.1,
                       std::shared_ptr<Generator> generator = nullptr);

  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const std::optional<Mask>& mask = std::nullopt);
  /// A deep copy (the tutorial's copy.deepcopy): same options, same parameter values, same
  /// training mode, the same generator.
  std::shared_ptr<MultiHeadedAttention> clone() const;

  std::int64_t heads() const { return h_; }
  std::int64_t d_k() const { return d_model_ / h_; }

  std::shared_ptr<ModuleList> linears;  ///< "linears": 4 x Linear(d_model, d_model)
  std::shared_ptr<Dropout> dropout;     ///< "dropout": its p and training mode apply to the weights
  Array attn;                           ///< the weights of the last forward (after dropout)

  std::string type_name() const override { return "MultiHeadedAttention"; }

 private:
  std::int64_t h_, d_model_;
  std::shared_ptr<Generator> generator_;
};

}  // namespace tapegrad::nn::transformer
