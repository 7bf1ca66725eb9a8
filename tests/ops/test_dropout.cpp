// tests/ops/test_dropout.cpp: ops::dropout: the probability check, the identity cases, the mask
// of a stream (element e from Philox block e / 4, word e % 4) and the scaling, statistics on 1e6
// elements, backward through the same mask, determinism by seed, the generator form (one seed
// drawn per call), and the in-place rules. Philox itself: tests/core/test_philox.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <tapegrad/core.hpp>

#include "../../src/core/philox.hpp"
#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
using Mask8 = xt::xarray<std::uint8_t>;

Tensor input(const Shape& shape, std::uint64_t seed, bool requires_grad = false) {
  Generator g(seed);
  return Tensor(randn(shape, &g), requires_grad);
}
// The mask by its definition, one element at a time: x = word e % 4 of the Philox4x32-10 block
// with key (seed lo, seed hi) and counter (e/4 lo, e/4 hi, call lo, call hi); u = (x >> 8) 2^-24;
// keep iff u >= p (compared in double, as written).
Mask8 expected_mask(const Shape& shape, double p, ops::DropoutStream s) {
  Mask8 m = Mask8::from_shape(shape);
  const std::uint32_t key[2] = {std::uint32_t(s.seed), std::uint32_t(s.seed >> 32)};
  for (std::size_t e = 0; e < m.size(); ++e) {
    const std::uint64_t q = e / 4;
    const std::uint32_t ctr[4] = {std::uint32_t(q), std::uint32_t(q >> 32), std::uint32_t(s.call),
                                  std::uint32_t(s.call >> 32)};
    std::uint32_t out[4];
    detail::philox4x32_10(ctr, key, out);
    m.data()[e] = double(out[e % 4] >> 8) * 0x1.0p-24 >= p;
  }
  return m;
}
// The stream ops::dropout(x, p, training, gen) uses: one seed drawn from gen, call 0.
ops::DropoutStream stream_of(std::uint64_t generator_seed) {
  return {Generator(generator_seed).next_u64(), 0};
}
Mask8 mask_of(const Tensor& y) {  // which elements survived (x has no zeros)
  Mask8 m = Mask8::from_shape(y.shape());
  for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = y.data().data()[i] != 0.0f;
  return m;
}
}  // namespace

TEST_SUITE("ops.dropout") {
  TEST_CASE("p outside 0..1 or NaN is a ValueError with PyTorch's text") {
    CHECK_THROWS_WITH_AS(
        ops::check_dropout_probability(-0.1),
        doctest::Contains("dropout probability has to be between 0 and 1, but got -0.1"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        ops::check_dropout_probability(1.1),
        doctest::Contains("dropout probability has to be between 0 and 1, but got 1.1"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        ops::check_dropout_probability(std::nan("")),
        doctest::Contains("dropout probability has to be between 0 and 1, but got nan"),
        ValueError);
    CHECK_NOTHROW(ops::check_dropout_probability(0.0));
    CHECK_NOTHROW(ops::check_dropout_probability(1.0));
    Generator gen(0);
    Tensor x = input({2, 3}, 1, true);
    CHECK_THROWS_AS(ops::dropout(x, 1.5, true, gen), ValueError);
    CHECK_THROWS_AS(ops::dropout(x, std::nan(""), false, gen), ValueError);  // checked even in eval
    CHECK(autograd::tape().empty());
  }

  TEST_CASE(
      "eval mode, p = 0 and empty inputs return the same tensor, record nothing and draw nothing") {
    Tensor x = input({3, 4}, 2, true);
    const Array before = x.data();
    Generator gen(5);
    SUBCASE("eval") {
      Tensor y = ops::dropout(x, 0.5, /*training=*/false, gen);
      CHECK(y.is_same(x));
      CHECK(bit_equal(y.data(), before));
    }
    SUBCASE("p = 0") {
      Tensor y = ops::dropout(x, 0.0, true, gen);
      CHECK(y.is_same(x));
    }
    SUBCASE("empty") {
      Tensor e(Array::from_shape({0, 4}), true);
      Tensor y = ops::dropout(e, 0.5, true, gen);
      CHECK(y.is_same(e));
    }
    SUBCASE("eval, in place") {
      Tensor y = ops::dropout(x, 0.5, false, gen, /*inplace=*/true);
      CHECK(y.is_same(x));
      CHECK(x.version() == 0);
    }
    CHECK(autograd::tape().empty());
    Generator fresh(5);
    CHECK(gen.next_u64() == fresh.next_u64());  // the stream did not move
  }

  TEST_CASE("training keeps element e iff its Philox uniform is >= p, and scales what it keeps") {
    const double p = 0.3;
    // Sizes that end inside a Philox block, inside a 64-block group and inside a 256-element chunk,
    // and a stream whose seed and call use both halves of each counter word.
    for (const Shape& shape : {Shape{4, 5, 3}, Shape{1}, Shape{7}, Shape{1000, 3}}) {
      for (const ops::DropoutStream stream :
           {ops::DropoutStream{42, 0},
            ops::DropoutStream{0xA4093822299F31D0ull, 0x1234567890ull}}) {
        CAPTURE(shape.size());
        Tensor x = input(shape, 3);
        Tensor y = ops::dropout(x, p, true, stream);
        const Mask8 expected = expected_mask(x.shape(), p, stream);
        CHECK(ops::dropout_mask(shape, p, stream) == expected);
        const float scale = 1.0f / static_cast<float>(1.0 - p);
        for (std::size_t i = 0; i < x.numel(); ++i) {
          const float want = x.data().data()[i] * (expected.data()[i] ? scale : 0.0f);
          CHECK(std::memcmp(&y.data().data()[i], &want, sizeof(float)) == 0);
        }
      }
    }
  }

  TEST_CASE(
      "the generator form draws one seed per call that drops, and uses the stream {seed, 0}") {
    const double p = 0.3;
    Tensor x = input({4, 5, 3}, 3);
    Generator gen(42);
    Tensor y = ops::dropout(x, p, true, gen);
    CHECK(bit_equal(y.data(), ops::dropout(x, p, true, stream_of(42)).data()));
    Generator after(42);
    after.next_u64();
    CHECK(gen.next_u64() == after.next_u64());  // exactly one draw was taken
    Generator again(42);
    Tensor y1 = ops::dropout(x, p, true, again), y2 = ops::dropout(x, p, true, again);
    CHECK(bit_equal(y1.data(), y.data()));    // reseeding replays the masks
    CHECK_FALSE(mask_of(y2) == mask_of(y1));  // each call its own
    CHECK(autograd::tape().empty());          // x does not require grad
  }

  TEST_CASE("masks of other calls, seeds or offsets are other masks: no two streams overlap") {
    const Shape s{4096};
    const Mask8 base = ops::dropout_mask(s, 0.5, {7, 0});
    CHECK_FALSE(ops::dropout_mask(s, 0.5, {7, 1}) == base);
    CHECK_FALSE(ops::dropout_mask(s, 0.5, {8, 0}) == base);
    CHECK_FALSE(ops::dropout_mask(s, 0.5, {7, std::uint64_t{1} << 32}) ==
                base);  // the call's high word counts
    CHECK_FALSE(ops::dropout_mask(s, 0.5, {7 + (std::uint64_t{1} << 32), 0}) ==
                base);  // the seed's high word too
    const Mask8 longer = ops::dropout_mask({8192}, 0.5, {7, 0});
    CHECK(std::equal(base.begin(), base.end(),
                     longer.begin()));  // a prefix: element e depends on e alone
  }

  TEST_CASE("the scale is 1.0f / float(1 - p), PyTorch's rounding") {
    Tensor x(Array(xt::ones<float>({64})));
    Generator gen(1);
    Tensor y = ops::dropout(x, 0.1, true, gen);
    // float(1 - 0.1) = 0.899999976f and 1.0f / 0.899999976f = 1.11111116f: every kept 1 becomes
    // exactly that float
    std::size_t kept = 0;
    for (float v : y.data()) {
      CHECK((v == 0.0f || v == 1.11111116f));
      kept += v != 0.0f;
    }
    CHECK(kept > 0);
  }

  TEST_CASE(
      "p = 1 in training gives x * 0: zeros, NaN for NaN and Inf, a zero gradient, an empty mask") {
    const float inf = std::numeric_limits<float>::infinity();
    Tensor x(Array{1.f, -2.f, std::nanf(""), inf}, true);
    Tensor y = ops::dropout(x, 1.0, true, ops::DropoutStream{9, 0});
    CHECK(y.data()(0) == 0.0f);
    CHECK(y.data()(1) == 0.0f);
    CHECK(std::isnan(y.data()(2)));
    CHECK(std::isnan(y.data()(3)));
    CHECK(ops::dropout_mask({4}, 1.0, {9, 0}) == Mask8{0, 0, 0, 0});
    y.backward(Array{1.f, 1.f, 1.f, 1.f});
    CHECK(bit_equal(x.grad(), Array{0.f, 0.f, 0.f, 0.f}));
  }

  TEST_CASE(
      "on 1e6 elements the kept fraction is within 4 sigma of 1 - p and the mean is preserved") {
    for (double p : {0.1, 0.5, 0.9}) {
      CAPTURE(p);
      Tensor x(Array(xt::ones<float>({1000, 1000})));
      Generator gen(123);
      Tensor y = ops::dropout(x, p, true, gen);
      const Mask8 mask = mask_of(y);
      const double n = 1e6;
      double kept = 0.0, sum = 0.0;
      for (std::uint8_t k : mask) kept += k;
      for (float v : y.data()) sum += v;
      const double sigma = std::sqrt(n * p * (1.0 - p));
      CHECK(std::abs(kept - n * (1.0 - p)) < 4.0 * sigma);
      // mean(y) = kept * scale / n, which differs from mean(x) = 1 by the same relative 4 sigma
      CHECK(std::abs(sum / n - 1.0) < 4.0 * sigma / (n * (1.0 - p)) + 1e-6);
    }
  }

  TEST_CASE("backward multiplies by the same mask: dx = dy * m") {
    const double p = 0.4;
    Tensor x = input({3, 7}, 4, true);
    Generator gen(7);
    Tensor y = ops::dropout(x, p, true, gen);
    const Mask8 mask = expected_mask(x.shape(), p, stream_of(7));
    const Array dy = input({3, 7}, 5).data();
    y.backward(dy);
    const float scale = 1.0f / static_cast<float>(1.0 - p);
    for (std::size_t i = 0; i < x.numel(); ++i) {
      const float want = dy.data()[i] * (mask.data()[i] ? scale : 0.0f);
      CHECK(x.grad().data()[i] == want);
      CHECK((y.data().data()[i] == 0.0f) == (mask.data()[i] == 0));
    }
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("the gradient matches finite differences for a fixed mask") {
    Tensor x = input({4, 5}, 6, true);
    const GradcheckResult r = gradcheck(
        [](const std::vector<Tensor>& t) {
          Generator gen(17);  // the same mask at every evaluation
          return ops::dropout(t[0], 0.35, true, gen);
        },
        {x});
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("the same seed gives the same mask, another seed another mask") {
    Tensor x = input({16, 16}, 8);
    Generator g1(2024), g2(2024), g3(2025);
    Tensor ya = ops::dropout(x, 0.5, true, g1);
    Tensor yb = ops::dropout(x, 0.5, true, g2);
    const Mask8 a = mask_of(ya), b = mask_of(yb), c = mask_of(ops::dropout(x, 0.5, true, g3));
    CHECK(a == b);
    CHECK(bit_equal(ya.data(), yb.data()));
    CHECK_FALSE(a == c);
  }

  TEST_CASE("under NoGradGuard training mode still drops, and nothing is recorded") {
    Tensor x = input({8, 8}, 9, true);
    Generator gen(3);
    autograd::NoGradGuard no_grad;
    Tensor y = ops::dropout(x, 0.5, true, gen);
    const Mask8 mask = mask_of(y);
    CHECK_FALSE(y.requires_grad());
    CHECK(std::find(mask.begin(), mask.end(), std::uint8_t{0}) != mask.end());
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("in place overwrites x's storage and bumps its version once") {
    const double p = 0.5;
    Tensor x = input({5, 6}, 10);
    const Array before = x.data();
    Generator gen(11);
    Tensor y = ops::dropout(x, p, true, gen, /*inplace=*/true);
    const Mask8 mask = expected_mask(x.shape(), p, stream_of(11));
    CHECK(y.is_same(x));  // not recorded: x itself
    CHECK(x.version() == 1);
    const float scale = 1.0f / static_cast<float>(1.0 - p);
    for (std::size_t i = 0; i < x.numel(); ++i)
      CHECK(x.data().data()[i] == before.data()[i] * (mask.data()[i] ? scale : 0.0f));
  }

  TEST_CASE("in place on a non-leaf sends the masked gradient to whatever produced x") {
    const double p = 0.5;
    Tensor a = input({4, 4}, 12, true);
    Tensor h = a * 2.0;  // a non-leaf that saves nothing needed later
    Generator gen(13);
    Tensor y = ops::dropout(h, p, true, gen, /*inplace=*/true);
    const Mask8 mask = expected_mask(h.shape(), p, stream_of(13));
    CHECK_FALSE(y.is_same(h));      // recorded: a new handle ...
    CHECK(&y.data() == &h.data());  // ... on the same storage
    CHECK(h.version() == 1);
    CHECK(y.version() == h.version());
    ops::sum(y).backward();
    const float scale = 1.0f / static_cast<float>(1.0 - p);
    for (std::size_t i = 0; i < a.numel(); ++i)
      CHECK(a.grad().data()[i] == 2.0f * (mask.data()[i] ? scale : 0.0f));
    CHECK(autograd::tape().empty());
  }

  TEST_CASE(
      "in place on a leaf that requires grad is refused, naming it, but allowed under "
      "NoGradGuard") {
    Tensor w = input({2, 3}, 14, true);
    w.set_name("pos.weight");
    Generator gen(15);
    CHECK_THROWS_WITH_AS(
        ops::dropout(w, 0.5, true, gen, /*inplace=*/true),
        doctest::Contains("a leaf Variable that requires grad is being used in an in-place "
                          "operation. | dropout: 'pos.weight'"),
        AutogradError);
    CHECK(w.version() == 0);
    Generator fresh(15);
    CHECK(gen.next_u64() == fresh.next_u64());  // refused before drawing
    {
      autograd::NoGradGuard no_grad;
      Tensor y = ops::dropout(w, 0.5, true, gen, /*inplace=*/true);
      CHECK(y.is_same(w));
      CHECK(w.version() == 1);
    }
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("in place over a tensor that an earlier op saved makes backward fail") {
    Tensor a = input({3, 3}, 16, true);
    Tensor h = ops::tanh(a);  // tanh's backward reads its output h
    Generator gen(17);
    Tensor y = ops::dropout(h, 0.5, true, gen, /*inplace=*/true);
    CHECK_THROWS_WITH_AS(ops::sum(y).backward(),
                         doctest::Contains("modified by an inplace operation"), AutogradError);
    REQUIRE(autograd::tape().size() == 1);  // sum and dropout ran; tanh refused to
    CHECK(autograd::tape().entries()[0].op == "tanh");
  }

  TEST_CASE("a recorded dropout is one entry named dropout that saves nothing") {
    Tensor x = input({2, 2}, 18, true);
    Generator gen(19);
    Tensor y = ops::dropout(x, 0.5, true, gen);
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "dropout");
    CHECK(autograd::tape().entries()[0].saved.empty());
  }

  // ---- add_rows_dropout: dropout(x + rows) fused, pinned bit for bit to the unfused ops ----------

  namespace {
  // The unfused reference: y = dropout(x + rows broadcast over B), gradients by backward(dy).
  struct Unfused {
    Array y, dx;
    Mask8 mask;
  };
  Unfused unfused_add_dropout(const Array& x_data, const Array& rows_LD, double p, bool training,
                              ops::DropoutStream stream, const Array& dy) {
    Tensor x(x_data, true);
    Unfused u;
    Tensor y = ops::dropout(x + Tensor(rows_LD), p, training, stream);
    u.mask = ops::dropout_mask(x_data.shape(), p, stream);
    u.y = y.data();
    y.backward(dy);
    u.dx = x.grad();
    return u;
  }
  }  // namespace

  TEST_CASE("add_rows_dropout equals dropout(x + rows) bit for bit: values, mask and gradient") {
    const Shape s{3, 5, 8};
    for (double p : {0.1, 0.5, 1.0}) {
      const Array x_data = input(s, 30).data(), dy = input(s, 31).data();
      const Array table = input({1, 9, 8}, 32).data();  // a (1, max_len, D) table with max_len > L
      Array rows_LD = Array::from_shape({5, 8});
      std::copy_n(table.data(), 40, rows_LD.data());
      const ops::DropoutStream stream{40, 3};
      const Unfused want = unfused_add_dropout(x_data, rows_LD, p, true, stream, dy);

      Tensor x(x_data, true);
      Tensor y = ops::add_rows_dropout(x, table, p, true, stream);
      REQUIRE(autograd::tape().size() == 1);
      CHECK(autograd::tape().entries()[0].op == "add_rows_dropout");
      CHECK(bit_equal(y.data(), want.y));
      if (p < 1.0) CHECK(mask_of(y) == want.mask);  // x + rows has no zeros here
      y.backward(dy);
      CHECK(bit_equal(x.grad(), want.dx));
      CHECK(autograd::tape().empty());
    }
  }

  TEST_CASE("add_rows_dropout in eval mode or with p = 0 is x + rows, recorded as add_rows") {
    const Array x_data = input({2, 3, 4}, 33).data(), rows = input({3, 4}, 34).data();
    for (bool training : {false, true}) {
      Tensor x(x_data, true);
      const ops::DropoutStream stream{5, 0};
      Tensor y = ops::add_rows_dropout(x, rows, training ? 0.0 : 0.5, training, stream);
      CHECK(bit_equal(y.data(), (x + Tensor(rows)).data()));
      REQUIRE(autograd::tape().size() >= 1);
      CHECK(autograd::tape().entries()[0].op == "add_rows");
      Tensor z = ops::add_rows_dropout(x, rows, training ? 0.0 : 0.5, training, stream);
      ops::sum(z).backward();
      CHECK(bit_equal(x.grad(), xt::ones<float>({2, 3, 4})));
    }
  }

  TEST_CASE(
      "add_rows_dropout refuses a bad p and shapes that do not fit, and records nothing under "
      "NoGradGuard") {
    const ops::DropoutStream gen{1, 0};
    const Tensor x = input({2, 3, 4}, 35, true);
    CHECK_THROWS_WITH_AS(
        ops::add_rows_dropout(x, xt::zeros<float>({3, 4}), 1.5, true, gen),
        doctest::Contains("dropout probability has to be between 0 and 1, but got 1.5"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        ops::add_rows_dropout(x, xt::zeros<float>({2, 4}), 0.5, true, gen),
        doctest::Contains("add_rows_dropout: expected x of shape (B, L, D) and a table of shape "
                          "(..., R, D) with R >= L, got (2, 3, 4) and (2, 4)"),
        ShapeError);
    CHECK_THROWS_AS(ops::add_rows_dropout(x, xt::zeros<float>({3, 5}), 0.5, true, gen), ShapeError);
    CHECK_THROWS_AS(
        ops::add_rows_dropout(input({3, 4}, 1), xt::zeros<float>({3, 4}), 0.5, true, gen),
        ShapeError);
    autograd::NoGradGuard no_grad;
    Tensor y = ops::add_rows_dropout(x, xt::zeros<float>({3, 4}), 0.5, true, gen);
    CHECK_FALSE(y.requires_grad());
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
