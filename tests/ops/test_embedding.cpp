// tests/ops/test_embedding.cpp: ops::embedding and ops::embedding_scaled:
// lookup values and shapes, padding_idx, scatter-add and frequency scaling, max_norm renorm,
// row-sparse gradients and their accumulation, error texts, and the tape contract.
// PyTorch goldens come from scripts/golden/embedding.py (Debian python3-torch 1.13).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;
using tapegrad::testing::check_gradients;

namespace {
// w[k, j] = 0.1 * (k * cols + j) - 0.7, rounded as PyTorch rounds it in float32
// (the `weight` of scripts/golden/embedding.py), times `times`.
Array closed_form_weight(std::size_t rows, std::size_t cols, float times = 1.0f) {
  Array w = Array::from_shape({rows, cols});
  for (std::size_t i = 0; i < w.size(); ++i) {
    float v = static_cast<float>(i) * 0.1f;
    v = v - 0.7f;
    w.data()[i] = times == 1.0f ? v : v * times;
  }
  return w;
}
// G[i] = 0.25 * i - 2 over the flattened shape (the `upstream` of the golden script).
Array upstream(const Shape& shape) {
  Array g = Array::from_shape(shape);
  for (std::size_t i = 0; i < g.size(); ++i) g.data()[i] = static_cast<float>(i) * 0.25f - 2.0f;
  return g;
}
Tensor random_weight(std::size_t rows, std::size_t cols, std::uint64_t seed,
                     bool requires_grad = true) {
  Generator g(seed);
  return Tensor(randn({rows, cols}, &g), requires_grad);
}
// The weight gradient of sum(y * G), y = embedding(ids, w, o).
Array weight_grad(const IndexArray& ids, const Array& w0, const EmbeddingOptions& o = {}) {
  Tensor w(w0, true);
  Tensor y = ops::embedding(ids, w, o);
  y.backward(upstream(y.shape()));
  return w.grad_dense();
}
const IndexArray kIds = {{1, 2, 1},
                         {0, 1, 3}};  // with pad 0: row 1 sums 3 rows, row 0 gets nothing

// y with the rows at padding positions set to 0 (a constant). padding_idx deliberately withholds
// the pad row's gradient although the lookup reads that row, so finite differences only agree
// once the pad positions no longer reach the loss (as with ignore_index in training).
Tensor without_pad_positions(const Tensor& y, const IndexArray& ids, std::int64_t pad) {
  Shape mask_shape(ids.shape().begin(), ids.shape().end());
  mask_shape.push_back(1);
  Mask mask = Mask::from_shape(mask_shape);
  for (std::size_t p = 0; p < ids.size(); ++p) mask.data()[p] = ids.data()[p] == pad;
  return ops::masked_fill(y, mask, 0.0);
}
}  // namespace

TEST_SUITE("ops.embedding") {
  // ---- forward ---------------------------------------------------------------------------------------

  TEST_CASE("the output has shape S + (dim,) and each row is a copy of the looked-up weight row") {
    Tensor w(closed_form_weight(5, 3));
    SUBCASE("rank-0 ids give one row of shape (dim,)") {
      Tensor y = ops::embedding(IndexArray(4), w);
      CHECK(y.shape() == Shape{3});
      CHECK(bit_equal(y.data(), Array{w.data()(4, 0), w.data()(4, 1), w.data()(4, 2)}));
    }
    SUBCASE("ids of shape (3,)") {
      Tensor y = ops::embedding(IndexArray{2, 0, 2}, w);
      CHECK(y.shape() == Shape{3, 3});
      for (std::size_t j = 0; j < 3; ++j) {
        CHECK(y.data()(0, j) == w.data()(2, j));
        CHECK(y.data()(1, j) == w.data()(0, j));
        CHECK(y.data()(2, j) == w.data()(2, j));
      }
    }
    SUBCASE("ids of shape (2, 4)") {
      const IndexArray ids = {{0, 1, 2, 3}, {4, 3, 2, 1}};
      Tensor y = ops::embedding(ids, w);
      CHECK(y.shape() == Shape{2, 4, 3});
      for (std::size_t a = 0; a < 2; ++a)
        for (std::size_t b = 0; b < 4; ++b)
          for (std::size_t j = 0; j < 3; ++j) CHECK(y.data()(a, b, j) == w.data()(ids(a, b), j));
    }
    SUBCASE("empty ids of shape (0,) give an empty (0, dim) output") {
      Tensor y = ops::embedding(IndexArray::from_shape({0}), w);
      CHECK(y.shape() == Shape{0, 3});
      CHECK(y.numel() == 0);
    }
  }

  TEST_CASE("the output owns its data: writing the weight later does not change it") {
    Tensor w(closed_form_weight(5, 3));
    Tensor y = ops::embedding(IndexArray{1}, w);
    const float before = y.data()(0, 0);
    w.mutable_data()(1, 0) = 100.0f;
    CHECK(y.data()(0, 0) == before);
  }

  // ---- padding_idx -------------------------------------------------------------------------------------

  TEST_CASE(
      "a negative padding_idx counts from the end, and one outside -num..num-1 is a ValueError") {
    // num = 10: -1 means row 9 and -10 means row 0; their positions send no gradient.
    const IndexArray ids = {9, 0, 9, 5};
    Array g_minus1 =
        weight_grad(ids, closed_form_weight(10, 2), EmbeddingOptions().padding_idx(-1));
    CHECK(g_minus1(9, 0) == 0.0f);
    CHECK(g_minus1(9, 1) == 0.0f);
    CHECK(g_minus1(0, 0) != 0.0f);
    Array g_minus10 =
        weight_grad(ids, closed_form_weight(10, 2), EmbeddingOptions().padding_idx(-10));
    CHECK(g_minus10(0, 0) == 0.0f);
    CHECK(g_minus10(9, 0) != 0.0f);
    CHECK(all_close(
        g_minus1, weight_grad(ids, closed_form_weight(10, 2), EmbeddingOptions().padding_idx(9))));

    Tensor w(closed_form_weight(10, 2), true);
    CHECK_THROWS_WITH_AS(ops::embedding(ids, w, EmbeddingOptions().padding_idx(10)),
                         doctest::Contains("Padding_idx must be within num_embeddings | embedding: "
                                           "expected padding_idx in [-10, 10), got 10"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::embedding(ids, w, EmbeddingOptions().padding_idx(-11)),
                         doctest::Contains("expected padding_idx in [-10, 10), got -11"),
                         ValueError);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("the padding row's value is looked up like any other row") {
    Tensor w(closed_form_weight(5, 3));
    Tensor y = ops::embedding(IndexArray{0}, w, EmbeddingOptions().padding_idx(0));
    CHECK(y.data()(0, 1) == w.data()(0, 1));
  }

  // ---- dense backward ------------------------------------------------------------------------------------

  TEST_CASE("repeated ids add their gradient rows, and padding positions add nothing") {
    // ids [[1, 2, 1], [0, 1, 3]], padding_idx 0, loss = sum(y * G):
    // row 1 = G[0] + G[2] + G[4], row 2 = G[1], row 3 = G[5], rows 0 and 4 exactly 0.
    // Golden: scripts/golden/embedding.py, torch 1.13.
    const Array golden = {{0.f, 0.f, 0.f},
                          {-1.5f, -0.75f, 0.f},
                          {-1.25f, -1.f, -0.75f},
                          {1.75f, 2.f, 2.25f},
                          {0.f, 0.f, 0.f}};
    const Array dw = weight_grad(kIds, closed_form_weight(5, 3), EmbeddingOptions().padding_idx(0));
    CHECK(bit_equal(dw, golden));
  }

  TEST_CASE(
      "ids 0, 2, 2 with padding 0 and loss sum(y) give row 0 a zero gradient and row 2 twos") {
    // Golden: scripts/golden/embedding.py, torch 1.13.
    Tensor w = random_weight(5, 3, 3);
    ops::sum(ops::embedding(IndexArray{0, 2, 2}, w, EmbeddingOptions().padding_idx(0))).backward();
    CHECK(bit_equal(
        w.grad(),
        Array{
            {0.f, 0.f, 0.f}, {0.f, 0.f, 0.f}, {2.f, 2.f, 2.f}, {0.f, 0.f, 0.f}, {0.f, 0.f, 0.f}}));
    CHECK(autograd::tape().empty());
  }

  TEST_CASE(
      "scale_grad_by_freq makes a row's gradient the mean of its rows, and the pad row stays 0") {
    // Golden (scripts/golden/embedding.py, torch 1.13): row 1 = (G[0] + G[2] + G[4]) / 3.
    // PyTorch's CPU kernel fuses the multiply-add, so its last element is 1.49e-08 = 2^-26 where
    // tapegrad, which rounds the product first (no FMA contraction), gets 0: compare to 1e-7.
    const Array golden = {{0.f, 0.f, 0.f},
                          {-0.5f, -0.25f, 1.49011612e-08f},
                          {-1.25f, -1.f, -0.75f},
                          {1.75f, 2.f, 2.25f},
                          {0.f, 0.f, 0.f}};
    const auto o = EmbeddingOptions().padding_idx(0).scale_grad_by_freq(true);
    const Array dw = weight_grad(kIds, closed_form_weight(5, 3), o);
    CHECK(all_close(dw, golden, 1e-7, 0.0));
    CHECK(dw(0, 0) == 0.0f);
    CHECK(dw(0, 1) == 0.0f);
    CHECK(dw(0, 2) == 0.0f);
    // Without padding, a row seen once is unchanged and row 0 (seen once) gets G[3].
    const Array plain = weight_grad(kIds, closed_form_weight(5, 3));
    const Array freq =
        weight_grad(kIds, closed_form_weight(5, 3), EmbeddingOptions().scale_grad_by_freq(true));
    for (std::size_t j = 0; j < 3; ++j) {
      CHECK(freq(0, j) == plain(0, j));
      CHECK(freq(2, j) == plain(2, j));
      CHECK(freq(1, j) == doctest::Approx(plain(1, j) / 3.0f).epsilon(1e-6));
    }
  }

  TEST_CASE(
      "scale_grad_by_freq counts each id over the whole flattened ids, skipping padding "
      "positions") {
    // The count of id k is over the whole flattened ids; pad positions are skipped but do not
    // change the counts of other ids.
    const IndexArray ids = {{1, 0, 1}, {0, 0, 2}};
    const Array dw = weight_grad(ids, closed_form_weight(3, 2),
                                 EmbeddingOptions().padding_idx(0).scale_grad_by_freq(true));
    const Array G = upstream({2, 3, 2});
    CHECK(dw(1, 0) == doctest::Approx((G(0, 0, 0) + G(0, 2, 0)) / 2.0f));
    CHECK(dw(2, 1) == G(1, 2, 1));
    CHECK(dw(0, 0) == 0.0f);
  }

  TEST_CASE("empty ids give a zero dense gradient") {
    Tensor w = random_weight(4, 2, 1);
    Tensor y = ops::embedding(IndexArray::from_shape({0}), w);
    y.backward(Array::from_shape({0, 2}));
    CHECK(w.has_grad());
    CHECK(bit_equal(w.grad(), Array(xt::zeros<float>({4, 2}))));
  }

  TEST_CASE("the weight gradient matches finite differences, with and without padding") {
    Tensor w = random_weight(5, 3, 7);
    const IndexArray ids = {{1, 4, 0}, {4, 0, 2}};
    check_gradients([&](const std::vector<Tensor>& t) { return ops::embedding(ids, t[0]); }, {w});
    check_gradients(
        [&](const std::vector<Tensor>& t) {
          return without_pad_positions(ops::embedding(ids, t[0], EmbeddingOptions().padding_idx(0)),
                                       ids, 0);
        },
        {w});
    check_gradients(
        [&](const std::vector<Tensor>& t) {
          return without_pad_positions(
              ops::embedding(ids, t[0], EmbeddingOptions().padding_idx(-1).sparse(true)), ids, 4);
        },
        {w});
    check_gradients(
        [&](const std::vector<Tensor>& t) { return ops::embedding(IndexArray(3), t[0]); }, {w});
  }

  TEST_CASE("scale_grad_by_freq is the true gradient when every non-pad id is distinct") {
    // With repeated ids it is deliberately NOT the gradient of the lookup (each row's sum becomes
    // a mean), so finite differences can only check it where all counts are 1; the division itself
    // is checked against the plain gradient above.
    Tensor w = random_weight(5, 3, 8);
    const IndexArray ids = {{1, 0, 3}, {0, 4, 0}};
    check_gradients(
        [&](const std::vector<Tensor>& t) {
          return without_pad_positions(
              ops::embedding(ids, t[0], EmbeddingOptions().padding_idx(0).scale_grad_by_freq(true)),
              ids, 0);
        },
        {w});
  }

  // ---- embedding_scaled -----------------------------------------------------------------------------

  TEST_CASE(
      "embedding_scaled equals mul(embedding(...), scale) bit for bit, forward and weight "
      "gradient") {
    const double scale = std::sqrt(512.0);
    const IndexArray ids = {{1, 2, 1, 7}, {0, 1, 3, 7}};
    const std::vector<EmbeddingOptions> variants = {
        EmbeddingOptions(),
        EmbeddingOptions().padding_idx(0),
        EmbeddingOptions().padding_idx(1).scale_grad_by_freq(true),
        EmbeddingOptions().sparse(true),
        EmbeddingOptions().padding_idx(7).sparse(true),
        EmbeddingOptions().max_norm(1.0)};
    for (std::size_t v = 0; v < variants.size(); ++v) {
      CAPTURE(v);
      Tensor w1 = random_weight(8, 5, 11), w2 = random_weight(8, 5, 11);
      // backward() consumes the whole tape, so each graph is finished before the next is built
      Tensor fused = ops::embedding_scaled(ids, w1, scale, variants[v]);
      const Array G = upstream(fused.shape());
      fused.backward(G);
      Tensor composed = ops::mul(ops::embedding(ids, w2, variants[v]), scale);
      composed.backward(G);
      CHECK(bit_equal(fused.data(), composed.data()));
      CHECK(bit_equal(w1.data(), w2.data()));  // the same renorm, if any
      CHECK(w1.grad_is_sparse() == w2.grad_is_sparse());
      CHECK(bit_equal(w1.grad_dense(), w2.grad_dense()));
      if (w1.grad_is_sparse()) {
        CHECK(w1.sparse_grad().indices == w2.sparse_grad().indices);
        CHECK(bit_equal(w1.sparse_grad().values, w2.sparse_grad().values));
      }
    }
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("embedding_scaled records one entry and passes gradcheck") {
    Tensor w = random_weight(5, 3, 9);
    const IndexArray ids = {{1, 4, 0}, {4, 0, 2}};
    Tensor y = ops::embedding_scaled(ids, w, 4.0);
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "embedding_scaled");
    CHECK(autograd::tape().entries()[0].saved.empty());
    check_gradients(
        [&](const std::vector<Tensor>& t) {
          return without_pad_positions(
              ops::embedding_scaled(ids, t[0], std::sqrt(16.0), EmbeddingOptions().padding_idx(4)),
              ids, 4);
        },
        {w});
    check_gradients(
        [&](const std::vector<Tensor>& t) { return ops::embedding_scaled(ids, t[0], -0.5); }, {w});
    CHECK(autograd::tape().size() == 1);  // y's own: gradcheck's graphs are gone
  }

  TEST_CASE("embedding_scaled checks its arguments like embedding, naming itself") {
    Tensor w = random_weight(10, 3, 1);
    CHECK_THROWS_WITH_AS(
        ops::embedding_scaled(IndexArray{{0, 1, 2, 3}, {4, 5, 6, 12}}, w, 2.0),
        doctest::Contains("index out of range in self | embedding_scaled: expected ids in "
                          "[0, 10), got 12 at position (1, 3)"),
        IndexError);
  }

  // ---- max_norm ------------------------------------------------------------------------------------------

  TEST_CASE("max_norm renormalises the row (3, 4) to (0.6, 0.8), just below norm 1") {
    // Golden: scripts/golden/embedding.py, torch 1.13: [0.600000024, 0.800000012], norm 1.0.
    Tensor w(Array{{3.f, 4.f}}, true);
    Tensor y = ops::embedding(IndexArray{0}, w, EmbeddingOptions().max_norm(1.0));
    CHECK(all_close(w.data(), Array{{0.6f, 0.8f}}, 1e-6, 0.0));
    CHECK(all_close(y.data(), w.data(), 0.0, 0.0));
    const double norm = std::hypot(double(w.data()(0, 0)), double(w.data()(0, 1)));
    CHECK(norm <= 1.0 + 1e-7);
    CHECK(norm > 1.0 - 1e-6);
  }

  TEST_CASE("max_norm touches only referenced rows, each distinct row once, for every norm_type") {
    // 3 * weight(6, 4), ids [5, 1, 1, 3], max_norm 1.5. Golden: scripts/golden/embedding.py, torch 1.13.
    // norm_type 0 counts non-zeros, which scaling does not change: row 1 (3 non-zeros) scaled
    // twice would be 0.25 of itself, not 0.5. Rows 0, 2 and 4 are not referenced.
    const double inf = std::numeric_limits<double>::infinity();
    struct Case {
      double p;
      Array row1, row3, row5;
    };
    const std::vector<Case> cases = {
        {2.0,
         {-0.899999976f, -0.599999964f, -0.299999893f, 0.f},
         {0.568573534f, 0.682288229f, 0.796002805f, 0.90971756f},
         {0.670423806f, 0.721994936f, 0.773566008f, 0.825137019f}},
        {1.0,
         {-0.74999994f, -0.49999997f, -0.249999911f, 0.f},
         {0.288461536f, 0.346153826f, 0.403846085f, 0.461538404f},
         {0.336206883f, 0.362069011f, 0.387931049f, 0.413793087f}},
        {3.0,
         {-0.899999976f, -0.599999964f, -0.299999893f, 0.f},
         {0.706562996f, 0.847875535f, 0.989187956f, 1.13050067f},
         {0.842210472f, 0.906996012f, 0.971781373f, 1.03656673f}},
        {inf,
         {-0.899999976f, -0.599999964f, -0.299999893f, 0.f},
         {0.93750006f, 1.125f, 1.31249976f, 1.49999988f},
         {1.21875f, 1.31250012f, 1.40625f, 1.49999988f}},
        {-inf,
         {-0.899999976f, -0.599999964f, -0.299999893f, 0.f},
         {1.49999988f, 1.79999971f, 2.09999943f, 2.39999962f},
         {1.5f, 1.6153847f, 1.73076928f, 1.84615374f}},
        {0.0,
         {-0.449999958f, -0.299999952f, -0.149999931f, 0.f},
         {0.562500119f, 0.675000072f, 0.787499964f, 0.900000036f},
         {1.46249998f, 1.57500005f, 1.6875f, 1.79999995f}},
    };
    for (const Case& c : cases) {
      CAPTURE(c.p);
      const Array original = closed_form_weight(6, 4, 3.0f);
      Tensor w(original);
      ops::embedding(IndexArray{5, 1, 1, 3}, w, EmbeddingOptions().max_norm(1.5).norm_type(c.p));
      for (std::size_t untouched : {0u, 2u, 4u})
        for (std::size_t j = 0; j < 4; ++j) CHECK(w.data()(untouched, j) == original(untouched, j));
      auto row = [&](std::size_t k) {
        return Array(
            xt::xarray<float>{w.data()(k, 0), w.data()(k, 1), w.data()(k, 2), w.data()(k, 3)});
      };
      CHECK(all_close(row(1), c.row1, 1e-6, 1e-6));
      CHECK(all_close(row(3), c.row3, 1e-6, 1e-6));
      CHECK(all_close(row(5), c.row5, 1e-6, 1e-6));
    }
  }

  TEST_CASE("the renorm bumps the weight's version once and also runs with grad mode off") {
    Tensor w(closed_form_weight(6, 4, 3.0f), true);
    const std::uint64_t v0 = w.version();
    ops::embedding(IndexArray{5, 1, 1, 3}, w, EmbeddingOptions().max_norm(1.5));
    CHECK(w.version() == v0 + 1);
    Tensor frozen(Array{{3.f, 4.f}});
    {
      autograd::NoGradGuard no_grad;
      ops::embedding(IndexArray{0}, frozen, EmbeddingOptions().max_norm(1.0));
    }
    CHECK(frozen.data()(0, 0) == doctest::Approx(0.6f));
    CHECK(frozen.version() == 1);
  }

  TEST_CASE(
      "max_norm = inf never renormalises, while max_norm <= 0, NaN and a NaN norm_type are "
      "refused") {
    Tensor w(Array{{3.f, 4.f}}, true);
    ops::embedding(IndexArray{0}, w,
                   EmbeddingOptions().max_norm(std::numeric_limits<double>::infinity()));
    CHECK(bit_equal(w.data(), Array{{3.f, 4.f}}));
    CHECK_THROWS_WITH_AS(ops::embedding(IndexArray{0}, w, EmbeddingOptions().max_norm(0.0)),
                         doctest::Contains("embedding: expected max_norm > 0"), ValueError);
    CHECK_THROWS_WITH_AS(ops::embedding(IndexArray{0}, w, EmbeddingOptions().max_norm(-1.0)),
                         doctest::Contains("got -1"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::embedding(IndexArray{0}, w, EmbeddingOptions().max_norm(std::nan(""))),
        doctest::Contains("got nan"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::embedding(IndexArray{0}, w, EmbeddingOptions().max_norm(1.0).norm_type(std::nan(""))),
        doctest::Contains("embedding: expected norm_type to be a number, got nan"), ValueError);
    CHECK(bit_equal(w.data(), Array{{3.f, 4.f}}));
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("using the weight before a renorming lookup makes backward fail, naming the weight") {
    // PyTorch's documented max_norm caveat (pytorch/pytorch#26596): the first mul saved weight,
    // the renorm wrote it in place, so that mul's backward would use the wrong values.
    Tensor w(closed_form_weight(6, 4, 3.0f), true);
    w.set_name("embed.weight");
    Tensor a = ops::mul(w, w);
    Tensor b = ops::embedding(IndexArray{5, 1}, w, EmbeddingOptions().max_norm(1.0));
    Tensor loss = ops::sum(a) + ops::sum(b);
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("modified by an inplace operation"),
                         AutogradError);
    Tensor w2(closed_form_weight(6, 4, 3.0f), true);
    w2.set_name("embed.weight");
    Tensor a2 = ops::mul(w2, w2);
    Tensor b2 = ops::embedding(IndexArray{5, 1}, w2, EmbeddingOptions().max_norm(1.0));
    CHECK_THROWS_WITH_AS((ops::sum(a2) + ops::sum(b2)).backward(),
                         doctest::Contains("'embed.weight' (6, 4)"), AutogradError);
    REQUIRE(autograd::tape().size() == 2);  // what ran is consumed; each refusing mul stays
    CHECK(autograd::tape().entries()[0].op == "mul");
    CHECK(autograd::tape().entries()[1].op == "mul");
  }

  TEST_CASE("the renorm after backward, as in a training loop, is allowed") {
    Tensor w(closed_form_weight(6, 4, 3.0f), true);
    ops::sum(ops::embedding(IndexArray{5, 1}, w, EmbeddingOptions().max_norm(1.0))).backward();
    ops::sum(ops::embedding(IndexArray{5, 2}, w, EmbeddingOptions().max_norm(1.0))).backward();
    CHECK(w.grad()(5, 0) == 2.0f);
    CHECK(w.grad()(2, 0) == 1.0f);
  }

  // ---- sparse ------------------------------------------------------------------------------------------------

  TEST_CASE(
      "sparse: indices are the non-pad ids in position order, values the matching output-gradient "
      "rows") {
    // Golden: scripts/golden/embedding.py, torch 1.13: indices [1, 2, 1, 1, 3],
    // values G[0], G[1], G[2], G[4], G[5] (position 3 holds the pad id 0).
    Tensor w(closed_form_weight(5, 3), true);
    Tensor y = ops::embedding(kIds, w, EmbeddingOptions().padding_idx(0).sparse(true));
    y.backward(upstream(y.shape()));
    REQUIRE(w.grad_is_sparse());
    const RowSparseGrad& g = w.sparse_grad();
    CHECK(g.indices == IndexArray{1, 2, 1, 1, 3});
    CHECK(bit_equal(g.values, Array{{-2.f, -1.75f, -1.5f},
                                    {-1.25f, -1.f, -0.75f},
                                    {-0.5f, -0.25f, 0.f},
                                    {1.f, 1.25f, 1.5f},
                                    {1.75f, 2.f, 2.25f}}));
    CHECK(g.dense_shape == Shape{5, 3});
    CHECK(bit_equal(g.to_dense(), weight_grad(kIds, closed_form_weight(5, 3),
                                              EmbeddingOptions().padding_idx(0))));
  }

  TEST_CASE("sparse: an all-padding batch gives an empty gradient, not an absent one") {
    Tensor w(closed_form_weight(5, 3), true);
    Tensor y = ops::embedding(IndexArray{{2, 2}, {2, 2}}, w,
                              EmbeddingOptions().padding_idx(2).sparse(true));
    ops::sum(y).backward();
    REQUIRE(w.has_grad());
    REQUIRE(w.grad_is_sparse());
    CHECK(w.sparse_grad().nnz_rows() == 0);
    CHECK(w.sparse_grad().values.shape() == Shape{0, 3});
    CHECK(bit_equal(w.grad_dense(), Array(xt::zeros<float>({5, 3}))));
  }

  TEST_CASE("sparse with scale_grad_by_freq is refused at the call, with PyTorch's text first") {
    Tensor w(closed_form_weight(5, 3), true);
    CHECK_THROWS_WITH_AS(
        ops::embedding(IndexArray{1}, w, EmbeddingOptions().sparse(true).scale_grad_by_freq(true)),
        doctest::Contains("embedding_backward: scale_grad_by_freq not supported with sparse "
                          "gradients | embedding: expected at most one of sparse and "
                          "scale_grad_by_freq, got both"),
        ValueError);
    Tensor frozen(closed_form_weight(5, 3));
    CHECK_THROWS_AS(ops::embedding(IndexArray{1}, frozen,
                                   EmbeddingOptions().sparse(true).scale_grad_by_freq(true)),
                    ValueError);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("gradients accumulate across backwards following PyTorch's AccumulateGrad table") {
    const IndexArray first = {1, 3}, second = {3, 0};
    auto run = [](const Tensor& w, const IndexArray& ids, bool sparse) {
      Tensor y = ops::embedding(ids, w, EmbeddingOptions().sparse(sparse));
      y.backward(upstream(y.shape()));
    };
    Tensor reference(closed_form_weight(5, 3), true);
    run(reference, first, false);
    run(reference, second, false);
    const Array expected = reference.grad();

    SUBCASE("dense then sparse: dense, rows scatter-added") {
      Tensor w(closed_form_weight(5, 3), true);
      run(w, first, false);
      run(w, second, true);
      CHECK_FALSE(w.grad_is_sparse());
      CHECK(bit_equal(w.grad(), expected));
    }
    SUBCASE("sparse then sparse: row-sparse, indices and values concatenated") {
      Tensor w(closed_form_weight(5, 3), true);
      run(w, first, true);
      run(w, second, true);
      REQUIRE(w.grad_is_sparse());
      CHECK(w.sparse_grad().indices == IndexArray{1, 3, 3, 0});
      CHECK(bit_equal(w.sparse_grad().values, Array{{-2.f, -1.75f, -1.5f},
                                                    {-1.25f, -1.f, -0.75f},
                                                    {-2.f, -1.75f, -1.5f},
                                                    {-1.25f, -1.f, -0.75f}}));
      CHECK(bit_equal(w.grad_dense(), expected));
    }
    SUBCASE("sparse then dense: dense") {
      Tensor w(closed_form_weight(5, 3), true);
      run(w, first, true);
      run(w, second, false);
      CHECK_FALSE(w.grad_is_sparse());
      CHECK(bit_equal(w.grad(), expected));
    }
  }

  // ---- errors -------------------------------------------------------------------------------------------------

  TEST_CASE(
      "an out-of-range id names the id, its position and the valid range, with PyTorch's text "
      "first") {
    Tensor w(closed_form_weight(10, 3), true);
    const IndexArray ids = {{0, 1, 2, 3}, {4, 5, 6, 12}};
    CHECK_THROWS_WITH_AS(
        ops::embedding(ids, w),
        doctest::Contains("index out of range in self | embedding: expected ids in [0, 10), "
                          "got 12 at position (1, 3)"),
        IndexError);
    CHECK_THROWS_WITH_AS(ops::embedding(IndexArray{3, -1}, w),
                         doctest::Contains("expected ids in [0, 10), got -1 at position (1)"),
                         IndexError);
    CHECK_THROWS_WITH_AS(ops::embedding(IndexArray(10), w),
                         doctest::Contains("got 10 at position ()"), IndexError);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("inside a module's forward the message names the module and its path") {
    Tensor w(closed_form_weight(10, 3), true);
    autograd::ModuleScope scope("Embedding", "src_embed.0.lut");
    CHECK_THROWS_WITH_AS(
        ops::embedding(IndexArray{{0, 1, 2, 3}, {4, 5, 6, 12}}, w),
        doctest::Contains("index out of range in self | Embedding 'src_embed.0.lut': expected ids "
                          "in [0, 10), got 12 at position (1, 3)"),
        IndexError);
  }

  TEST_CASE("a bad batch leaves the weight unchanged: ids are checked before the renorm") {
    const Array original = closed_form_weight(10, 4, 3.0f);
    Tensor w(original, true);
    CHECK_THROWS_AS(ops::embedding(IndexArray{9, 8, 12}, w, EmbeddingOptions().max_norm(0.5)),
                    IndexError);
    CHECK(bit_equal(w.data(), original));
    CHECK(w.version() == 0);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("a weight that is not 2-D is a ShapeError") {
    Tensor w(Array{1.f, 2.f, 3.f, 4.f}, true);
    CHECK_THROWS_WITH_AS(
        ops::embedding(IndexArray{1}, w),
        doctest::Contains("'weight' must be 2-D | embedding: expected weight of shape "
                          "(num_embeddings, embedding_dim), got (4,)"),
        ShapeError);
  }

  // ---- the tape -------------------------------------------------------------------------------------------------

  TEST_CASE(
      "one entry named embedding that saves nothing, and none for a frozen weight or under "
      "NoGradGuard") {
    Tensor w = random_weight(5, 3, 2);
    Tensor y = ops::embedding(IndexArray{1, 2}, w);
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "embedding");
    CHECK(autograd::tape().entries()[0].saved.empty());
    CHECK(y.requires_grad());
    ops::sum(y).backward();
    CHECK(autograd::tape().empty());

    Tensor frozen = random_weight(5, 3, 2, false);
    Tensor z = ops::embedding(IndexArray{1, 2}, frozen);
    CHECK_FALSE(z.requires_grad());
    CHECK(autograd::tape().empty());
    {
      autograd::NoGradGuard no_grad;
      Tensor u = ops::embedding(IndexArray{1, 2}, w);
      Tensor s = ops::embedding_scaled(IndexArray{1, 2}, w, 2.0);
      CHECK_FALSE(u.requires_grad());
      CHECK_FALSE(s.requires_grad());
    }
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
