// examples/tape_at_work.cpp: the README's first example, runnable. Records four ops, prints the
// tape (what backward will replay), runs backward, shows that a second backward through the same
// graph is refused, and checks the gradient against finite differences.
#include <iostream>

#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"

using namespace tapegrad;

namespace {
int run() {
  Parameter w(Array{0.5f, -1.0f, 2.0f});  // a leaf that requires grad
  Tensor x(Array{1.0f, 2.0f, 3.0f});      // data: no gradient
  Tensor y = ops::tanh(w * x);            // tape: #0 mul, #1 tanh
  Tensor loss = ops::sum(y * y);          // tape: #2 mul, #3 sum
  std::cout << autograd::tape_of(loss);   // what backward(loss) will replay, newest first
  loss.backward();                        // runs #3, #2, #1, #0 and consumes them
  std::cout << w.grad() << '\n';          // d loss / d w = 2 y (1 - y^2) x
  try {
    ops::sum(y).backward();  // y's entry (#1) was consumed: PyTorch's error
  } catch (const AutogradError& e) {
    std::cout << "a second backward through y: " << e.what() << '\n';
  }
  auto check = gradcheck([&](const std::vector<Tensor>& in) { return ops::tanh(in[0] * x); }, {w});
  std::cout << check << '\n';  // "gradcheck passed (3 elements)"
  return check.ok && autograd::tape().empty() ? 0 : 1;
}
}  // namespace

int main() { return examples::checked_main("tape_at_work", run); }
