// src/ops/reduce.cpp
//
// Reductions. Sums accumulate in double, sequentially in row-major order, so they are
// reproducible bit for bit and accurate for the long sums of a loss. A reduction over some
// dimensions is computed in the keepdim layout (reduced dimensions kept with size 1); dropping
// them afterwards changes the shape, not the order of the data. Backward broadcasts dy back over
// the reduced dimensions. max() over all elements shares its gradient evenly among tied maxima;
// max(dim) sends it to the first index holding the maximum (what argmax returns), as PyTorch does.
// The loops are in the reference kernels below (read them first); src/kernels/reduce.cpp has fast
// versions, picked for the CPU by kernels::pick (docs/kernels.md), which add in the same order.
#include "tapegrad/ops/reduce.hpp"

#include <algorithm>
#include <cmath>

#include <xtensor/xbuilder.hpp>

#include "reduce_kernels.hpp"
#include "strided.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// Sums in double, each in the order of its elements in memory. reduce_sum has no fast version
// (every set runs it as it is); the fast versions of the others add in the same order, so every
// set gives the same bits.

// sum = x_0 + x_1 + ... + x_(n-1)
double reduce_sum(const float* x, std::size_t n) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) total += x[i];
  return total;
}

// acc[o] += x[i], o = the offset of i's index with its summed coordinates dropped (stride 0)
void reduce_sum_dims(const float* x, const std::size_t* shape, const std::size_t* out_strides,
                     std::size_t rank, double* acc) {
  std::size_t total = 1;
  for (std::size_t d = 0; d < rank; ++d) total *= shape[d];
  for (std::size_t i = 0; i < total; ++i) {
    std::size_t rest = i, o = 0;  // i's index, last dimension first
    for (std::size_t d = rank; d-- > 0;) {
      o += (rest % shape[d]) * out_strides[d];
      rest /= shape[d];
    }
    acc[o] += x[i];
  }
}

// out[o, j] = sum over k of x[o, k, j]
void reduce_sum_axis(const float* x, std::size_t outer, std::size_t n, std::size_t inner,
                     float* out) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < inner; ++j) {
      float total = 0.0f;
      for (std::size_t k = 0; k < n; ++k) total += x[(o * n + k) * inner + j];
      out[o * inner + j] = total;
    }
}

// values[o, j] = max over k of x[o, k, j], indices[o, j] = the first such k; NaN beats everything
void reduce_max_along(const float* x, std::size_t outer, std::size_t n, std::size_t inner,
                      float* values, std::int64_t* indices) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < inner; ++j) {
      std::size_t best = 0;
      for (std::size_t k = 1; k < n; ++k) {
        const float v = x[(o * n + k) * inner + j], b = x[(o * n + best) * inner + j];
        if (!std::isnan(b) && (v > b || std::isnan(v))) best = k;
      }
      values[o * inner + j] = x[(o * n + best) * inner + j];
      indices[o * inner + j] = static_cast<std::int64_t>(best);
    }
}

// ---- the op -------------------------------------------------------------------------------------

Tensor sum(const Tensor& a) {
  // y = sum_i a_i            da_i = dy
  const double total = reduce_sum(a.data().data(), a.numel());
  Array out = Array::from_shape({});
  out() = static_cast<float>(total);
  Tensor y(std::move(out));
  autograd::record("sum", y, {a}, {}, [a = a.edge()](Array dy) {
    Array da = Array::from_shape(a.shape());
    da.fill(dy());
    a.accumulate_grad(std::move(da), "sum");
  });
  return y;
}

Tensor mean(const Tensor& a) {
  // y = sum_i a_i / n        da_i = dy / n
  const double total = reduce_sum(a.data().data(), a.numel());
  const double n = static_cast<double>(a.numel());
  Array out = Array::from_shape({});
  out() = static_cast<float>(total / n);
  Tensor y(std::move(out));
  autograd::record("mean", y, {a}, {}, [a = a.edge(), n](Array dy) {
    Array da = Array::from_shape(a.shape());
    da.fill(static_cast<float>(double(dy()) / n));
    a.accumulate_grad(std::move(da), "mean");
  });
  return y;
}

// ---- sum and mean over dimensions ---------------------------------------------------------------

namespace {
// Which dimensions a reduction removes, and how input positions map to output positions.
struct Reduction {
  Shape out_shape;                       // the result's shape (keepdim's choice)
  std::vector<std::size_t> out_strides;  // strides of the keepdim layout, 0 along reduced dims
  std::size_t out_size = 1;
  double count = 1.0;  // input elements summed into each output element
};

// dims empty means every dimension, as in PyTorch.
Reduction plan_reduction(const std::string& op, const Shape& in,
                         const std::vector<std::int64_t>& dims, bool keepdim) {
  const std::size_t rank = in.size();
  std::vector<bool> reduced(rank, dims.empty());
  for (std::int64_t d : dims) {
    const std::size_t k = normalize_dim(op, d, rank);
    if (rank == 0) continue;  // a scalar has nothing to reduce: dim 0 / -1 name itself
    check<ValueError>(!reduced[k], "dim ", k, " appears multiple times in the list of dims | ", op,
                      ": expected distinct dims, got dim ", d,
                      " twice (after counting from the end)");
    reduced[k] = true;
  }
  Reduction r;
  Shape keep = in;
  for (std::size_t k = 0; k < rank; ++k)
    if (reduced[k]) {
      r.count *= static_cast<double>(in[k]);
      keep[k] = 1;
    }
  r.out_strides = detail::row_major_strides(keep);
  for (std::size_t k = 0; k < rank; ++k) {
    if (reduced[k])
      r.out_strides[k] = 0;
    else
      r.out_shape.push_back(in[k]);
    if (reduced[k] && keepdim) r.out_shape.push_back(1);
    r.out_size *= keep[k];
  }
  return r;
}

// y = sum (or mean) of a over the planned dimensions.
Array sum_over(const Array& a, const Reduction& r, bool mean) {
  std::vector<double> acc(r.out_size, 0.0);
  const std::vector<std::size_t> shape(a.shape().begin(), a.shape().end());
  kernels::pick<reduce_sum_dims>()(a.data(), shape.data(), r.out_strides.data(), shape.size(),
                                   acc.data());
  Array out = Array::from_shape(r.out_shape);
  for (std::size_t o = 0; o < r.out_size; ++o)
    out.data()[o] = static_cast<float>(mean ? acc[o] / r.count : acc[o]);
  return out;
}

// da = dy (or dy / count) broadcast back over the reduced dimensions.
Array sum_over_backward(const Array& dy, const Shape& in_shape, const Reduction& r, bool mean) {
  Array da = Array::from_shape(in_shape);
  const float* pd = dy.data();
  float* pa = da.data();
  if (mean)
    detail::walk(in_shape, r.out_strides, [&](std::size_t i, std::size_t o) {
      pa[i] = static_cast<float>(double(pd[o]) / r.count);
    });
  else
    detail::walk(in_shape, r.out_strides, [&](std::size_t i, std::size_t o) { pa[i] = pd[o]; });
  return da;
}

Tensor sum_or_mean(const char* op, const Tensor& a, const std::vector<std::int64_t>& dims,
                   bool keepdim, bool mean) {
  // sum:  y[o] = sum over the reduced dims of a[i]        da[i] = dy[o]
  // mean: y[o] = that sum / count                         da[i] = dy[o] / count
  // where o is i with its reduced coordinates set to 0, count the number of elements in the sum.
  Reduction r = plan_reduction(autograd::where(op), a.shape(), dims, keepdim);
  Tensor y(sum_over(a.data(), r, mean));
  autograd::record(op, y, {a}, {}, [a = a.edge(), r = std::move(r), mean, op](Array dy) {
    a.accumulate_grad(sum_over_backward(dy, a.shape(), r, mean), op);
  });
  return y;
}
}  // namespace

Tensor sum(const Tensor& a, std::int64_t dim, bool keepdim) {
  return sum_or_mean("sum", a, {dim}, keepdim, false);
}
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  return sum_or_mean("sum", a, dims, keepdim, false);
}
Tensor mean(const Tensor& a, std::int64_t dim, bool keepdim) {
  return sum_or_mean("mean", a, {dim}, keepdim, true);
}
Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  return sum_or_mean("mean", a, dims, keepdim, true);
}

// ---- max and argmax -----------------------------------------------------------------------------

Tensor max(const Tensor& a) {
  // y = max_i a_i (NaN if any a_i is NaN)
  // da_i = dy / k where a_i == y, else 0 (k = the number of such ties; a NaN y: where a_i is NaN)
  check<ShapeError>(a.numel() > 0,
                    "max(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                    "the reduction dim with the 'dim' argument. | ",
                    autograd::where("max"), ": expected a non-empty tensor, got shape ", a.shape());
  const std::size_t n = a.numel();
  float best;
  std::int64_t at;
  kernels::pick<reduce_max_along>()(a.data().data(), 1, n, 1, &best, &at);
  Array out = Array::from_shape({});
  out() = best;
  Tensor y(std::move(out));
  autograd::record("max", y, {a}, {a}, [a, best, n](Array dy) {
    const float* x = a.data().data();
    auto is_max = [best](float v) { return std::isnan(best) ? std::isnan(v) : v == best; };
    const auto ties = static_cast<float>(std::count_if(x, x + n, is_max));
    const float share = dy() / ties;
    Array da = Array::from_shape(a.shape());
    for (std::size_t i = 0; i < n; ++i) da.data()[i] = is_max(x[i]) ? share : 0.0f;
    a.accumulate_grad(std::move(da), "max");
  });
  return y;
}

namespace {
// The input seen as (outer, n, inner) around dimension dim: the elements of one reduction are
// n values spaced inner apart.
struct AlongDim {
  std::size_t outer = 1, n = 1, inner = 1;
  Shape out_shape;
};

AlongDim plan_along(const char* op, const Shape& in, std::int64_t dim, bool keepdim) {
  const std::string where = autograd::where(op);
  const std::size_t d = normalize_dim(where, dim, in.size());
  AlongDim p;
  if (in.empty()) return p;  // a scalar: one "row" of one element
  for (std::size_t k = 0; k < d; ++k) p.outer *= in[k];
  for (std::size_t k = d + 1; k < in.size(); ++k) p.inner *= in[k];
  p.n = in[d];
  check<IndexError>(p.n > 0, op, "(): Expected reduction dim ", d, " to have non-zero size. | ",
                    where, ": expected dimension ", dim, " of shape ", in, " to be non-empty");
  p.out_shape = in;
  if (keepdim)
    p.out_shape[d] = 1;
  else
    p.out_shape.erase(p.out_shape.begin() + static_cast<std::ptrdiff_t>(d));
  return p;
}

}  // namespace

Tensor max(const Tensor& a, std::int64_t dim, bool keepdim) {
  // y[o, i] = max_k a[o, k, i] = a[o, j, i] with j = argmax (the first such k)
  // da[o, k, i] = dy[o, i] if k == j, else 0
  const AlongDim p = plan_along("max", a.shape(), dim, keepdim);
  Array values = Array::from_shape(p.out_shape);
  IndexArray indices = IndexArray::from_shape(p.out_shape);
  kernels::pick<reduce_max_along>()(a.data().data(), p.outer, p.n, p.inner, values.data(),
                                    indices.data());
  Tensor y(std::move(values));
  autograd::record("max", y, {a}, {}, [a = a.edge(), p, indices = std::move(indices)](Array dy) {
    Array da = xt::zeros<float>(a.shape());
    for (std::size_t o = 0; o < p.outer; ++o)
      for (std::size_t i = 0; i < p.inner; ++i) {
        const std::size_t j = static_cast<std::size_t>(indices.data()[o * p.inner + i]);
        da.data()[(o * p.n + j) * p.inner + i] = dy.data()[o * p.inner + i];
      }
    a.accumulate_grad(std::move(da), "max");
  });
  return y;
}

IndexArray argmax(const Tensor& a, std::int64_t dim, bool keepdim) {
  const AlongDim p = plan_along("argmax", a.shape(), dim, keepdim);
  Array values = Array::from_shape(p.out_shape);
  IndexArray indices = IndexArray::from_shape(p.out_shape);
  kernels::pick<reduce_max_along>()(a.data().data(), p.outer, p.n, p.inner, values.data(),
                                    indices.data());
  return indices;
}

}  // namespace tapegrad::ops
