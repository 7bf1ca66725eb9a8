// tests/kernels/test_special_values.cpp: the fast kernel sets put NaN and the infinities where the
// reference kernels put them, in rows wider than a vector. The PyTorch sweeps
// (tests/ops/test_special_values*.cpp) use rows of 4 to 8 floats, which the fast kernels may run
// in their scalar tails only; here each op runs on rows of 37 floats (two AVX-512 vectors and a
// tail) holding +inf, -inf or NaN in the vectorised part and in the tail, with an incoming
// gradient holding them too, on the reference set and on every fast set this CPU can run. Values
// and gradients must agree: NaN where the other is NaN, the same infinity, finite values within
// 64 float roundings (the sets' largest documented bound is 40: docs/semantics.md#kernel-sets).
// No goldens: the reference is checked against PyTorch by the sweeps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/core.hpp>

#include "../capability_guard.hpp"
#include "kernel_set_compare.hpp"

using namespace tapegrad;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::roundings_apart;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kRows = 7, kWidth = 37;

// (rows, width) of plain values in about [-3, 3], then one kind of special value per row: none,
// +inf in the vector part, -inf there, NaN in the tail, +inf twice, every value -inf, NaN first.
Array special_rows(std::size_t rows = kRows, std::size_t width = kWidth, float shift = 0.0f) {
  Array x = Array::from_shape({rows, width});
  for (std::size_t i = 0; i < x.size(); ++i) x.flat(i) = 3.0f * std::sin(0.7f * float(i) + shift);
  const auto put = [&](std::size_t r, std::size_t c, float v) {
    if (r < rows && c < width) x(r, c) = v;
  };
  put(1, 17, kInf);
  put(2, 20, -kInf);
  put(3, 33, kNaN);
  put(4, 3, kInf);
  put(4, 30, kInf);
  for (std::size_t c = 0; c < width && rows > 5; ++c) x(5, c) = -kInf;
  put(6, 0, kNaN);
  return x;
}

// a's values from row-major position `first` on, laid out as `shape`.
Array with_shape(const Array& a, const Shape& shape, std::size_t first = 0) {
  Array out = Array::from_shape(shape);
  const auto begin = a.begin() + std::ptrdiff_t(first);
  std::copy(begin, begin + std::ptrdiff_t(out.size()), out.begin());
  return out;
}

// The gradient arriving at y: plain values with a NaN and an infinity in it (past row 0).
Array incoming(const Shape& shape) {
  Array dy = Array::from_shape(shape);
  for (std::size_t i = 0; i < dy.size(); ++i) dy.flat(i) = std::cos(0.3f * float(i)) + 0.25f;
  if (dy.size() > 45) dy.flat(45) = kNaN;
  if (dy.size() > 60) dy.flat(60) = -kInf;
  return dy;
}

// y and the gradient of every input, on `set`: inputs fresh from make(), each requiring grad.
using Op = std::function<Tensor(const std::vector<Tensor>&)>;
std::vector<Array> run(CpuCapability set, const std::vector<Array>& inputs, const Op& op) {
  set_cpu_capability(set);
  std::vector<Tensor> in;
  for (const Array& a : inputs) in.emplace_back(a, /*requires_grad=*/true);
  const Tensor y = op(in);
  y.backward(incoming(y.shape()));
  std::vector<Array> out{y.data()};
  for (const Tensor& t : in) out.push_back(t.has_grad() ? t.grad_dense() : Array());
  return out;
}

// Every fast set against the reference, on op(inputs).
void check_sets_agree(const std::string& name, const std::vector<Array>& inputs, const Op& op) {
  CAPTURE(name);
  CapabilityGuard guard;
  const std::vector<Array> want = run(CpuCapability::reference, inputs, op);
  for (CpuCapability set : available_cpu_capabilities()) {
    if (set == CpuCapability::reference) continue;
    CAPTURE(to_string(set));
    const std::vector<Array> got = run(set, inputs, op);
    for (std::size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);  // 0: y, then each input's gradient
      CHECK(roundings_apart(got[k], want[k]) <= 64.0);
    }
  }
}

Mask every_third(const Shape& shape) {
  Mask m = Mask::from_shape(shape);
  for (std::size_t i = 0; i < m.size(); ++i) m.flat(i) = i % 3 == 0;
  return m;
}
}  // namespace

TEST_SUITE("kernels.special_values") {
  TEST_CASE("the elementwise ops put NaN and the infinities where the reference does, on every "
            "fast set") {
    const std::vector<Array> x{special_rows()};
    using V = const std::vector<Tensor>&;
    check_sets_agree("exp", x, [](V in) { return ops::exp(in[0]); });
    check_sets_agree("log", x, [](V in) { return ops::log(in[0]); });
    check_sets_agree("sqrt", x, [](V in) { return ops::sqrt(in[0]); });
    check_sets_agree("pow_3", x, [](V in) { return ops::pow(in[0], 3.0); });
    check_sets_agree("pow_half", x, [](V in) { return ops::pow(in[0], 0.5); });
    check_sets_agree("tanh", x, [](V in) { return ops::tanh(in[0]); });
    check_sets_agree("relu", x, [](V in) { return ops::relu(in[0]); });
    check_sets_agree("sigmoid", x, [](V in) { return ops::sigmoid(in[0]); });
    check_sets_agree("gelu", x, [](V in) { return ops::gelu(in[0]); });
    check_sets_agree("gelu_tanh", x, [](V in) { return ops::gelu(in[0], "tanh"); });
    check_sets_agree("silu", x, [](V in) { return ops::silu(in[0]); });
    check_sets_agree("relu_squared", x, [](V in) { return ops::relu_squared(in[0]); });
    check_sets_agree("rdiv", x, [](V in) { return 2.0 / in[0]; });
    const std::vector<Array> xy{special_rows(), special_rows(kRows, kWidth, 1.0f)};
    check_sets_agree("add", xy, [](V in) { return in[0] + in[1]; });
    check_sets_agree("sub", xy, [](V in) { return in[0] - in[1]; });
    check_sets_agree("mul", xy, [](V in) { return in[0] * in[1]; });
    check_sets_agree("div", xy, [](V in) { return in[0] / in[1]; });
    check_sets_agree("masked_fill", x, [](V in) {
      return ops::masked_fill(in[0], every_third(in[0].shape()), kNaN);
    });
  }

  TEST_CASE("the row ops put NaN and the infinities where the reference does, on every fast set") {
    using V = const std::vector<Tensor>&;
    const std::vector<Array> x{special_rows()};
    // a weight and a bias holding +inf at 17 (row 1 of special_rows) and -inf at 20 (row 2)
    const std::vector<Array> xwb{special_rows(),
                                 with_shape(special_rows(2, kWidth, 2.0f), {kWidth}, kWidth),
                                 with_shape(special_rows(3, kWidth, 3.0f), {kWidth}, 2 * kWidth)};
    check_sets_agree("softmax", x, [](V in) { return ops::softmax(in[0], -1); });
    check_sets_agree("log_softmax", x, [](V in) { return ops::log_softmax(in[0], -1); });
    check_sets_agree("layer_norm", xwb, [](V in) {
      return ops::layer_norm(in[0], {std::int64_t(kWidth)}, in[1], in[2]);
    });
    check_sets_agree("rms_norm", xwb, [](V in) {
      return ops::rms_norm(in[0], {std::int64_t(kWidth)}, in[1]) + in[2];
    });
    check_sets_agree("sum_rows", x, [](V in) { return ops::sum(in[0], -1); });
    check_sets_agree("mean_columns", x, [](V in) { return ops::mean(in[0], 0); });
    check_sets_agree("max_rows", x, [](V in) { return ops::max(in[0], -1); });
    check_sets_agree("max_columns", x, [](V in) { return ops::max(in[0], 0); });
    for (const char* reduction : {"mean", "sum", "none"}) {
      // targets on a special value, beside one, and ignored (rows 3 and 6: NaN in them)
      const IndexArray target{5, 17, 20, -100, 30, 2, -100};
      check_sets_agree(std::string("cross_entropy ") + reduction, x, [&](V in) {
        return ops::cross_entropy(in[0], target, ops::CrossEntropyOptions().reduction(reduction));
      });
    }
    const Array t = special_rows(kRows, kWidth, 4.0f);
    for (bool log_target : {false, true})
      check_sets_agree(std::string("kl_div") + (log_target ? " log_target" : ""), x, [&](V in) {
        return ops::kl_div(in[0], log_target ? t : Array(xt::abs(t)),
                           KLDivOptions().reduction("none").log_target(log_target));
      });
  }

  TEST_CASE("embedding, dropout, rotary, matmul and attention put NaN and the infinities where the "
            "reference does, on every fast set") {
    using V = const std::vector<Tensor>&;
    const IndexArray ids{{1, 0, 2, 3}, {6, 1, 0, 5}};
    const std::vector<Array> table{special_rows()};
    check_sets_agree("embedding", table, [&](V in) {
      return ops::embedding(ids, in[0], EmbeddingOptions().padding_idx(0));
    });
    check_sets_agree("embedding_scaled", table, [&](V in) {
      return ops::embedding_scaled(ids, in[0], 0.5, EmbeddingOptions().padding_idx(0));
    });
    check_sets_agree("embedding sparse", table, [&](V in) {
      return ops::embedding(ids, in[0], EmbeddingOptions().padding_idx(0).sparse(true));
    });
    const std::vector<Array> x{special_rows()};
    check_sets_agree("dropout", x, [](V in) {
      return ops::dropout(in[0], 0.5, true, ops::DropoutStream{11, 2});
    });
    // (1, 7, 36): 9 heads of 4, rotated at positions 0 .. 6
    const ops::RotaryTable rt = ops::rotary_table(4, 8);
    const std::vector<Array> x3{with_shape(special_rows(kRows, 36), {1, kRows, 36})};
    check_sets_agree("rotary", x3, [&](V in) {
      return ops::rotary_embedding(in[0], Tensor(rt.cos), Tensor(rt.sin));
    });
    const std::vector<Array> xw{special_rows(), special_rows(kWidth, 9, 5.0f)};
    check_sets_agree("matmul", xw, [](V in) { return ops::matmul(in[0], in[1]); });
    const std::vector<Array> qkv{with_shape(special_rows(), {1, kRows, kWidth}),
                                 with_shape(special_rows(9, kWidth, 6.0f), {1, 9, kWidth}),
                                 with_shape(special_rows(9, 8, 7.0f), {1, 9, 8})};
    check_sets_agree("scaled_dot_product_attention", qkv, [](V in) {
      return ops::scaled_dot_product_attention(in[0], in[1], in[2]);
    });
    Mask allowed = Mask::from_shape({1, kRows, 9});
    for (std::size_t i = 0; i < allowed.size(); ++i) allowed.flat(i) = i % 9 <= i / 9 + 1;
    check_sets_agree("scaled_dot_product_attention masked", qkv, [&](V in) {
      return ops::scaled_dot_product_attention(in[0], in[1], in[2], allowed);
    });
  }

  // The reference's loops stop at the diagonal; the fast sets' tiles reach past it, and must add
  // nothing from there: a NaN or infinity at position j reaches positions j and later alone, on
  // every set (tests/ops/test_special_values_ops.cpp has the cases against PyTorch).
  TEST_CASE("causal_self_attention puts NaN and the infinities where the reference does, on every "
            "fast set") {
    using V = const std::vector<Tensor>&;
    // qkv (1, 7, 36): C = 12, 3 heads of 4
    const std::vector<Array> qkv{with_shape(special_rows(kRows, 36), {1, kRows, 36})};
    check_sets_agree("causal_self_attention", qkv,
                     [](V in) { return ops::causal_self_attention(in[0], 3); });
  }
}
