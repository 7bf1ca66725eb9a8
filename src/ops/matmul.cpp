// src/ops/matmul.cpp
//
// Matrix products on raw row-major pointers, each one call of detail::gemm (src/core/gemm.hpp:
// the engine TAPEGRAD_GEMM chooses, OpenBLAS's sgemm by default; bf16 products inside an
// autocast::bf16 scope).
// Transposes are never materialised: sgemm's transpose flags read B^T or A^T in place.
// Shapes (row-major, contiguous):
//   matmul  (n, k) @ (k, m) -> (n, m);  (b, n, k) @ (b, k, m) -> (b, n, m), one GEMM per batch;
//           (..., n, k) @ (k, m) -> (..., n, m): the leading dims are folded into the rows, so it
//           is one GEMM of (N, k) @ (k, m) and the gradient of the (k, m) side sums over all rows.
//   linear  x (*, in), weight (out, in), bias (out): y = x W^T + b, one GEMM on x seen as (N, in).
//   lora_linear  linear plus a LoRA adapter's s (xd A^T) B^T, added into y by a second GEMM.
// Backward reads the saved operands; a side that needs no gradient costs no work.
#include "tapegrad/ops/matmul.hpp"

#include <algorithm>
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "../core/parallel.hpp"
#include "../core/bf16_saved.hpp"
#include "../core/gemm.hpp"
#include "reduce_kernels.hpp"
#include "tapegrad/core/autocast.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

namespace {
// Elements worth a thread in linear's copy of the bias into every row (a copy costs well under a
// nanosecond per element; waking a thread, microseconds).
constexpr std::size_t kCopyGrain = std::size_t{1} << 15;

// C (M, N) = op(A) op(B), or C += op(A) op(B) when accumulate. op(A) is (M, K): A is stored
// (M, K), or (K, M) when ta (then op(A) = A^T); likewise op(B) is (K, N), stored (N, K) when tb.
// All three are contiguous, so each leading dimension is the row length of the stored matrix.
// `rounded`: an operand given as its bf16 bits instead (inside an autocast::bf16 scope).
void gemm(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, const float* A,
          const float* B, float* C, bool accumulate, ::tapegrad::detail::Rounded rounded = {}) {
  ::tapegrad::detail::gemm(ta, tb, M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N,
                           accumulate ? 1.0f : 0.0f, C, N, rounded);
}

// A product's backward reads one side only for the other side's gradient (dA = dY B^T reads B),
// whether each side wanted a gradient decided when the forward ran, as PyTorch's graph does. A side
// that is not read is kept as an edge: the tape then holds its place in the graph, not its data.
// A side frozen between forward and backward gets nothing (PyTorch's AccumulateGrad skips a leaf
// that no longer requires grad), and one unfrozen then gets nothing either: its edge was not kept.
Tensor read_if(const Tensor& t, bool read) { return read ? t : t.edge(); }
std::vector<Tensor> reads(const Tensor& a, bool read_a, const Tensor& b, bool read_b) {
  std::vector<Tensor> saved;
  if (read_a) saved.push_back(a);
  if (read_b) saved.push_back(b);
  return saved;
}

std::size_t product(const Shape& s, std::size_t from, std::size_t to) {
  std::size_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= s[i];
  return p;
}
}  // namespace

namespace {
// Where each matrix of a broadcast batch lies: for each of the batch's matrices (in row-major
// order of the batch shape), the index of the matrix of a and of b it multiplies.
struct BatchMap {
  Shape shape;  // the broadcast batch dims
  std::vector<std::size_t> of_a, of_b;
};

// torch.matmul's batch broadcasting: the batch dims (all but the last two) aligned from the
// right, each pair equal or one of them 1.
BatchMap broadcast_batches(const Shape& sa, const Shape& sb, const std::string& where) {
  const std::size_t ra = sa.size() - 2, rb = sb.size() - 2, r = std::max(ra, rb);
  BatchMap map;
  map.shape.assign(r, 1);
  for (std::size_t d = 0; d < r; ++d) {
    const std::size_t da = d + ra >= r ? sa[d + ra - r] : 1, db = d + rb >= r ? sb[d + rb - r] : 1;
    check<ShapeError>(da == db || da == 1 || db == 1, "The size of tensor a (", da,
                      ") must match the size of tensor b (", db, ") at non-singleton dimension ", d,
                      " | ", where,
                      ": expected batch dimensions that broadcast (equal, or one of them 1), got "
                      "shapes ",
                      sa, " and ", sb);
    map.shape[d] = std::max(da, db);
  }
  const std::size_t count = product(map.shape, 0, r);
  map.of_a.resize(count);
  map.of_b.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    // i's index along each batch dim, from the last; a dim of size 1 of a side stays at 0
    std::size_t rest = i, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (std::size_t d = r; d-- > 0;) {
      const std::size_t at = rest % map.shape[d];
      rest /= map.shape[d];
      if (d + ra >= r) {
        const std::size_t size = sa[d + ra - r];
        ia += (size == 1 ? 0 : at) * stride_a;
        stride_a *= size;
      }
      if (d + rb >= r) {
        const std::size_t size = sb[d + rb - r];
        ib += (size == 1 ? 0 : at) * stride_b;
        stride_b *= size;
      }
    }
    map.of_a[i] = ia;
    map.of_b[i] = ib;
  }
  return map;
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  // Y[i] = A[i] B[i] for each matrix i of the broadcast batch, as torch.matmul for two tensors of
  // 2 or more dims:    dA[i] = dY[i] B[i]^T    dB[i] = A[i]^T dY[i]
  // where a matrix of a (or b) used by several i (a batch dim of 1, or a missing one) gets the
  // sum of their gradients. b 2-D is the common case, one product: a's leading dims are rows.
  const std::string where = autograd::where("matmul");
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  check<ShapeError>(sa.size() >= 2 && sb.size() >= 2, where,
                    ": expected (..., n, k) @ (..., k, m), two tensors of 2 or more dimensions "
                    "whose batch dimensions broadcast, got shapes ",
                    sa, " and ", sb,
                    " (PyTorch's products with a 1-D vector are not supported: unsqueeze it)");
  const std::size_t k = sa.back(), m = sb.back();
  if (sb.size() == 2) {
    const std::size_t n = product(sa, 0, sa.size() - 1);  // leading dims folded into the rows
    check<ShapeError>(sb[0] == k, "mat1 and mat2 shapes cannot be multiplied (", n, "x", k, " and ",
                      sb[0], "x", m, ") | ", where,
                      ": expected (..., n, k) @ (k, m) with the same k, got shapes ", sa, " and ",
                      sb);
    Shape out_shape = sa;
    out_shape.back() = m;
    Array out = Array::from_shape(out_shape);
    gemm(false, false, n, m, k, a.data().data(), b.data().data(), out.data(), false);
    Tensor y(std::move(out));
    const bool want_a = a.requires_grad(), want_b = b.requires_grad();
    autograd::record(
        "matmul", y, std::vector<Tensor>{a, b}, reads(a, want_b, b, want_a),
        [a = read_if(a, want_b), b = read_if(b, want_a), want_a, want_b, n, k, m](Array dy) {
          if (want_a && a.requires_grad()) {
            Array da = Array::from_shape(a.shape());
            gemm(false, true, n, k, m, dy.data(), b.data().data(), da.data(), false);
            a.accumulate_grad(std::move(da), "matmul");
          }
          if (want_b && b.requires_grad()) {
            Array db = Array::from_shape(b.shape());
            gemm(true, false, k, m, n, a.data().data(), dy.data(), db.data(), false);
            b.accumulate_grad(std::move(db), "matmul");
          }
        });
    return y;
  }
  const std::size_t n = sa[sa.size() - 2];
  const auto map = std::make_shared<const BatchMap>(broadcast_batches(sa, sb, where));
  const std::size_t count = map->of_a.size();
  check<ShapeError>(
      sb[sb.size() - 2] == k, "Expected size for first two dimensions of batch2 tensor to be: [",
      count, ", ", k, "] but got: [", count, ", ", sb[sb.size() - 2], "]. | ", where,
      ": expected (..., n, k) @ (..., k, m) with the same k, got shapes ", sa, " and ", sb);
  Shape out_shape = map->shape;
  out_shape.push_back(n);
  out_shape.push_back(m);
  Array out = Array::from_shape(out_shape);
  const float *pa = a.data().data(), *pb = b.data().data();
  for (std::size_t i = 0; i < count; ++i)
    gemm(false, false, n, m, k, pa + map->of_a[i] * n * k, pb + map->of_b[i] * k * m,
         out.data() + i * n * m, false);
  Tensor y(std::move(out));
  const bool want_a = a.requires_grad(), want_b = b.requires_grad();
  autograd::record(
      "matmul", y, std::vector<Tensor>{a, b}, reads(a, want_b, b, want_a),
      [a = read_if(a, want_b), b = read_if(b, want_a), want_a, want_b, map, count, n, k,
       m](Array dy) {
        const float *A = want_b ? a.data().data() : nullptr,
                    *B = want_a ? b.data().data() : nullptr;
        const float* dY = dy.data();
        // A matrix's first gradient is written, the next ones added (beta = 1).
        const auto written = [](std::size_t matrices) {
          return std::vector<bool>(matrices, false);
        };
        if (want_a && a.requires_grad()) {
          Array da = Array::from_shape(a.shape());
          da.fill(0.0f);  // a matrix of a that no batch entry uses cannot exist, but stay defined
          std::vector<bool> done = written(product(a.shape(), 0, a.dim() - 2));
          for (std::size_t i = 0; i < count; ++i) {
            const std::size_t j = map->of_a[i];
            gemm(false, true, n, k, m, dY + i * n * m, B + map->of_b[i] * k * m,
                 da.data() + j * n * k, done[j]);
            done[j] = true;
          }
          a.accumulate_grad(std::move(da), "matmul");
        }
        if (want_b && b.requires_grad()) {
          Array db = Array::from_shape(b.shape());
          db.fill(0.0f);
          std::vector<bool> done = written(product(b.shape(), 0, b.dim() - 2));
          for (std::size_t i = 0; i < count; ++i) {
            const std::size_t j = map->of_b[i];
            gemm(true, false, k, m, n, A + map->of_a[i] * n * k, dY + i * n * m,
                 db.data() + j * k * m, done[j]);
            done[j] = true;
          }
          b.accumulate_grad(std::move(db), "matmul");
        }
      });
  return y;
}

namespace {
// linear's backward, for dy (N, out) seen as rows: dX = dY W, dW = dY^T X, and db = the column
// sums of dY in double, each column down the rows in order (sum(dy, dim 0) on the reductions'
// kernels of the set the forward ran on). A side that needs no gradient costs nothing; which sides
// do (`want`) was decided by the forward, which kept x's data only for dW.
struct LinearGrads {
  bool x, weight, bias;
  explicit LinearGrads(const Tensor& input, const Tensor& w, const Tensor& b)
      : x(input.requires_grad()),
        weight(w.requires_grad()),
        bias(b.defined() && b.requires_grad()) {}
};
void linear_backward(const char* op, const Array& dy, const Tensor& x,
                     const ::tapegrad::detail::SavedInput& x_saved, const Tensor& weight,
                     const Tensor& bias, LinearGrads want,
                     void (*sum_dims)(const float*, const std::size_t*, const std::size_t*,
                                      std::size_t, double*)) {
  const std::size_t out_f = weight.shape()[0], in_f = weight.shape()[1], N = dy.size() / out_f;
  if (want.x && x.requires_grad()) {
    Array dx = Array::from_shape(x.shape());
    ::tapegrad::detail::gemm_weight(false, false, N, in_f, out_f, 1.0f, dy.data(), out_f, weight,
                                    in_f, 0.0f, dx.data(), in_f);
    x.accumulate_grad(std::move(dx), op);
  }
  if (want.weight && weight.requires_grad()) {
    Array dweight = Array::from_shape(weight.shape());
    Array widened;
    const auto x_read = x_saved.operand(widened);
    gemm(true, false, out_f, in_f, N, dy.data(), x_read.values, dweight.data(), false,
         {nullptr, x_read.bits});
    weight.accumulate_grad(std::move(dweight), op);
  }
  if (want.bias && bias.requires_grad()) {
    std::vector<double> sums(out_f, 0.0);
    const std::size_t shape[2] = {N, out_f}, summed_rows[2] = {0, 1};
    sum_dims(dy.data(), shape, summed_rows, 2, sums.data());
    Array dbias = Array::from_shape({out_f});
    std::copy(sums.begin(), sums.end(), dbias.data());
    bias.accumulate_grad(std::move(dbias), op);
  }
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  // Y (N, out) = X (N, in) W^T + b        (X: x with its leading dims folded into N rows)
  // dX = dY W        dW = dY^T X (summed over all N rows by the GEMM)        db[j] = sum_r dY[r, j]
  const std::string where = autograd::where("linear");
  const Shape& sx = x.shape();
  const Shape& sw = weight.shape();
  check<ShapeError>(sw.size() == 2, where,
                    ": expected weight of shape (out_features, in_features), got ", sw);
  check<ShapeError>(!sx.empty(),
                    "both arguments to linear need to be at least 1D, but they are 0D and 2D | ",
                    where, ": expected input of shape (*, ", sw[1], "), got shape ()");
  const std::size_t out_f = sw[0], in_f = sw[1], N = product(sx, 0, sx.size() - 1);
  check<ShapeError>(sx.back() == in_f, "mat1 and mat2 shapes cannot be multiplied (", N, "x",
                    sx.back(), " and ", in_f, "x", out_f, ") | ", where,
                    ": expected input with last dimension ", in_f, ", got shape ", sx);
  const bool has_bias = bias.defined();
  if (has_bias)
    check<ShapeError>(bias.dim() == 1 && bias.shape()[0] == out_f, where,
                      ": expected bias of shape (", out_f, ",) to match weight ", sw, ", got ",
                      bias.shape());
  Shape out_shape = sx;
  out_shape.back() = out_f;
  Array out = Array::from_shape(out_shape);
  if (has_bias)  // every row starts as b; the GEMM adds x W^T (beta = 1)
    ::tapegrad::detail::parallel_for(
        N, std::max<std::size_t>(1, kCopyGrain / std::max<std::size_t>(out_f, 1)),
        [&](std::size_t first, std::size_t last) {
          for (std::size_t r = first; r < last; ++r)
            std::copy_n(bias.data().data(), out_f, out.data() + r * out_f);
        });
  const std::vector<Tensor> inputs =
      has_bias ? std::vector<Tensor>{x, weight, bias} : std::vector<Tensor>{x, weight};
  const bool record = autograd::should_record(inputs);  // (no bf16 copy for a product not recorded)
  const LinearGrads want(x, weight, bias);  // x's data is read for dW only (a frozen W: never)
  // Inside an autocast::bf16 scope the copy of x kept for dW is made first, and the product reads
  // it: x is rounded once, for the product, for the tape and for dW.
  auto x_saved = record ? ::tapegrad::detail::SavedInput::of(x, want.weight)
                        : ::tapegrad::detail::SavedInput{};
  ::tapegrad::detail::gemm_weight(false, true, N, out_f, in_f, 1.0f, x.data().data(), in_f, weight,
                                  in_f, has_bias ? 1.0f : 0.0f, out.data(), out_f, x_saved.bits());
  Tensor y(std::move(out));
  const auto sum_dims = kernels::pick<reduce_sum_dims>();  // for the bias's gradient
  if (!record) return y;
  const std::vector<Tensor> saved = reads(x, x_saved.keeps_tensor(want.weight), weight, want.x);
  autograd::record(
      "linear", y, inputs, saved,
      [x = x.edge(), x_saved = std::move(x_saved), weight, bias, want, sum_dims](Array dy) {
        linear_backward("linear", dy, x, x_saved, weight, bias, want, sum_dims);
      });
  return y;
}

Tensor lora_linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Tensor& x_adapter, const Tensor& lora_a, const Tensor& lora_b,
                   float scaling) {
  // Y = X W^T + b + s (Xd A^T) B^T        H = Xd A^T (N, r), kept for backward
  // dX = dY W    dW = dY^T X    db = column sums of dY        (linear's)
  // dB = s dY^T H    dH = s dY B    dA = dH^T Xd    dXd = dH A
  const std::string where = autograd::where("lora_linear");
  Tensor base = [&] {  // linear's checks and product, without its entry
    autograd::NoGradGuard no_grad;
    return linear(x, weight, bias);
  }();
  const std::size_t out_f = weight.shape()[0], in_f = weight.shape()[1], N = x.numel() / in_f;
  check<ShapeError>(x_adapter.shape() == x.shape(), where,
                    ": expected the adapter's input of x's shape ", x.shape(), ", got ",
                    x_adapter.shape());
  check<ShapeError>(lora_a.dim() == 2 && lora_a.shape()[1] == in_f, where,
                    ": expected lora_A of shape (r, ", in_f, "), got ", lora_a.shape());
  const std::size_t r = lora_a.shape()[0];
  check<ShapeError>(lora_b.dim() == 2 && lora_b.shape()[0] == out_f && lora_b.shape()[1] == r,
                    where, ": expected lora_B of shape (", out_f, ", ", r, "), got ",
                    lora_b.shape());
  Array h = Array::from_shape({N, r});
  gemm(false, true, N, r, in_f, x_adapter.data().data(), lora_a.data().data(), h.data(), false);
  Array out = std::move(base.mutable_data());  // (no other handle holds base)
  ::tapegrad::detail::gemm(false, true, N, out_f, r, scaling, h.data(), r, lora_b.data().data(), r,
                           1.0f, out.data(), out_f);
  Tensor y(std::move(out));
  std::vector<Tensor> inputs{x, weight, x_adapter, lora_a, lora_b};
  if (bias.defined()) inputs.push_back(bias);
  const auto sum_dims = kernels::pick<reduce_sum_dims>();
  if (!autograd::should_record(inputs)) return y;
  // What backward reads: x for dW only, xd for dA only, A for dXd only, B for dH (dA or dXd).
  const LinearGrads want(x, weight, bias);
  const bool want_xd = x_adapter.requires_grad(), want_a = lora_a.requires_grad(),
             want_b = lora_b.requires_grad();
  using ::tapegrad::detail::SavedInput;
  SavedInput x_saved = SavedInput::of(x, want.weight), xd_saved = SavedInput::of(x_adapter, want_a);
  std::vector<Tensor> saved = reads(x, x_saved.keeps_tensor(want.weight), weight, want.x);
  for (const Tensor& t : reads(x_adapter, xd_saved.keeps_tensor(want_a), lora_a, want_xd))
    saved.push_back(t);
  if (want_a || want_xd) saved.push_back(lora_b);
  autograd::record(
      "lora_linear", y, inputs, saved,
      [x = x.edge(), x_saved = std::move(x_saved), weight, bias, want, x_adapter = x_adapter.edge(),
       xd_saved = std::move(xd_saved), lora_a = read_if(lora_a, want_xd),
       lora_b = read_if(lora_b, want_a || want_xd), want_xd, want_a, want_b, h = std::move(h),
       scaling, sum_dims, N, in_f, out_f, r](Array dy) {
        linear_backward("lora_linear", dy, x, x_saved, weight, bias, want, sum_dims);
        if (want_b && lora_b.requires_grad()) {
          Array db = Array::from_shape(lora_b.shape());
          ::tapegrad::detail::gemm(true, false, out_f, r, N, scaling, dy.data(), out_f, h.data(), r,
                                   0.0f, db.data(), r);
          lora_b.accumulate_grad(std::move(db), "lora_linear");
        }
        if (!want_a && !want_xd) return;
        Array dh = Array::from_shape({N, r});
        ::tapegrad::detail::gemm(false, false, N, r, out_f, scaling, dy.data(), out_f,
                                 lora_b.data().data(), r, 0.0f, dh.data(), r);
        if (want_a && lora_a.requires_grad()) {
          Array da = Array::from_shape(lora_a.shape());
          Array widened;
          const auto xd_read = xd_saved.operand(widened);
          gemm(true, false, r, in_f, N, dh.data(), xd_read.values, da.data(), false,
               {nullptr, xd_read.bits});
          lora_a.accumulate_grad(std::move(da), "lora_linear");
        }
        if (want_xd && x_adapter.requires_grad()) {
          Array dxd = Array::from_shape(x_adapter.shape());
          gemm(false, false, N, in_f, r, dh.data(), lora_a.data().data(), dxd.data(), false);
          x_adapter.accumulate_grad(std::move(dxd), "lora_linear");
        }
      });
  return y;
}

}  // namespace tapegrad::ops
