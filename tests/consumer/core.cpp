// tests/consumer/core.cpp: fits y = 3x with one parameter, written by hand on tapegrad::core alone
// (no Module, no optimizer): the bottom layer is a library of its own.
#include <cmath>
#include <iostream>

#include <tapegrad/core.hpp>

int main() {
  using namespace tapegrad;
  Parameter w(Array{0.f});
  const Tensor x(Array{1.f, 2.f, 3.f}), y(Array{3.f, 6.f, 9.f});
  for (int step = 0; step < 100; ++step) {
    Tensor loss = ops::mean(ops::pow(w * x - y, 2.0));
    loss.backward();
    autograd::NoGradGuard no_grad;
    w.mutable_data() -= 0.05f * w.grad();
    w.zero_grad();
  }
  std::cout << "consumer_core: w = " << w.data()(0) << " (expected 3)\n";
  return std::abs(w.data()(0) - 3.f) < 1e-3f ? 0 : 1;
}
