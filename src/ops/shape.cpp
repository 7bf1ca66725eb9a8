// src/ops/shape.cpp
//
// Shape ops. tapegrad has no views: every op here copies into a new contiguous row-major Array,
// and its backward routes each gradient element back to the input element it came from.
// reshape and unsqueeze keep the row-major order, so both directions are a copy under another
// shape; transpose and permute read through permuted strides (backward: the inverse permutation);
// slice gathers every step-th row of a dimension (backward: scatter into zeros); cat joins blocks
// (backward: splits dy into the same blocks).
#include "tapegrad/ops/shape.hpp"

#include <algorithm>
#include <ostream>

#include <xtensor/xbuilder.hpp>

#include "strided.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"
#include "tapegrad/core/sizes.hpp"

namespace tapegrad::ops {

namespace {
// Prints a requested shape the way PyTorch does, "[2, -1]". A reference wrapper streamed by
// check(), so the text is only built when a check fails.
struct IntList {
  const std::vector<std::int64_t>& values;
};
std::ostream& operator<<(std::ostream& os, IntList list) {
  os << '[';
  for (std::size_t i = 0; i < list.values.size(); ++i) os << (i ? ", " : "") << list.values[i];
  return os << ']';
}

// The same elements, in the same row-major order, under another shape.
Array reshaped(const Array& a, const Shape& shape) {
  Array out = a;
  out.reshape(shape);
  return out;
}

// Output dimension i is input dimension perm[i]: read the input through permuted strides.
Array permuted(const Array& a, const std::vector<std::size_t>& perm) {
  const std::vector<std::size_t> in_strides = detail::row_major_strides(a.shape());
  Shape out_shape(perm.size());
  std::vector<std::size_t> strides(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    out_shape[i] = a.shape()[perm[i]];
    strides[i] = in_strides[perm[i]];
  }
  Array out = Array::from_shape(out_shape);
  const float* src = a.data();
  float* dst = out.data();
  detail::walk(out_shape, strides,
               [&](std::size_t i, std::size_t offset) { dst[i] = src[offset]; });
  return out;
}

std::vector<std::size_t> inverse(const std::vector<std::size_t>& perm) {
  std::vector<std::size_t> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = i;
  return inv;
}

// The input seen as (outer, n, inner) around dimension d.
struct Blocks {
  std::size_t outer = 1, n = 1, inner = 1;
};
Blocks blocks_around(const Shape& s, std::size_t d) {
  Blocks b;
  for (std::size_t k = 0; k < d; ++k) b.outer *= s[k];
  for (std::size_t k = d + 1; k < s.size(); ++k) b.inner *= s[k];
  b.n = s[d];
  return b;
}
}  // namespace

Tensor reshape(const Tensor& a, const std::vector<std::int64_t>& shape) {
  // y = a's elements in row-major order under `shape`        da = dy under a's shape
  const std::string where = autograd::where("reshape");
  const auto numel = static_cast<std::int64_t>(a.numel());
  std::int64_t known = 1;
  std::ptrdiff_t inferred = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      check<ValueError>(inferred < 0, "only one dimension can be inferred | ", where,
                        ": expected at most one -1 in ", IntList{shape});
      inferred = static_cast<std::ptrdiff_t>(i);
      continue;
    }
    check<ValueError>(shape[i] >= 0, "invalid shape dimension ", shape[i], " | ", where,
                      ": expected sizes >= 0 (or one -1), got ", IntList{shape});
    if (__builtin_mul_overflow(known, shape[i], &known))  // a product past 2^63 would wrap around
      fail<ShapeError>("shape '", IntList{shape}, "' is invalid for input of size ", numel, " | ",
                       where, ": its sizes multiply past 2^63 - 1");
  }
  Shape out_shape(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i)  // the -1, if any, is filled in below
    out_shape[i] = static_cast<std::size_t>(std::max<std::int64_t>(shape[i], 0));
  if (inferred >= 0) {
    check<ValueError>(
        known != 0, "cannot reshape tensor of ", numel, " elements into shape ", IntList{shape},
        " because the unspecified dimension size -1 can be any value and is ambiguous | ", where,
        ": expected the other sizes to multiply to a non-zero number");
    check<ShapeError>(numel % known == 0, "shape '", IntList{shape},
                      "' is invalid for input of size ", numel, " | ", where,
                      ": expected the other sizes of ", IntList{shape}, " to divide ", numel,
                      ", the number of elements of shape ", a.shape());
    out_shape[static_cast<std::size_t>(inferred)] = static_cast<std::size_t>(numel / known);
  } else {
    check<ShapeError>(known == numel, "shape '", IntList{shape}, "' is invalid for input of size ",
                      numel, " | ", where, ": expected a shape with ", numel, " elements like ",
                      a.shape(), ", got ", IntList{shape}, " with ", known);
  }
  checked_numel(out_shape, where);  // the non-zero sizes of an empty shape, too
  Tensor y(reshaped(a.data(), out_shape));
  autograd::record("reshape", y, {a}, {}, [a = a.edge()](Array dy) {
    dy.reshape(a.shape());  // the same elements in the same order: no copy
    a.accumulate_grad(std::move(dy), "reshape");
  });
  return y;
}

Tensor transpose(const Tensor& a, std::int64_t dim0, std::int64_t dim1) {
  // y = a with dimensions dim0 and dim1 swapped        da = dy with them swapped back
  const std::string where = autograd::where("transpose");
  const std::size_t rank = a.dim();
  const std::size_t d0 = normalize_dim(where, dim0, rank), d1 = normalize_dim(where, dim1, rank);
  std::vector<std::size_t> perm(rank);
  for (std::size_t i = 0; i < rank; ++i) perm[i] = i;
  if (rank > 0) std::swap(perm[d0], perm[d1]);
  Tensor y(permuted(a.data(), perm));
  autograd::record("transpose", y, {a}, {}, [a = a.edge(), perm](Array dy) {
    a.accumulate_grad(permuted(dy, perm), "transpose");  // a swap is its own inverse
  });
  return y;
}

Tensor permute(const Tensor& a, const std::vector<std::int64_t>& dims) {
  // y dimension i = a dimension dims[i]        da = dy permuted by the inverse permutation
  const std::string where = autograd::where("permute");
  const std::size_t rank = a.dim();
  check<ValueError>(dims.size() == rank,
                    "permute(sparse_coo): number of dimensions in the tensor input does not match "
                    "the length of the desired ordering of dimensions i.e. input.dim() = ",
                    rank, " is not equal to len(dims) = ", dims.size(), " | ", where,
                    ": expected a permutation of ", rank, " dims for shape ", a.shape(), ", got ",
                    IntList{dims});
  std::vector<std::size_t> perm(rank);
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; i < rank; ++i) {
    perm[i] = normalize_dim(where, dims[i], rank);
    check<ValueError>(!seen[perm[i]], "permute(): duplicate dims are not allowed. | ", where,
                      ": expected a permutation of the dims of shape ", a.shape(), ", got ",
                      IntList{dims});
    seen[perm[i]] = true;
  }
  Tensor y(permuted(a.data(), perm));
  autograd::record("permute", y, {a}, {}, [a = a.edge(), inv = inverse(perm)](Array dy) {
    a.accumulate_grad(permuted(dy, inv), "permute");
  });
  return y;
}

Tensor slice(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t end,
             std::int64_t step) {
  // y[.., k, ..] = a[.., start + k * step, ..] for k < len        da: dy scattered back, zeros elsewhere
  const std::string where = autograd::where("slice");
  check<IndexError>(a.dim() > 0, "slice() cannot be applied to a 0-dim tensor. | ", where,
                    ": expected a tensor with at least one dimension, got shape ()");
  check<ValueError>(step > 0, "step must be greater than zero | ", where,
                    ": expected step > 0, got ", step);
  const std::size_t d = normalize_dim(where, dim, a.dim());
  const Blocks b = blocks_around(a.shape(), d);
  const auto n = static_cast<std::int64_t>(b.n);
  auto clamp = [n](std::int64_t v) {
    return std::clamp(v < 0 ? v + n : v, std::int64_t{0}, n);
  };  // Python's rule
  const std::int64_t first = clamp(start), last = clamp(end);
  const std::size_t len =
      last > first ? static_cast<std::size_t>((last - first - 1) / step + 1) : 0;  // ceil
  const auto from = static_cast<std::size_t>(first), stride = static_cast<std::size_t>(step);
  Shape out_shape = a.shape();
  out_shape[d] = len;
  Array out = Array::from_shape(out_shape);
  const float* src = a.data().data();
  for (std::size_t o = 0; o < b.outer; ++o)
    for (std::size_t k = 0; k < len; ++k)
      std::copy_n(src + (o * b.n + from + k * stride) * b.inner, b.inner,
                  out.data() + (o * len + k) * b.inner);
  Tensor y(std::move(out));
  autograd::record("slice", y, {a}, {}, [a = a.edge(), b, len, from, stride](Array dy) {
    Array da = xt::zeros<float>(a.shape());
    for (std::size_t o = 0; o < b.outer; ++o)
      for (std::size_t k = 0; k < len; ++k)
        std::copy_n(dy.data() + (o * len + k) * b.inner, b.inner,
                    da.data() + (o * b.n + from + k * stride) * b.inner);
    a.accumulate_grad(std::move(da), "slice");
  });
  return y;
}

namespace {
std::vector<Tensor> edges(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(t.edge());
  return out;
}
}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  // y = [t_0 | t_1 | ...] along dim        dt_j = the block of dy that t_j filled
  const std::string where = autograd::where("cat");
  check<ValueError>(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors | ", where,
                    ": expected at least one tensor, got none");
  const Shape& first = tensors[0].shape();
  for (std::size_t j = 0; j < tensors.size(); ++j)
    check<ShapeError>(tensors[j].dim() > 0, "zero-dimensional tensor (at position ", j,
                      ") cannot be concatenated | ", where,
                      ": expected tensors with at least one dimension, got shape () for tensor ",
                      j);
  const std::size_t d = normalize_dim(where, dim, first.size());
  std::size_t total = 0;
  for (std::size_t j = 0; j < tensors.size(); ++j) {
    const Shape& s = tensors[j].shape();
    check<ShapeError>(s.size() == first.size(), "Tensors must have same number of dimensions: got ",
                      first.size(), " and ", s.size(), " | ", where, ": expected tensors of rank ",
                      first.size(), " like tensor 0 ", first, ", got ", s, " for tensor ", j);
    for (std::size_t k = 0; k < s.size(); ++k)
      check<ShapeError>(
          k == d || s[k] == first[k], "Sizes of tensors must match except in dimension ", d,
          ". Expected size ", first[k], " but got size ", s[k], " for tensor number ", j,
          " in the list. | ", where, ": expected shapes that agree except in dimension ", d,
          ", got ", first, " for tensor 0 and ", s, " for tensor ", j);
    total += s[d];
  }
  const Blocks b = blocks_around(first, d);
  Shape out_shape = first;
  out_shape[d] = total;
  Array out = Array::from_shape(out_shape);
  std::vector<std::size_t> widths(tensors.size());  // elements each tensor adds to one output block
  for (std::size_t j = 0; j < tensors.size(); ++j) widths[j] = tensors[j].shape()[d] * b.inner;
  const std::size_t row = total * b.inner;
  for (std::size_t o = 0; o < b.outer; ++o) {
    float* dst = out.data() + o * row;
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      std::copy_n(tensors[j].data().data() + o * widths[j], widths[j], dst);
      dst += widths[j];
    }
  }
  Tensor y(std::move(out));
  autograd::record(
      "cat", y, tensors, {}, [tensors = edges(tensors), widths, outer = b.outer, row](Array dy) {
        std::size_t at = 0;  // where tensor j's columns start in a block
        for (std::size_t j = 0; j < tensors.size(); ++j) {
          if (tensors[j].requires_grad()) {
            Array dt = Array::from_shape(tensors[j].shape());
            for (std::size_t o = 0; o < outer; ++o)
              std::copy_n(dy.data() + o * row + at, widths[j], dt.data() + o * widths[j]);
            tensors[j].accumulate_grad(std::move(dt), "cat");
          }
          at += widths[j];
        }
      });
  return y;
}

Tensor unsqueeze(const Tensor& a, std::int64_t dim) {
  // y = a with a dimension of size 1 inserted at dim        da = dy without it
  const std::string where = autograd::where("unsqueeze");
  const auto rank = static_cast<std::int64_t>(a.dim());
  check<IndexError>(-rank - 1 <= dim && dim <= rank,
                    "Dimension out of range (expected to be in range of [", -rank - 1, ", ", rank,
                    "], but got ", dim, ") | ", where, ": a tensor of rank ", rank,
                    " takes a new dimension at positions [", -rank - 1, ", ", rank, "], got ", dim);
  const auto d = static_cast<std::size_t>(dim < 0 ? dim + rank + 1 : dim);
  Shape out_shape(a.dim() + 1);
  for (std::size_t k = 0, from = 0; k < out_shape.size(); ++k)
    out_shape[k] = k == d ? 1 : a.shape()[from++];
  Tensor y(reshaped(a.data(), out_shape));
  autograd::record("unsqueeze", y, {a}, {}, [a = a.edge()](Array dy) {
    a.accumulate_grad(reshaped(dy, a.shape()), "unsqueeze");
  });
  return y;
}

}  // namespace tapegrad::ops
