// src/ops/embedding_reference.cpp
//
// The embedding lookup's reference kernels: the maths as plain loops, no threads, no intrinsics
// (docs/kernels.md: read these first). The fast kernels (embedding_fast.cpp) sort the positions by
// id once and write each gradient row once, in parallel; they add the same terms in the same
// order, so both give the same bits.
#include <algorithm>
#include <vector>

#include "dropout_mask.hpp"
#include "embedding_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// y[p, :] = weight[ids[p], :] * c        (c = *scale; a plain copy without one)
void forward(const std::int64_t* ids, std::size_t n, const float* weight, std::size_t dim,
             const float* scale, float* y) {
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t j = 0; j < dim; ++j) {
      const float w = weight[std::size_t(ids[p]) * dim + j];
      y[p * dim + j] = scale ? w * *scale : w;
    }
}

// y[p, :] = (weight[ids[p], :] * c + rows[p % L, :]) * m[p, :]     (no "* m" without drop)
void forward_add_rows(const std::int64_t* ids, std::size_t n, const float* weight, std::size_t dim,
                      float c, const float* rows, std::size_t L, const EmbeddingDropout* drop,
                      float* y) {
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t j = 0; j < dim; ++j) {
      const std::size_t e = p * dim + j;  // y's element, and its dropout multiplier's
      const float z = weight[std::size_t(ids[p]) * dim + j] * c + rows[(p % L) * dim + j];
      y[e] = drop ? z * ops::dropout_multiplier(drop->seed, drop->call, drop->p, e) : z;
    }
}

// dweight = 0;  then for each position p in order, with k = ids[p], unless k == pad:
//   dweight[k, :] += f_k * (g[p, :] * c)     g = dy, or dy * the dropout mask
//                                             f_k = 1 / count_k with by_freq, c = *scale, or 1
void dense_backward(const std::int64_t* ids, std::size_t n, const float* dy, std::size_t num,
                    std::size_t dim, std::int64_t pad, bool by_freq, const float* scale,
                    const EmbeddingDropout* drop, float* dweight) {
  std::vector<std::size_t> count(num, 0);
  for (std::size_t p = 0; p < n; ++p) ++count[std::size_t(ids[p])];
  std::fill(dweight, dweight + num * dim, 0.0f);
  for (std::size_t p = 0; p < n; ++p) {
    if (ids[p] == pad) continue;
    const std::size_t k = std::size_t(ids[p]);
    const float f = by_freq ? float(1.0 / double(count[k])) : 1.0f, c = scale ? *scale : 1.0f;
    for (std::size_t j = 0; j < dim; ++j) {
      const std::size_t e = p * dim + j;  // dy's element, and its dropout multiplier's
      const float g =
          drop ? dy[e] * ops::dropout_multiplier(drop->seed, drop->call, drop->p, e) : dy[e];
      dweight[k * dim + j] += f * (g * c);
    }
  }
}

// values[r, :] = g[from[r], :] * c        g = dy, or dy * the dropout mask; c = *scale, or none
void sparse_values(const std::size_t* from, std::size_t kept, const float* dy, std::size_t dim,
                   const float* scale, const EmbeddingDropout* drop, float* values) {
  for (std::size_t r = 0; r < kept; ++r)
    for (std::size_t j = 0; j < dim; ++j) {
      const std::size_t e = from[r] * dim + j;  // dy's element, and its dropout multiplier's
      const float g =
          drop ? dy[e] * ops::dropout_multiplier(drop->seed, drop->call, drop->p, e) : dy[e];
      values[r * dim + j] = scale ? g * *scale : g;
    }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const EmbeddingKernels embedding{forward, forward_add_rows, dense_backward, sparse_values};

}  // namespace tapegrad::kernels::reference
