// src/autograd/grad_mode.cpp: grad mode, per thread (grad_mode.hpp), and should_record.
#include <algorithm>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::autograd {

namespace {
thread_local bool grad_mode = true;

template <class It>
bool any_requires_grad(It first, It last) {
  return std::any_of(first, last, [](const Tensor& t) { return t.requires_grad(); });
}
}  // namespace

bool grad_enabled() { return grad_mode; }
NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }
EnableGradGuard::EnableGradGuard() : previous_(grad_mode) { grad_mode = true; }
EnableGradGuard::~EnableGradGuard() { grad_mode = previous_; }

bool should_record(std::initializer_list<Tensor> inputs) {
  return grad_mode && any_requires_grad(inputs.begin(), inputs.end());
}
bool should_record(const std::vector<Tensor>& inputs) {
  return grad_mode && any_requires_grad(inputs.begin(), inputs.end());
}

}  // namespace tapegrad::autograd
