// tests/nn/test_swiglu.cpp: the SwiGLU feed-forward, w2(silu(w1 x) * w3 x): LLaMA's names and
// order, a PyTorch golden, gradcheck, errors and the printed form.
#include <doctest/doctest.h>

#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::values;

namespace {
// LLaMA's FeedForward written out in PyTorch 1.13, F.linear(F.silu(F.linear(x, w1)) *
// F.linear(x, w3), w2) without biases, in 4, hidden 3, out 4, and the gradients of sum(g * y),
// from scripts/golden/gpt_layers.py with torch 1.13.0a0.
const std::vector<float> kx = {-1.15361679f,  -2.50230098f,   0.87555778f,
                               -2.67256498f,  -0.0313326009f, 0.498786151f,
                               -0.523323238f, -0.251479506f};  // (2, 4)
const std::vector<float> kw1 = {-0.52776593f,   -0.279630631f, -0.0598543026f,
                                -0.0817728639f, -0.125231624f, -0.544112265f,
                                0.00220362307f, 0.116394438f,  -0.410070807f,
                                -0.339509666f,  0.712541699f,  0.982374489f};  // (3, 4)
const std::vector<float> kw2 = {0.383919895f,  0.994954646f,   0.359126151f,
                                -0.24833326f,  0.655014455f,   0.197778434f,
                                0.0447397046f, -0.0841054693f, -0.2363794f,
                                -0.985288143f, 0.314042032f,   -0.0565758944f};  // (4, 3)
const std::vector<float> kw3 = {0.231555745f,  0.166902229f,   0.822158396f,
                                -0.626740217f, -0.0295801833f, 0.59392482f,
                                0.612369657f,  -0.426059693f,  -0.597046793f,
                                0.553787172f,  0.328897953f,   -0.0211606529f};  // (3, 4)
const std::vector<float> kg = {0.458039582f, 0.144799843f, -1.41947782f, 2.04391408f,
                               0.963807762f, 0.32781139f,  -1.44420695f, -1.38352215f};  // (2, 4)
const std::vector<float> ky = {1.0205406f,     -0.359579086f,  0.0555586889f,
                               -1.96226966f,   -0.0192589238f, -0.0148437228f,
                               0.00860616751f, -0.00820760615f};  // (2, 4)
const std::vector<float> kdx = {1.2711674f,    1.0899179f,   -1.01708901f,
                                1.23344755f,   0.178846598f, -0.165148318f,
                                -0.158518732f, 0.115172863f};  // (2, 4)
const std::vector<float> kdw1 = {3.969136f,     8.52725506f,    -2.93312693f,
                                 9.22116756f,   -0.331622928f,  -0.704874456f,
                                 0.237745658f,  -0.772825301f,  0.0305601582f,
                                 0.0751863942f, -0.0317843109f, 0.0679894164f};  // (3, 4)
const std::vector<float> kdw2 = {0.946488678f, 0.0835357755f, 0.00667162985f,
                                 0.299368829f, 0.0261620451f, 0.0013842684f,
                                 -2.92280102f, -0.275297076f, -0.0690324232f,
                                 4.1852231f,   0.433256179f,  0.207954094f};  // (4, 3)
const std::vector<float> kdw3 = {
    2.68395114f, 5.79091501f,  -2.00727844f, 6.22759438f,  -1.38757336f,  -3.07168484f,
    1.11288774f, -3.19502664f, 0.115226984f, 0.134770691f, 0.0237215497f, 0.303296447f};  // (3, 4)

void set(const Parameter& p, const Array& a) {
  autograd::NoGradGuard no_grad;
  p.mutable_data() = a;
}
}  // namespace

TEST_SUITE("nn.swiglu") {
  TEST_CASE("SwiGLU registers LLaMA's w1, w2, w3 in that order, without biases by default") {
    nn::SwiGLU ff(nn::SwiGLUOptions(4, 6), std::make_shared<Generator>(0));
    std::vector<std::string> names;
    for (const auto& [name, p] : ff.named_parameters()) names.push_back(name);
    CHECK(names == std::vector<std::string>{"w1.weight", "w2.weight", "w3.weight"});
    CHECK(ff.w1->weight.shape() == Shape{6, 4});
    CHECK(ff.w2->weight.shape() == Shape{4, 6});
    CHECK(ff.w3->weight.shape() == Shape{6, 4});
    nn::SwiGLU biased(nn::SwiGLUOptions(4, 6).out_features(2).bias(true));
    CHECK(biased.named_parameters().size() == 6);
    CHECK(biased.w2->weight.shape() == Shape{2, 6});
    CHECK(biased.forward(testing::input({3, 4}, 1, false)).shape() == Shape{3, 2});
  }

  TEST_CASE("SwiGLU matches LLaMA's feed-forward in PyTorch, values and gradients") {
    nn::SwiGLU ff(nn::SwiGLUOptions(4, 3));
    set(ff.w1->weight, values({3, 4}, kw1));
    set(ff.w2->weight, values({4, 3}, kw2));
    set(ff.w3->weight, values({3, 4}, kw3));
    Tensor x(values({2, 4}, kx), true);
    Tensor y = ff.forward(x);
    CHECK(all_close(y.data(), values({2, 4}, ky), 1e-6, 1e-5));
    y.backward(values({2, 4}, kg));
    CHECK(all_close(x.grad(), values({2, 4}, kdx), 1e-6, 1e-5));
    CHECK(all_close(ff.w1->weight.grad(), values({3, 4}, kdw1), 1e-6, 1e-5));
    CHECK(all_close(ff.w2->weight.grad(), values({4, 3}, kdw2), 1e-6, 1e-5));
    CHECK(all_close(ff.w3->weight.grad(), values({3, 4}, kdw3), 1e-6, 1e-5));
  }

  TEST_CASE("SwiGLU's gradients match finite differences") {
    nn::SwiGLU ff(nn::SwiGLUOptions(3, 4).bias(true), std::make_shared<Generator>(2));
    const std::vector<Parameter> params = ff.parameters();
    std::vector<Tensor> inputs{testing::input({2, 3}, 5)};
    inputs.insert(inputs.end(), params.begin(), params.end());
    testing::check_gradients([&](const std::vector<Tensor>& t) { return ff.forward(t[0]); },
                             inputs);
  }

  TEST_CASE("SwiGLU refuses bad sizes by name and prints its three Linears") {
    CHECK_THROWS_WITH_AS(nn::SwiGLU(nn::SwiGLUOptions(0, 3)),
                         doctest::Contains("SwiGLU: expected in_features >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::SwiGLU(nn::SwiGLUOptions(2, 0)),
                         doctest::Contains("SwiGLU: expected hidden_features >= 1, got 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::SwiGLU(nn::SwiGLUOptions(2, 3).out_features(0)),
                         doctest::Contains("SwiGLU: expected out_features >= 1, got 0"),
                         ValueError);
    nn::SwiGLU ff(nn::SwiGLUOptions(2, 3));
    CHECK(ff.options().out_features() == std::optional<std::int64_t>(2));
    CHECK(ff.repr() ==
          "SwiGLU(\n"
          "  (w1): Linear(in_features=2, out_features=3, bias=False)\n"
          "  (w2): Linear(in_features=3, out_features=2, bias=False)\n"
          "  (w3): Linear(in_features=2, out_features=3, bias=False)\n"
          ")");
    CHECK_THROWS_WITH_AS(ff.forward(testing::input({1, 5}, 1, false)),
                         doctest::Contains("mat1 and mat2 shapes cannot be multiplied"),
                         ShapeError);
  }

}  // TEST_SUITE
