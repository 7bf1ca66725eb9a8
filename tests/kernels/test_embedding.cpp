// tests/kernels/test_embedding.cpp: the embedding lookup on every kernel set this CPU can run.
// Every set, the reference included, adds the same terms in the same order: all give the same
// bits, forward and backward, the streaming stores of large outputs included.
#include <doctest/doctest.h>

#include <vector>

#include <tapegrad/core/cpu.hpp>
#include <tapegrad/core.hpp>

#include "../helpers.hpp"
#include "../capability_guard.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::input;

namespace {
struct Case {
  std::size_t num, dim, B, L;
  EmbeddingOptions options;
  int form;  // 0 embedding, 1 embedding_scaled, 2 embedding_add_rows_dropout, 3 the same, eval
};

// Ids with repeats, every 7th the padding id 0 when there is one.
IndexArray make_ids(const Case& c) {
  IndexArray ids = IndexArray::from_shape({c.B, c.L});
  for (std::size_t p = 0; p < ids.size(); ++p)
    ids.data()[p] = std::int64_t((p * 7919 + p / 3) % c.num);
  return ids;
}

// y and dweight on the set.
std::vector<Array> run(CpuCapability set, const Case& c) {
  set_cpu_capability(set);
  Tensor w = input({c.num, c.dim}, 1);
  const IndexArray ids = make_ids(c);
  Tensor y;
  if (c.form == 0) y = ops::embedding(ids, w, c.options);
  if (c.form == 1) y = ops::embedding_scaled(ids, w, 2.7, c.options);
  if (c.form >= 2)
    y = ops::embedding_add_rows_dropout(ids, w, 2.7, input({c.L, c.dim}, 2, false).data(), 0.4,
                                        c.form == 2, ops::DropoutStream{5, 9}, c.options);
  y.backward(input(y.shape(), 3, false).data());
  if (w.grad_is_sparse()) {  // the row-sparse gradient's rows and values, as they are
    const RowSparseGrad& g = w.sparse_grad();
    return {y.data(), Array(xt::cast<float>(g.indices)), g.values};
  }
  return {y.data(), w.grad()};
}

const std::vector<Case> kCases = {
    {10, 3, 2, 9, EmbeddingOptions(), 0},
    {10, 7, 3, 11, EmbeddingOptions().padding_idx(0), 0},
    {10, 7, 3, 11, EmbeddingOptions().padding_idx(-10).scale_grad_by_freq(true), 1},
    {300, 16, 4, 200, EmbeddingOptions().padding_idx(0), 1},
    {50, 9, 2, 33, EmbeddingOptions().padding_idx(3).scale_grad_by_freq(true), 2},
    // large enough (16 MiB and more) for the fast kernels' non-temporal stores: the gradient,
    // then the output too; rows of 5 floats are not 16-byte aligned
    {1 << 20, 5, 2, 300, EmbeddingOptions().padding_idx(0), 0},
    {8192, 512, 2, 4096, EmbeddingOptions().padding_idx(0), 1},
    // the streamed gradient with everything at once: rows of 263 floats (1052 bytes) start at
    // every alignment, so each streamed row has a plain head, whole lines and a plain tail;
    // several positions per row, frequency scaling, the scale and the dropout mask
    {16384, 263, 3, 8192, EmbeddingOptions().padding_idx(0).scale_grad_by_freq(true), 2},
    // the fused lookup with nothing dropped (evaluation)
    {50, 9, 3, 33, EmbeddingOptions().padding_idx(3), 3},
    // row-sparse gradients: plain, scaled, through the dropout mask
    {50, 9, 2, 33, EmbeddingOptions().padding_idx(3).sparse(true), 0},
    {50, 9, 2, 33, EmbeddingOptions().sparse(true), 1},
    {50, 9, 2, 33, EmbeddingOptions().padding_idx(0).sparse(true), 2},
};
}  // namespace

TEST_SUITE("ops.embedding_kernels") {
  TEST_CASE("every kernel set, the reference included, gives the same bits") {
    CapabilityGuard guard;
    for (const Case& c : kCases) {
      CAPTURE(c.num);
      CAPTURE(c.dim);
      CAPTURE(c.form);
      const auto expected = run(CpuCapability::baseline, c);
      for (CpuCapability set : available_cpu_capabilities()) {
        CAPTURE(to_string(set));
        const auto got = run(set, c);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE("the large gradient's untouched rows are zeros and the padding row gets nothing") {
    CapabilityGuard guard;
    const Case& c = kCases[5];
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      const Array g = run(set, c)[1];
      const IndexArray ids = make_ids(c);
      std::vector<bool> used(c.num, false);
      for (std::size_t p = 0; p < ids.size(); ++p) used[std::size_t(ids.data()[p])] = true;
      bool zeros = true, some_nonzero = false;
      for (std::size_t k = 0; k < c.num; ++k)
        for (std::size_t j = 0; j < c.dim; ++j) {
          const float x = g(k, j);
          if ((!used[k] || k == 0) && x != 0.0f) zeros = false;
          if (used[k] && k != 0 && x != 0.0f) some_nonzero = true;
        }
      CHECK(zeros);
      CHECK(some_nonzero);
    }
  }

  TEST_CASE("the backward runs the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    // Only the reference and the fast kernels' own results can tell them apart, and they agree
    // bit for bit: so check that switching between forward and backward changes nothing.
    const Case& c = kCases[3];
    set_cpu_capability(CpuCapability::reference);
    Tensor w = input({c.num, c.dim}, 1);
    Tensor y = ops::embedding_scaled(make_ids(c), w, 2.7, c.options);
    set_cpu_capability(available_cpu_capabilities().back());
    y.backward(input(y.shape(), 3, false).data());
    CHECK(bit_equal(w.grad(), run(CpuCapability::reference, c)[1]));
  }
}
