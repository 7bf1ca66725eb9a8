// src/transformer/feed_forward.cpp: PositionwiseFeedForward, w_2(dropout(relu(w_1(x)))).
#include "tapegrad/transformer/feed_forward.hpp"

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/elementwise.hpp"

namespace tapegrad::nn::transformer {

PositionwiseFeedForward::PositionwiseFeedForward(std::int64_t d_model, std::int64_t d_ff,
                                                 double dropout_p,
                                                 std::shared_ptr<Generator> generator)
    : generator_(generator ? std::move(generator) : default_generator()) {
  w_1 = register_module("w_1", std::make_shared<Linear>(LinearOptions(d_model, d_ff), generator_));
  w_2 = register_module("w_2", std::make_shared<Linear>(LinearOptions(d_ff, d_model), generator_));
  dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p, generator_));
}

Tensor PositionwiseFeedForward::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return w_2->forward(dropout->forward(ops::relu(w_1->forward(x))));
}

std::shared_ptr<PositionwiseFeedForward> PositionwiseFeedForward::clone() const {
  auto copy = std::make_shared<PositionwiseFeedForward>(w_1->options().in_features(),
                                                        w_1->options().out_features(),
                                                        dropout->options().p(), generator_);
  copy->load_state_dict(state_dict());
  copy->train(is_training());
  return copy;
}

}  // namespace tapegrad::nn::transformer
