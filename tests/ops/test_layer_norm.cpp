// tests/ops/test_layer_norm.cpp: layer_norm in both variants — hand values, PyTorch goldens,
// gradcheck, errors, no-grad.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::values;

namespace {
const LayerNormFuncOptions ANNOTATED =
    LayerNormFuncOptions().variant(LayerNormVariant::annotated).eps(1e-6);

// Golden values: scripts/golden/transformer_layers.py, PyTorch 1.13 (Debian python3-torch).
// pytorch: F.layer_norm(X, (5,), W, B, eps=1e-5); annotated: the tutorial's
// W * (X - mean) / (std + 1e-6) + B. Gradients of sum(y * G).
const Array X = {{0.5f, -1.25f, 2.0f, 0.0f, 1.5f}, {-0.75f, 0.25f, 3.0f, -2.0f, 0.125f}};
const Array W = {1.0f, 0.5f, -1.5f, 2.0f, 0.25f};
const Array B = {0.1f, -0.2f, 0.3f, 0.0f, 0.5f};
const Array G = {{0.1f, -0.2f, 0.3f, 0.4f, -0.5f}, {0.6f, 0.7f, -0.8f, 0.9f, 1.0f}};
}  // namespace

TEST_SUITE("ops.layer_norm") {
  TEST_CASE("a row is centred and scaled by its biased or unbiased standard deviation") {
    Tensor x(Array{{1.f, 2.f, 3.f, 6.f}});  // mean 3, sum of squares of c = 4 + 1 + 0 + 9 = 14
    const float biased = std::sqrt(14.f / 4.f), unbiased = std::sqrt(14.f / 3.f);
    const Array c = {{-2.f, -1.f, 0.f, 3.f}};
    CHECK(all_close(ops::layer_norm(x, {4}, {}, {}, LayerNormFuncOptions().eps(0.0)).data(),
                    Array(c / biased)));
    CHECK(all_close(
        ops::layer_norm(x, {4}, {}, {},
                        LayerNormFuncOptions().eps(0.0).variant(LayerNormVariant::annotated))
            .data(),
        Array(c / unbiased)));
    // eps goes under the square root in one variant, onto the std in the other
    CHECK(all_close(ops::layer_norm(x, {4}, {}, {}, LayerNormFuncOptions().eps(0.5)).data(),
                    Array(c / std::sqrt(14.f / 4.f + 0.5f))));
    CHECK(all_close(
        ops::layer_norm(x, {4}, {}, {},
                        LayerNormFuncOptions().eps(0.5).variant(LayerNormVariant::annotated))
            .data(),
        Array(c / (unbiased + 0.5f))));
  }

  TEST_CASE("weight scales and bias shifts each normalised column") {
    Tensor x(Array{{1.f, 3.f}, {5.f, 5.f}});
    Tensor w(Array{2.f, 3.f}), b(Array{10.f, 20.f});
    // row 0 normalises to about (-1, 1); row 1 is constant: x - mean = 0, so y = b exactly
    CHECK(all_close(ops::layer_norm(x, {2}, w, b).data(), Array{{8.f, 23.f}, {10.f, 20.f}}, 1e-4));
  }

  TEST_CASE("values and gradients match PyTorch in both variants") {
    struct Golden {
      LayerNormFuncOptions options;
      std::vector<float> y, dx, dw;
    };
    const std::vector<Golden> goldens = {
        {LayerNormFuncOptions(),
         {0.0563149527f, -0.986330628f, -1.60029888f, -0.961070776f, 0.707503915f, -0.431278616f,
          -0.162051529f, -2.31844473f, -2.58049631f, 0.5f},
         {0.0411423519f, -0.375489295f, -0.232057452f, 0.583620965f, -0.017216593f, -0.179263502f,
          -0.292724371f, 0.328790784f, 0.501430809f, -0.358233571f},
         {-0.323135674f, 0.367660105f, -1.01644409f, -1.35343742f, -0.41500783f}},
        {ANNOTATED,
         {0.0609267876f, -0.90331763f, -1.39968443f, -0.859610498f, 0.685597718f, -0.375190735f,
          -0.16605781f, -2.0420115f, -2.30806923f, 0.5f},
         {0.0367989093f, -0.335850388f, -0.207557887f, 0.522007585f, -0.0153982118f, -0.160338551f,
          -0.261821032f, 0.294080108f, 0.448493749f, -0.320414335f},
         {-0.28902176f, 0.328846097f, -0.909135938f, -1.21055317f, -0.371195406f}},
    };
    for (const Golden& g : goldens) {
      Tensor x(X, true), w(W, true), b(B, true);
      Tensor y = ops::layer_norm(x, {5}, w, b, g.options);
      CHECK(all_close(y.data(), values({2, 5}, g.y), 1e-6, 1e-5));
      ops::sum(y * Tensor(G)).backward();
      CHECK(all_close(x.grad(), values({2, 5}, g.dx), 1e-6, 1e-5));
      CHECK(all_close(w.grad(), values({5}, g.dw), 1e-6, 1e-5));
      CHECK(all_close(b.grad(), Array{0.700000048f, 0.5f, -0.5f, 1.29999995f, 0.5f}, 1e-6, 1e-5));
    }
  }

  TEST_CASE("layer_norm passes gradcheck for x, weight and bias in both variants") {
    Generator gen(7);
    for (const LayerNormFuncOptions& o : {LayerNormFuncOptions(), ANNOTATED}) {
      Tensor x(randn({2, 3, 4}, &gen), true), w(randn({4}, &gen), true), b(randn({4}, &gen), true);
      const GradcheckResult r = gradcheck(
          [&](const std::vector<Tensor>& t) { return ops::layer_norm(t[0], {4}, t[1], t[2], o); },
          {x, w, b});
      CHECK_MESSAGE(r.ok, r.message);
      // over the last two dimensions, without affine parameters
      Tensor x2(randn({2, 3, 4}, &gen), true);
      const GradcheckResult r2 = gradcheck(
          [&](const std::vector<Tensor>& t) {
            return ops::layer_norm(t[0], {3, 4}, {}, {}, o);
          },
          {x2});
      CHECK_MESSAGE(r2.ok, r2.message);
    }
  }

  TEST_CASE("normalising over several trailing dimensions treats them as one row") {
    Generator gen(3);
    Tensor x(randn({2, 3, 4}, &gen));
    Tensor flat = ops::reshape(x, {2, 12});
    CHECK(all_close(ops::layer_norm(x, {3, 4}).data(),
                    ops::reshape(ops::layer_norm(flat, {12}), {2, 3, 4}).data()));
  }

  TEST_CASE("the annotated variant of a one-element row is NaN, as torch.std of one element") {
    Tensor x(values({1, 1}, {2.f}));
    CHECK(std::isnan(ops::layer_norm(x, {1}, {}, {}, ANNOTATED).item()));
    CHECK(ops::layer_norm(x, {1}).item() == 0.f);
  }

  TEST_CASE("shape and option mistakes are reported with PyTorch's text first") {
    Tensor x(xt::zeros<float>({2, 3}));
    CHECK_THROWS_WITH_AS(
        ops::layer_norm(x, {4}),
        doctest::Contains(
            "Given normalized_shape=[4], expected input with shape [*, 4], but got input of "
            "size[2, 3] | layer_norm: expected x to end with (4,), got (2, 3)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(x, {}), doctest::Contains("at least 1-dimensional"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(x, {-3}), doctest::Contains("non-negative sizes"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        ops::layer_norm(x, {3}, Tensor(xt::ones<float>({2}))),
        doctest::Contains("Expected weight to be of same shape as normalized_shape, but got weight "
                          "of shape [2] and normalized_shape = [3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(x, {3}, {}, Tensor(xt::ones<float>({3, 1}))),
                         doctest::Contains("expected bias of shape (3,), got (3, 1)"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(x, {3}, {}, {}, LayerNormFuncOptions().eps(-1.0)),
                         doctest::Contains("expected eps >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(x, {3}, {}, {}, LayerNormFuncOptions().eps(std::nan(""))),
                         doctest::Contains("expected eps >= 0"), ValueError);
  }

  TEST_CASE(
      "layer_norm records nothing under NoGradGuard and leaves an empty tape after backward") {
    Tensor x(X, true), w(W, true);
    {
      autograd::NoGradGuard no_grad;
      Tensor y = ops::layer_norm(x, {5}, w);
      CHECK(autograd::tape().empty());
      CHECK_FALSE(y.requires_grad());
    }
    ops::sum(ops::layer_norm(x, {5}, w)).backward();
    CHECK(autograd::tape().empty());
    CHECK(w.has_grad());
  }

  TEST_CASE("an input that needs no gradient gets none, and frozen affine parameters are skipped") {
    Tensor x(X), w(W, true), b(B);
    ops::sum(ops::layer_norm(x, {5}, w, b) * Tensor(G)).backward();
    CHECK(w.has_grad());
    CHECK_FALSE(x.has_grad());
    CHECK_FALSE(b.has_grad());
  }

}  // TEST_SUITE
