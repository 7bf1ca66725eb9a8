// tests/ops/test_attention.cpp: the fused scaled dot-product attention against hand values,
// PyTorch goldens and the same computation composed from single ops; gradcheck; masks; errors.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;
using tapegrad::testing::values;

namespace {

// The tutorial's attention() inside MultiHeadedAttention, spelled with single tapegrad ops:
// split heads (view + transpose), scores / sqrt(d_k), masked_fill(mask == 0, -1e9), softmax,
// dropout, @ v, merge heads.
Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t h,
                          const Mask* keep, double p, Generator* gen) {
  const auto B = static_cast<std::int64_t>(q.shape()[0]),
             Tq = static_cast<std::int64_t>(q.shape()[1]),
             Tk = static_cast<std::int64_t>(k.shape()[1]),
             dk = static_cast<std::int64_t>(q.shape()[2]) / h,
             dv = static_cast<std::int64_t>(v.shape()[2]) / h;
  auto split = [&](const Tensor& t, std::int64_t T, std::int64_t d) {
    return ops::reshape(ops::permute(ops::reshape(t, {B, T, h, d}), {0, 2, 1, 3}), {B * h, T, d});
  };
  Tensor scores = ops::matmul(split(q, Tq, dk), ops::transpose(split(k, Tk, dk), 1, 2)) /
                  std::sqrt(static_cast<double>(dk));
  scores = ops::reshape(scores, {B, h, Tq, Tk});
  if (keep) {
    Mask fill = !(*keep);
    fill.reshape({fill.shape()[0], 1, fill.shape()[1], fill.shape()[2]});
    scores = ops::masked_fill(scores, fill, -1e9);
  }
  Tensor weights = ops::softmax(scores, -1);
  if (p > 0.0) weights = ops::dropout(weights, p, true, *gen);
  Tensor out = ops::matmul(ops::reshape(weights, {B * h, Tq, Tk}), split(v, Tk, dv));
  return ops::reshape(ops::permute(ops::reshape(out, {B, h, Tq, dv}), {0, 2, 1, 3}),
                      {B, Tq, h * dv});
}

// Golden inputs: scripts/golden/transformer_layers.py, PyTorch 1.13 (torch.randn, seed 0).
const Array Q =
    values({2, 3, 4}, {-1.12583983f,  -1.1523602f,   -0.250578582f, -0.433878809f, 0.848710358f,
                       0.692009151f,  -0.31601277f,  -2.11521935f,  0.468096405f,  -0.157712445f,
                       1.44366014f,   0.266049415f,  0.166455343f,  0.87438184f,   -0.143473849f,
                       -0.111609332f, 0.931826591f,  1.25900924f,   2.00498056f,   0.0537369028f,
                       0.618056655f,  -0.412802219f, -0.841064811f, -2.31604195f});
const Array K =
    values({2, 3, 4}, {-0.215863258f, -0.742548168f, 0.562721372f,  0.259627402f,  -0.173960999f,
                       -0.678746223f, 0.938260734f,  0.488869816f,  -0.56924808f,  0.919971406f,
                       1.11081612f,   1.28987408f,   -1.47817397f,  2.56723285f,   -0.473119795f,
                       0.335550755f,  -1.62932599f,  -0.549743652f, -0.479834259f, -0.499681532f,
                       -1.06698036f,  1.11493957f,   -0.140671432f, 0.805753589f});
const Array V =
    values({2, 3, 4}, {-0.0933482349f, 0.687050223f,  -0.838315368f, 0.00089182175f, 0.84189409f,
                       -0.400034159f,  1.03946197f,   0.358153105f,  0.0732460469f,  1.11331844f,
                       0.282267243f,   0.434225649f,  -0.802492917f, -1.29518616f,   -0.750181496f,
                       -1.3119657f,    0.206416309f,  -0.333447874f, -0.428829998f,  0.232918292f,
                       0.796887159f,   -0.184841633f, -0.370147258f, -1.21028149f});
const Array GA =
    values({2, 3, 4}, {-0.701523602f, 1.03668678f,  -0.60367012f,  -1.2787652f,   0.0929502323f,
                       -0.666099727f, 0.608047187f, -0.730019867f, -0.259641558f, 0.11833705f,
                       0.243959248f,  1.16460061f,  0.288576156f,  0.386597753f,  -0.201063916f,
                       -0.117926985f, 0.192199051f, -0.772156894f, -1.90034533f,  0.130677447f,
                       -0.704293966f, 0.314720958f, 0.157392889f,  0.385362715f});
const Mask SRC_MASK = {{{true, true, true}},
                       {{true, true, false}}};  // (B, 1, Tk): batch 1 hides key 2
}  // namespace

TEST_SUITE("ops.attention") {
  TEST_CASE("one query attends to two keys with softmax weights, and a masked key gets none") {
    Tensor q(values({1, 1, 1}, {2.f})), k(values({1, 2, 1}, {0.f, 1.f})),
        v(values({1, 2, 2}, {1.f, 0.f, 0.f, 1.f}));
    const float e2 = std::exp(2.f);
    CHECK(all_close(ops::scaled_dot_product_attention(q, k, v).data(),
                    Array{{{1.f / (1.f + e2), e2 / (1.f + e2)}}}));
    CHECK(all_close(ops::scaled_dot_product_attention(q, k, v, Mask{{{true, false}}}).data(),
                    Array{{{1.f, 0.f}}}));
    // d_k = 4: the scores are divided by sqrt(4) = 2
    Tensor q4(Array{{{1.f, 1.f, 1.f, 1.f}}}),
        k4(Array{{{0.f, 0.f, 0.f, 0.f}, {1.f, 1.f, 0.f, 0.f}}});
    CHECK(all_close(ops::scaled_dot_product_attention(q4, k4, v).data(),
                    Array{{{1.f / (1.f + std::exp(1.f)), std::exp(1.f) / (1.f + std::exp(1.f))}}}));
  }

  TEST_CASE("a fully masked row attends uniformly, as masked_fill with -1e9 does") {
    Tensor q(values({1, 2, 1}, {1.f, 2.f})), k(values({1, 2, 1}, {0.f, 5.f})),
        v(values({1, 2, 1}, {2.f, 4.f}));
    Tensor y = ops::scaled_dot_product_attention(q, k, v, Mask{{{false, false}, {true, true}}});
    CHECK(y.data()(0, 0, 0) == doctest::Approx(3.f));
  }

  TEST_CASE("values, weights and gradients match the tutorial's multi-head attention in PyTorch") {
    struct Golden {
      bool masked;
      std::vector<float> y, p, dq, dk, dv;
    };
    const std::vector<Golden> goldens = {
        {false,
         {0.311813205f,  0.309876323f,   0.100611299f,  0.237007439f,  0.239784971f,
          0.591165662f,  -0.0578007922f, 0.172035545f,  0.294403464f,  0.403198183f,
          0.290715992f,  0.316124856f,   -0.275188863f, -0.905322254f, -0.517709732f,
          -0.730057836f, -0.355888486f,  -0.974723816f, -0.491672277f, -0.852905631f,
          0.220173612f,  -0.467323959f,  -0.485016704f, -0.160352647f},
         {0.442467988f, 0.406271517f,  0.151260495f, 0.257551372f, 0.272485584f, 0.469963044f,
          0.364187241f, 0.36665535f,   0.26915741f,  0.39469263f,  0.344204426f, 0.261102855f,
          0.542860568f, 0.354270875f,  0.102868617f, 0.214780807f, 0.329014927f, 0.456204236f,
          0.636695266f, 0.0910430029f, 0.272261649f, 0.706050932f, 0.039852798f, 0.254096329f,
          0.194029614f, 0.45114243f,   0.35482797f,  0.333279997f, 0.356231391f, 0.310488671f,
          0.278506637f, 0.267250299f,  0.454243034f, 0.18787998f,  0.740738332f, 0.0713817924f},
         {-0.0511430614f, 0.157563061f,   -0.102579989f,   -0.109095201f,  0.0484446809f,
          -0.191903144f,  0.0505968407f,  0.0316640213f,   -0.0120908134f, 0.0408349261f,
          0.0441891439f,  0.0573778749f,  0.0430367291f,   -0.236627281f,  0.0021902055f,
          0.0304351375f,  -0.0270427167f, 0.135336429f,    -0.0296754874f, -0.0454783067f,
          -0.0352315158f, 0.0640794039f,  -0.00705003738f, -0.0793430507f},
         {-0.236322522f,  -0.260857105f,  -0.159222707f,    0.15273948f,    0.446631134f,
          0.471933454f,   0.0797422081f,  -0.190988272f,    -0.210308626f,  -0.211076379f,
          0.0794805139f,  0.0382488072f,  0.0914677978f,    -0.0436877459f, 0.220635653f,
          0.150919914f,   0.00391135644f, -0.000289870426f, -0.057395719f,  -0.190652221f,
          -0.0953791663f, 0.0439775921f,  -0.163239926f,    0.039732296f},
         {-0.381020427f, 0.330242664f,  0.144218445f,  -0.65088433f,  -0.354880422f,
          0.283062667f,  0.0878937095f, -0.315610439f, -0.132314086f, -0.124381199f,
          0.0162242204f, 0.12231034f,   0.182783499f,  -0.237971976f, -0.566698372f,
          0.0694937706f, -0.283804387f, 0.146408379f,  -0.462906212f, 0.278367221f,
          -0.122497916f, 0.0207253098f, -0.914411664f, 0.0502522066f}},
        {true,
         {0.311813205f,   0.309876323f,   0.100611299f,  0.237007439f,  0.239784971f,
          0.591165662f,   -0.0578007922f, 0.172035545f,  0.294403464f,  0.403198183f,
          0.290715992f,   0.316124856f,   -0.67627424f,  -1.17486882f,  -0.584157407f,
          -0.513811886f,  -0.748588026f,  -1.24380147f,  -0.592819691f, -0.555455446f,
          -0.0970039517f, -0.622681916f,  -0.493846506f, -0.0796458423f},
         {0.442467988f, 0.406271517f, 0.151260495f, 0.257551372f, 0.272485584f,  0.469963044f,
          0.364187241f, 0.36665535f,  0.26915741f,  0.39469263f,  0.344204426f,  0.261102855f,
          0.542860568f, 0.354270875f, 0.102868617f, 0.214780807f, 0.329014927f,  0.456204236f,
          0.87489593f,  0.125104055f, 0.f,          0.946571112f, 0.0534288734f, 0.f,
          0.300740898f, 0.699259102f, 0.f,          0.483356774f, 0.516643226f,  0.f,
          0.510312557f, 0.489687383f, 0.f,          0.202322081f, 0.797677934f,  0.f},
         {-0.0511430614f, 0.157563061f,   -0.102579989f,    -0.109095201f,   0.0484446809f,
          -0.191903144f,  0.0505968407f,  0.0316640213f,    -0.0120908134f,  0.0408349261f,
          0.0441891439f,  0.0573778749f,  -0.00775551796f,  -0.159929633f,   0.00029261224f,
          0.03639891f,    0.00296597183f, 0.0611622855f,    0.000485017896f, 0.0603330843f,
          0.00916793942f, 0.189056531f,   -0.000494930893f, -0.0615660511f},
         {-0.236322522f,
          -0.260857105f,
          -0.159222707f,
          0.15273948f,
          0.446631134f,
          0.471933454f,
          0.0797422081f,
          -0.190988272f,
          -0.210308626f,
          -0.211076379f,
          0.0794805139f,
          0.0382488072f,
          0.0472313911f,
          -0.0451972075f,
          0.200573444f,
          0.169736266f,
          -0.0472314022f,
          0.0451972038f,
          -0.200573429f,
          -0.169736266f,
          0.f,
          0.f,
          0.f,
          0.f},
         {-0.381020427f, 0.330242664f,  0.144218445f,  -0.65088433f,  -0.354880422f, 0.283062667f,
          0.0878937095f, -0.315610439f, -0.132314086f, -0.124381199f, 0.0162242204f, 0.12231034f,
          0.222594172f,  -0.298019141f, -1.03511167f,  0.0876529142f, -0.446112931f, 0.227180958f,
          -0.908904552f, 0.310460269f,  0.f,           0.f,           0.f,           0.f}},
    };
    for (const Golden& g : goldens) {
      Tensor q(Q, true), k(K, true), v(V, true);
      Array weights;
      Tensor y = ops::scaled_dot_product_attention(
          q, k, v, g.masked ? std::optional<Mask>(SRC_MASK) : std::nullopt,
          AttentionOptions().heads(2), &weights);
      CHECK(all_close(y.data(), values({2, 3, 4}, g.y), 1e-6, 1e-5));
      CHECK(all_close(weights, values({2, 2, 3, 3}, g.p), 1e-6, 1e-5));
      ops::sum(y * Tensor(GA)).backward();
      CHECK(all_close(q.grad(), values({2, 3, 4}, g.dq), 1e-6, 1e-5));
      CHECK(all_close(k.grad(), values({2, 3, 4}, g.dk), 1e-6, 1e-5));
      CHECK(all_close(v.grad(), values({2, 3, 4}, g.dv), 1e-6, 1e-5));
    }
  }

  TEST_CASE(
      "the fused op equals the tutorial's composition of single ops, dropout draws included") {
    Generator data(11);
    const Mask tgt = ops::target_mask(IndexArray{{1, 4, 2, 0}, {3, 3, 0, 0}}, 0);  // (2, 4, 4)
    for (const double p : {0.0, 0.25}) {
      Tensor q(randn({2, 4, 6}, &data), true), k(randn({2, 4, 6}, &data), true),
          v(randn({2, 4, 9}, &data), true);
      Tensor g(randn({2, 4, 9}, &data));
      Generator gen_a(5), gen_b(5);
      Tensor fused = ops::scaled_dot_product_attention(
          q, k, v, tgt, AttentionOptions().heads(3).dropout(p).generator(&gen_a));
      ops::sum(fused * g).backward();
      const Array dq = q.grad(), dk = k.grad(), dv = v.grad();
      for (const Tensor& t : {q, k, v}) t.zero_grad();
      Tensor composed = composed_attention(q, k, v, 3, &tgt, p, &gen_b);
      ops::sum(composed * g).backward();
      CHECK(all_close(fused.data(), composed.data(), 1e-6, 1e-5));
      CHECK(all_close(dq, q.grad(), 1e-6, 1e-5));
      CHECK(all_close(dk, k.grad(), 1e-6, 1e-5));
      CHECK(all_close(dv, v.grad(), 1e-6, 1e-5));
      CHECK(gen_a.next_u64() == gen_b.next_u64());  // the same number of draws
    }
  }

  TEST_CASE("attention passes gradcheck for query, key and value, with a mask, heads and dropout") {
    Generator data(2);
    Tensor q(randn({2, 3, 4}, &data), true), k(randn({2, 2, 4}, &data), true),
        v(randn({2, 2, 6}, &data), true);
    const Mask keep = {{{true, false}}, {{true, true}}};
    for (const double p : {0.0, 0.3}) {
      const GradcheckResult r = gradcheck(
          [&](const std::vector<Tensor>& t) {
            Generator gen(9);  // the same dropout mask at every evaluation
            return ops::scaled_dot_product_attention(
                t[0], t[1], t[2], keep, AttentionOptions().heads(2).dropout(p).generator(&gen));
          },
          {q, k, v});
      CHECK_MESSAGE(r.ok, r.message);
    }
  }

  TEST_CASE("without training, or with p = 0, nothing is dropped and nothing is drawn") {
    Generator data(4);
    Tensor q(randn({1, 2, 2}, &data)), k(randn({1, 3, 2}, &data)), v(randn({1, 3, 2}, &data));
    Generator gen(1), fresh(1);
    Tensor plain = ops::scaled_dot_product_attention(q, k, v);
    Tensor eval = ops::scaled_dot_product_attention(
        q, k, v, std::nullopt, AttentionOptions().dropout(0.5).training(false).generator(&gen));
    CHECK(bit_equal(plain.data(), eval.data()));
    CHECK(gen.next_u64() == fresh.next_u64());
    Array weights;
    ops::scaled_dot_product_attention(q, k, v, std::nullopt,
                                      AttentionOptions().dropout(1.0).generator(&gen), &weights);
    CHECK(bit_equal(weights, xt::zeros<float>({1, 1, 2, 3})));
  }

  TEST_CASE("subsequent_mask, padding_mask and target_mask follow the tutorial") {
    CHECK(ops::subsequent_mask(3) ==
          Mask{{{true, false, false}, {true, true, false}, {true, true, true}}});
    CHECK(ops::subsequent_mask(0).shape() == Shape{1, 0, 0});
    CHECK(ops::padding_mask(IndexArray{{5, 0, 2}}, 0) == Mask{{{true, false, true}}});
    CHECK(ops::target_mask(IndexArray{{1, 2, 0}}, 0) ==
          Mask{{{true, false, false}, {true, true, false}, {true, true, false}}});
    CHECK_THROWS_WITH_AS(ops::subsequent_mask(-1), doctest::Contains("expected size >= 0, got -1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::padding_mask(IndexArray{1, 2}, 0),
                         doctest::Contains("expected ids of shape (B, T)"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::target_mask(IndexArray{1, 2}, 0),
                         doctest::Contains("expected tgt of shape (B, T)"), ShapeError);
  }

  TEST_CASE("shapes, heads, masks and dropout that do not fit are reported with the shapes") {
    Tensor q(xt::zeros<float>({2, 3, 4})), k(xt::zeros<float>({2, 5, 4})),
        v(xt::zeros<float>({2, 5, 6}));
    CHECK_THROWS_WITH_AS(ops::scaled_dot_product_attention(ops::reshape(q, {6, 4}), k, v),
                         doctest::Contains("got shapes (6, 4), (2, 5, 4) and (2, 5, 6)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::scaled_dot_product_attention(q, Tensor(xt::zeros<float>({2, 5, 3})), v),
        doctest::Contains("with the same B, Tk and h*d_k"), ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::scaled_dot_product_attention(q, k, Tensor(xt::zeros<float>({2, 4, 6}))),
        doctest::Contains("with the same B, Tk and h*d_k"), ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::scaled_dot_product_attention(q, k, v, std::nullopt, AttentionOptions().heads(0)),
        doctest::Contains("expected heads >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::scaled_dot_product_attention(q, k, v, std::nullopt, AttentionOptions().heads(3)),
        doctest::Contains("to be multiples of heads = 3"), ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::scaled_dot_product_attention(q, k, v, Mask{{true, false}}),
        doctest::Contains("expected a mask broadcastable to (B, Tq, Tk) = (2, 3, 5), got (1, 2)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::scaled_dot_product_attention(q, k, v, ops::subsequent_mask(5)),
                         doctest::Contains("got (1, 5, 5)"), ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::scaled_dot_product_attention(q, k, v, std::nullopt, AttentionOptions().dropout(1.5)),
        doctest::Contains("dropout probability has to be between 0 and 1, but got 1.5"),
        ValueError);
  }

  TEST_CASE("attention records nothing under NoGradGuard and leaves an empty tape after backward") {
    Tensor q(Q, true), k(K, true), v(V, true);
    {
      autograd::NoGradGuard no_grad;
      CHECK_FALSE(ops::scaled_dot_product_attention(q, k, v).requires_grad());
      CHECK(autograd::tape().empty());
    }
    Tensor frozen_v(V);
    ops::sum(ops::scaled_dot_product_attention(q, k, frozen_v)).backward();
    CHECK(autograd::tape().empty());
    CHECK(q.has_grad());
    CHECK_FALSE(frozen_v.has_grad());
  }

}  // TEST_SUITE
