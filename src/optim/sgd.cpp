// src/optim/sgd.cpp
//
// SGD (docs/semantics.md#optimizers): the checks, the momentum buffers, and the kernels of the set
// in use (sgd_reference.cpp holds the maths as plain loops, sgd_fast.cpp the fast version). A dense
// gradient takes one fused pass, kernels::sgd_kernels().step; a row-sparse one without momentum
// touches only its rows (.sparse_step); with momentum it is made dense first, because the buffer is
// dense (what PyTorch's sparse buffer computes, mathematically).
#include "tapegrad/optim/sgd.hpp"

#include "sgd_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

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

  const kernels::SGDKernels& kernel = kernels::sgd_kernels();  // the set in use
  std::size_t id = 0;
  for (std::size_t g = 0; g < num_param_groups(); ++g) {
    const SGDOptions& o = options(g);
    const kernels::SGDStep h{o.lr(),           o.momentum(), o.dampening(),
                             o.weight_decay(), o.nesterov(), o.maximize()};
    for (const Parameter& p : params(g)) {
      const std::size_t i = id++;
      if (!p.has_grad()) continue;  // no gradient: no update, no state
      if (o.momentum() == 0.0 && p.grad_is_sparse()) {
        const RowSparseGrad& sg = p.sparse_grad();
        kernel.sparse_step(h, sg.indices.size(), sg.dense_shape[1], sg.indices.data(),
                           sg.values.data(), p.mutable_data().data());
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
      kernel.step(h, p.numel(), p.mutable_data().data(), grad, buf, first);  // one version bump
    }
  }
}

}  // namespace tapegrad::optim
