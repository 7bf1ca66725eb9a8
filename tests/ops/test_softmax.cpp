// tests/ops/test_softmax.cpp: softmax and log_softmax along any dim — values, stability,
// PyTorch goldens, gradients, errors.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;
using tapegrad::testing::check_gradients;
using tapegrad::testing::input;
using tapegrad::testing::values;

namespace {

// Golden values: scripts/golden/loss.py, PyTorch 1.13 (Debian python3-torch). y = fn(LOGITS, dim),
// dx = d sum(y * G) / dx.
const Array LOGITS = {{0.5f, -1.25f, 2.0f, 0.0f, 1.5f},
                      {-0.75f, 0.25f, 3.0f, -2.0f, 0.125f},
                      {1.0f, 1.0f, -0.5f, 2.5f, -1.5f},
                      {0.0f, 4.0f, -3.0f, 1.25f, 0.75f}};
const Array G = {{0.1f, -0.2f, 0.3f, 0.4f, -0.5f},
                 {0.6f, 0.7f, -0.8f, 0.9f, 1.0f},
                 {-1.1f, 1.2f, 1.3f, -1.4f, 1.5f},
                 {1.6f, -1.7f, 1.8f, 1.9f, -2.0f}};
}  // namespace

TEST_SUITE("ops.softmax") {
  TEST_CASE("softmax rows sum to one and log_softmax is its log") {
    Tensor x(Array{{0.f, 0.f}, {1.f, 3.f}});
    const float e2 = std::exp(2.f);
    CHECK(all_close(ops::softmax(x).data(),
                    Array{{0.5f, 0.5f}, {1.f / (1.f + e2), e2 / (1.f + e2)}}));
    CHECK(all_close(ops::log_softmax(x).data(), Array{{std::log(0.5f), std::log(0.5f)},
                                                      {-std::log1p(e2), 2.f - std::log1p(e2)}}));
    CHECK(all_close(ops::softmax(x, 0).data(),
                    Array{{1.f / (1.f + std::exp(1.f)), 1.f / (1.f + std::exp(3.f))},
                          {1.f / (1.f + std::exp(-1.f)), 1.f / (1.f + std::exp(-3.f))}}));
    CHECK(ops::softmax(Tensor(Array(7.f))).item() == 1.f);
  }

  TEST_CASE("subtracting the max keeps huge logits finite") {
    Tensor x(Array{{1000.f, 1000.f}, {-1000.f, 0.f}});
    CHECK(all_close(ops::softmax(x).data(), Array{{0.5f, 0.5f}, {0.f, 1.f}}));
    CHECK(all_close(ops::log_softmax(x).data(),
                    Array{{-std::log(2.f), -std::log(2.f)}, {-1000.f, 0.f}}));
  }

  TEST_CASE("values and gradients match PyTorch (scripts/golden/loss.py, torch 1.13)") {
    struct Golden {
      const char* fn;
      std::int64_t dim;
      std::vector<float> y, dx;
    };
    const std::vector<Golden> goldens = {
        {"log_softmax",
         1,
         {-2.19503069f, -3.94503069f, -0.69503057f,  -2.69503069f,  -1.19503057f,
          -3.89028335f, -2.89028335f, -0.140283301f, -5.14028311f,  -3.01528335f,
          -1.91499496f, -1.91499496f, -3.41499496f,  -0.414994925f, -4.41499472f,
          -4.11505032f, -0.1150501f,  -7.11505032f,  -2.86505008f,  -3.36505008f},
         {0.0888644829f, -0.201935068f, 0.250094086f, 0.393245965f, -0.530269504f,
          0.550945103f,  0.566654861f,  -2.88586879f, 0.885945499f, 0.882323325f,
          -1.32101393f,  0.978986204f,  1.2506851f,   -2.39051533f, 1.48185802f,
          1.57387984f,   -3.12611437f,  1.7986995f,   1.80883157f,  -2.05529642f}},
        {"log_softmax",
         0,
         {-1.26462293f,  -5.3256197f,    -1.336869f,    -2.82186508f,  -0.57379657f,
          -2.51462293f,  -3.8256197f,    -0.336868942f, -4.82186508f,  -1.94879651f,
          -0.764622867f, -3.0756197f,    -3.836869f,    -0.321865171f, -3.57379651f,
          -1.76462293f,  -0.0756197423f, -6.33686876f,  -1.5718652f,   -1.32379651f},
         {-0.238814905f, -0.200000003f, -0.382933617f, 0.292909235f, -0.5f,
          0.502927899f,  0.699999988f,  -2.65640616f,  0.885506809f, 1.f,
          -1.65861142f,  1.20000005f,   1.24394131f,   -2.70463252f, 1.5f,
          1.39449835f,   -1.70000005f,  1.79539835f,   1.52621651f,  -2.f}},
        {"softmax",
         1,
         {0.111355163f,  0.0193506256f, 0.4990592f,      0.0675403178f,  0.302694708f,
          0.020439554f,  0.0555604659f, 0.869111955f,    0.00585603015f, 0.0490319394f,
          0.147342592f,  0.147342592f,  0.0328765735f,   0.660343647f,   0.012094616f,
          0.0163251236f, 0.89132148f,   0.000812779996f, 0.0569802746f,  0.0345602855f},
         {0.00749955559f, -0.00450196024f, 0.133422524f,   0.0248108059f, -0.161230907f,
          0.0243196208f,  0.0716636181f,   -0.182660252f,  0.0087244967f, 0.0779525042f,
          -0.037002828f,  0.301885128f,    0.0706473291f,  -0.363938212f, 0.0284086261f,
          0.0497674868f,  -0.224148452f,   0.00264033326f, 0.190799654f,  -0.0190592632f}},
        {"softmax",
         0,
         {0.282345772f,  0.00486533483f, 0.262666821f,   0.0594948716f,  0.563382447f,
          0.0808934122f, 0.0218049195f,  0.71400243f,    0.00805175491f, 0.142445385f,
          0.465509444f,  0.0461610109f,  0.0215610042f,  0.724795878f,   0.0280491598f,
          0.171251357f,  0.927168727f,   0.00176983513f, 0.207657501f,   0.266123027f},
         {0.0737734511f, 0.00635657599f, 0.199938565f,   0.058847595f,  0.0729119033f,
          0.0615831539f, 0.0481126271f,  -0.241913378f,  0.0119900331f, 0.232103094f,
          -0.436979502f, 0.124934934f,   0.0379729569f,  -0.587722123f, 0.0597283877f,
          0.301622897f,  -0.179404095f,  0.00400192803f, 0.516884565f,  -0.364743382f}},
    };
    for (const Golden& g : goldens) {
      CAPTURE(g.fn);
      CAPTURE(g.dim);
      Tensor x(LOGITS, true);
      Tensor y =
          std::string(g.fn) == "softmax" ? ops::softmax(x, g.dim) : ops::log_softmax(x, g.dim);
      CHECK(all_close(y.data(), values({4, 5}, g.y), 1e-6, 1e-6));
      ops::sum(ops::mul(y, Tensor(G))).backward();
      CHECK(all_close(x.grad(), values({4, 5}, g.dx), 1e-6, 1e-5));
    }
  }

  TEST_CASE("any dim gives bit-for-bit the last-dim result on the transposed input") {
    Tensor x = input({3, 4, 5}, 1);
    autograd::NoGradGuard no_grad;
    for (std::int64_t dim : {0, 1}) {
      CAPTURE(dim);
      Tensor moved = ops::transpose(x, dim, -1);
      CHECK(bit_equal(ops::softmax(x, dim).data(),
                      ops::transpose(ops::softmax(moved, -1), dim, -1).data()));
      CHECK(bit_equal(ops::log_softmax(x, dim).data(),
                      ops::transpose(ops::log_softmax(moved, -1), dim, -1).data()));
    }
  }

  TEST_CASE("softmax and log_softmax pass gradcheck along every dim") {
    Tensor x = input({2, 3, 4}, 2);
    for (std::int64_t dim : {-1, 0, 1, 2}) {
      CAPTURE(dim);
      check_gradients([dim](const std::vector<Tensor>& t) { return ops::softmax(t[0], dim); }, {x});
      check_gradients([dim](const std::vector<Tensor>& t) { return ops::log_softmax(t[0], dim); },
                      {x});
    }
  }

  TEST_CASE("a dim out of range is an IndexError naming the op") {
    Tensor x(Array::from_shape({2, 3}));
    CHECK_THROWS_WITH_AS(
        ops::softmax(x, 2),
        doctest::Contains("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
        IndexError);
    CHECK_THROWS_WITH_AS(ops::log_softmax(x, -3),
                         doctest::Contains("log_softmax: a tensor of rank 2 has no dimension -3"),
                         IndexError);
  }

  TEST_CASE(
      "softmax ops record nothing under NoGradGuard, and leave an empty tape after backward") {
    Tensor x = input({2, 3}, 3);
    {
      autograd::NoGradGuard no_grad;
      ops::softmax(x);
      ops::log_softmax(x, 0);
      CHECK(autograd::tape().empty());
    }
    ops::sum(ops::mul(ops::softmax(x), ops::log_softmax(x, 0))).backward();
    CHECK(autograd::tape().empty());
    CHECK(x.has_grad());
  }

}  // TEST_SUITE
