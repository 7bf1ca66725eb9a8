// src/ops/broadcast.cpp: NumPy broadcasting rules, checked, and their adjoint.
#include "tapegrad/ops/broadcast.hpp"

#include "reduce_kernels.hpp"
#include "tapegrad/core/sizes.hpp"

namespace tapegrad::ops {

Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {  // align from the right
    const std::size_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::size_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    check<ShapeError>(da == db || da == 1 || db == 1, "The size of tensor a (", da,
                      ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
                      " | ", op, ": shapes ", a, " and ", b, " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  checked_numel(out, op);  // (0, 2^40, 1) and (2^40,) broadcast to an empty shape no layout holds
  return out;
}

namespace {
// Sums axis `ax` of a row-major array, keeping it as size 1: view g as (outer, n, inner).
Array sum_axis_keepdim(const Array& g, std::size_t ax) {
  const Shape& s = g.shape();
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < ax; ++i) outer *= s[i];
  for (std::size_t i = ax + 1; i < s.size(); ++i) inner *= s[i];
  const std::size_t n = s[ax];
  Shape out_shape = s;
  out_shape[ax] = 1;
  Array out = Array::from_shape(out_shape);
  kernels::pick<reduce_sum_axis>()(g.data(), outer, n, inner, out.data());  // in float
  return out;
}
}  // namespace

Array sum_to_shape(const Array& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Array out = g;
  return sum_to_shape(std::move(out), shape);
}

Array sum_to_shape(Array&& g, const Shape& shape) {
  if (g.shape() == shape) return std::move(g);
  Array out = std::move(g);
  while (out.dimension() > shape.size()) {  // axes that broadcasting prepended
    out = sum_axis_keepdim(out, 0);
    Shape dropped(out.shape().begin() + 1, out.shape().end());
    out.reshape(dropped);
  }
  for (std::size_t ax = 0; ax < shape.size(); ++ax)  // axes stretched from size 1
    if (shape[ax] == 1 && out.shape()[ax] != 1) out = sum_axis_keepdim(out, ax);
  return out;
}

std::size_t normalize_dim(const std::string& op, std::int64_t dim, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t lo = rank == 0 ? -1 : -r, hi = rank == 0 ? 0 : r - 1;
  check<IndexError>(lo <= dim && dim <= hi, "Dimension out of range (expected to be in range of [",
                    lo, ", ", hi, "], but got ", dim, ") | ", op, ": a tensor of rank ", rank,
                    " has no dimension ", dim);
  return static_cast<std::size_t>(dim < 0 ? dim + std::max<std::int64_t>(r, 1) : dim);
}

}  // namespace tapegrad::ops
