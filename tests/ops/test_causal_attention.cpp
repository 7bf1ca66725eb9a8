// tests/ops/test_causal_attention.cpp: causal self-attention on a fused qkv against hand values,
// PyTorch goldens (nanoGPT's attention written out) and the same computation composed from single
// tapegrad ops; gradcheck (odd sizes, a single position); the weights; dropout; errors.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
const std::string FIXTURE =
    std::string(TAPEGRAD_SOURCE_DIR) + "/tests/transformer/fixtures/gpt_parity.safetensors";

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

  TEST_CASE(
      "matches PyTorch's nanoGPT attention, values and gradients, including a single position") {
    const io::SafetensorsFile f = io::load_safetensors(FIXTURE);
    for (const auto& [name, heads] : {std::pair{"a", 2}, std::pair{"b", 3}}) {
      CAPTURE(name);
      const std::string p = std::string("attn.") + name + ".";
      Tensor qkv(f.to_float(p + "qkv"), true);
      Tensor y = ops::causal_self_attention(qkv, heads);
      CHECK(all_close(y.data(), f.to_float(p + "y"), 1e-6, 1e-5));
      y.backward(f.to_float(p + "r"));
      CHECK(all_close(qkv.grad(), f.to_float(p + "dqkv"), 1e-6, 1e-5));
    }
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
