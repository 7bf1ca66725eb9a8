// tests/ops/test_dropout.cpp: ops::dropout (SPEC 2.7): the probability check, the identity
// cases, the draw order and scaling, statistics on 1e6 elements, backward through the same
// mask, determinism by seed, and the in-place rules of SPEC 2.3.3.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <tapegrad/tapegrad.hpp>

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
// The mask the SPEC prescribes: one u24 per element, row-major, keep iff u >= p.
Mask8 expected_mask(const Shape& shape, double p, std::uint64_t seed) {
  Generator g(seed);
  Mask8 m = Mask8::from_shape(shape);
  for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = double(g.uniform_float()) >= p;
  return m;
}
}  // namespace

TEST_SUITE("ops.dropout") {

TEST_CASE("p outside 0..1 or NaN is a ValueError with PyTorch's text") {
  CHECK_THROWS_WITH_AS(ops::check_dropout_probability(-0.1),
                       doctest::Contains("dropout probability has to be between 0 and 1, but got -0.1"), ValueError);
  CHECK_THROWS_WITH_AS(ops::check_dropout_probability(1.1),
                       doctest::Contains("dropout probability has to be between 0 and 1, but got 1.1"), ValueError);
  CHECK_THROWS_WITH_AS(ops::check_dropout_probability(std::nan("")),
                       doctest::Contains("dropout probability has to be between 0 and 1, but got nan"), ValueError);
  CHECK_NOTHROW(ops::check_dropout_probability(0.0));
  CHECK_NOTHROW(ops::check_dropout_probability(1.0));
  Generator gen(0);
  Tensor x = input({2, 3}, 1, true);
  CHECK_THROWS_AS(ops::dropout(x, 1.5, true, gen), ValueError);
  CHECK_THROWS_AS(ops::dropout(x, std::nan(""), false, gen), ValueError);   // checked even in eval
  CHECK(autograd::tape().empty());
}

TEST_CASE("eval mode, p = 0 and empty inputs return the same tensor, record nothing and draw nothing") {
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
  CHECK(gen.next_u64() == fresh.next_u64());                // the stream did not move
}

TEST_CASE("training draws one u24 per element in row-major order and keeps it iff u >= p") {
  const double p = 0.3;
  Tensor x = input({4, 5, 3}, 3);
  Generator gen(42);
  Mask8 mask;
  Tensor y = ops::dropout(x, p, true, gen, false, &mask);
  const Mask8 expected = expected_mask(x.shape(), p, 42);
  CHECK(mask == expected);
  const float scale = 1.0f / static_cast<float>(1.0 - p);
  for (std::size_t i = 0; i < x.numel(); ++i) {
    const float want = x.data().data()[i] * (expected.data()[i] ? scale : 0.0f);
    CHECK(std::memcmp(&y.data().data()[i], &want, sizeof(float)) == 0);
  }
  Generator after(42);
  for (std::size_t i = 0; i < x.numel(); ++i) after.next_u64();
  CHECK(gen.next_u64() == after.next_u64());                // exactly numel draws were taken
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

TEST_CASE("p = 1 in training gives x * 0: zeros, NaN for NaN and Inf, a zero gradient, no draws") {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x(Array{1.f, -2.f, std::nanf(""), inf}, true);
  Generator gen(9);
  Mask8 mask;
  Tensor y = ops::dropout(x, 1.0, true, gen, false, &mask);
  CHECK(y.data()(0) == 0.0f);
  CHECK(y.data()(1) == 0.0f);
  CHECK(std::isnan(y.data()(2)));
  CHECK(std::isnan(y.data()(3)));
  CHECK(mask == Mask8{0, 0, 0, 0});
  y.backward(Array{1.f, 1.f, 1.f, 1.f});
  CHECK(bit_equal(x.grad(), Array{0.f, 0.f, 0.f, 0.f}));
  Generator fresh(9);
  CHECK(gen.next_u64() == fresh.next_u64());
}

TEST_CASE("on 1e6 elements the kept fraction is within 4 sigma of 1 - p and the mean is preserved") {
  for (double p : {0.1, 0.5, 0.9}) {
    CAPTURE(p);
    Tensor x(Array(xt::ones<float>({1000, 1000})));
    Generator gen(123);
    Mask8 mask;
    Tensor y = ops::dropout(x, p, true, gen, false, &mask);
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
  Mask8 mask;
  Tensor y = ops::dropout(x, p, true, gen, false, &mask);
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
  const GradcheckResult r = gradcheck([](const std::vector<Tensor>& t) {
    Generator gen(17);                                  // the same mask at every evaluation
    return ops::dropout(t[0], 0.35, true, gen);
  }, {x});
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("the same seed gives the same mask, another seed another mask") {
  Tensor x = input({16, 16}, 8);
  Mask8 a, b, c;
  Generator g1(2024), g2(2024), g3(2025);
  Tensor ya = ops::dropout(x, 0.5, true, g1, false, &a);
  Tensor yb = ops::dropout(x, 0.5, true, g2, false, &b);
  ops::dropout(x, 0.5, true, g3, false, &c);
  CHECK(a == b);
  CHECK(bit_equal(ya.data(), yb.data()));
  CHECK_FALSE(a == c);
}

TEST_CASE("under NoGradGuard training mode still drops, and nothing is recorded") {
  Tensor x = input({8, 8}, 9, true);
  Generator gen(3);
  autograd::NoGradGuard no_grad;
  Mask8 mask;
  Tensor y = ops::dropout(x, 0.5, true, gen, false, &mask);
  CHECK_FALSE(y.requires_grad());
  CHECK(std::find(mask.begin(), mask.end(), std::uint8_t{0}) != mask.end());
  CHECK(autograd::tape().empty());
}

TEST_CASE("in place overwrites x's storage and bumps its version once") {
  const double p = 0.5;
  Tensor x = input({5, 6}, 10);
  const Array before = x.data();
  Generator gen(11);
  Mask8 mask;
  Tensor y = ops::dropout(x, p, true, gen, /*inplace=*/true, &mask);
  CHECK(y.is_same(x));                                  // not recorded: x itself
  CHECK(x.version() == 1);
  const float scale = 1.0f / static_cast<float>(1.0 - p);
  for (std::size_t i = 0; i < x.numel(); ++i)
    CHECK(x.data().data()[i] == before.data()[i] * (mask.data()[i] ? scale : 0.0f));
}

TEST_CASE("in place on a non-leaf sends the masked gradient to whatever produced x") {
  const double p = 0.5;
  Tensor a = input({4, 4}, 12, true);
  Tensor h = a * 2.0;                                   // a non-leaf that saves nothing needed later
  Generator gen(13);
  Mask8 mask;
  Tensor y = ops::dropout(h, p, true, gen, /*inplace=*/true, &mask);
  CHECK_FALSE(y.is_same(h));                            // recorded: a new handle ...
  CHECK(&y.data() == &h.data());                        // ... on the same storage
  CHECK(h.version() == 1);
  CHECK(y.version() == h.version());
  ops::sum(y).backward();
  const float scale = 1.0f / static_cast<float>(1.0 - p);
  for (std::size_t i = 0; i < a.numel(); ++i)
    CHECK(a.grad().data()[i] == 2.0f * (mask.data()[i] ? scale : 0.0f));
  CHECK(autograd::tape().empty());
}

TEST_CASE("in place on a leaf that requires grad is refused, naming it, but allowed under NoGradGuard") {
  Tensor w = input({2, 3}, 14, true);
  w.set_name("pos.weight");
  Generator gen(15);
  CHECK_THROWS_WITH_AS(ops::dropout(w, 0.5, true, gen, /*inplace=*/true),
                       doctest::Contains("a leaf Variable that requires grad is being used in an in-place "
                                         "operation. | dropout: 'pos.weight'"),
                       AutogradError);
  CHECK(w.version() == 0);
  Generator fresh(15);
  CHECK(gen.next_u64() == fresh.next_u64());            // refused before drawing
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
  Tensor h = ops::tanh(a);                              // tanh's backward reads its output h
  Generator gen(17);
  Tensor y = ops::dropout(h, 0.5, true, gen, /*inplace=*/true);
  CHECK_THROWS_WITH_AS(ops::sum(y).backward(), doctest::Contains("modified by an inplace operation"),
                       AutogradError);
  REQUIRE(autograd::tape().size() == 1);                 // sum and dropout ran; tanh refused to
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
                            std::uint64_t seed, const Array& dy) {
  Tensor x(x_data, true);
  Generator gen(seed);
  Unfused u;
  Tensor y = ops::dropout(x + Tensor(rows_LD), p, training, gen, false, &u.mask);
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
    const Array table = input({1, 9, 8}, 32).data();    // a (1, max_len, D) table with max_len > L
    Array rows_LD = Array::from_shape({5, 8});
    std::copy_n(table.data(), 40, rows_LD.data());
    const Unfused want = unfused_add_dropout(x_data, rows_LD, p, true, 40, dy);

    Tensor x(x_data, true);
    Generator gen(40);
    ops::SharedMask mask;
    Tensor y = ops::add_rows_dropout(x, table, p, true, gen, &mask);
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "add_rows_dropout");
    CHECK(bit_equal(y.data(), want.y));
    REQUIRE(mask != nullptr);
    CHECK(*mask == want.mask);
    y.backward(dy);
    CHECK(bit_equal(x.grad(), want.dx));
    CHECK(autograd::tape().empty());
    Generator replay(40);                               // the same number of draws as the unfused op
    if (p < 1.0) ops::dropout(Tensor(x_data), p, true, replay);
    CHECK(gen.next_u64() == replay.next_u64());
  }
}

TEST_CASE("add_rows_dropout in eval mode or with p = 0 is x + rows, recorded as add_rows, with no draw") {
  const Array x_data = input({2, 3, 4}, 33).data(), rows = input({3, 4}, 34).data();
  for (bool training : {false, true}) {
    Tensor x(x_data, true);
    Generator gen(5);
    ops::SharedMask mask;
    Tensor y = ops::add_rows_dropout(x, rows, training ? 0.0 : 0.5, training, gen, &mask);
    CHECK(mask == nullptr);
    CHECK(gen.next_u64() == Generator(5).next_u64());
    CHECK(bit_equal(y.data(), (x + Tensor(rows)).data()));
    REQUIRE(autograd::tape().size() >= 1);
    CHECK(autograd::tape().entries()[0].op == "add_rows");
    Tensor z = ops::add_rows_dropout(x, rows, training ? 0.0 : 0.5, training, gen);
    ops::sum(z).backward();
    CHECK(bit_equal(x.grad(), xt::ones<float>({2, 3, 4})));
  }
}

TEST_CASE("add_rows_dropout refuses a bad p and shapes that do not fit, and records nothing under NoGradGuard") {
  Generator gen(1);
  const Tensor x = input({2, 3, 4}, 35, true);
  CHECK_THROWS_WITH_AS(ops::add_rows_dropout(x, xt::zeros<float>({3, 4}), 1.5, true, gen),
                       doctest::Contains("dropout probability has to be between 0 and 1, but got 1.5"), ValueError);
  CHECK_THROWS_WITH_AS(ops::add_rows_dropout(x, xt::zeros<float>({2, 4}), 0.5, true, gen),
                       doctest::Contains("add_rows_dropout: expected x of shape (B, L, D) and a table of shape "
                                         "(..., R, D) with R >= L, got (2, 3, 4) and (2, 4)"),
                       ShapeError);
  CHECK_THROWS_AS(ops::add_rows_dropout(x, xt::zeros<float>({3, 5}), 0.5, true, gen), ShapeError);
  CHECK_THROWS_AS(ops::add_rows_dropout(input({3, 4}, 1), xt::zeros<float>({3, 4}), 0.5, true, gen), ShapeError);
  CHECK(gen.next_u64() == Generator(1).next_u64());     // refused before drawing
  autograd::NoGradGuard no_grad;
  Tensor y = ops::add_rows_dropout(x, xt::zeros<float>({3, 4}), 0.5, true, gen);
  CHECK_FALSE(y.requires_grad());
  CHECK(autograd::tape().empty());
}

}  // TEST_SUITE
