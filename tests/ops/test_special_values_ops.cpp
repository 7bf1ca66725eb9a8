// tests/ops/test_special_values_ops.cpp: NaN and the infinities through the ops that are not
// elementwise-unary (test_special_values.cpp has those), forward and backward, as PyTorch 1.13 gives
// them: add, sub, mul and div on every pair of special values and broadcast; masked_fill (NaN under
// the mask and outside it, a NaN fill value, a broadcast mask); sum, mean and max over a leading
// dim and over all; softmax and log_softmax over a leading dim; rms_norm, and layer_norm with
// special values in its weight and bias; the rotation of rotary embeddings (alone and packed in qkv); matmul
// and linear (inf * 0 in a product, batched and folded); scaled_dot_product_attention with and
// without a mask and with dropout p = 1; cross_entropy (with ignore_index; tapegrad has no label
// smoothing); kl_div; embedding and embedding_scaled (a NaN row, a NaN gradient at padding_idx,
// dense and row-sparse, max_norm on a NaN and an infinite row), and the tutorials' fused
// embedding_add_rows_dropout with p = 0 and p = 1; dropout with p = 0 and p = 1, and
// with the mask of p = 0.5. matmul and linear again inside an autocast::bf16 scope.
// causal_self_attention's cases are checked in a case of their own: position i reads positions
// 0 .. i only, which nanoGPT's written-out form does not (see there).
// The goldens come from scripts/golden/special_values_ops.py; the suite runs on every kernel set
// (ops.*).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

namespace {
// A finite value within 1e-5 of the golden's size (testing::same_special): sums in another order,
// the fast kernels' exp a few roundings from libm's.
constexpr float kTolerance = 1e-5f;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Input {
  std::vector<std::size_t> shape;
  std::vector<float> values;
};

// One case: its inputs (each requires grad unless its gradient below is empty), the gradient
// coming into y, y, and the gradient of each input. What is not a float tensor (targets, ids,
// masks, options) is fixed by the op's name, in run() and in the script.
struct OpGolden {
  const char* op;
  std::vector<Input> inputs;
  std::vector<float> seed, y;
  std::vector<std::vector<float>> grads;
};

// clang-format off
const std::vector<OpGolden> kGoldens = {
    // torch 1.13.0a0
    {"add", {{{8, 8}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}, {{8, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, kNaN, kNaN, -kInf, -4.0f, -2.0f, -2.0f, -1.5f, 1.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, 0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -1.5f, 0.5f, 0.5f, 1.0f, 3.5f, kInf, kNaN, -kInf, 1.0f, 3.0f, 3.0f, 3.5f, 6.0f, kInf, kNaN, kNaN, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}}},
    {"sub", {{{8, 8}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}, {{8, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, {kNaN, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, kNaN, kInf, 0.0f, -2.0f, -2.0f, -2.5f, -5.0f, -kInf, kNaN, kInf, 2.0f, 0.0f, -0.0f, -0.5f, -3.0f, -kInf, kNaN, kInf, 2.0f, 0.0f, 0.0f, -0.5f, -3.0f, -kInf, kNaN, kInf, 2.5f, 0.5f, 0.5f, 0.0f, -2.5f, -kInf, kNaN, kInf, 5.0f, 3.0f, 3.0f, 2.5f, 0.0f, -kInf, kNaN, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, {-1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f}}},
    {"mul", {{{8, 8}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}, {{8, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, {kInf, kInf, kNaN, kNaN, -kInf, -kInf, -kInf, kNaN, kInf, 4.0f, 0.0f, -0.0f, -1.0f, -6.0f, -kInf, kNaN, kNaN, 0.0f, 0.0f, -0.0f, -0.0f, -0.0f, kNaN, kNaN, kNaN, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, kNaN, kNaN, -kInf, -1.0f, -0.0f, 0.0f, 0.25f, 1.5f, kInf, kNaN, -kInf, -6.0f, -0.0f, 0.0f, 1.5f, 9.0f, kInf, kNaN, -kInf, -kInf, kNaN, kNaN, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {{-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"div", {{{8, 8}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}, {{8, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, {kNaN, kInf, kInf, -kInf, -kInf, -kInf, kNaN, kNaN, 0.0f, 1.0f, kInf, -kInf, -4.0f, -0.666666687f, -0.0f, kNaN, 0.0f, 0.0f, kNaN, kNaN, -0.0f, -0.0f, -0.0f, kNaN, -0.0f, -0.0f, kNaN, kNaN, 0.0f, 0.0f, 0.0f, kNaN, -0.0f, -0.25f, -kInf, kInf, 1.0f, 0.166666672f, 0.0f, kNaN, -0.0f, -1.5f, -kInf, kInf, 6.0f, 1.0f, 0.0f, kNaN, kNaN, -kInf, -kInf, kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {{-0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN, -0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN, -0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN, -0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN, -0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN, -0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN, -0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN, -0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN}, {kNaN, kInf, kInf, kInf, kInf, kInf, kNaN, kNaN, 0.0f, 0.5f, kInf, kInf, 8.0f, 0.222222224f, 0.0f, kNaN, 0.0f, 0.0f, kNaN, kNaN, 0.0f, 0.0f, 0.0f, kNaN, -0.0f, -0.0f, kNaN, kNaN, -0.0f, -0.0f, -0.0f, kNaN, -0.0f, -0.125f, -kInf, -kInf, -2.0f, -0.055555556f, -0.0f, kNaN, -0.0f, -0.75f, -kInf, -kInf, -12.0f, -0.333333343f, -0.0f, kNaN, kNaN, -kInf, -kInf, -kInf, -kInf, -kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"add_broadcast_b", {{{2, 8}, {1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f}}, {{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-kInf, -0.5f, 1.5f, 1.5f, 2.0f, 4.5f, kInf, kNaN, -kInf, -4.0f, -2.0f, -2.0f, -1.5f, 1.0f, kInf, kNaN}, {{0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {1.0f, -2.0f, 4.0f, 0.5f, 1.0f, -2.0f, 4.0f, 0.5f}}},
    {"add_broadcast_a", {{{8, 1}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}, {{3}, {2.0f, -0.5f, 0.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-kInf, -kInf, -kInf, 0.0f, -2.5f, -2.0f, 2.0f, -0.5f, 0.0f, 2.0f, -0.5f, 0.0f, 2.5f, 0.0f, 0.5f, 5.0f, 2.5f, 3.0f, kInf, kInf, kInf, kNaN, kNaN, kNaN}, {{1.5f, -0.25f, 2.75f, 1.25f, 1.5f, -0.25f, 2.75f, 1.25f}, {3.5f, 3.5f, 3.5f}}},
    {"sub_broadcast_b", {{{2, 8}, {1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f}}, {{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kInf, 3.5f, 1.5f, 1.5f, 1.0f, -1.5f, -kInf, kNaN, kInf, 0.0f, -2.0f, -2.0f, -2.5f, -5.0f, -kInf, kNaN}, {{0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-1.0f, 2.0f, -4.0f, -0.5f, -1.0f, 2.0f, -4.0f, -0.5f}}},
    {"sub_broadcast_a", {{{8, 1}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}, {{3}, {2.0f, -0.5f, 0.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-kInf, -kInf, -kInf, -4.0f, -1.5f, -2.0f, -2.0f, 0.5f, -0.0f, -2.0f, 0.5f, 0.0f, -1.5f, 1.0f, 0.5f, 1.0f, 3.5f, 3.0f, kInf, kInf, kInf, kNaN, kNaN, kNaN}, {{1.5f, -0.25f, 2.75f, 1.25f, 1.5f, -0.25f, 2.75f, 1.25f}, {-3.5f, -3.5f, -3.5f}}},
    {"mul_broadcast_b", {{{2, 8}, {1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f}}, {{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-kInf, -3.0f, -0.0f, 0.0f, 0.75f, 4.5f, kInf, kNaN, kInf, 4.0f, 0.0f, -0.0f, -1.0f, -6.0f, -kInf, kNaN}, {{-kInf, 2.0f, -0.0f, 0.0f, 0.25f, -3.0f, kInf, kNaN, -kInf, 2.0f, -0.0f, 0.0f, 0.25f, -3.0f, kInf, kNaN}, {-0.25f, 0.5f, -1.0f, -0.125f, -0.25f, 0.5f, -1.0f, -0.125f}}},
    {"mul_broadcast_a", {{{8, 1}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}, {{3}, {2.0f, -0.5f, 0.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-kInf, kInf, kNaN, -4.0f, 1.0f, -0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, 1.0f, -0.25f, 0.0f, 6.0f, -1.5f, 0.0f, kInf, -kInf, kNaN, kNaN, kNaN, kNaN}, {{1.5f, 0.25f, 3.875f, -3.0f, 1.5f, 0.25f, 3.875f, -3.0f}, {kNaN, kNaN, kNaN}}},
    {"div_broadcast_b", {{{2, 8}, {1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f}}, {{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-0.0f, -0.75f, -kInf, kInf, 3.0f, 0.5f, 0.0f, kNaN, 0.0f, 1.0f, kInf, -kInf, -4.0f, -0.666666687f, -0.0f, kNaN}, {{-0.0f, 0.5f, -kInf, kInf, 1.0f, -0.333333343f, 0.0f, kNaN, -0.0f, 0.5f, -kInf, kInf, 1.0f, -0.333333343f, 0.0f, kNaN}, {0.0f, -0.125f, kNaN, kNaN, 1.0f, -0.0555555522f, 0.0f, kNaN}}},
    {"div_broadcast_a", {{{8, 1}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}, {{3}, {2.0f, -0.5f, 0.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-kInf, kInf, -kInf, -1.0f, 4.0f, -kInf, -0.0f, 0.0f, kNaN, 0.0f, -0.0f, kNaN, 0.25f, -1.0f, kInf, 1.5f, -6.0f, kInf, kInf, -kInf, kInf, kNaN, kNaN, kNaN}, {{kInf, -kInf, kInf, kInf, kInf, -kInf, kInf, kInf}, {kNaN, kNaN, kNaN}}},
    {"masked_fill", {{{2, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {0.5f, -2.0f, 0.5f, 0.0f, 0.5f, 3.0f, 0.5f, kNaN, -kInf, 0.5f, -0.0f, 0.5f, 0.5f, 0.5f, kInf, 0.5f}, {{0.0f, -1.0f, 0.0f, 0.25f, 0.0f, -1.0f, 0.0f, 0.25f, 0.5f, 0.0f, 2.0f, 0.0f, 0.5f, 0.0f, 2.0f, 0.0f}}},
    {"masked_fill_nan", {{{2, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, -2.0f, kNaN, 0.0f, kNaN, 3.0f, kNaN, kNaN, -kInf, kNaN, -0.0f, kNaN, 0.5f, kNaN, kInf, kNaN}, {{0.0f, -1.0f, 0.0f, 0.25f, 0.0f, -1.0f, 0.0f, 0.25f, 0.5f, 0.0f, 2.0f, 0.0f, 0.5f, 0.0f, 2.0f, 0.0f}}},
    {"masked_fill_inf_nan_grad", {{{2, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {-kInf, -2.0f, -kInf, 0.0f, -kInf, 3.0f, -kInf, kNaN, -kInf, -kInf, -0.0f, -kInf, 0.5f, -kInf, kInf, -kInf}, {{0.0f, kNaN, 0.0f, kNaN, 0.0f, kNaN, 0.0f, kNaN, kNaN, 0.0f, kNaN, 0.0f, kNaN, 0.0f, kNaN, 0.0f}}},
    {"masked_fill_broadcast", {{{2, 8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN, -kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {0.5f, -2.0f, 0.5f, 0.0f, 0.5f, 3.0f, 0.5f, kNaN, 0.5f, -2.0f, 0.5f, 0.0f, 0.5f, 3.0f, 0.5f, kNaN}, {{0.0f, -1.0f, 0.0f, 0.25f, 0.0f, -1.0f, 0.0f, 0.25f, 0.0f, -1.0f, 0.0f, 0.25f, 0.0f, -1.0f, 0.0f, 0.25f}}},
    {"sum_dim0", {{{4, 6}, {1.0f, 1.0f, 1.0f, 1.0f, kInf, -kInf, 2.0f, kInf, -kInf, kNaN, kInf, -kInf, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, -kInf, 4.0f, 4.0f, 4.0f, 4.0f, 4.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {10.0f, kInf, -kInf, kNaN, kInf, -kInf}, {{0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}}},
    {"mean_dim0", {{{4, 6}, {1.0f, 1.0f, 1.0f, 1.0f, kInf, -kInf, 2.0f, kInf, -kInf, kNaN, kInf, -kInf, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, -kInf, 4.0f, 4.0f, 4.0f, 4.0f, 4.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {2.5f, kInf, -kInf, kNaN, kInf, -kInf}, {{0.125f, -0.25f, 0.5f, 0.0625f, 0.125f, -0.25f, 0.125f, -0.25f, 0.5f, 0.0625f, 0.125f, -0.25f, 0.125f, -0.25f, 0.5f, 0.0625f, 0.125f, -0.25f, 0.125f, -0.25f, 0.5f, 0.0625f, 0.125f, -0.25f}}},
    {"max_dim0", {{{4, 6}, {1.0f, 1.0f, 1.0f, 1.0f, kInf, -kInf, 2.0f, kInf, -kInf, kNaN, kInf, -kInf, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, -kInf, 4.0f, 4.0f, 4.0f, 4.0f, 4.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {4.0f, kInf, 4.0f, kNaN, kInf, -kInf}, {{0.0f, 0.0f, 0.0f, 0.0f, 0.5f, -1.0f, 0.0f, -1.0f, 0.0f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.0f, 2.0f, 0.0f, 0.0f, 0.0f}}},
    {"sum_dims01", {{{2, 2, 6}, {1.0f, 1.0f, 1.0f, 1.0f, kInf, -kInf, 2.0f, kInf, -kInf, kNaN, kInf, -kInf, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, -kInf, 4.0f, 4.0f, 4.0f, 4.0f, 4.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {10.0f, kInf, -kInf, kNaN, kInf, -kInf}, {{0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}}},
    {"sum_all", {{{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f}, {kNaN}, {{0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}}},
    {"mean_all_inf", {{{4}, {1.0f, kInf, 2.0f, kInf}}}, {0.5f}, {kInf}, {{0.125f, 0.125f, 0.125f, 0.125f}}},
    {"max_all", {{{5}, {-kInf, 3.0f, kInf, kInf, 0.5f}}}, {0.5f}, {kInf}, {{0.0f, 0.0f, 0.25f, 0.25f, 0.0f}}},
    {"max_all_nan", {{{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {0.5f}, {kNaN}, {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f}}},
    {"rms_norm", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}, {{4}, {1.0f, 2.0f, -1.0f, 0.5f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {0.365148365f, 1.46059346f, -1.09544516f, 0.730296731f, 0.0f, kNaN, -0.0f, 0.0f, 0.0f, kNaN, -0.0f, 0.0f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, -0.0f, 0.0f, kNaN, kNaN, kNaN, kNaN}, {{0.292118669f, -0.5112077f, -0.401663244f, 0.483821541f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN}}},
    {"rms_norm_nan_weight", {{{1, 4}, {1.0f, 2.0f, 3.0f, 4.0f}}, {{4}, {1.0f, kNaN, kInf, 0.5f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {0.365148365f, kNaN, kInf, 0.730296731f}, {{kNaN, kNaN, kNaN, kNaN}, {0.182574183f, -0.730296731f, 2.19089031f, 0.365148365f}}},
    {"rotary", {{{1, 3, 4}, {kInf, 1.0f, 2.0f, 3.0f, kNaN, 1.0f, -kInf, 0.5f, 1.0f, 2.0f, 3.0f, 4.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, kNaN, 1.0f, 1.0f, 1.0f}, {kInf, kNaN, 2.0f, 3.0f, kNaN, kNaN, -kInf, -kInf, -2.23474169f, 0.0770037174f, 2.91940546f, 4.059196f}, {{0.5f, -1.0f, 2.0f, 0.25f, 1.38177323f, -0.30116868f, 1.0099498f, 0.98995018f, kNaN, kNaN, 1.01979864f, 0.979801357f}}},
    {"rotary_qkv", {{{1, 3, 12}, {kInf, 1.0f, 2.0f, 3.0f, kNaN, 1.0f, -kInf, 0.5f, 1.0f, kInf, kNaN, 4.0f, 1.0f, -kInf, 0.5f, 2.0f, 1.0f, 2.0f, kInf, 4.0f, -kInf, 0.0f, 1.0f, 2.0f, 1.0f, 2.0f, 3.0f, 4.0f, 0.0f, kNaN, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kInf, kNaN, 2.0f, 3.0f, kNaN, kNaN, -kInf, kNaN, 1.0f, kInf, kNaN, 4.0f, kInf, -kInf, 0.479975343f, 2.00489998f, -1.14263964f, 1.92207551f, kInf, kInf, -kInf, 0.0f, 1.0f, 2.0f, -2.23474169f, 0.0770037174f, 2.91940546f, 4.059196f, kNaN, kNaN, 0.979801357f, 1.01979864f, 1.0f, 1.0f, 1.0f, 1.0f}, {{0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, -0.571319818f, -0.961037755f, 2.00239992f, 0.22998783f, -0.571319818f, -0.961037755f, 2.00239992f, 0.22998783f, 0.5f, -1.0f, 2.0f, 0.25f, -1.11737084f, -0.0385018587f, 2.00459981f, 0.209952682f, -1.11737084f, -0.0385018587f, 2.00459981f, 0.209952682f, 0.5f, -1.0f, 2.0f, 0.25f}}},
    {"matmul", {{{2, 3}, {kInf, 1.0f, 2.0f, kNaN, 0.0f, -1.0f}}, {{3, 2}, {0.0f, 1.0f, 1.0f, 2.0f, 3.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, kNaN, kNaN}, {{-1.0f, -1.5f, kInf, 0.25f, 2.5f, -kInf}, {kNaN, kNaN, 0.5f, -1.0f, -1.0f, -2.25f}}},
    {"matmul_nan_grad", {{{2, 3}, {1.0f, 2.0f, 3.0f, -1.0f, 0.0f, 1.0f}}, {{3, 2}, {0.0f, 1.0f, 1.0f, 2.0f, 3.0f, -kInf}}}, {0.5f, kNaN, 0.0f, 1.0f}, {11.0f, -kInf, 3.0f, -kInf}, {{kNaN, kNaN, kNaN, 1.0f, 2.0f, -kInf}, {0.5f, kNaN, 1.0f, kNaN, 1.5f, kNaN}}},
    {"matmul_batched", {{{2, 2, 3}, {kInf, 1.0f, 2.0f, kNaN, 0.0f, -1.0f, 1.0f, 2.0f, 3.0f, 0.0f, -kInf, 1.0f}}, {{2, 3, 2}, {0.0f, 1.0f, 1.0f, 2.0f, 3.0f, -kInf, 0.0f, 1.0f, 1.0f, 2.0f, 3.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, kNaN, kNaN, 11.0f, -kInf, -kInf, -kInf}, {{-1.0f, -1.5f, kInf, 0.25f, 2.5f, -kInf, -1.0f, -1.5f, kInf, 0.25f, 2.5f, -kInf}, {kNaN, kNaN, 0.5f, -1.0f, -1.0f, -2.25f, 0.5f, -1.0f, -kInf, -kInf, 3.5f, -2.75f}}},
    {"matmul_folded", {{{2, 2, 3}, {kInf, 1.0f, 2.0f, kNaN, 0.0f, -1.0f, 1.0f, 2.0f, 3.0f, 0.0f, -kInf, 1.0f}}, {{3, 2}, {0.0f, 1.0f, 1.0f, 2.0f, 3.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, kNaN, kNaN, 11.0f, -kInf, -kInf, -kInf}, {{-1.0f, -1.5f, kInf, 0.25f, 2.5f, -kInf, -1.0f, -1.5f, kInf, 0.25f, 2.5f, -kInf}, {kNaN, kNaN, -kInf, -kInf, 2.5f, -5.0f}}},
    {"linear", {{{2, 3}, {kInf, 1.0f, 2.0f, kNaN, 0.0f, -1.0f}}, {{2, 3}, {0.0f, 1.0f, 3.0f, 1.0f, 2.0f, -kInf}}, {{2}, {0.5f, kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, kNaN, kNaN}, {{-1.0f, -1.5f, kInf, 0.25f, 2.5f, -kInf}, {kNaN, 0.5f, -1.0f, kNaN, -1.0f, -2.25f}, {2.5f, -0.75f}}},
    {"linear_3d", {{{2, 2, 3}, {kInf, 1.0f, 2.0f, kNaN, 0.0f, -1.0f, 1.0f, 2.0f, 3.0f, 0.0f, -kInf, 1.0f}}, {{2, 3}, {0.0f, 1.0f, 3.0f, 1.0f, 2.0f, kNaN}}, {{2}, {0.5f, -1.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, kNaN, kNaN, 11.5f, kNaN, -kInf, kNaN}, {{-1.0f, -1.5f, kNaN, 0.25f, 2.5f, kNaN, -1.0f, -1.5f, kNaN, 0.25f, 2.5f, kNaN}, {kNaN, -kInf, 2.5f, kNaN, -kInf, -5.0f}, {5.0f, -1.5f}}},
    {"linear_nan_bias", {{{2, 3}, {1.0f, 2.0f, 3.0f, -1.0f, 0.0f, 1.0f}}, {{2, 3}, {0.0f, 1.0f, 3.0f, 1.0f, 2.0f, 0.5f}}, {{2}, {kNaN, 1.0f}}}, {0.5f, -1.0f, kInf, 0.0f}, {kNaN, 7.5f, kNaN, 0.5f}, {{-1.0f, -1.5f, 1.0f, kNaN, kInf, kInf}, {-kInf, kNaN, kInf, -1.0f, -2.0f, -3.0f}, {kInf, -1.0f}}},
    {"sdpa_q_inf", {{{1, 2, 2}, {kInf, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, 3.0f, 4.0f}, {{kNaN, kNaN, -1.57988572f, 0.789942861f}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"sdpa_q_inf_masked", {{{1, 2, 2}, {kInf, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, 3.0f, 4.0f}, {{kNaN, kNaN, -1.57988572f, 0.789942861f}, {kNaN, kNaN, kNaN, kNaN, kNaN, 1.57988572f}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"sdpa_k_nan", {{{1, 2, 2}, {0.5f, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, kNaN}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, kNaN, kNaN}, {{kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"sdpa_k_nan_masked", {{{1, 2, 2}, {0.5f, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, kNaN}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {1.51436663f, 2.51436663f, kNaN, kNaN}, {{0.135085717f, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"sdpa_v_nan", {{{1, 2, 2}, {0.5f, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, kNaN, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, 3.04755235f, kNaN, 4.0f}, {{kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {0.811105371f, -0.567126691f, 1.11590111f, -0.0919703692f, 0.572993517f, -0.0909029394f}}},
    {"sdpa_v_nan_masked", {{{1, 2, 2}, {0.5f, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, kNaN, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, 2.51436663f, kNaN, 4.0f}, {{kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {0.867918491f, -0.680752933f, 1.13557136f, -0.13131085f, 0.496510178f, 0.0620637722f}}},
    {"sdpa_k_neg_inf", {{{1, 2, 2}, {0.5f, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, -kInf, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {1.78228116f, 2.7822814f, 3.0f, 4.0f}, {{kNaN, -0.222487718f, kNaN, 1.5909903f}, {-1.47974646f, -3.4044683f, 0.0f, 0.0f, 1.47974646f, 3.4044683f}, {1.40221488f, -0.67942971f, 0.0f, 0.0f, 1.09778512f, -0.070570305f}}},
    {"sdpa_k_neg_inf_masked", {{{1, 2, 2}, {0.5f, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, -kInf, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {1.0f, 2.0f, 3.0f, 4.0f}, {{kNaN, 0.0f, kNaN, 1.5909903f}, {-1.5909903f, -3.18198061f, 0.0f, 0.0f, 1.5909903f, 3.18198061f}, {1.5f, -0.875f, 0.0f, 0.0f, 1.0f, 0.125f}}},
    {"sdpa_q_inf_dropout_p1", {{{1, 2, 2}, {kInf, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kNaN, 0.0f, 0.0f}, {{kNaN, kNaN, 0.0f, 0.0f}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"sdpa_v_nan_dropout_p1", {{{1, 2, 2}, {0.5f, -1.0f, 1.0f, 2.0f}}, {{1, 3, 2}, {1.0f, 0.0f, 0.0f, 1.0f, -1.0f, 1.0f}}, {{1, 3, 2}, {1.0f, 2.0f, 3.0f, 4.0f, kNaN, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, 0.0f, kNaN, 0.0f}, {{kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}}},
    {"causal_q0_inf", {{{1, 3, 6}, {kInf, -1.0f, 1.0f, 0.0f, 1.0f, 2.0f, 1.0f, 2.0f, 0.0f, 1.0f, 3.0f, 4.0f, -1.0f, 0.5f, -1.0f, 1.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {kNaN, kNaN, 2.33952284f, 3.33952308f, 3.99686861f, 4.99686861f}, {{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, -0.703793705f, 0.703793645f, 0.59934473f, 1.45981181f, 1.4877001f, -0.128913701f, 0.321881413f, -0.108716138f, 0.213165075f, -0.106582537f, 0.300520062f, -0.601040125f}}},
    {"causal_k2_nan", {{{1, 3, 6}, {0.5f, -1.0f, 1.0f, 0.0f, 1.0f, 2.0f, 1.0f, 2.0f, 0.0f, 1.0f, 3.0f, 4.0f, -1.0f, 0.5f, -1.0f, kNaN, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {1.0f, 2.0f, 2.33952284f, 3.33952308f, kNaN, kNaN}, {{0.0f, 0.0f, kNaN, kNaN, kNaN, kNaN, -0.703793705f, 0.703793645f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"causal_v2_nan", {{{1, 3, 6}, {0.5f, -1.0f, 1.0f, 0.0f, 1.0f, 2.0f, 1.0f, 2.0f, 0.0f, 1.0f, 3.0f, 4.0f, -1.0f, 0.5f, -1.0f, 1.0f, kNaN, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {1.0f, 2.0f, 2.33952284f, 3.33952308f, kNaN, 4.99686861f}, {{0.0f, 0.0f, kNaN, kNaN, 1.21177983f, -1.02004623f, -0.703793705f, 0.703793645f, kNaN, kNaN, 1.4877001f, -0.128913701f, kNaN, kNaN, kNaN, kNaN, 0.300520062f, -0.601040125f}}},
    {"causal_k1_neg_inf", {{{1, 3, 6}, {0.5f, -1.0f, 1.0f, 0.0f, 1.0f, 2.0f, 1.0f, 2.0f, -kInf, 1.0f, 3.0f, 4.0f, -1.0f, 0.5f, -1.0f, 1.0f, 5.0f, 6.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {1.0f, 2.0f, 1.0f, 2.0f, kNaN, kNaN}, {{0.0f, 0.0f, kNaN, kNaN, kNaN, kNaN, kNaN, 0.0f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"cross_entropy_mean_a", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}}, {0.5f}, {kNaN}, {{-0.0806617886f, 0.00726202782f, 0.0197402351f, 0.0536595248f, kNaN, kNaN, kNaN, kNaN, 0.00292658526f, -0.0833333358f, 0.0216247048f, 0.0587820411f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"cross_entropy_sum_a", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}}, {0.5f}, {kNaN}, {{-0.483970702f, 0.0435721651f, 0.118441403f, 0.321957141f, kNaN, kNaN, kNaN, kNaN, 0.0175595116f, -0.5f, 0.129748225f, 0.352692246f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"cross_entropy_none_a", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {3.4401896f, kNaN, kInf, kNaN, kNaN, kNaN}, {{-0.483970702f, 0.0435721651f, 0.118441403f, 0.321957141f, kNaN, kNaN, kNaN, kNaN, 0.0702380463f, -2.0f, 0.518992901f, 1.41076899f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"cross_entropy_mean_b", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}}, {0.5f}, {kNaN}, {{0.00267155073f, 0.00726202782f, 0.0197402351f, -0.029673811f, kNaN, kNaN, kNaN, kNaN, -0.0804067478f, 0.0f, 0.0216247048f, 0.0587820411f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"cross_entropy_mean_ignore", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}}, {0.5f}, {kNaN}, {{-0.161323577f, 0.0145240556f, 0.0394804701f, 0.10731905f, kNaN, kNaN, kNaN, kNaN, 0.00585317053f, 0.0f, -0.123417258f, 0.117564082f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"cross_entropy_none_ignore", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f}, {3.4401896f, 0.0f, 1.34901226f, 0.0f, 0.0f, kNaN}, {{-0.483970702f, 0.0435721651f, 0.118441403f, 0.321957141f, kNaN, kNaN, kNaN, kNaN, 0.0702380463f, 0.0f, -1.4810071f, 1.41076899f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}}},
    {"cross_entropy_all_ignored", {{{2, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f}}}, {0.5f}, {kNaN}, {{0.0f, 0.0f, 0.0f, 0.0f, kNaN, kNaN, kNaN, kNaN}}},
    {"kl_div_none", {{{2, 4}, {-kInf, -1.0f, kNaN, 0.0f, -0.5f, -kInf, -2.0f, kInf}}, {{2, 4}, {0.0f, 0.5f, 0.5f, 0.0f, 0.25f, 0.0f, 0.75f, 0.0f}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, 0.153426409f, kNaN, 0.0f, -0.221573591f, kNaN, 1.28423846f, kNaN}, {{-0.0f, 0.5f, -1.0f, -0.0f, -0.125f, 0.0f, -1.5f, -0.0f}, {}}},
    {"kl_div_sum", {{{2, 4}, {-kInf, -1.0f, kNaN, 0.0f, -0.5f, -kInf, -2.0f, kInf}}, {{2, 4}, {0.0f, 0.5f, 0.5f, 0.0f, 0.25f, 0.0f, 0.75f, 0.0f}}}, {0.5f}, {kNaN}, {{-0.0f, -0.25f, -0.25f, -0.0f, -0.125f, -0.0f, -0.375f, -0.0f}, {}}},
    {"kl_div_batchmean", {{{2, 4}, {-kInf, -1.0f, kNaN, 0.0f, -0.5f, -kInf, -2.0f, kInf}}, {{2, 4}, {0.0f, 0.5f, 0.5f, 0.0f, 0.25f, 0.0f, 0.75f, 0.0f}}}, {0.5f}, {kNaN}, {{-0.0f, -0.125f, -0.125f, -0.0f, -0.0625f, -0.0f, -0.1875f, -0.0f}, {}}},
    {"kl_div_mean", {{{2, 4}, {-kInf, -1.0f, kNaN, 0.0f, -0.5f, -kInf, -2.0f, kInf}}, {{2, 4}, {0.0f, 0.5f, 0.5f, 0.0f, 0.25f, 0.0f, 0.75f, 0.0f}}}, {0.5f}, {kNaN}, {{-0.0f, -0.03125f, -0.03125f, -0.0f, -0.015625f, -0.0f, -0.046875f, -0.0f}, {}}},
    {"kl_div_none_log_target", {{{2, 4}, {-kInf, -1.0f, kNaN, 0.0f, -0.5f, -kInf, -2.0f, kInf}}, {{2, 4}, {-kInf, -0.5f, -0.5f, -kInf, -1.5f, -kInf, 0.0f, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, 0.303265333f, kNaN, kNaN, -0.223130167f, kNaN, 2.0f, kNaN}, {{-0.0f, 0.606530666f, -1.21306133f, -0.0f, -0.111565083f, 0.0f, -2.0f, kNaN}, {}}},
    {"kl_div_none_nan_target", {{{1, 4}, {-1.0f, -2.0f, -kInf, 0.5f}}, {{1, 4}, {kNaN, kInf, kInf, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f}, {kNaN, kInf, kInf, kNaN}, {{kNaN, kInf, -kInf, kInf}, {}}},
    {"embedding", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, 1.0f, 2.0f, 0.5f, -1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f, kNaN, 1.0f, 2.0f, 0.5f, -1.0f, 2.0f}, {{kNaN, kNaN, kNaN, 1.5f, 0.0f, 3.0f, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f}}},
    {"embedding_padding_idx", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, 1.0f, 2.0f, 0.5f, -1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f, kNaN, 1.0f, 2.0f, 0.5f, -1.0f, 2.0f}, {{0.0f, 0.0f, 0.0f, 1.5f, 0.0f, 3.0f, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f}}},
    {"embedding_padding_idx_sparse", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, 1.0f, 2.0f, 0.5f, -1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f, kNaN, 1.0f, 2.0f, 0.5f, -1.0f, 2.0f}, {{0.0f, 0.0f, 0.0f, 1.5f, 0.0f, 3.0f, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f}}},
    {"embedding_scaled", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, 2.0f, 4.0f, 1.0f, -2.0f, 4.0f, kInf, -kInf, 0.0f, 2.0f, 4.0f, 6.0f, kNaN, 2.0f, 4.0f, 1.0f, -2.0f, 4.0f}, {{0.0f, 0.0f, 0.0f, 3.0f, 0.0f, 6.0f, 2.0f, 2.0f, 2.0f, kNaN, 0.5f, 2.0f}}},
    {"embedding_max_norm", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, 1.0f, 2.0f, 0.21821788f, -0.436435759f, 0.872871518f, kNaN, kNaN, 0.0f, 0.267261237f, 0.534522474f, 0.801783681f, kNaN, 1.0f, 2.0f, 0.21821788f, -0.436435759f, 0.872871518f}, {{kNaN, kNaN, kNaN, 1.5f, 0.0f, 3.0f, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f}}},
    {"embedding_scaled_by_0", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, 0.0f, 0.0f, 0.0f, -0.0f, 0.0f, kNaN, kNaN, 0.0f, 0.0f, 0.0f, 0.0f, kNaN, 0.0f, 0.0f, 0.0f, -0.0f, 0.0f}, {{kNaN, kNaN, kNaN, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, kNaN, 0.0f, 0.0f}}},
    {"dropout_p1", {{{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {1.0f, kNaN, 1.0f, -kInf, 1.0f, 1.0f, kNaN, 1.0f}, {kNaN, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, kNaN, kNaN}, {{0.0f, kNaN, 0.0f, kNaN, 0.0f, 0.0f, kNaN, 0.0f}}},
    {"dropout_p0", {{{8}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}}}, {1.0f, kNaN, 1.0f, -kInf, 1.0f, 1.0f, kNaN, 1.0f}, {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}, {{1.0f, kNaN, 1.0f, -kInf, 1.0f, 1.0f, kNaN, 1.0f}}},
    {"softmax_dim0", {{{4, 6}, {1.0f, 1.0f, 1.0f, 1.0f, kInf, -kInf, 2.0f, kInf, -kInf, kNaN, kInf, -kInf, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, -kInf, 4.0f, 4.0f, 4.0f, 4.0f, 4.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {0.0320586041f, kNaN, 0.0351190232f, kNaN, kNaN, kNaN, 0.0871443227f, kNaN, 0.0f, kNaN, kNaN, kNaN, 0.236882836f, kNaN, 0.25949645f, kNaN, kNaN, kNaN, 0.643914282f, kNaN, 0.705384493f, kNaN, kNaN, kNaN}, {{-0.0351550765f, kNaN, 0.0371586271f, kNaN, kNaN, kNaN, 0.0351550728f, kNaN, -0.0f, kNaN, kNaN, kNaN, -0.259762853f, kNaN, 0.274567187f, kNaN, kNaN, kNaN, 0.259762824f, kNaN, -0.311725765f, kNaN, kNaN, kNaN}}},
    {"log_softmax_dim0", {{{4, 6}, {1.0f, 1.0f, 1.0f, 1.0f, kInf, -kInf, 2.0f, kInf, -kInf, kNaN, kInf, -kInf, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, -kInf, 4.0f, 4.0f, 4.0f, 4.0f, 4.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-3.4401896f, kNaN, -3.34901237f, kNaN, kNaN, kNaN, -2.4401896f, kNaN, -kInf, kNaN, kNaN, kNaN, -1.44018972f, kNaN, -1.34901226f, kNaN, kNaN, kNaN, -0.440189689f, kNaN, -0.349012256f, kNaN, kNaN, kNaN}, {{0.339706957f, kNaN, 1.82440484f, kNaN, kNaN, kNaN, 1.56427836f, kNaN, 0.5f, kNaN, kNaN, kNaN, -0.684414029f, kNaN, 0.702517748f, kNaN, kNaN, kNaN, -1.21957135f, kNaN, -3.02692246f, kNaN, kNaN, kNaN}}},
    {"layer_norm_nan_weight", {{{6, 4}, {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, kInf, 3.0f, 4.0f, 1.0f, -kInf, 3.0f, 4.0f, 1.0f, kNaN, 3.0f, 4.0f, kInf, kInf, 3.0f, 4.0f, -kInf, -kInf, -kInf, -kInf}}, {{4}, {1.0f, kNaN, kInf, 0.5f}}, {{4}, {0.0f, 1.0f, -kInf, kNaN}}}, {0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f, 0.5f, -1.0f, 2.0f, 0.25f}, {-1.34163547f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN}, {3.0f, -6.0f, 12.0f, 1.5f}}},
    {"embedding_add_rows_dropout_p0", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}, {{3, 3}, {0.0f, kNaN, 1.0f, kInf, 0.5f, -1.0f, 1.0f, 1.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, kNaN, 5.0f, kInf, -1.5f, 3.0f, kInf, -kInf, -kInf, 2.0f, kNaN, 7.0f, kNaN, 2.5f, 3.0f, 2.0f, -1.0f, -kInf}, {{0.0f, 0.0f, 0.0f, 3.0f, 0.0f, 6.0f, 2.0f, 2.0f, 2.0f, kNaN, 0.5f, 2.0f}, {}}},
    {"embedding_add_rows_dropout_p1", {{{4, 3}, {0.5f, -1.0f, 2.0f, kNaN, 1.0f, 2.0f, kInf, -kInf, 0.0f, 1.0f, 2.0f, 3.0f}}, {{3, 3}, {0.0f, kNaN, 1.0f, kInf, 0.5f, -1.0f, 1.0f, 1.0f, -kInf}}}, {0.5f, -1.0f, 2.0f, kNaN, kNaN, kNaN, 1.0f, 1.0f, 1.0f, kNaN, 0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f}, {kNaN, kNaN, 0.0f, kNaN, -0.0f, 0.0f, kNaN, kNaN, kNaN, 0.0f, kNaN, 0.0f, kNaN, 0.0f, 0.0f, 0.0f, -0.0f, kNaN}, {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, kNaN, 0.0f, 0.0f}, {}}},
};
// clang-format on

Mask mask_of(const std::vector<std::size_t>& shape, const std::vector<bool>& values) {
  Mask m = Mask::from_shape(shape);
  std::copy(values.begin(), values.end(), m.begin());
  return m;
}

IndexArray targets(const std::string& name) {
  if (name.ends_with("_a")) return IndexArray{0, 1, 1, 0, 2, 3};
  if (name.ends_with("_b")) return IndexArray{3, 0, 0, 1, 0, 0};
  if (name.ends_with("_ignore")) return IndexArray{0, -100, 2, -100, -100, 1};
  return IndexArray{-100, -100};  // all ignored
}

// The op of each case, on the case's inputs in order.
Tensor run(const std::string& op, const std::vector<Tensor>& in) {
  const std::string base = op.substr(0, op.find("_broadcast"));
  if (base == "add") return in[0] + in[1];
  if (base == "sub") return in[0] - in[1];
  if (base == "mul") return in[0] * in[1];
  if (base == "div") return in[0] / in[1];
  if (op == "masked_fill_broadcast") {  // one mask of 8, the even positions, for both rows
    std::vector<bool> fill;
    for (std::size_t i = 0; i < 8; ++i) fill.push_back(i % 2 == 0);
    return ops::masked_fill(in[0], mask_of({8}, fill), 0.5);
  }
  if (op.starts_with("masked_fill")) {
    std::vector<bool> fill;  // row 0: the even positions, row 1: the odd ones
    for (std::size_t i = 0; i < 16; ++i) fill.push_back(i % 2 == (i < 8 ? 0u : 1u));
    const double value = op == "masked_fill" ? 0.5 : op == "masked_fill_nan" ? kNaN : -kInf;
    return ops::masked_fill(in[0], mask_of({2, 8}, fill), value);
  }
  if (op == "softmax_dim0") return ops::softmax(in[0], 0);
  if (op == "log_softmax_dim0") return ops::log_softmax(in[0], 0);
  if (op == "layer_norm_nan_weight") return ops::layer_norm(in[0], {4}, in[1], in[2]);
  if (op == "sum_dim0") return ops::sum(in[0], 0);
  if (op == "mean_dim0") return ops::mean(in[0], 0);
  if (op == "max_dim0") return ops::max(in[0], 0);
  if (op == "sum_dims01") return ops::sum(in[0], std::vector<std::int64_t>{0, 1});
  if (op == "sum_all") return ops::sum(in[0]);
  if (op == "mean_all_inf") return ops::mean(in[0]);
  if (op.starts_with("max_all")) return ops::max(in[0]);
  if (op.starts_with("rms_norm")) return ops::rms_norm(in[0], {4}, in[1]);
  if (op.starts_with("rotary")) {
    const ops::RotaryTable t = ops::rotary_table(4, 3);
    if (op == "rotary_qkv") return ops::rotary_embedding_qkv(in[0], Tensor(t.cos), Tensor(t.sin));
    return ops::rotary_embedding(in[0], Tensor(t.cos), Tensor(t.sin));
  }
  if (op.starts_with("matmul")) return ops::matmul(in[0], in[1]);
  if (op.starts_with("linear")) return ops::linear(in[0], in[1], in[2]);
  if (op.starts_with("sdpa")) {
    if (op.ends_with("_dropout_p1"))  // every weight dropped: times 0
      return ops::scaled_dot_product_attention(in[0], in[1], in[2], std::nullopt,
                                               AttentionOptions().dropout(1.0));
    if (!op.ends_with("_masked")) return ops::scaled_dot_product_attention(in[0], in[1], in[2]);
    // query 0 may attend to keys 0 and 1, query 1 to all three
    return ops::scaled_dot_product_attention(in[0], in[1], in[2],
                                             mask_of({1, 2, 3}, {true, true, false, true, true, true}));
  }
  if (op.starts_with("causal")) return ops::causal_self_attention(in[0], 1);
  if (op.starts_with("cross_entropy")) {
    const std::string reduction = op.find("_none") != std::string::npos  ? "none"
                                  : op.find("_sum") != std::string::npos ? "sum"
                                                                          : "mean";
    return ops::cross_entropy(in[0], targets(op), ops::CrossEntropyOptions().reduction(reduction));
  }
  if (op.starts_with("kl_div")) {
    std::string reduction = op.substr(std::string("kl_div_").size());
    reduction = reduction.substr(0, reduction.find('_'));
    return ops::kl_div(in[0], in[1].data(),
                       KLDivOptions().reduction(reduction).log_target(op.ends_with("_log_target")));
  }
  if (op.starts_with("embedding")) {
    const IndexArray ids{{1, 0, 2}, {3, 1, 0}};
    if (op == "embedding") return ops::embedding(ids, in[0]);
    if (op == "embedding_padding_idx")
      return ops::embedding(ids, in[0], EmbeddingOptions().padding_idx(0));
    if (op == "embedding_padding_idx_sparse")  // a row-sparse gradient, compared as a table
      return ops::embedding(ids, in[0], EmbeddingOptions().padding_idx(0).sparse(true));
    if (op == "embedding_scaled")
      return ops::embedding_scaled(ids, in[0], 2.0, EmbeddingOptions().padding_idx(0));
    if (op == "embedding_scaled_by_0") return ops::embedding_scaled(ids, in[0], 0.0);
    if (op == "embedding_max_norm")  // renormalises rows 0 to 3 in place first
      return ops::embedding(ids, in[0], EmbeddingOptions().max_norm(1.0));
    if (op.starts_with("embedding_add_rows_dropout"))  // p = 0 or 1: no mask to draw
      return ops::embedding_add_rows_dropout(ids, in[0], 2.0, in[1].data(),
                                             op.ends_with("_p1") ? 1.0 : 0.0, true,
                                             ops::DropoutStream{7, 0},
                                             EmbeddingOptions().padding_idx(0));
  }
  if (op == "dropout_p1") return ops::dropout(in[0], 1.0, true, ops::DropoutStream{7, 0});
  if (op == "dropout_p0") return ops::dropout(in[0], 0.0, true, ops::DropoutStream{7, 0});
  FAIL("no such op in the table: ", op);
  return in[0];
}

Array array_of(const std::vector<std::size_t>& shape, const std::vector<float>& values) {
  Array a = Array::from_shape(shape);
  REQUIRE(a.size() == values.size());
  std::copy(values.begin(), values.end(), a.begin());
  return a;
}

// Runs the golden case g and checks y and every input's gradient against PyTorch's.
void check_case(const OpGolden& g) {
  const std::string op = g.op;
  CAPTURE(op);
  std::vector<Tensor> in;
  for (std::size_t i = 0; i < g.inputs.size(); ++i)
    in.emplace_back(array_of(g.inputs[i].shape, g.inputs[i].values),
                    /*requires_grad=*/!g.grads[i].empty());
  const Tensor y = run(op, in);
  REQUIRE(y.numel() == g.y.size());
  y.backward(array_of(std::vector<std::size_t>(y.shape().begin(), y.shape().end()), g.seed));
  CAPTURE(testing::show(y.data()));
  for (std::size_t i = 0; i < g.y.size(); ++i) {
    CAPTURE(i);
    CHECK(testing::same_special(y.data().flat(i), g.y[i], kTolerance));
  }
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (g.grads[k].empty()) continue;
    CAPTURE(k);  // which input
    const Array dx = in[k].grad_dense();  // a sparse embedding's gradient as a table
    CAPTURE(testing::show(dx));
    REQUIRE(dx.size() == g.grads[k].size());
    for (std::size_t i = 0; i < dx.size(); ++i) {
      CAPTURE(i);
      CHECK(testing::same_special(dx.flat(i), g.grads[k][i], kTolerance));
    }
  }
}
}  // namespace

TEST_SUITE("ops.special_values") {
  TEST_CASE("the binary ops, masked_fill, reductions, norms, products, attention, losses, "
            "embedding and dropout give PyTorch's values and gradients on NaN and the infinities") {
    for (const OpGolden& g : kGoldens)
      if (!std::string(g.op).starts_with("causal")) check_case(g);
  }

  // The goldens are PyTorch's, of attention over keys and values 0 .. i for query i, as tapegrad
  // computes it: nanoGPT's written-out form also multiplies the masked (zero) weights above the
  // diagonal by later values, and its backward the zero gradients by later keys and earlier
  // queries, so that 0 * NaN and 0 * inf bring a special value to earlier positions too
  // (docs/semantics.md says why tapegrad does not).
  TEST_CASE("causal_self_attention gives PyTorch's values and gradients on NaN and the "
            "infinities, position i reading positions 0 .. i only") {
    for (const OpGolden& g : kGoldens)
      if (std::string(g.op).starts_with("causal")) check_case(g);
  }

  TEST_CASE("matmul and linear keep NaN and the infinities inside an autocast::bf16 scope") {
    // Their inputs and incoming gradients are small integers and halves, exact in bfloat16, so
    // rounding the operands changes nothing and PyTorch's float32 goldens hold as they are.
    autocast::bf16 mixed;
    for (const OpGolden& g : kGoldens) {
      const std::string op = g.op;
      if (op.starts_with("matmul") || op.starts_with("linear")) check_case(g);
    }
  }

  TEST_CASE("dropout multiplies by the mask, so a dropped NaN or infinity gives NaN, in forward "
            "and backward, as PyTorch's x * mask / (1 - p)") {
    const std::vector<float> xs = {-kInf, kInf, kNaN, 1.0f, -kInf, kInf, kNaN, 1.0f,
                                   -kInf, kInf, kNaN, 1.0f, -kInf, kInf, kNaN, 1.0f};
    const ops::DropoutStream stream{12345, 3};
    const auto keep = ops::dropout_mask({16}, 0.5, stream);
    REQUIRE(std::count(keep.begin(), keep.end(), 0) > 0);  // something dropped
    REQUIRE(std::count(keep.begin(), keep.end(), 1) > 0);  // and something kept
    const Tensor x(array_of({16}, xs), /*requires_grad=*/true);
    const Tensor y = ops::dropout(x, 0.5, true, stream);
    Array seed = Array::from_shape({16});
    seed.fill(kNaN);
    y.backward(seed);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(i);
      CAPTURE(int(keep(i)));
      const float m = keep(i) ? 2.0f : 0.0f;
      CHECK(testing::same_special(y.data()(i), xs[i] * m, kTolerance));
      CHECK(std::isnan(x.grad()(i)));  // NaN * m, whatever m
    }
  }
}
