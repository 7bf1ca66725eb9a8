// tests/nn/test_dropout.cpp: the Dropout module — options, training vs eval, the seed taken from
// the generator and the numbered calls, last_mask() computed again, reseeding, backward through
// the same mask, printing. The op's statistics and the mask's definition: tests/ops/test_dropout.cpp.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
Tensor randn_tensor(const Shape& shape, std::uint64_t seed, bool requires_grad = false) {
  Generator g(seed);
  return Tensor(randn(shape, &g), requires_grad);
}
}  // namespace

TEST_SUITE("nn.dropout") {
  TEST_CASE("probabilities outside 0..1 and NaN are refused with PyTorch's text") {
    CHECK_THROWS_WITH_AS(
        Dropout(-0.1),
        doctest::Contains("dropout probability has to be between 0 and 1, but got -0.1"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        Dropout(1.1),
        doctest::Contains("dropout probability has to be between 0 and 1, but got 1.1"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        Dropout(DropoutOptions().p(NAN)),
        doctest::Contains("dropout probability has to be between 0 and 1, but got nan"),
        ValueError);
    CHECK_NOTHROW(Dropout(0.0));
    CHECK_NOTHROW(Dropout(1.0));
  }

  TEST_CASE("the options default to p = 0.5, not in place, and print as PyTorch's") {
    Dropout d;
    CHECK(d.options().p() == 0.5);
    CHECK_FALSE(d.options().inplace());
    CHECK(d.repr() == "Dropout(p=0.5, inplace=False)");
    CHECK(Dropout(0.1).repr() == "Dropout(p=0.1, inplace=False)");
    CHECK(Dropout(DropoutOptions(0.25).inplace(true)).repr() == "Dropout(p=0.25, inplace=True)");
  }

  TEST_CASE("in eval mode forward returns the same tensor and draws nothing") {
    auto gen = std::make_shared<Generator>(3);
    Dropout d(0.5, gen);
    d.eval();
    const std::string state = gen->state();
    const Tensor x = randn_tensor({4, 5}, 1, true);
    const Tensor y = d.forward(x);
    CHECK(y.is_same(x));
    CHECK(gen->state() == state);
    CHECK(d.last_mask().size() == 0);
  }

  TEST_CASE("p = 0 is the identity and p = 1 gives zeros") {
    const Tensor x = randn_tensor({3, 4}, 2);
    CHECK(Dropout(0.0).forward(x).is_same(x));
    const Tensor z = Dropout(1.0).forward(x);
    CHECK(all_close(z.data(), xt::zeros<float>({3, 4}), 0,
                    0));  // x * 0: -0.0 for negative x, as PyTorch
  }

  TEST_CASE(
      "training mode takes a seed from the generator at the first forward and numbers its calls") {
    auto gen = std::make_shared<Generator>(42);
    Dropout d(0.3, gen);
    CHECK(gen->state() == Generator(42).state());  // building it draws nothing
    const Tensor x = randn_tensor({6, 7}, 4, true);
    const Tensor y = d.forward(x);
    const std::uint64_t seed = Generator(42).next_u64();  // the one draw
    CHECK(d.seed() == seed);
    CHECK(d.calls() == 1);
    const auto& mask = d.last_mask();
    REQUIRE(mask.shape() == x.shape());
    CHECK(mask == ops::dropout_mask(x.shape(), 0.3, {seed, 0}));
    CHECK(bit_equal(y.data(), ops::dropout(x, 0.3, true, ops::DropoutStream{seed, 0}).data()));
    const float scale = 1.0f / static_cast<float>(1.0 - 0.3);
    for (std::size_t i = 0; i < x.numel(); ++i)
      CHECK(y.data().data()[i] == (mask.data()[i] ? x.data().data()[i] * scale : 0.0f));
    SUBCASE("backward uses the same mask") {
      ops::sum(y).backward();
      for (std::size_t i = 0; i < x.numel(); ++i)
        CHECK(x.grad().data()[i] == (mask.data()[i] ? scale : 0.0f));
    }
    SUBCASE("the next forward is call 1, with the same seed and no draw") {
      const std::string state = gen->state();
      const Tensor y2 = d.forward(x);
      CHECK(gen->state() == state);
      CHECK(d.calls() == 2);
      CHECK(d.last_mask() == ops::dropout_mask(x.shape(), 0.3, {seed, 1}));
      CHECK(bit_equal(y2.data(), ops::dropout(x, 0.3, true, ops::DropoutStream{seed, 1}).data()));
      ops::sum(y2).backward();
    }
  }

  TEST_CASE("the same seed gives the same mask and a later call draws a new one") {
    const Tensor x = randn_tensor({10, 10}, 5);
    Dropout a(0.5, std::make_shared<Generator>(9)), b(0.5, std::make_shared<Generator>(9));
    a.forward(x);
    b.forward(x);
    CHECK(a.last_mask() == b.last_mask());
    const auto first = a.last_mask();
    a.forward(x);
    CHECK_FALSE(a.last_mask() == first);
  }

  TEST_CASE(
      "reseeding the generator restarts the masks, and two layers on one generator get different "
      "seeds") {
    auto gen = std::make_shared<Generator>(3);
    Dropout a(0.5, gen), b(0.5, gen);
    const Tensor x = randn_tensor({8, 8}, 6);
    a.forward(x);
    b.forward(x);
    CHECK(a.seed() != b.seed());  // one draw each, in forward order
    CHECK_FALSE(a.last_mask() == b.last_mask());
    const auto first = a.last_mask();
    a.forward(x);
    CHECK_FALSE(a.last_mask() == first);
    gen->manual_seed(3);
    a.forward(x);
    CHECK(a.calls() == 1);
    CHECK(a.last_mask() == first);  // seed 3's first draw, call 0 again
    SUBCASE("set_state counts as reseeding") {
      gen->set_state(Generator(3).state());
      a.forward(x);
      CHECK(a.last_mask() == first);
    }
  }

  TEST_CASE("set_stream_state continues another layer's stream exactly") {
    auto gen = std::make_shared<Generator>(4);
    Dropout a(0.5, gen), b(0.5, std::make_shared<Generator>(99));
    const Tensor x = randn_tensor({5, 5}, 7);
    a.forward(x);
    a.forward(x);
    b.set_stream_state(a.seed(), a.calls());
    CHECK_FALSE(b.reseed_pending());
    a.forward(x);
    b.forward(x);
    CHECK(a.last_mask() == b.last_mask());
    CHECK(b.calls() == 3);
    Dropout c(0.5, gen);
    c.set_stream_state(0, 0, /*reseed_pending=*/true);
    CHECK(c.reseed_pending());
  }

  TEST_CASE("training mode still drops under NoGradGuard (grad mode is not training mode)") {
    Dropout d(0.5, std::make_shared<Generator>(1));
    const Tensor x(xt::ones<float>({50}));
    autograd::NoGradGuard no_grad;
    const Tensor y = d.forward(x);
    CHECK(std::count(y.data().begin(), y.data().end(), 0.0f) > 0);
  }

  TEST_CASE("the gradient matches finite differences for a fixed mask") {
    Dropout d(0.5, std::make_shared<Generator>(2));
    const Tensor x = randn_tensor({3, 4}, 6, true);
    d.forward(x);  // the first mask of seed 2
    const auto mask = d.last_mask();
    // gradcheck calls fn many times; each call is a new mask. Re-seed before each call to fix it.
    auto gen = std::make_shared<Generator>(2);
    Dropout fixed(0.5, gen);
    const auto r = gradcheck(
        [&](const std::vector<Tensor>& t) {
          gen->manual_seed(2);
          return fixed.forward(t[0]);
        },
        {x});
    CHECK_MESSAGE(r.ok, r);
    CHECK(fixed.last_mask() == mask);
  }

  TEST_CASE("inplace overwrites its input, and refuses a leaf that requires grad") {
    Dropout d(DropoutOptions(0.5).inplace(true), std::make_shared<Generator>(8));
    Tensor x = randn_tensor({4, 4}, 7);
    const std::uint64_t v = x.version();
    const Tensor y = d.forward(x);
    CHECK(x.version() == v + 1);
    CHECK(bit_equal(x.data(), y.data()));
    Tensor leaf = randn_tensor({4, 4}, 7, true);
    CHECK_THROWS_WITH_AS(d.forward(leaf),
                         doctest::Contains("a leaf Variable that requires grad is being used in an "
                                           "in-place operation."),
                         AutogradError);
  }
  TEST_CASE(
      "forward_added is forward(x + rows) bit for bit, with the same last_mask and gradient") {
    const Tensor x1 = randn_tensor({4, 6, 8}, 21, true), x2 = randn_tensor({4, 6, 8}, 21, true);
    const Array table = randn_tensor({1, 10, 8}, 22).data();
    Array rows = Array::from_shape({6, 8});
    std::copy_n(table.data(), rows.size(), rows.data());
    Dropout fused(0.2, std::make_shared<Generator>(5)), plain(0.2, std::make_shared<Generator>(5));
    const Array dy = randn_tensor({4, 6, 8}, 23).data();
    const Tensor a = fused.forward_added(x1, table);
    a.backward(dy);  // one graph at a time: backward clears the tape
    const Tensor b = plain.forward(x2 + Tensor(rows));
    b.backward(dy);
    CHECK(bit_equal(a.data(), b.data()));
    CHECK(fused.last_mask() == plain.last_mask());
    CHECK(bit_equal(x1.grad(), x2.grad()));
    fused.eval();
    const auto mask_before = fused.last_mask();
    CHECK(bit_equal(fused.forward_added(x1, table).data(), (x1 + Tensor(rows)).data()));
    CHECK(fused.last_mask() == mask_before);  // no draw in eval mode
  }

}  // TEST_SUITE
