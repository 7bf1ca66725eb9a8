// tests/ops/test_embedding_add_rows_dropout.cpp: the fused lookup + scale + positional rows +
// dropout (what InputEmbedding runs), pinned bit for bit to the unfused ops it replaces:
// add_rows_dropout(embedding_scaled(ids, weight, scale), rows, p, training, stream), values and
// gradients, dense and sparse, with padding and scale_grad_by_freq, in training and eval.
#include <doctest/doctest.h>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;

namespace {
struct Result {
  Array y, dweight;
};

Array random_array(const Shape& shape, std::uint64_t seed) {
  Generator g(seed);
  return randn(shape, &g);
}

Result run(bool fused, const IndexArray& ids, const Array& w, const Array& table, double p,
           bool training, const EmbeddingOptions& o, const Array& dy) {
  Parameter weight(w);
  const ops::DropoutStream stream{0x0123456789ABCDEFull, 5};
  const double scale = std::sqrt(8.0);
  Tensor y =
      fused ? ops::embedding_add_rows_dropout(ids, weight, scale, table, p, training, stream, o)
            : ops::add_rows_dropout(ops::embedding_scaled(ids, weight, scale, o), table, p,
                                    training, stream);
  y.backward(dy);
  const Array dweight = weight.grad_is_sparse() ? weight.sparse_grad().to_dense() : weight.grad();
  return {y.data(), dweight};
}
}  // namespace

TEST_SUITE("ops.embedding_add_rows_dropout") {
  TEST_CASE("equals add_rows_dropout(embedding_scaled(...)) bit for bit, values and gradients") {
    const IndexArray ids{{3, 1, 0, 3, 7}, {0, 2, 3, 9, 1}, {5, 5, 5, 0, 4}};  // repeats and padding
    const Array w = random_array({10, 8}, 1), table = random_array({1, 12, 8}, 2),
                dy = random_array({3, 5, 8}, 3);
    for (const double p : {0.0, 0.1, 0.5, 1.0})
      for (const bool training : {true, false})
        for (const int variant : {0, 1, 2, 3}) {
          CAPTURE(p);
          CAPTURE(training);
          CAPTURE(variant);
          EmbeddingOptions o;
          if (variant >= 1) o.padding_idx(0);
          if (variant == 2) o.scale_grad_by_freq(true);
          if (variant == 3) o.sparse(true);
          const Result fused = run(true, ids, w, table, p, training, o, dy);
          const Result plain = run(false, ids, w, table, p, training, o, dy);
          CHECK(bit_equal(fused.y, plain.y));
          CHECK(bit_equal(fused.dweight, plain.dweight));
          CHECK(autograd::tape().empty());
        }
  }

  TEST_CASE("a row of D = 300 crosses mask chunks and Philox blocks: still the unfused result") {
    const IndexArray ids{{1, 2, 1}, {0, 3, 2}};
    const Array w = random_array({4, 300}, 4), table = random_array({3, 300}, 5),
                dy = random_array({2, 3, 300}, 6);
    const Result fused = run(true, ids, w, table, 0.3, true, EmbeddingOptions().padding_idx(0), dy);
    const Result plain =
        run(false, ids, w, table, 0.3, true, EmbeddingOptions().padding_idx(0), dy);
    CHECK(bit_equal(fused.y, plain.y));
    CHECK(bit_equal(fused.dweight, plain.dweight));
  }

  TEST_CASE("one tape entry, and the gradient matches finite differences for a fixed stream") {
    const IndexArray ids{{1, 2, 1}};
    Parameter w(random_array({3, 4}, 7));
    const Array table = random_array({3, 4}, 8);
    Tensor y = ops::embedding_add_rows_dropout(ids, w, 2.0, table, 0.25, true, {9, 0});
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "embedding_add_rows_dropout");
    ops::sum(y).backward();
    w.zero_grad(true);
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>& t) {
          return ops::embedding_add_rows_dropout(ids, t[0], 2.0, table, 0.25, true, {9, 0});
        },
        {w});
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("refuses ids that are not (B, L), a table that does not fit, bad ids and a bad p") {
    Parameter w(random_array({5, 4}, 9));
    const Array table = random_array({1, 3, 4}, 10);
    CHECK_THROWS_WITH_AS(
        ops::embedding_add_rows_dropout(IndexArray{1, 2}, w, 2.0, table, 0.1, true, {}),
        doctest::Contains(
            "embedding_add_rows_dropout: expected ids of shape (B, L), weight (num, D) and a table "
            "of shape (..., R, D) with R >= L, got (2,), (5, 4) and (1, 3, 4)"),
        ShapeError);
    CHECK_THROWS_AS(
        ops::embedding_add_rows_dropout(IndexArray{{1, 2, 3, 4}}, w, 2.0, table, 0.1, true, {}),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::embedding_add_rows_dropout(IndexArray{{1, 7}}, w, 2.0, table, 0.1, true, {}),
        doctest::Contains("expected ids in [0, 5), got 7 at position (0, 1)"), IndexError);
    CHECK_THROWS_WITH_AS(
        ops::embedding_add_rows_dropout(IndexArray{{1, 2}}, w, 2.0, table, 1.5, true, {}),
        doctest::Contains("dropout probability has to be between 0 and 1, but got 1.5"),
        ValueError);
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
