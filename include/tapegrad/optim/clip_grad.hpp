// include/tapegrad/optim/clip_grad.hpp
//
// clip_grad_norm_ (PyTorch's torch.nn.utils.clip_grad_norm_; docs/semantics.md#clip_grad_norm_):
// rescales the gradients of a set of parameters so that their total norm — as if every gradient
// were one long vector — is at most max_norm. Called between backward() and the optimizer's step():
//
//     loss.backward();
//     optim::clip_grad_norm_(model.parameters(), 1.0);
//     opt.step();
#pragma once

#include <vector>

#include "tapegrad/core/parameter.hpp"

namespace tapegrad::optim {

/// Multiplies every gradient by float(min(max_norm / (total + 1e-6), 1)) and returns the total
/// p-norm from BEFORE clipping (norm_type = INFINITY: the largest |g|). Parameters with a null
/// gradient are ignored (none left: returns 0); a row-sparse gradient counts like its dense
/// equivalent. Norms are accumulated in double. With error_if_nonfinite, a NaN or infinite total
/// throws ValueError and changes nothing. A negative or NaN max_norm is a ValueError, changing
/// nothing (PyTorch 1.13 accepts it; a negative one would flip the sign of every gradient).
double clip_grad_norm_(const std::vector<Parameter>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);

}  // namespace tapegrad::optim
