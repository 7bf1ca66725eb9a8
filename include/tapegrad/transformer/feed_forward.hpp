// include/tapegrad/transformer/feed_forward.hpp
//
// PositionwiseFeedForward(d_model, d_ff, dropout): The Annotated Transformer's FFN, the same two
// layers applied to every position independently,
//
//     FFN(x) = w_2(dropout(relu(w_1(x))))         x (B, T, d_model) -> (B, T, d_model)
//
// with w_1 = Linear(d_model, d_ff) and w_2 = Linear(d_ff, d_model) (keys "w_1.weight", ...).
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/linear.hpp"

namespace tapegrad::nn::transformer {

class PositionwiseFeedForward : public Module {
 public:
  /// The generator (default one if null) initialises the linears and drives the dropout.
  PositionwiseFeedForward(std::int64_t d_model, std::int64_t d_ff, double dropout = 0.1,
                          std::shared_ptr<Generator> generator = nullptr);

  Tensor forward(const Tensor& x);
  /// A deep copy: same sizes, parameter values, training mode and generator.
  std::shared_ptr<PositionwiseFeedForward> clone() const;

  std::shared_ptr<Linear> w_1;       ///< "w_1": Linear(d_model, d_ff)
  std::shared_ptr<Linear> w_2;       ///< "w_2": Linear(d_ff, d_model)
  std::shared_ptr<Dropout> dropout;  ///< "dropout", between the two

  std::string type_name() const override { return "PositionwiseFeedForward"; }

 private:
  std::shared_ptr<Generator> generator_;
};

}  // namespace tapegrad::nn::transformer
