// src/kernels/row_sparse.cpp
//
// The row-sparse gradient's fast kernel, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The maths is the reference kernel's
// (src/core/row_sparse.cpp); what differs is how it runs:
// - The groups are disjoint, so they are split over tapegrad's pool; each group is summed by one
//   thread in the same order whatever the thread count.
// - The first row is stored as 0 + x rather than added to zeros written first: one pass over the
//   output less, the same bits (0 + x is what the reference's first addition computes).
#include "../core/parallel.hpp"
#include "../core/row_sparse_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/row_sparse.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// The formula: row_sparse_sum_groups's.
void sum_groups(const float* values, std::size_t dim, const std::size_t* order,
                const std::size_t* group, std::size_t groups, float* out) {
  detail::parallel_for(groups, detail::rows_grain(dim), [&](std::size_t first, std::size_t last) {
    for (std::size_t g = first; g < last; ++g) {
      float* sum = out + g * dim;
      const float* row = values + order[group[g]] * dim;
      for (std::size_t j = 0; j < dim; ++j) sum[j] = 0.0f + row[j];
      for (std::size_t i = group[g] + 1; i < group[g + 1]; ++i) {
        row = values + order[i] * dim;
        for (std::size_t j = 0; j < dim; ++j) sum[j] += row[j];
      }
    }
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::detail::row_sparse_sum_groups, sum_groups);
