// include/tapegrad/autograd/detail/closure.hpp (implementation detail; a learner can skip it)
//
// The compile-time check behind autograd::record's one form of backward closure.
#pragma once

#include <type_traits>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::autograd::detail {

/// True for a closure written the one way, `[captures](Array dy) { ... }`: a single,
/// non-template operator() taking the output's gradient by value.
template <class F>
constexpr bool is_backward_closure() {
  if constexpr (requires { &F::operator(); }) {
    using Call = decltype(&F::operator());
    return std::is_same_v<Call, void (F::*)(Array) const> ||
           std::is_same_v<Call, void (F::*)(Array)>;
  } else {
    return false;
  }
}

}  // namespace tapegrad::autograd::detail
