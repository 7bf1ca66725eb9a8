// include/tapegrad/ops/softmax.hpp
//
// softmax and log_softmax along one dimension, numerically stable (the max is subtracted first).
#pragma once

#include <cstdint>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// y = exp(x - max) / sum(exp(x - max));       dx = y * (dy - sum(dy * y))
Tensor softmax(const Tensor& x, std::int64_t dim = -1);
/// y = x - max - log(sum(exp(x - max)));        dx = dy - softmax(x) * sum(dy)
Tensor log_softmax(const Tensor& x, std::int64_t dim = -1);

}  // namespace tapegrad::ops
