// src/ops/embedding.cpp
//
// The embedding lookup (docs/semantics.md#embedding) and its fused, scaled form (the tutorials'
// lut(x) * sqrt(d_model), docs/semantics.md#embeddings-the-scaled-lookup-of-the-tutorials). ids:
// any shape S, weight: (num, dim), output: S + (dim,). Backward never reads weight, so nothing is
// saved: the closure keeps the ids (and the options) alive. Everything a user can get wrong is
// checked before the weight is touched; the max_norm renorm is the one in-place write, and it bumps
// weight's version.
// The gather and the dense scatter of the gradient are kernels: the reference kernels below (read
// them first; the padding row is skipped in embedding_dense_backward) and their fast versions in
// src/kernels/embedding.cpp, picked for the CPU by kernels::pick (docs/kernels.md), with the fused
// embedding_add_rows_dropout's forward and the row-sparse gradient's values; the backward runs the
// kernels of the set the forward ran on.
#include "tapegrad/ops/embedding.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dropout_mask.hpp"
#include "embedding_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// The fast versions sort the positions by id once and write each gradient row once, in parallel;
// they add the same terms in the same order, so both give the same bits.

// y[p, :] = weight[ids[p], :] * c        (c = *scale; a plain copy without one)
void embedding_forward(const std::int64_t* ids, std::size_t n, const float* weight, std::size_t dim,
                       const float* scale, float* y) {
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t j = 0; j < dim; ++j) {
      const float w = weight[std::size_t(ids[p]) * dim + j];
      y[p * dim + j] = scale ? w * *scale : w;
    }
}

// y[p, :] = (weight[ids[p], :] * c + rows[p % L, :]) * m[p, :]     (no "* m" without drop)
void embedding_forward_add_rows(const std::int64_t* ids, std::size_t n, const float* weight,
                                std::size_t dim, float c, const float* rows, std::size_t L,
                                const EmbeddingDropout* drop, float* y) {
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
void embedding_dense_backward(const std::int64_t* ids, std::size_t n, const float* dy,
                              std::size_t num, std::size_t dim, std::int64_t pad, bool by_freq,
                              const float* scale, const EmbeddingDropout* drop, float* dweight) {
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
void embedding_sparse_values(const std::size_t* from, std::size_t kept, const float* dy,
                             std::size_t dim, const float* scale, const EmbeddingDropout* drop,
                             float* values) {
  for (std::size_t r = 0; r < kept; ++r)
    for (std::size_t j = 0; j < dim; ++j) {
      const std::size_t e = from[r] * dim + j;  // dy's element, and its dropout multiplier's
      const float g =
          drop ? dy[e] * ops::dropout_multiplier(drop->seed, drop->call, drop->p, e) : dy[e];
      values[r * dim + j] = scale ? g * *scale : g;
    }
}

// ---- the op -------------------------------------------------------------------------------------

namespace {

// Every id in [0, num); the first offender names its value and its multi-index in ids.
void check_ids(const IndexArray& ids, std::int64_t num, const std::string& where) {
  const std::int64_t* id = ids.data();
  for (std::size_t p = 0, n = ids.size(); p < n; ++p)
    if (id[p] < 0 || id[p] >= num) [[unlikely]]
      fail<IndexError>("index out of range in self | ", where, ": expected ids in [0, ", num,
                       "), got ", id[p], " at position ", position_str(p, ids.shape()));
}

// ||row||_p in double: p = inf -> max|x|, p = -inf -> min|x|, p = 0 -> count of non-zeros.
double row_norm(const float* row, std::size_t dim, double p) {
  if (p == std::numeric_limits<double>::infinity() ||
      p == -std::numeric_limits<double>::infinity()) {
    double best = std::abs(double(row[0]));
    for (std::size_t j = 1; j < dim; ++j)
      best = p > 0 ? std::max(best, std::abs(double(row[j])))
                   : std::min(best, std::abs(double(row[j])));
    return best;
  }
  double acc = 0.0;
  if (p == 0.0) {
    for (std::size_t j = 0; j < dim; ++j) acc += row[j] != 0.0f ? 1.0 : 0.0;
    return acc;
  }
  if (p == 1.0) {
    for (std::size_t j = 0; j < dim; ++j) acc += std::abs(double(row[j]));
    return acc;
  }
  if (p == 2.0) {
    for (std::size_t j = 0; j < dim; ++j) acc += double(row[j]) * double(row[j]);
    return std::sqrt(acc);
  }
  for (std::size_t j = 0; j < dim; ++j) acc += std::pow(std::abs(double(row[j])), p);
  return std::pow(acc, 1.0 / p);
}

// PyTorch's embedding_renorm_: each distinct referenced row, in ascending id order, is scaled by
// max_norm / (norm + 1e-7) when its norm (in double) exceeds max_norm. Rows not referenced are
// untouched. An in-place write like PyTorch's: the version goes up (once) even if no row needed
// scaling, so an entry that saved weight earlier in the graph fails at backward instead of using
// the new values silently.
void renorm_rows_(const Tensor& weight, const IndexArray& ids, double max_norm, double norm_type) {
  autograd::NoGradGuard no_grad;
  std::vector<std::int64_t> rows(ids.data(), ids.data() + ids.size());
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  const std::size_t dim = weight.shape()[1];
  float* w = weight.mutable_data().data();
  if (dim == 0) return;
  for (std::int64_t k : rows) {
    float* row = w + static_cast<std::size_t>(k) * dim;
    const double norm = row_norm(row, dim, norm_type);
    if (norm > max_norm) {
      const float scale = static_cast<float>(max_norm / (norm + 1e-7));
      for (std::size_t j = 0; j < dim; ++j) row[j] *= scale;
    }
  }
}

// Everything both entry points check and do before the gather; returns the normalised pad.
std::optional<std::int64_t> prepare(const IndexArray& ids, const Tensor& weight,
                                    const EmbeddingOptions& o, const std::string& where) {
  check<ShapeError>(weight.dim() == 2, "'weight' must be 2-D | ", where,
                    ": expected weight of shape (num_embeddings, embedding_dim), got ",
                    weight.shape());
  const auto num = static_cast<std::int64_t>(weight.shape()[0]);
  const std::optional<std::int64_t> pad = check_embedding_options(o, num, where);
  check_ids(ids, num, where);  // before anything is changed
  if (o.max_norm()) renorm_rows_(weight, ids, *o.max_norm(), o.norm_type());
  return pad;
}

// out[p, :] = w[ids[p], :] * c (a plain copy when not scaled: x * c is then skipped, not rounded).
Array gather(decltype(&embedding_forward) forward, const IndexArray& ids, const Array& weight,
             const float* c) {
  const std::size_t dim = weight.shape()[1];
  Shape out_shape(ids.shape().begin(), ids.shape().end());
  out_shape.push_back(dim);
  Array out = Array::from_shape(out_shape);
  forward(ids.data(), ids.size(), weight.data(), dim, c, out.data());
  return out;
}

// Dense backward with the fused scale c: for each position p in ascending order, unless it holds
// the pad id,  dW[k, :] += f * (dy[p, :] * c)  with k = ids[p] and f = 1 / count[k] when scaling
// by frequency. The multiplications by f and c are skipped when they are absent; since x * 1 is
// exactly x, that is only speed, and the sums are bit-identical to embedding() followed by mul().
// With `drop` (embedding_add_rows_dropout), dy is first multiplied by the dropout multipliers:
// dz[p, :] = dy[p, :] * m[p, :], rounded, then dz takes dy's place above, which is
// add_rows_dropout's backward followed by this one.
Array dense_backward(decltype(&embedding_dense_backward) scatter, const IndexArray& ids,
                     const Array& dy, const Shape& weight_shape, std::optional<std::int64_t> pad,
                     bool by_freq, const float* c, const EmbeddingDropout* drop = nullptr) {
  Array dweight = Array::from_shape(weight_shape);  // the kernel writes every element
  scatter(ids.data(), ids.size(), dy.data(), weight_shape[0], weight_shape[1], pad ? *pad : -1,
          by_freq, c, drop, dweight.data());
  return dweight;
}

// The row-sparse gradient (row_sparse.hpp): one row per non-pad position, in position order,
// duplicates kept; every position being padding gives an empty (not an absent) gradient.
RowSparseGrad sparse_backward(decltype(&embedding_sparse_values) values, const IndexArray& ids,
                              const Array& dy, const Shape& weight_shape,
                              std::optional<std::int64_t> pad, const float* c,
                              const EmbeddingDropout* drop = nullptr) {
  const std::size_t dim = weight_shape[1], n = ids.size();
  const std::int64_t* id = ids.data();
  std::vector<std::size_t> from;  // from[r]: the position of kept row r
  from.reserve(n);
  for (std::size_t p = 0; p < n; ++p)
    if (!(pad && id[p] == *pad)) from.push_back(p);
  const std::size_t kept = from.size();
  RowSparseGrad g;
  g.dense_shape = weight_shape;
  g.indices = IndexArray::from_shape({kept});
  g.values = Array::from_shape({kept, dim});
  for (std::size_t r = 0; r < kept; ++r) g.indices.data()[r] = id[from[r]];
  values(from.data(), kept, dy.data(), dim, c, drop, g.values.data());
  return g;
}

// The lookup, optionally fused with "* c"; op names the tape entry and the error messages.
Tensor lookup(const char* op, const IndexArray& ids, const Tensor& weight,
              const EmbeddingOptions& o, std::optional<float> scale) {
  const std::string where = autograd::where(op);
  const std::optional<std::int64_t> pad = prepare(ids, weight, o, where);
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto scatter = kernels::pick<embedding_dense_backward>();
  const auto values = kernels::pick<embedding_sparse_values>();
  Tensor y(
      gather(kernels::pick<embedding_forward>(), ids, weight.data(), scale ? &*scale : nullptr));
  const bool sparse = o.sparse(), by_freq = o.scale_grad_by_freq();
  autograd::record(op, y, {weight}, /*saved=*/{},
                   [weight, ids, pad, sparse, by_freq, scale, op, scatter, values](Array dy) {
                     const float* c = scale ? &*scale : nullptr;
                     if (sparse)
                       weight.accumulate_grad(
                           sparse_backward(values, ids, dy, weight.shape(), pad, c), op);
                     else
                       weight.accumulate_grad(
                           dense_backward(scatter, ids, dy, weight.shape(), pad, by_freq, c), op);
                   });
  return y;
}

}  // namespace

std::optional<std::int64_t> check_embedding_options(const EmbeddingOptions& o, std::int64_t num,
                                                    const std::string& where) {
  const std::optional<std::int64_t> pad = o.padding_idx();
  if (pad)
    check<ValueError>(-num <= *pad && *pad < num, "Padding_idx must be within num_embeddings | ",
                      where, ": expected padding_idx in [", -num, ", ", num, "), got ", *pad);
  if (const std::optional<double> max_norm = o.max_norm())
    check<ValueError>(*max_norm > 0.0, where, ": expected max_norm > 0, got ", py_float(*max_norm),
                      "; leave max_norm unset to never renormalise");
  check<ValueError>(!std::isnan(o.norm_type()), where,
                    ": expected norm_type to be a number, got nan");
  check<ValueError>(!(o.sparse() && o.scale_grad_by_freq()),
                    "embedding_backward: scale_grad_by_freq not supported with sparse gradients | ",
                    where, ": expected at most one of sparse and scale_grad_by_freq, got both");
  if (pad && *pad < 0) return num + *pad;  // PyTorch's F.embedding: -1 is the last row
  return pad;
}

Tensor embedding(const IndexArray& ids, const Tensor& weight, const EmbeddingOptions& options) {
  // y[s, :] = weight[ids[s], :]
  // dweight[k, :] = sum over positions p with ids[p] == k != padding_idx of dy[p, :]
  //                 (divided by count[k] with scale_grad_by_freq; row-sparse with sparse)
  return lookup("embedding", ids, weight, options, std::nullopt);
}

Tensor embedding_scaled(const IndexArray& ids, const Tensor& weight, double scale,
                        const EmbeddingOptions& options) {
  // y[s, :] = weight[ids[s], :] * c                   with c = float(scale), as ops::mul casts it
  // dweight[k, :] = sum over the same positions of dy[p, :] * c
  // One pass instead of a gather then a multiply; the roundings are the same, so the results
  // equal ops::mul(ops::embedding(ids, weight), scale) bit for bit.
  return lookup("embedding_scaled", ids, weight, options, static_cast<float>(scale));
}

Tensor embedding_add_rows_dropout(const IndexArray& ids, const Tensor& weight, double scale,
                                  const Array& rows, double p, bool training, DropoutStream stream,
                                  const EmbeddingOptions& o) {
  // e[b, l, :] = weight[ids[b, l], :] * c          c = float(scale)            (embedding_scaled)
  // z[b, l, :] = e[b, l, :] + rows[l, :]           rows: the first L rows of a (..., R, D) table
  // y = z * m,   m[i] = keep(i) ? 1 / (1 - p) : 0  the mask of `stream`         (add_rows_dropout)
  // dweight[k, :] = sum over positions p with ids[p] == k != padding_idx
  //                 of (dy[p, :] * m[p, :]) * c
  // One pass over the activations each way instead of three; the roundings are the unfused ops',
  // so values and gradients equal add_rows_dropout(embedding_scaled(...), ...) bit for bit.
  const char* op = "embedding_add_rows_dropout";
  const std::string where = autograd::where(op);
  check_dropout_probability(p);
  const std::size_t table_rows = rows.dimension() >= 2 ? rows.size() / rows.shape().back() : 0;
  const bool fits = ids.dimension() == 2 && weight.dim() == 2 && rows.dimension() >= 2 &&
                    rows.shape().back() == weight.shape()[1] && table_rows >= ids.shape()[1];
  if (!fits)
    fail<ShapeError>(where,
                     ": expected ids of shape (B, L), weight (num, D) and a table of shape (..., "
                     "R, D) with R >= L, got ",
                     ids.shape(), ", ", weight.shape(), " and ", rows.shape());
  const std::optional<std::int64_t> pad = prepare(ids, weight, o, where);
  const std::size_t dim = weight.shape()[1], n = ids.size(), L = ids.shape()[1];
  const bool drops = training && p != 0.0 && n * dim != 0;
  const float c = static_cast<float>(scale);
  const EmbeddingDropout drop{stream.seed, stream.call, p};
  const auto scatter = kernels::pick<embedding_dense_backward>();
  const auto values = kernels::pick<embedding_sparse_values>();
  Array out = Array::from_shape({ids.shape()[0], L, dim});
  kernels::pick<embedding_forward_add_rows>()(ids.data(), n, weight.data().data(), dim, c,
                                              rows.data(), L, drops ? &drop : nullptr, out.data());
  Tensor result(std::move(out));
  const bool sparse = o.sparse(), by_freq = o.scale_grad_by_freq();
  autograd::record(
      op, result, {weight}, /*saved=*/{},
      [weight, ids, pad, sparse, by_freq, c, drop, drops, op, scatter, values](Array dy) {
        const EmbeddingDropout* m = drops ? &drop : nullptr;
        if (sparse)
          weight.accumulate_grad(sparse_backward(values, ids, dy, weight.shape(), pad, &c, m), op);
        else
          weight.accumulate_grad(
              dense_backward(scatter, ids, dy, weight.shape(), pad, by_freq, &c, m), op);
      });
  return result;
}

}  // namespace tapegrad::ops
