// src/optim/sgd.cpp
//
// SGD in PyTorch's order of operations (docs/semantics.md#optimizers). A dense gradient takes one fused pass,
// sgd_update(); a row-sparse one without momentum touches only its rows; with momentum it is made
// dense first, because the buffer is dense (what PyTorch's sparse buffer computes, mathematically).
// Scalars are cast to float once, where they meet the data.
#include "tapegrad/optim/sgd.hpp"

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

namespace {

struct SGDScalars {
  float neg_lr;  // −lr
  float weight_decay;
  float momentum;    // μ
  float grad_share;  // 1 − dampening
  bool nesterov, maximize;
};

// sgd_update: one SGD step of n elements:
//   g = maximize ? −grad : grad
//   g = g + wd·θ                                          if wd ≠ 0
//   if momentum ≠ 0:  buf = first ? g : buf·μ + (1 − dampening)·g
//                     g   = nesterov ? g + μ·buf : buf
//   θ = θ + (−lr)·g
// buf is nullptr without momentum; `first` is the buffer's first step (it starts as a copy of g,
// undamped).
void sgd_update(const SGDScalars& k, std::size_t n, float* theta, const float* grad, float* buf,
                bool first) {
  for (std::size_t i = 0; i < n; ++i) {
    float g = k.maximize ? -grad[i] : grad[i];
    if (k.weight_decay != 0.0f) g = g + k.weight_decay * theta[i];
    if (buf != nullptr) {
      buf[i] = first ? g : buf[i] * k.momentum + k.grad_share * g;
      g = k.nesterov ? g + k.momentum * buf[i] : buf[i];
    }
    theta[i] = theta[i] + k.neg_lr * g;
  }
}

// The row-sparse update without momentum: θ[ids[p], :] += (−lr)·g[p, :] for each listed row p, in
// order, so a repeated id adds twice (PyTorch's dense += sparse).
void sgd_sparse_update(const SGDScalars& k, const RowSparseGrad& sg, float* theta) {
  const std::size_t dim = sg.dense_shape[1];
  for (std::size_t p = 0; p < sg.indices.size(); ++p) {
    float* row = theta + static_cast<std::size_t>(sg.indices.data()[p]) * dim;
    const float* grad = sg.values.data() + p * dim;
    for (std::size_t j = 0; j < dim; ++j)
      row[j] = row[j] + k.neg_lr * (k.maximize ? -grad[j] : grad[j]);
  }
}

}  // namespace

void SGDOptions::check(const std::string& where) const {
  // PyTorch's SGD tests `x < 0.0` (unlike Adam's `not 0.0 <= x`), so NaN passes here as there.
  check_hyper(!(lr() < 0.0), "Invalid learning rate", lr(), where, "lr >= 0");
  check_hyper(!(momentum() < 0.0), "Invalid momentum value", momentum(), where, "momentum >= 0");
  check_hyper(!(weight_decay() < 0.0), "Invalid weight_decay value", weight_decay(), where,
              "weight_decay >= 0");
  if (nesterov() && (momentum() <= 0.0 || dampening() != 0.0))
    fail<ValueError>("Nesterov momentum requires a momentum and zero dampening | ", where,
                     ": got momentum ", py_float(momentum()), " and dampening ",
                     py_float(dampening()));
}

void SGD::step() {
  autograd::NoGradGuard no_grad;  // updating weights is not part of the model
  // Every gradient is checked before any parameter changes: a refused step changes nothing.
  for (std::size_t g = 0; g < num_param_groups(); ++g)
    for (const Parameter& p : params(g)) {
      if (!p.grad_is_sparse()) continue;
      if (options(g).weight_decay() != 0.0)
        fail<TypeError>(
            "add(sparse, dense) is not supported. Use add(dense, sparse) instead. | SGD: "
            "weight_decay needs a dense gradient for ",
            param_label(p));
      check_sparse_rows(p, "SGD");
    }

  std::size_t id = 0;
  for (std::size_t g = 0; g < num_param_groups(); ++g) {
    const SGDOptions& o = options(g);
    const SGDScalars k{float(-o.lr()),      float(o.weight_decay()),
                       float(o.momentum()), float(1.0 - o.dampening()),
                       o.nesterov(),        o.maximize()};
    for (const Parameter& p : params(g)) {
      const std::size_t i = id++;
      if (!p.has_grad()) continue;  // no gradient: no update, no state
      if (o.momentum() == 0.0 && p.grad_is_sparse()) {
        sgd_sparse_update(k, p.sparse_grad(), p.mutable_data().data());
        continue;
      }
      Array densified;  // a row-sparse gradient meeting the dense buffer
      const float* grad = nullptr;
      if (p.grad_is_sparse()) {
        densified = p.sparse_grad().to_dense();
        grad = densified.data();
      } else {
        grad = p.grad().data();
      }
      float* buf = nullptr;
      bool first = false;
      if (o.momentum() != 0.0) {
        std::optional<SGDState>& state = state_slot(i);
        first = !state;
        if (first) state = SGDState{Array::from_shape(p.shape())};  // filled with g below
        buf = state->momentum_buffer.data();
      }
      sgd_update(k, p.numel(), p.mutable_data().data(), grad, buf, first);  // one version bump
    }
  }
}

}  // namespace tapegrad::optim
