// src/optim/sgd.cpp
//
// SGD (docs/semantics.md#optimizers): the checks, the momentum buffers, and the kernels of the set
// in use, which kernels::pick chooses. A dense gradient takes one fused pass, sgd_step; a
// row-sparse one without momentum touches only its rows (sgd_sparse_step); with momentum it is made
// dense first, because the buffer is dense (what PyTorch's sparse buffer computes, mathematically).
// The reference kernels below are the algorithm as PyTorch's documentation writes it
// (https://pytorch.org/docs/stable/generated/torch.optim.SGD.html), one element after another, in
// float, no threads (docs/kernels.md: read this first). Their fast versions
// (src/kernels/optim/sgd.cpp) do the same float operations in the same order: the same bits
// (docs/semantics.md#kernel-sets).
#include "tapegrad/optim/sgd.hpp"

#include "sgd_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

// ---- the reference kernels ----------------------------------------------------------------------

// g = ±grad + wd·θ
// with momentum μ:  buf = first ? g : μ·buf + (1 − dampening)·g;  g = nesterov ? g + μ·buf : buf
// θ = θ − lr·g
void sgd_step(const SGDStep& h, std::size_t n, float* theta, const float* grad, float* buf,
              bool first) {
  const float lr = float(h.lr), mu = float(h.momentum), wd = float(h.weight_decay);
  for (std::size_t i = 0; i < n; ++i) {
    float g = h.maximize ? -grad[i] : grad[i];
    if (wd != 0) g += wd * theta[i];
    if (buf) {
      buf[i] = first ? g : mu * buf[i] + float(1.0 - h.dampening) * g;
      g = h.nesterov ? g + mu * buf[i] : buf[i];
    }
    theta[i] -= lr * g;
  }
}

// θ[ids[p], :] −= lr·(±values[p, :]) for each row p, in order (a repeated id moves twice)
void sgd_sparse_step(const SGDStep& h, std::size_t rows, std::size_t dim, const std::int64_t* ids,
                     const float* values, float* theta) {
  for (std::size_t p = 0; p < rows; ++p)
    for (std::size_t j = 0; j < dim; ++j) {
      const float g = values[p * dim + j];
      theta[std::size_t(ids[p]) * dim + j] -= float(h.lr) * (h.maximize ? -g : g);
    }
}

// ---- the optimizer ------------------------------------------------------------------------------

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

  // The kernels of the set in use, picked once.
  const auto update = kernels::pick<sgd_step>();
  const auto sparse_update = kernels::pick<sgd_sparse_step>();
  std::size_t id = 0;
  for (std::size_t g = 0; g < num_param_groups(); ++g) {
    const SGDOptions& o = options(g);
    const SGDStep h{o.lr(),           o.momentum(), o.dampening(),
                    o.weight_decay(), o.nesterov(), o.maximize()};
    for (const Parameter& p : params(g)) {
      const std::size_t i = id++;
      if (!p.has_grad()) continue;  // no gradient: no update, no state
      if (o.momentum() == 0.0 && p.grad_is_sparse()) {
        const RowSparseGrad& sg = p.sparse_grad();
        sparse_update(h, sg.indices.size(), sg.dense_shape[1], sg.indices.data(), sg.values.data(),
                      p.mutable_data().data());
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
      update(h, p.numel(), p.mutable_data().data(), grad, buf, first);  // one version bump
    }
  }
}

}  // namespace tapegrad::optim
