// tests/ops/test_causal_attention.cpp: causal self-attention on a fused qkv against hand values and
// the same computation composed from single tapegrad ops; gradcheck (odd sizes, a single
// position); the weights; dropout; an additive bias on the scores (ALiBi's, a masked key) against
// PyTorch's goldens from scripts/golden/attention_bias.py; errors. Against PyTorch's goldens (nanoGPT's attention written
// out): tests/transformer/test_gpt_op_parity.cpp, which reads them from the GPT parity fixture.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
// nanoGPT's attention, spelled with single tapegrad ops: split qkv, view + transpose each into
// (B, nh, T, hs), (q @ k^T) * (1 / sqrt(hs)), the causal mask, softmax, @ v, transpose back.
Tensor composed(const Tensor& qkv, std::int64_t nh) {
  const auto B = std::int64_t(qkv.shape()[0]), T = std::int64_t(qkv.shape()[1]),
             C = std::int64_t(qkv.shape()[2]) / 3;
  const std::int64_t hs = C / nh;
  auto heads = [&](std::int64_t part) {
    const Tensor t = ops::slice(qkv, 2, part * C, (part + 1) * C);
    return ops::reshape(ops::permute(ops::reshape(t, {B, T, nh, hs}), {0, 2, 1, 3}),
                        {B * nh, T, hs});
  };
  Tensor att =
      ops::matmul(heads(0), ops::transpose(heads(1), 1, 2)) * (1.0 / std::sqrt(double(hs)));
  Mask above = Mask::from_shape({1, std::size_t(T), std::size_t(T)});
  for (std::int64_t i = 0; i < T; ++i)
    for (std::int64_t j = 0; j < T; ++j) above(0, i, j) = j > i;
  att = ops::softmax(ops::masked_fill(att, above, -INFINITY), -1);
  const Tensor y = ops::matmul(att, heads(2));
  return ops::reshape(ops::permute(ops::reshape(y, {B, nh, T, hs}), {0, 2, 1, 3}), {B, T, C});
}

// The inputs of scripts/golden/attention_bias.py, as formulas of the element index: B 2, T 5, two
// heads of 3; the bias is ALiBi's, -slope_h * (i - j) with slope_h = 2^(-8 (h + 1) / 2), with key 1
// of query 3 masked (-inf) and key 2 of query 4 raised by 0.75 in each head.
constexpr std::size_t kB = 2, kT = 5, kH = 2, kHs = 3, kC = kH * kHs;
Array bias_qkv() {
  Array a = Array::from_shape({kB, kT, 3 * kC});
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = float(std::sin(0.37 * double(i) + 0.1) * 2);
  return a;
}
Array bias_upstream() {
  Array a = Array::from_shape({kB, kT, kC});
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = float(std::cos(0.23 * double(i)));
  return a;
}
Array shaped(const std::vector<float>& values, const Shape& shape) {
  Array a = Array::from_shape(shape);
  REQUIRE(a.size() == values.size());
  std::copy(values.begin(), values.end(), a.begin());
  return a;
}
Array alibi_bias() {
  Array bias = Array::from_shape({kH, kT, kT});
  for (std::size_t h = 0; h < kH; ++h) {
    const double slope = std::pow(2.0, -8.0 * double(h + 1) / double(kH));
    for (std::size_t i = 0; i < kT; ++i)
      for (std::size_t j = 0; j < kT; ++j) bias(h, i, j) = float(-slope * (double(i) - double(j)));
    bias(h, 3, 1) = -std::numeric_limits<float>::infinity();
    bias(h, 4, 2) = 0.75f;
  }
  return bias;
}
// torch 1.13.0a0: B 2, T 5, 2 heads of 3
const std::vector<float> kBiasY = {-1.97035551f, -1.96107674f, -1.6863755f, -1.18343115f, -0.520314991f, 0.213223383f, -1.96848655f, -1.91714334f, -1.60632384f, -1.06142437f, -0.385536104f, 0.342532754f, -1.96532166f, -1.9208796f, -1.61645567f, -0.908478379f, -0.227341697f, 0.484564662f, -1.96595252f, -1.95030904f, -1.67070043f, -0.611015737f, 0.0451983064f, 0.695294976f, -1.9566915f, -1.89852476f, -1.5834018f, -0.0412526429f, 0.605193079f, 1.16972876f, 0.280845046f, 0.977904379f, 1.54260898f, 1.89852858f, 1.99749136f, 1.82610297f, 0.618074775f, 1.25063872f, 1.71393466f, 1.91699338f, 1.9642235f, 1.74560499f, 0.885243177f, 1.43595815f, 1.79232299f, 1.90929353f, 1.96649349f, 1.7575376f, 0.898602724f, 1.40148365f, 1.71468019f, 1.89699709f, 1.98939919f, 1.81254542f, 0.981140077f, 1.49207985f, 1.80107379f, 1.9063381f, 1.96175349f, 1.75165486f};
const std::vector<float> kBiasDqkv = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -0.0531836301f, -0.0117452592f, 0.0312827453f, 0.10319519f, 0.418129146f, 0.676471233f, 0.422875822f, 0.471405625f, 0.495107979f, 0.0408270955f, -0.0643485337f, -0.166135132f, 0.00667014904f, 0.0079891989f, 0.00822694879f, 0.0800255388f, 0.0596612692f, 0.0312221348f, 0.00174954534f, -0.0266614705f, -0.0514639877f, -0.573909581f, -0.419443011f, -0.208206773f, 0.0122768134f, -0.0141137391f, -0.0397609621f, -0.0828308463f, -0.0995569676f, -0.111039653f, 0.0462894104f, 0.0535232574f, 0.053512983f, 0.26963073f, 0.183084831f, 0.0717593133f, 0.0416550264f, 0.0296702757f, 0.0136697851f, -0.025270611f, -0.138871223f, -0.233676255f, 0.00633196719f, 0.0123755224f, 0.0177672952f, 0.251943082f, 0.297676623f, 0.327732354f, 0.0065815933f, 0.00711859018f, 0.00669211755f, -0.264231771f, -0.150059149f, -0.01557675f, 0.00667074788f, 0.00587947248f, 0.00429243734f, 0.31558615f, 0.116389625f, -0.0985597f, 0.000717445044f, 0.00129582069f, 0.00180594937f, 0.139630377f, 0.171842322f, 0.195003837f, -0.0835644752f, -0.0931402743f, -0.0901099816f, -0.681179047f, -0.299212188f, 0.123251587f, 0.00310778362f, 0.002856476f, 0.00221855799f, 0.180398941f, 0.0237955395f, -0.136028484f, 0.000362120132f, 0.000431551016f, 0.000478253321f, 0.104794733f, 0.103786699f, 0.09731251f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.58481431f, 0.549199641f, 0.43925333f, -0.0376595706f, -0.00536265597f, 0.0276600644f, 0.589514613f, 0.492079198f, 0.368727386f, 0.415802121f, 0.325521827f, 0.218097061f, 0.0312677324f, -0.00497826934f, -0.0405504704f, 0.024038814f, 0.0310238823f, 0.033810012f, -0.24802053f, -0.145068482f, -0.0224820711f, -0.00915669836f, -0.0412009284f, -0.0676687956f, -0.233324498f, -0.299201787f, -0.349320978f, -0.149351135f, -0.154768735f, -0.152035058f, 0.0529482067f, -0.074318707f, -0.19152692f, 0.00781581085f, 0.00950324908f, 0.00990446564f, -0.310992956f, -0.337517589f, -0.318360835f, 0.0389744118f, 0.03837917f, 0.0325894915f, 0.0500472486f, 0.141317308f, 0.225144535f, 0.0183833297f, 0.0197170209f, 0.0200122688f, -0.00713892281f, 0.0370542854f, 0.0762323737f, -0.0156862345f, -0.0180777609f, -0.0180225503f, -0.0223144609f, -0.059906356f, -0.0893902034f, 0.00691488292f, 0.00728261098f, 0.00666467194f, 0.0478134267f, 0.082237117f, 0.112329617f, 0.00188693509f, 0.00189072813f, 0.00179494172f, -0.0411119647f, 0.115756251f, 0.256957352f, -0.028574856f, -0.0339267477f, -0.0346868038f, -0.00348637742f, -0.00670701871f, -0.00901989639f, 0.000926294131f, 0.000900962856f, 0.000753690547f, 0.0096813282f, 0.00975176971f, 0.00930861197f, 0.000187137412f, 0.00015642494f, 0.000117473988f};
const std::vector<float> kBiasWeights = {1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.844244957f, 0.155755058f, 0.0f, 0.0f, 0.0f, 0.880529821f, 0.10691683f, 0.0125534013f, 0.0f, 0.0f, 0.987746835f, 0.0f, 0.0108300932f, 0.00142311573f, 0.0f, 0.851011455f, 0.113425933f, 0.0330019593f, 0.00205948786f, 0.000501108705f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.819593608f, 0.180406317f, 0.0f, 0.0f, 0.0f, 0.701155484f, 0.201382741f, 0.0974617898f, 0.0f, 0.0f, 0.672896624f, 0.0f, 0.177598462f, 0.149504915f, 0.0f, 0.251732141f, 0.195940092f, 0.324836582f, 0.12241514f, 0.105076008f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.524308681f, 0.475691289f, 0.0f, 0.0f, 0.0f, 0.382179797f, 0.325896204f, 0.291924059f, 0.0f, 0.0f, 0.55834043f, 0.0f, 0.291054934f, 0.150604665f, 0.0f, 0.340964228f, 0.283204347f, 0.324476063f, 0.0415694118f, 0.00978597067f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.812033892f, 0.187966153f, 0.0f, 0.0f, 0.0f, 0.862148046f, 0.122590557f, 0.0152614033f, 0.0f, 0.0f, 0.987955213f, 0.0f, 0.0108462395f, 0.00119853474f, 0.0f, 0.865821421f, 0.108977951f, 0.0237156563f, 0.00126627355f, 0.000218660105f};

// transformers' repeat_kv, written out: the grouped qkv (B, T, (H + 2K) hs) as the multi-head qkv
// (B, T, 3 H hs) in which query head h meets a COPY of key/value head h / (H / K).
Tensor repeat_kv(const Tensor& qkv, std::int64_t H, std::int64_t K) {
  const std::int64_t hs = std::int64_t(qkv.shape()[2]) / (H + 2 * K), G = H / K;
  std::vector<Tensor> parts = {ops::slice(qkv, 2, 0, H * hs)};
  for (const std::int64_t first : {H, H + K})  // the keys, then the values
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t at = (first + h / G) * hs;
      parts.push_back(ops::slice(qkv, 2, at, at + hs));
    }
  return ops::cat(parts, 2);
}
}  // namespace

TEST_SUITE("ops.causal_attention") {
  TEST_CASE("position i attends to positions 0 .. i: values by hand") {
    // One head of width 1: qkv rows (q, k, v). y0 = v0; y1 = softmax(q1 k0, q1 k1) . (v0, v1).
    Tensor qkv(Array{{{1.0f, 2.0f, 10.0f}, {0.5f, -1.0f, 20.0f}}});
    const Tensor y = ops::causal_self_attention(qkv, 1);
    REQUIRE(y.shape() == Shape{1, 2, 1});
    CHECK(y.data()(0, 0, 0) == 10.0f);
    const double s0 = 0.5 * 2.0, s1 = 0.5 * -1.0, p0 = std::exp(s0) / (std::exp(s0) + std::exp(s1));
    CHECK(y.data()(0, 1, 0) == doctest::Approx(p0 * 10.0 + (1.0 - p0) * 20.0).epsilon(1e-6));
  }

  TEST_CASE("equals the attention composed from single ops, values and gradients") {
    const Tensor qkv = testing::input({2, 7, 18}, 11);
    const Array r = testing::input({2, 7, 6}, 12, false).data();
    Tensor fused = ops::causal_self_attention(qkv, 3);
    fused.backward(r);
    const Array d_fused = qkv.grad();
    qkv.zero_grad();
    Tensor ref = composed(qkv, 3);
    ref.backward(r);
    CHECK(all_close(fused.data(), ref.data(), 1e-6, 1e-5));
    CHECK(all_close(d_fused, qkv.grad(), 1e-6, 1e-5));
  }

  TEST_CASE(
      "the gradient matches finite differences: odd sizes, several heads, a single position") {
    auto fn = [](std::int64_t heads) {
      return
          [heads](const std::vector<Tensor>& t) { return ops::causal_self_attention(t[0], heads); };
    };
    testing::check_gradients(fn(2), {testing::input({2, 3, 12}, 1)});  // B 2, T 3, 2 heads of 2
    testing::check_gradients(fn(1), {testing::input({1, 5, 9}, 2)});   // T 5, one head of 3
    testing::check_gradients(fn(3), {testing::input({1, 1, 9}, 3)});   // T 1: each head copies v
  }

  TEST_CASE("a single position returns its own values") {
    const Tensor qkv = testing::input({2, 1, 12}, 4, false);
    const Tensor y = ops::causal_self_attention(qkv, 2);
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t c = 0; c < 4; ++c) CHECK(y.data()(b, 0, c) == qkv.data()(b, 0, 8 + c));
  }

  TEST_CASE("the weights: each row sums to 1, nothing above the diagonal") {
    const Tensor qkv = testing::input({2, 6, 12}, 5, false);
    Array w;
    ops::causal_self_attention(qkv, 2, {}, &w);
    REQUIRE(w.shape() == Shape{2, 2, 6, 6});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t i = 0; i < 6; ++i) {
          double sum = 0.0;
          for (std::size_t j = 0; j < 6; ++j) {
            sum += w(b, h, i, j);
            if (j > i) CHECK(w(b, h, i, j) == 0.0f);
          }
          CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
        }
  }

  TEST_CASE("dropout on the weights: seeded, inverted, off in eval, everything at p = 1") {
    const Tensor qkv = testing::input({2, 5, 12}, 6, false);
    Generator a(9), b(9);
    Array wa, wb, plain;
    const Tensor ya = ops::causal_self_attention(
        qkv, 2, CausalAttentionOptions().dropout(0.5).generator(&a), &wa);
    const Tensor yb = ops::causal_self_attention(
        qkv, 2, CausalAttentionOptions().dropout(0.5).generator(&b), &wb);
    ops::causal_self_attention(qkv, 2, {}, &plain);
    CHECK(bit_equal(ya.data(), yb.data()));
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < wa.size(); ++i) {
      CHECK((wa.data()[i] == 0.0f || wa.data()[i] == plain.data()[i] * 2.0f));
      dropped += wa.data()[i] == 0.0f && plain.data()[i] != 0.0f;
    }
    CHECK(dropped > 0);
    const Tensor eval =
        ops::causal_self_attention(qkv, 2, CausalAttentionOptions().dropout(0.5).training(false));
    CHECK(bit_equal(eval.data(), ops::causal_self_attention(qkv, 2).data()));
    const Tensor all = ops::causal_self_attention(qkv, 2, CausalAttentionOptions().dropout(1.0));
    CHECK(bit_equal(all.data(), xt::zeros<float>(all.shape())));
    auto with_dropout = [](const std::vector<Tensor>& t) {
      Generator g(3);  // the same mask at every evaluation
      return ops::causal_self_attention(t[0], 2,
                                        CausalAttentionOptions().dropout(0.3).generator(&g));
    };
    testing::check_gradients(with_dropout, {testing::input({1, 4, 12}, 8)});
  }

  TEST_CASE("gives the same bits with one thread and with two") {
    const Tensor qkv = testing::input({12, 64, 384}, 10);
    Array y[2], d[2];
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      qkv.zero_grad();
      Tensor y_t = ops::causal_self_attention(qkv, 4);
      y_t.backward(xt::ones<float>(y_t.shape()));
      y[threads - 1] = y_t.data();
      d[threads - 1] = qkv.grad();
    }
    set_num_threads(1);
    CHECK(bit_equal(y[0], y[1]));
    CHECK(bit_equal(d[0], d[1]));
  }

  TEST_CASE("an additive bias matches PyTorch's scores + bias: ALiBi's slopes and a masked key") {
    Tensor qkv(bias_qkv(), true);
    Array weights;
    Tensor y = ops::causal_self_attention(qkv, kH, CausalAttentionOptions().bias(alibi_bias()),
                                          &weights);
    y.backward(bias_upstream());
    CHECK(all_close(y.data(), shaped(kBiasY, y.shape()), 1e-6, 1e-5));
    CHECK(all_close(qkv.grad(), shaped(kBiasDqkv, qkv.shape()), 1e-6, 1e-5));
    CHECK(all_close(weights, shaped(kBiasWeights, weights.shape()), 1e-6, 1e-6));
    for (std::size_t b = 0; b < kB; ++b)
      for (std::size_t h = 0; h < kH; ++h) CHECK(weights(b, h, 3, 1) == 0.0f);  // the masked key
  }

  TEST_CASE("with a bias, the gradient matches finite differences, and a zero bias changes no bit") {
    const Array bias = testing::input({2, 4, 4}, 8, false).data() * 2.0f;
    testing::check_gradients(
        [&](const std::vector<Tensor>& t) {
          return ops::causal_self_attention(t[0], 2, CausalAttentionOptions().bias(bias));
        },
        {testing::input({2, 4, 12}, 6)});
    const Tensor qkv = testing::input({2, 7, 18}, 11, false);
    const Array zero = xt::zeros<float>({3, 7, 7});
    CHECK(bit_equal(ops::causal_self_attention(qkv, 3, CausalAttentionOptions().bias(zero)).data(),
                    ops::causal_self_attention(qkv, 3).data()));
  }

  TEST_CASE("a NaN or an infinity at position p reaches no output, nor query gradient, before p") {
    // y_i and dL/dq_i depend on positions 0 .. i only: a special value at position p must leave
    // them finite for every i < p, over several tiles of rows (T 20, two heads of 4).
    const std::size_t T = 20, C = 8;
    const std::vector<std::pair<std::size_t, float>> places = {
        {2 * C + 1, std::numeric_limits<float>::quiet_NaN()},   // a value
        {C + 3, std::numeric_limits<float>::infinity()},        // a key
        {0, -std::numeric_limits<float>::infinity()},           // a query
        {2 * C + 6, std::numeric_limits<float>::infinity()}};   // a value, the other head
    for (const std::size_t p : {1, 6, 13, 19})
      for (const auto& [column, value] : places) {
        CAPTURE(p);
        CAPTURE(column);
        Array a = testing::input({1, T, 3 * C}, 21, false).data();
        a(0, p, column) = value;
        Tensor qkv(a, true);
        Tensor y = ops::causal_self_attention(qkv, 2);
        y.backward(Array(xt::ones<float>(Shape{1, T, C})));
        for (std::size_t i = 0; i < p; ++i)
          for (std::size_t c = 0; c < C; ++c) {
            CHECK(std::isfinite(y.data()(0, i, c)));
            CHECK(std::isfinite(qkv.grad()(0, i, c)));
          }
        if (std::isnan(value))  // a NaN value reaches its own position's output (an infinite key
          CHECK(std::isnan(y.data()(0, p, 1)));  // may get weight 0: exp(-inf))
      }
  }

  TEST_CASE("grouped-query attention equals multi-head attention on copied key/value heads") {
    // H 6 query heads sharing K 2 (groups of 3), K 3 (pairs), K 1 (multi-query), K 6 (none)
    for (const std::int64_t K : {2, 3, 1, 6}) {
      CAPTURE(K);
      const std::int64_t H = 6, hs = 4;
      const Tensor qkv = testing::input({2, 7, std::size_t((H + 2 * K) * hs)}, 21);
      const Array r = testing::input({2, 7, std::size_t(H * hs)}, 22, false).data();
      Tensor grouped = ops::causal_self_attention(qkv, H, CausalAttentionOptions().n_kv_head(K));
      grouped.backward(r);
      const Array d_grouped = qkv.grad();
      qkv.zero_grad();
      Tensor copied = ops::causal_self_attention(repeat_kv(qkv, H, K), H);
      copied.backward(r);
      CHECK(bit_equal(grouped.data(), copied.data()));
      // each key/value head's gradient sums those of its copies
      CHECK(all_close(d_grouped, qkv.grad(), 1e-6, 1e-5));
    }
  }

  TEST_CASE("grouped-query attention: the gradient matches finite differences, with dropout") {
    testing::check_gradients(
        [](const std::vector<Tensor>& t) {
          return ops::causal_self_attention(t[0], 4, CausalAttentionOptions().n_kv_head(2));
        },
        {testing::input({2, 3, 16}, 5)});  // B 2, T 3, 4 query heads, 2 key/value heads of 2
    testing::check_gradients(
        [](const std::vector<Tensor>& t) {
          return ops::causal_self_attention(
              t[0], 2,
              CausalAttentionOptions().n_kv_head(1).dropout(0.4).dropout_stream(
                  ops::DropoutStream{3, 1}));
        },
        {testing::input({1, 4, 12}, 6)});  // multi-query: 2 query heads of 3, one key/value head
  }

  TEST_CASE("grouped-query attention refuses heads that do not divide, and widths that do not fit") {
    Tensor qkv(xt::zeros<float>({2, 3, 16}));
    CHECK_THROWS_WITH_AS(
        ops::causal_self_attention(qkv, 4, CausalAttentionOptions().n_kv_head(3)),
        doctest::Contains("expected n_kv_head dividing n_head = 4 (each key/value head serves "
                          "n_head / n_kv_head query heads), got 3"),
        ValueError);
    CHECK_THROWS_WITH_AS(ops::causal_self_attention(qkv, 4, CausalAttentionOptions().n_kv_head(0)),
                         doctest::Contains("expected n_kv_head dividing n_head = 4"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::causal_self_attention(qkv, 6, CausalAttentionOptions().n_kv_head(2)),
        doctest::Contains("expected qkv of shape (B, T, (n_head + 2 n_kv_head) hs) = (B, T, 10 "
                          "hs), the query heads, then the key heads, then the value heads, got "
                          "(2, 3, 16)"),
        ShapeError);
  }

  TEST_CASE("shapes that do not fit, heads and dropout out of range, each with a clear error") {
    Tensor qkv(xt::zeros<float>({2, 3, 12}));
    CHECK_THROWS_WITH_AS(ops::causal_self_attention(Tensor(xt::zeros<float>({3, 12})), 2),
                         doctest::Contains("expected qkv of shape (B, T, 3C)"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::causal_self_attention(Tensor(xt::zeros<float>({2, 3, 10})), 2),
                         doctest::Contains("got (2, 3, 10)"), ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::causal_self_attention(qkv, 3),
        doctest::Contains("C = 4 of qkv (2, 3, 12) to be a multiple of n_head = 3"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::causal_self_attention(qkv, 0),
                         doctest::Contains("expected n_head >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(ops::causal_self_attention(qkv, 2, CausalAttentionOptions().dropout(1.5)),
                         doctest::Contains("dropout probability has to be between 0 and 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        ops::causal_self_attention(qkv, 2,
                                   CausalAttentionOptions().bias(xt::zeros<float>({2, 3, 4}))),
        doctest::Contains("expected the bias of shape (n_head, T, T) = (2, 3, 3), one (T, T) block "
                          "of scores per head, got (2, 3, 4)"),
        ShapeError);
  }

  TEST_CASE("records one entry, and nothing under NoGradGuard") {
    Tensor qkv = testing::input({1, 3, 6}, 13);
    const std::size_t before = autograd::tape().size();
    {
      autograd::NoGradGuard no_grad;
      ops::causal_self_attention(qkv, 1);
      CHECK(autograd::tape().size() == before);
    }
    Tensor loss = ops::sum(ops::causal_self_attention(qkv, 1));
    CHECK(autograd::tape().size() == before + 2);
    loss.backward();
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
