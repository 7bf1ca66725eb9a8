// tests/ops/test_rms_norm.cpp: ops::rms_norm, PyTorch 2.4's F.rms_norm: values by hand, goldens,
// eps's default, gradcheck, errors, and the tape.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::values;

namespace {
// LLaMA's RMSNorm written out in PyTorch 1.13 (it has none), x * rsqrt(mean(x^2) + eps) * w in
// float32, and the gradients of sum(g * y), from scripts/golden/gpt_layers.py with torch
// 1.13.0a0. a: x ~ N(0, 1), eps None (float32's epsilon); b: x ~ N(0, 1e-6), eps 1e-5; c: the
// same small x with eps None, where eps no longer matters.
const std::vector<float> kA_x = {-0.0208794735f, -0.718480051f, 0.518636763f, -1.31252193f,
                                 0.191995069f,   0.542771339f,  -2.21877933f, 0.258984536f,
                                 -1.02970219f,   -0.50075841f};  // (2, 5)
const std::vector<float> kA_w = {1.13668382f, 0.54095f, 0.979789436f, 1.14405847f,
                                 0.996231318f};  // (5,)
const std::vector<float> kA_g = {-0.914495468f, -1.08858371f, -0.266596317f,  0.189423457f,
                                 -0.21902281f,  2.0575912f,   -0.0354218818f, 0.062718831f,
                                 -0.766306281f, 1.09925056f};  // (2, 5)
const std::vector<float> kA_y = {-0.0332646072f, -0.544747233f, 0.712228298f, -2.10464048f,
                                 0.268085569f,   0.537169158f,  -1.04502273f, 0.220933259f,
                                 -1.02568579f,   -0.434353143f};  // (2, 5)
const std::vector<float> kA_dx = {-1.45714486f,  -0.83208704f, -0.361250967f, 0.291448653f,
                                  -0.304026514f, 1.91582346f,  0.476030022f,  -0.00400754064f,
                                  -0.534656465f, 1.06468046f};  // (2, 5)
const std::vector<float> kA_dw = {0.999130011f, 1.16465402f, -0.179651633f, 0.33855018f,
                                  -0.538208127f};  // (5,)
const std::vector<float> kB_x = {
    0.00275653857f, 0.000175283334f, -0.000931521179f, -0.00150548981f,  -0.000660982565f,
    0.00132320169f, 3.71143069e-05f, -0.000284909329f, -0.000133441747f, 0.00189291057f};  // (2, 5)
const std::vector<float> kB_w = {2.55552197f, 0.770802081f, 0.832005978f, 0.215006948f,
                                 1.61575019f};  // (5,)
const std::vector<float> kB_g = {1.39463174f,  1.1711024f,   0.433511943f, -1.73425019f,
                                 -1.3360486f,  0.887096047f, 0.767957449f, 0.0571129993f,
                                 0.223958388f, 0.551964283f};  // (2, 5)
const std::vector<float> kB_y = {2.01350045f,     0.0386181548f, -0.221527278f,  -0.0925205797f,
                                 -0.305261642f,   1.0155499f,    0.00859171432f, -0.071191594f,
                                 -0.00861667749f, 0.918543935f};  // (2, 5)
const std::vector<float> kB_dx = {868.913879f,  248.490707f, 153.712662f, -24.7719879f,
                                  -581.110168f, 647.220886f, 176.834015f, 21.5101681f,
                                  17.852108f,   219.747543f};  // (2, 5)
const std::vector<float> kB_dw = {1.45135975f, 0.0672337189f, -0.12031246f, 0.737297297f,
                                  0.566206217f};  // (5,)
const std::vector<float> kC_x = {-0.000578798004f, 1.77221173e-05f,  0.000131826368f,
                                 0.0010197669f,    -0.000446838909f, 0.000452022476f,
                                 -0.000975924486f, 0.000711237255f,  -0.000758226495f,
                                 -0.000643583073f};  // (2, 5)
const std::vector<float> kC_w = {0.676923811f, 0.920453668f, 0.110668182f, 1.42382562f,
                                 1.12297142f};  // (5,)
const std::vector<float> kC_g = {-0.131167874f, -0.178518072f, -0.595893085f, 0.273869753f,
                                 0.567926288f,  -0.673102438f, -1.20953238f,  1.34407032f,
                                 2.38321948f,   -0.566463888f};  // (2, 5)
const std::vector<float> kC_y = {-0.592236102f, 0.0246573053f, 0.022052262f, 2.19475365f,
                                 -0.758486331f, 0.379658014f,  -1.11457908f, 0.0976629853f,
                                 -1.33951783f,  -0.896739006f};  // (2, 5)
const std::vector<float> kC_dx = {-73.2604141f, -250.243759f, -113.565109f, 482.034607f,
                                  1011.08228f,  -362.065338f, -1820.26172f, 504.411713f,
                                  3869.32178f,  -1078.71155f};  // (2, 5)
const std::vector<float> kC_dw = {-0.262756884f, 1.4598428f, 1.06738114f, -1.81994796f,
                                  0.0687514842f};  // (5,)

struct Golden {
  const std::vector<float>&x, &w, &g, &y, &dx, &dw;
  std::optional<double> eps;
};
}  // namespace

TEST_SUITE("ops.rms_norm") {
  TEST_CASE("rms_norm divides each row by its root mean square, then scales by weight") {
    Tensor x(Array{{3.0f, 4.0f}, {1.0f, -1.0f}});
    const Array y = ops::rms_norm(x, {2}, Tensor(), 0.0).data();
    const float r0 = float(1.0 / std::sqrt(12.5)), r1 = 1.0f;  // mean(x^2): 12.5 and 1
    CHECK(all_close(y, Array{{3.0f * r0, 4.0f * r0}, {1.0f * r1, -1.0f * r1}}));
    Tensor w(Array{2.0f, -1.0f});
    CHECK(all_close(ops::rms_norm(x, {2}, w, 0.0).data(),
                    Array{{6.0f * r0, -4.0f * r0}, {2.0f, 1.0f}}));
    // normalized_shape over two dimensions: one row of four
    Tensor x2(Array{{{1.0f, 1.0f}, {1.0f, 5.0f}}});
    const float r = float(1.0 / std::sqrt(7.0));
    CHECK(
        all_close(ops::rms_norm(x2, {2, 2}, Tensor(), 0.0).data(), Array{{{r, r}, {r, 5.0f * r}}}));
  }

  TEST_CASE("rms_norm matches LLaMA's formula in PyTorch, values and gradients") {
    for (const Golden& c : {Golden{kA_x, kA_w, kA_g, kA_y, kA_dx, kA_dw, std::nullopt},
                            Golden{kB_x, kB_w, kB_g, kB_y, kB_dx, kB_dw, 1e-5},
                            Golden{kC_x, kC_w, kC_g, kC_y, kC_dx, kC_dw, std::nullopt}}) {
      CAPTURE(c.eps.value_or(-1.0));
      Tensor x(values({2, 5}, c.x), true), w(values({5}, c.w), true);
      Tensor y = ops::rms_norm(x, {5}, w, c.eps);
      CHECK(all_close(y.data(), values({2, 5}, c.y), 1e-6, 1e-5));
      y.backward(values({2, 5}, c.g));
      CHECK(all_close(x.grad(), values({2, 5}, c.dx), 1e-5, 1e-4));
      CHECK(all_close(w.grad(), values({5}, c.dw), 1e-6, 1e-5));
    }
  }

  TEST_CASE("eps unset is float32's machine epsilon, PyTorch 2.4's torch.finfo default") {
    Tensor x(Array{{1e-4f, -2e-4f, 3e-4f}});
    const double eps = std::numeric_limits<float>::epsilon();
    CHECK(eps == std::ldexp(1.0, -23));
    CHECK(testing::bit_equal(ops::rms_norm(x, {3}).data(),
                             ops::rms_norm(x, {3}, Tensor(), eps).data()));
    CHECK_FALSE(testing::bit_equal(ops::rms_norm(x, {3}).data(),
                                   ops::rms_norm(x, {3}, Tensor(), 1e-5).data()));
  }

  TEST_CASE("rms_norm's gradient matches finite differences, for x and weight") {
    const Tensor x = testing::input({3, 4}, 5), w = testing::input({4}, 6);
    testing::check_gradients(
        [](const std::vector<Tensor>& t) { return ops::rms_norm(t[0], {4}, t[1], 1e-5); }, {x, w});
    testing::check_gradients(
        [](const std::vector<Tensor>& t) {
          return ops::rms_norm(t[0], {2, 3});
        },
        {testing::input({2, 2, 3}, 7)});
  }

  TEST_CASE("rms_norm refuses bad shapes and eps with PyTorch's messages") {
    const Tensor x = testing::input({2, 3}, 1, false);
    CHECK_THROWS_WITH_AS(
        ops::rms_norm(x, {}),
        doctest::Contains("Expected normalized_shape to be at least 1-dimensional"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::rms_norm(x, {-3}),
        doctest::Contains("expected non-negative sizes in normalized_shape, got [-3]"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::rms_norm(x, {4}),
        doctest::Contains(
            "Given normalized_shape=[4], expected input with shape [*, 4], but got input of "
            "size[2, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::rms_norm(x, {4}),
                         doctest::Contains("rms_norm: expected x to end with (4,), got (2, 3)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::rms_norm(x, {3}, Tensor(Array{1.0f, 1.0f})),
        doctest::Contains("Expected weight to be of same shape as normalized_shape, but got weight "
                          "of shape [2] and normalized_shape = [3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::rms_norm(x, {3}, Tensor(), -1e-5),
                         doctest::Contains("rms_norm: expected eps >= 0, got -1e-05"), ValueError);
    CHECK_THROWS_WITH_AS(ops::rms_norm(x, {3}, Tensor(), std::nan("")),
                         doctest::Contains("expected eps >= 0, got nan"), ValueError);
  }

  TEST_CASE("a row of zeros stays zero, eps keeping the division finite, and an empty x is fine") {
    Tensor x(Array{{0.0f, 0.0f}}, true);
    Tensor y = ops::rms_norm(x, {2});
    CHECK(testing::bit_equal(y.data(), Array{{0.0f, 0.0f}}));
    y.backward(Array{{1.0f, 2.0f}});
    CHECK(std::isfinite(x.grad()(0, 1)));
    CHECK(ops::rms_norm(Tensor(Array::from_shape({0, 4})), {4}).shape() == Shape{0, 4});
  }

  TEST_CASE("rms_norm records one entry, nothing under NoGradGuard, and frees it after backward") {
    Tensor x = testing::input({2, 3}, 2);
    const std::size_t before = autograd::tape().size();
    {
      autograd::NoGradGuard no_grad;
      ops::rms_norm(x, {3});
      CHECK(autograd::tape().size() == before);
    }
    Tensor loss = ops::sum(ops::rms_norm(x, {3}));
    CHECK(autograd::tape().size() == before + 2);
    loss.backward();
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
