// src/nn/swiglu.cpp: the SwiGLU feed-forward, y = w2(silu(w1(x)) * w3(x)), from three Linears
// and two recorded ops (silu, mul) between them.
#include "tapegrad/nn/swiglu.hpp"

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/activation.hpp"
#include "tapegrad/ops/elementwise.hpp"

namespace tapegrad::nn {

namespace {
SwiGLUOptions validated(SwiGLUOptions o) {
  check<ValueError>(o.in_features() >= 1, "SwiGLU: expected in_features >= 1, got ",
                    o.in_features());
  check<ValueError>(o.hidden_features() >= 1, "SwiGLU: expected hidden_features >= 1, got ",
                    o.hidden_features());
  check<ValueError>(!o.out_features() || *o.out_features() >= 1,
                    "SwiGLU: expected out_features >= 1, got ", o.out_features().value_or(0));
  if (!o.out_features()) o.out_features(o.in_features());
  return o;
}

LinearOptions linear(std::int64_t in, std::int64_t out, bool bias) {
  return LinearOptions(in, out).bias(bias);
}
}  // namespace

SwiGLU::SwiGLU(SwiGLUOptions options, std::shared_ptr<Generator> generator)
    : options_(validated(std::move(options))) {
  const std::int64_t in = options_.in_features(), hidden = options_.hidden_features();
  const bool bias = options_.bias();
  w1 = register_module("w1", std::make_shared<Linear>(linear(in, hidden, bias), generator));
  w2 = register_module(
      "w2", std::make_shared<Linear>(linear(hidden, *options_.out_features(), bias), generator));
  w3 = register_module("w3", std::make_shared<Linear>(linear(in, hidden, bias), generator));
}

Tensor SwiGLU::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return w2->forward(ops::swiglu(w1->forward(x), w3->forward(x)));  // silu(w1 x) * w3 x
}

}  // namespace tapegrad::nn
