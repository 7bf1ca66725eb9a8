// tests/ops/test_kl_div.cpp: kl_div — hand values, PyTorch goldens for each reduction and
// log_target, gradcheck, errors, no-grad.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::values;

namespace {

// Golden inputs and values: scripts/golden/transformer_layers.py, PyTorch 1.13.
const Array LOGITS = {{0.5f, -1.25f, 2.0f, 0.0f, 1.5f},
                      {-0.75f, 0.25f, 3.0f, -2.0f, 0.125f},
                      {1.0f, 1.0f, -0.5f, 2.5f, -1.5f},
                      {0.0f, 4.0f, -3.0f, 1.25f, 0.75f}};
const Array TARGET = {{0.0f, 0.1f, 0.6f, 0.1f, 0.2f},
                      {0.25f, 0.25f, 0.25f, 0.25f, 0.0f},
                      {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
                      {0.5f, 0.0f, 0.0f, 0.0f, 0.5f}};
Tensor log_probs() {
  autograd::NoGradGuard no_grad;
  return Tensor(ops::log_softmax(Tensor(LOGITS)).data(), true);
}
}  // namespace

TEST_SUITE("ops.kl_div") {
  TEST_CASE("each element costs t log t - t x, and a zero target costs nothing") {
    Tensor x(Array{std::log(0.5f), std::log(0.25f), -7.f}, true);
    const Array t = {0.5f, 0.5f, 0.f};
    Tensor loss = ops::kl_div(x, t, KLDivOptions().reduction("sum"));
    CHECK(loss.item() ==
          doctest::Approx(0.5 * std::log(0.5 / 0.25)));  // 0.5 log(0.5/0.5) + 0.5 log(0.5/0.25)
    loss.backward();
    CHECK(all_close(x.grad(), Array{-0.5f, -0.5f, 0.f}));
  }

  TEST_CASE("every reduction matches PyTorch") {
    struct Golden {
      const char* reduction;
      std::vector<float> loss, dx;
    };
    const std::vector<Golden> goldens = {
        {"sum", {4.90702295f}, {-0.f,   -0.100000001f, -0.600000024f, -0.100000001f, -0.200000003f,
                                -0.25f, -0.25f,        -0.25f,        -0.25f,        -0.f,
                                -0.f,   -0.f,          -0.f,          -0.f,          -0.f,
                                -0.5f,  -0.f,          -0.f,          -0.f,          -0.5f}},
        {"mean", {0.245351151f}, {-0.f,           -0.00500000035f,
                                  -0.0300000012f, -0.00500000035f,
                                  -0.0100000007f, -0.0125000002f,
                                  -0.0125000002f, -0.0125000002f,
                                  -0.0125000002f, -0.f,
                                  -0.f,           -0.f,
                                  -0.f,           -0.f,
                                  -0.f,           -0.0250000004f,
                                  -0.f,           -0.f,
                                  -0.f,           -0.0250000004f}},
        {"batchmean", {1.22675574f}, {-0.f,           -0.0250000004f, -0.150000006f, -0.0250000004f,
                                      -0.0500000007f, -0.0625f,       -0.0625f,      -0.0625f,
                                      -0.0625f,       -0.f,           -0.f,          -0.f,
                                      -0.f,           -0.f,           -0.f,          -0.125f,
                                      -0.f,           -0.f,           -0.f,          -0.125f}},
        {"none",
         {0.f,          0.164244577f, 0.110522985f,  0.0392445773f, -0.0828814656f,
          0.625997245f, 0.375997245f, -0.311502755f, 0.938497186f,  0.f,
          0.f,          0.f,          0.f,           0.f,           0.f,
          1.71095157f,  0.f,          0.f,           0.f,           1.33595145f},
         {-0.f,    -0.0100000007f, -0.120000005f, -0.0300000012f, -0.0800000057f,
          -0.125f, -0.150000006f,  -0.174999997f, -0.200000003f,  -0.f,
          -0.f,    -0.f,           -0.f,          -0.f,           -0.f,
          -0.75f,  -0.f,           -0.f,          -0.f,           -0.949999988f}},
    };
    for (const Golden& g : goldens) {
      CAPTURE(g.reduction);
      Tensor x = log_probs();
      Tensor loss = ops::kl_div(x, TARGET, KLDivOptions().reduction(g.reduction));
      const bool none = std::string(g.reduction) == "none";
      CHECK(all_close(loss.data(), none ? values({4, 5}, g.loss) : Array(g.loss[0]), 1e-6, 1e-5));
      if (none) {
        Array wn = Array::from_shape({4, 5});
        for (std::size_t i = 0; i < 20; ++i)
          wn.data()[i] = static_cast<float>(i) / 10.f;  // the script's WN
        ops::sum(loss * Tensor(wn)).backward();
      } else {
        loss.backward();
      }
      CHECK(all_close(x.grad(), values({4, 5}, g.dx), 1e-7, 1e-5));
    }
  }

  TEST_CASE("log_target reads the target as log-probabilities, as PyTorch") {
    Tensor x = log_probs();
    Array log_t;
    {
      autograd::NoGradGuard no_grad;
      log_t = ops::log_softmax(Tensor(Array(-LOGITS))).data();
    }
    Tensor loss = ops::kl_div(x, log_t, KLDivOptions().reduction("sum").log_target(true));
    CHECK(loss.item() == doctest::Approx(15.1732941).epsilon(1e-6));
    loss.backward();
    CHECK(all_close(
        x.grad(),
        values({4, 5},
               {-0.111181118f,  -0.639803052f,    -0.0248078611f,  -0.183306649f,  -0.0409012474f,
                -0.188729018f,  -0.0694295242f,   -0.00443848222f, -0.658729017f,  -0.0786739588f,
                -0.0529455952f, -0.0529455952f,   -0.237285703f,   -0.0118137598f, -0.645009398f,
                -0.0457399562f, -0.000837756495f, -0.918711543f,   -0.0131047163f, -0.0216060244f}),
        1e-7, 1e-5));
  }

  TEST_CASE("kl_div passes gradcheck for every reduction") {
    Generator gen(1);
    Tensor x(randn({3, 4}, &gen), true);
    const Array t = rand({3, 4}, &gen);
    for (const char* red : {"sum", "mean", "batchmean", "none"}) {
      for (const bool log_target : {false, true}) {
        const GradcheckResult r = gradcheck(
            [&](const std::vector<Tensor>& in) {
              return ops::kl_div(in[0], t, KLDivOptions().reduction(red).log_target(log_target));
            },
            {x});
        CHECK_MESSAGE(r.ok, r.message);
      }
    }
  }

  TEST_CASE("a zero target with an infinite log-probability is NaN, as in PyTorch") {
    Tensor x(Array{-INFINITY, 0.f});
    CHECK(std::isnan(ops::kl_div(x, Array{0.f, 1.f}, KLDivOptions().reduction("sum")).item()));
  }

  TEST_CASE("kl_div reports a wrong reduction and mismatched shapes") {
    Tensor x(xt::zeros<float>({2, 3}));
    CHECK_THROWS_WITH_AS(ops::kl_div(x, xt::zeros<float>({2, 3}), KLDivOptions().reduction("avg")),
                         doctest::Contains("avg is not a valid value for reduction"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::kl_div(x, xt::zeros<float>({3, 2})),
        doctest::Contains("expected target of the input's shape (2, 3), got (3, 2)"), ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::kl_div(Tensor(Array(1.f)), Array(1.f), KLDivOptions().reduction("batchmean")),
        doctest::Contains("batch dimension"), ShapeError);
  }

  TEST_CASE("kl_div records nothing under NoGradGuard and leaves an empty tape after backward") {
    Tensor x = log_probs();
    {
      autograd::NoGradGuard no_grad;
      CHECK_FALSE(ops::kl_div(x, TARGET).requires_grad());
      CHECK(autograd::tape().empty());
    }
    ops::kl_div(x, TARGET).backward();
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
