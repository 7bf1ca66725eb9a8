// src/ops/row_sparse_reference.cpp
//
// The row-sparse gradient's reference kernel: plain loops, one thread. Read this first; the fast
// kernel (row_sparse_fast.cpp) splits the groups over threads and gives the same bits.
#include "row_sparse_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// Coalescing: the rows of one id, summed in the order they were produced.
//   out[g, :] = 0 + x[order[group[g]], :] + ... + x[order[group[g + 1] - 1], :]
// The sum starts from 0, as adding into a zeroed dense row would (so a -0 row gives +0).
void sum_groups(const float* values, std::size_t dim, const std::size_t* order,
                const std::size_t* group, std::size_t groups, float* out) {
  for (std::size_t g = 0; g < groups; ++g) {
    float* sum = out + g * dim;
    for (std::size_t j = 0; j < dim; ++j) sum[j] = 0.0f;
    for (std::size_t i = group[g]; i < group[g + 1]; ++i)
      for (std::size_t j = 0; j < dim; ++j) sum[j] += values[order[i] * dim + j];
  }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const RowSparseKernels row_sparse{sum_groups};

}  // namespace tapegrad::kernels::reference
