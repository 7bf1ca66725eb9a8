// src/ops/embedding_kernels.hpp (private)
//
// The embedding lookup's kernels, declared once: the references are defined in embedding.cpp,
// their fast versions in src/kernels/embedding.cpp (src/core/dispatch.hpp). The op checks the ids
// and options, renormalises (max_norm), allocates, calls embedding_forward (or
// embedding_forward_add_rows, the lookup fused with a table's rows and dropout) and records a
// backward that calls the same set's embedding_dense_backward (or embedding_sparse_values, for a
// row-sparse gradient). ids hold n positions, each in [0, num); weight and dweight are (num, dim),
// y and dy (n, dim), all contiguous.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::kernels {

/// The dropout mask applied to dy before the scatter (embedding_add_rows_dropout's backward): the
/// mask of the stream (seed, call) with probability p, element e of dy taking multiplier e.
struct EmbeddingDropout {
  std::uint64_t seed, call;
  double p;
};

}  // namespace tapegrad::kernels

namespace tapegrad::ops {

using kernels::EmbeddingDropout;

/// y[p, :] = weight[ids[p], :], times *scale when scale is not null (a copy otherwise).
void embedding_forward(const std::int64_t* ids, std::size_t n, const float* weight, std::size_t dim,
                       const float* scale, float* y);
/// embedding_add_rows_dropout's forward: y[p, :] = (weight[ids[p], :] * c + rows[p % L, :]) * m
/// with m the multipliers of `drop` for y's elements, or no "* m" when drop is null (nothing
/// dropped); rows holds at least L rows of dim floats, n is a multiple of L.
void embedding_forward_add_rows(const std::int64_t* ids, std::size_t n, const float* weight,
                                std::size_t dim, float c, const float* rows, std::size_t L,
                                const EmbeddingDropout* drop, float* y);
/// dweight (every element written): for each row k, the sum over the positions p with
/// ids[p] == k != pad, in position order, of f_k * (g[p, :] * c) added to 0, where g = dy, or
/// dy times the multipliers of `drop` when it is not null (rounded to float first);
/// f_k = 1 / count_k (count_k: k's occurrences among all n ids) when by_freq; c = *scale when
/// scale is not null. A factor that is absent is not multiplied by. pad < 0: no padding id.
void embedding_dense_backward(const std::int64_t* ids, std::size_t n, const float* dy,
                              std::size_t num, std::size_t dim, std::int64_t pad, bool by_freq,
                              const float* scale, const EmbeddingDropout* drop, float* dweight);
/// The row-sparse gradient's values: values[r, :] = g[from[r], :] * c for r < kept, g = dy or
/// dy times the multipliers of `drop` when it is not null (rounded to float first), c = *scale
/// when scale is not null (no "* c" otherwise).
void embedding_sparse_values(const std::size_t* from, std::size_t kept, const float* dy,
                             std::size_t dim, const float* scale, const EmbeddingDropout* drop,
                             float* values);

}  // namespace tapegrad::ops
