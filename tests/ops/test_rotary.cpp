// tests/ops/test_rotary.cpp: rotary position embeddings, ops::rotary_embedding(_qkv) and
// ops::rotary_table: the tables, a rotation by hand, the relative-position property, PyTorch
// goldens, gradcheck, errors, and the tape.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <tapegrad/core.hpp>
#include <xtensor/xview.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;
using tapegrad::testing::values;

namespace {
// The RoFormer rotation of interleaved pairs written out in PyTorch 1.13 (it has none) on a
// packed qkv (1, 2, 24): 2 heads of head_dim 4, positions 3 and 4 (offset 3) of tables with 6
// positions, base 10000; y and d(sum(g * y))/dqkv. From scripts/golden/gpt_layers.py with torch
// 1.13.0a0.
const std::vector<float> kcos = {1.0f,          1.0f,          0.540302277f,
                                 0.999949992f,  -0.416146845f, 0.999800026f,
                                 -0.989992499f, 0.999550045f,  -0.653643608f,
                                 0.999200106f,  0.2836622f,    0.998750269f};  // (6, 2)
const std::vector<float> ksin = {0.0f,           0.0f,          0.841470957f,
                                 0.00999983307f, 0.909297407f,  0.0199986659f,
                                 0.141120002f,   0.029995501f,  -0.756802499f,
                                 0.0399893336f,  -0.958924294f, 0.0499791689f};  // (6, 2)
const std::vector<float> kqkv = {
    -1.44529271f,     -0.807765067f, 1.19752944f,    -1.83453465f,  0.420080304f,
    1.12903583f,      0.426359385f,  -1.13611627f,   -0.388229549f, -0.334187299f,
    0.952333152f,     -0.462365478f, -0.607928574f,  -0.362483233f, -1.50720727f,
    -0.508698642f,    1.16847682f,   0.770371437f,   0.390675306f,  0.289588332f,
    -2.75753403f,     -0.832358122f, 0.489985555f,   0.290821731f,  -1.13113987f,
    -0.000932178984f, -0.162693635f, -0.247719213f,  2.41971135f,   1.64561117f,
    -0.308694005f,    -1.51472378f,  -0.562711358f,  -0.832753956f, -1.39554524f,
    -0.399295092f,    -0.309939593f, -0.0560618415f, 0.517412901f,  -1.59623682f,
    0.356960088f,     -2.29748225f,  -0.871083438f,  -1.67402792f,  0.563055158f,
    -1.4350673f,      0.71939975f,   -1.37074745f};  // (1, 2, 24)
const std::vector<float> kg = {
    0.322071284f,    -0.101567931f,  0.20599322f,   1.21682262f,   1.23591232f,
    -0.100210227f,   2.13640451f,    0.0700304136f, 0.499037385f,  0.0564968549f,
    0.406073153f,    -1.73835886f,   1.19011796f,   2.63523531f,   0.228449628f,
    0.324062288f,    -1.11543202f,   2.19138217f,   0.115761727f,  0.777300656f,
    -1.09209657f,    -0.0610851757f, -1.4927597f,   -1.76440859f,  -1.89721406f,
    -0.00222741347f, -1.97213423f,   -1.93391669f,  2.14322948f,   -0.962599874f,
    -0.563566267f,   1.6445961f,     0.297685951f,  -0.684804916f, -0.0432676822f,
    1.83931899f,     -0.55501461f,   0.786749959f,  0.681586564f,  1.51776028f,
    -0.635259986f,   -0.16289255f,   0.493000925f,  -0.478125721f, -1.88691127f,
    0.742792547f,    -0.0924578235f, -1.43090057f};  // (1, 2, 24)
const std::vector<float> ky = {
    1.54482079f,   0.595721662f,  1.25201845f,   -1.79778874f,  -0.575205922f,
    -1.05845535f,  0.460245937f,  -1.12281621f,  0.431504846f,  0.276055962f,
    0.965773523f,  -0.433591723f, 0.652998388f,  0.273064822f,  -1.49127042f,
    -0.553679228f, 1.16847682f,   0.770371437f,  0.390675306f,  0.289588332f,
    -2.75753403f,  -0.832358122f, 0.489985555f,  0.290821731f,  0.738656878f,
    0.856658816f,  -0.152657375f, -0.254027069f, -0.336226106f, -2.90688682f,
    -0.24787429f,  -1.52585661f,  -0.262417555f, 0.970185637f,  -1.37846148f,
    -0.454782635f, 0.1601623f,    0.271207511f,  0.580831468f,  -1.57426894f,
    0.356960088f,  -2.29748225f,  -0.871083438f, -1.67402792f,  0.563055158f,
    -1.4350673f,   0.71939975f,   -1.37074745f};  // (1, 2, 24)
const std::vector<float> kdqkv = {
    -0.333181441f, 0.0551007949f,  0.242399737f,   1.21009624f,   -1.23768556f,
    -0.075204581f, 2.13754392f,    0.00591637939f, -0.486070424f, -0.126355618f,
    0.353747487f,  -1.74975705f,   -0.806323469f,  -2.77681255f,  0.238067254f,
    0.317064017f,  -1.11543202f,   2.19138217f,    0.115761727f,  0.777300656f,
    -1.09209657f,  -0.0610851757f, -1.4927597f,    -1.76440859f,  1.24178755f,
    -1.43436038f,  -2.04789281f,   -1.85350537f,   -0.67241025f,  2.25119877f,
    -0.497349173f, 1.66581726f,    0.323681563f,   0.672907829f,  0.0303200632f,
    1.83957791f,   -0.232632577f,  -0.934290528f,  0.741735578f,  1.48929f,
    -0.635259986f, -0.16289255f,   0.493000925f,   -0.478125721f, -1.88691127f,
    0.742792547f,  -0.0924578235f, -1.43090057f};  // (1, 2, 24)

Tensor table(const Array& a) { return Tensor(a); }
}  // namespace

TEST_SUITE("ops.rotary") {
  TEST_CASE("the tables hold cos and sin of pos * base^(-2p / head_dim), computed in double") {
    const ops::RotaryTable t = ops::rotary_table(4, 6, 10000.0);
    CHECK(t.cos.shape() == Shape{6, 2});
    for (std::size_t m = 0; m < 6; ++m) {
      CHECK(t.cos(m, 0) == float(std::cos(double(m))));
      CHECK(t.sin(m, 1) == float(std::sin(double(m) * 0.01)));
    }
    CHECK(bit_equal(t.cos, values({6, 2}, kcos)));  // the golden script's float64 tables
    CHECK(bit_equal(t.sin, values({6, 2}, ksin)));
  }

  TEST_CASE("rotary_embedding turns each pair (2p, 2p+1) by its angle, head by head") {
    const ops::RotaryTable t = ops::rotary_table(2, 4, 10000.0);  // one pair: theta 1
    // x (1, T 2, C 4): two heads of head_dim 2; positions offset 1 and 2
    Tensor x(Array{{{1.0f, 0.0f, 0.0f, 2.0f}, {3.0f, 4.0f, 1.0f, 1.0f}}});
    const Array y = ops::rotary_embedding(x, table(t.cos), table(t.sin), 1).data();
    const float c1 = t.cos(1, 0), s1 = t.sin(1, 0), c2 = t.cos(2, 0), s2 = t.sin(2, 0);
    CHECK(all_close(y, Array{{{c1, s1, -2.0f * s1, 2.0f * c1},
                              {3.0f * c2 - 4.0f * s2, 3.0f * s2 + 4.0f * c2, c2 - s2, s2 + c2}}}));
    // position 0 is the identity
    CHECK(bit_equal(ops::rotary_embedding(x, table(t.cos), table(t.sin)).data()(0, 0, 3), 2.0f));
  }

  TEST_CASE("scores of rotated queries and keys depend on the positions' difference only") {
    const ops::RotaryTable t = ops::rotary_table(8, 32, 10000.0);
    const Tensor q = testing::input({1, 1, 8}, 1, false), k = testing::input({1, 1, 8}, 2, false);
    auto score = [&](std::int64_t m, std::int64_t n) {
      const Array a = ops::rotary_embedding(q, table(t.cos), table(t.sin), m).data();
      const Array b = ops::rotary_embedding(k, table(t.cos), table(t.sin), n).data();
      double s = 0.0;
      for (std::size_t i = 0; i < 8; ++i) s += double(a(0, 0, i)) * double(b(0, 0, i));
      return s;
    };
    CHECK(score(5, 2) == doctest::Approx(score(13, 10)).epsilon(1e-5));
    CHECK(score(20, 20) == doctest::Approx(score(0, 0)).epsilon(1e-5));
    CHECK(score(7, 2) != doctest::Approx(score(7, 3)).epsilon(1e-3));
  }

  TEST_CASE(
      "rotary_embedding_qkv matches the rotation written out in PyTorch, values and gradients") {
    const Tensor cos = table(values({6, 2}, kcos)), sin = table(values({6, 2}, ksin));
    Tensor qkv(values({1, 2, 24}, kqkv), true);
    Tensor y = ops::rotary_embedding_qkv(qkv, cos, sin, 3);
    CHECK(all_close(y.data(), values({1, 2, 24}, ky), 1e-6, 1e-6));
    for (std::size_t t = 0; t < 2; ++t)  // the values pass through, bit for bit
      for (std::size_t c = 16; c < 24; ++c) CHECK(y.data()(0, t, c) == qkv.data()(0, t, c));
    y.backward(values({1, 2, 24}, kg));
    CHECK(all_close(qkv.grad(), values({1, 2, 24}, kdqkv), 1e-6, 1e-6));
  }

  TEST_CASE("the qkv form rotates q and k as rotary_embedding does on each third") {
    const ops::RotaryTable t = ops::rotary_table(4, 8, 500.0);
    const Tensor qkv = testing::input({2, 3, 24}, 9, false);
    const Array y = ops::rotary_embedding_qkv(qkv, table(t.cos), table(t.sin), 2).data();
    for (std::size_t part = 0; part < 2; ++part) {
      const Tensor third(
          Array(xt::view(qkv.data(), xt::all(), xt::all(), xt::range(part * 8, part * 8 + 8))));
      const Array r = ops::rotary_embedding(third, table(t.cos), table(t.sin), 2).data();
      CHECK(bit_equal(Array(xt::view(y, xt::all(), xt::all(), xt::range(part * 8, part * 8 + 8))),
                      r));
    }
  }

  TEST_CASE("rotary_embedding's gradient matches finite differences, any leading dimensions") {
    const ops::RotaryTable t = ops::rotary_table(4, 8, 10000.0);
    const Tensor cos = table(t.cos), sin = table(t.sin);
    testing::check_gradients(
        [&](const std::vector<Tensor>& x) { return ops::rotary_embedding_qkv(x[0], cos, sin, 1); },
        {testing::input({2, 3, 24}, 3)});
    testing::check_gradients(  // (B, n_head, T, head_dim)
        [&](const std::vector<Tensor>& x) { return ops::rotary_embedding(x[0], cos, sin, 4); },
        {testing::input({1, 2, 3, 4}, 4)});
  }

  TEST_CASE("bad shapes, offsets and tables are refused with messages that name them") {
    const ops::RotaryTable t = ops::rotary_table(4, 5, 10000.0);
    const Tensor cos = table(t.cos), sin = table(t.sin);
    CHECK_THROWS_WITH_AS(ops::rotary_embedding(testing::input({2, 6}, 1, false), cos, sin),
                         doctest::Contains("rotary_embedding: expected x of shape (*, T, C) with C "
                                           "a multiple of head_dim 4, got (2, 6)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::rotary_embedding_qkv(testing::input({1, 2, 18}, 1, false), cos, sin),
                         doctest::Contains("expected qkv of shape (B, T, 3C) with C a multiple of "
                                           "head_dim 4, got (1, 2, 18)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::rotary_embedding_qkv(testing::input({2, 12}, 1, false), cos, sin),
                         doctest::Contains("expected qkv of shape (B, T, 3C), got (2, 12)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::rotary_embedding(testing::input({1, 3, 4}, 1, false), cos, sin, 3),
                         doctest::Contains("expected positions offset + T = 3 + 3 <= max_len 5"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::rotary_embedding(testing::input({1, 3, 4}, 1, false), cos, sin, -1),
                         doctest::Contains("expected offset >= 0, got -1"), ValueError);
    CHECK_THROWS_WITH_AS(
        ops::rotary_embedding(testing::input({1, 3, 4}, 1, false), cos,
                              table(xt::zeros<float>({5, 1}))),
        doctest::Contains("expected cos and sin tables of the same shape (max_len, head_dim / 2)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::rotary_embedding(testing::input({1, 3, 4}, 1, false), Tensor(t.cos, true), sin),
        doctest::Contains("expected cos and sin tables that do not require grad"), ValueError);
    CHECK_THROWS_WITH_AS(ops::rotary_table(3, 5),
                         doctest::Contains("expected an even head_dim >= 2"), ValueError);
    CHECK_THROWS_WITH_AS(ops::rotary_table(4, 0), doctest::Contains("expected max_len >= 1, got 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::rotary_table(4, 5, 0.0),
                         doctest::Contains("expected a finite base > 0, got 0"), ValueError);
  }

  TEST_CASE("rotary_embedding records one entry, nothing under NoGradGuard") {
    const ops::RotaryTable t = ops::rotary_table(2, 4);
    Tensor x = testing::input({1, 2, 2}, 2);
    const std::size_t before = autograd::tape().size();
    {
      autograd::NoGradGuard no_grad;
      ops::rotary_embedding(x, table(t.cos), table(t.sin));
      CHECK(autograd::tape().size() == before);
    }
    Tensor loss = ops::sum(ops::rotary_embedding(x, table(t.cos), table(t.sin)));
    CHECK(autograd::tape().size() == before + 2);
    loss.backward();
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("with halves, column p turns with column p + head_dim / 2, as transformers' rotate_half") {
    const ops::RotaryTable t = ops::rotary_table(4, 4, 100.0);  // theta 1 and 0.1
    // x (1, T 1, C 8): two heads of head_dim 4 at position 2; pairs (0, 2) and (1, 3) of each
    Tensor x(Array{{{1.0f, 2.0f, 3.0f, 4.0f, -1.0f, 0.5f, 0.0f, 2.0f}}});
    const Array y =
        ops::rotary_embedding(x, table(t.cos), table(t.sin), 2, ops::RotaryPairs::halves).data();
    const float c0 = t.cos(2, 0), s0 = t.sin(2, 0), c1 = t.cos(2, 1), s1 = t.sin(2, 1);
    // q * cos + rotate_half(q) * sin, with cos = cat(c, c), sin = cat(s, s), rotate_half = [-b, a]
    CHECK(bit_equal(y, Array{{{1.0f * c0 - 3.0f * s0, 2.0f * c1 - 4.0f * s1, 3.0f * c0 + 1.0f * s0,
                               4.0f * c1 + 2.0f * s1, -1.0f * c0 - 0.0f * s0, 0.5f * c1 - 2.0f * s1,
                               0.0f * c0 + -1.0f * s0, 2.0f * c1 + 0.5f * s1}}}));
  }

  TEST_CASE("halves is interleaved pairs after a permutation of each head's columns") {
    const ops::RotaryTable t = ops::rotary_table(8, 16, 10000.0);
    const Tensor x = testing::input({2, 5, 16}, 4, false);  // two heads of 8
    // column 2p of the interleaved layout is column p of the halves one, 2p + 1 is p + 4
    auto to_interleaved = [](const Array& a) {
      Array out = Array::from_shape(a.shape());
      for (std::size_t r = 0; r < a.size() / 16; ++r)
        for (std::size_t head = 0; head < 16; head += 8)
          for (std::size_t p = 0; p < 4; ++p) {
            out.data()[r * 16 + head + 2 * p] = a.data()[r * 16 + head + p];
            out.data()[r * 16 + head + 2 * p + 1] = a.data()[r * 16 + head + p + 4];
          }
      return out;
    };
    const Array halves =
        ops::rotary_embedding(x, table(t.cos), table(t.sin), 3, ops::RotaryPairs::halves).data();
    const Array interleaved =
        ops::rotary_embedding(Tensor(to_interleaved(x.data())), table(t.cos), table(t.sin), 3)
            .data();
    CHECK(bit_equal(to_interleaved(halves), interleaved));
  }

  TEST_CASE("grouped-query qkv: the query and key heads turn, the value heads pass through") {
    const ops::RotaryTable t = ops::rotary_table(4, 8, 10000.0);
    // n_head 4, n_kv_head 2, head_dim 4: qkv (2, 3, (4 + 2 + 2) * 4)
    const Tensor qkv = testing::input({2, 3, 32}, 5, false);
    for (const auto pairs : {ops::RotaryPairs::interleaved, ops::RotaryPairs::halves}) {
      const Array y =
          ops::rotary_embedding_qkv(qkv, table(t.cos), table(t.sin), 1, pairs, 2).data();
      const Tensor qk(Array(xt::view(qkv.data(), xt::all(), xt::all(), xt::range(0, 24))));
      const Array r = ops::rotary_embedding(qk, table(t.cos), table(t.sin), 1, pairs).data();
      CHECK(bit_equal(Array(xt::view(y, xt::all(), xt::all(), xt::range(0, 24))), r));
      CHECK(bit_equal(Array(xt::view(y, xt::all(), xt::all(), xt::range(24, 32))),
                      Array(xt::view(qkv.data(), xt::all(), xt::all(), xt::range(24, 32)))));
    }
    CHECK_THROWS_WITH_AS(
        ops::rotary_embedding_qkv(qkv, table(t.cos), table(t.sin), 0, ops::RotaryPairs::halves, 3),
        doctest::Contains("expected qkv of shape (B, T, (n_head + 2 n_kv_head) head_dim) with "
                          "n_head >= n_kv_head = 3 and head_dim 4, got (2, 3, 32)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::rotary_embedding_qkv(qkv, table(t.cos), table(t.sin), 0, ops::RotaryPairs::halves, 0),
        doctest::Contains("expected n_kv_head >= 1, got 0"), ValueError);
  }

  TEST_CASE("halves and grouped-query qkv: gradients match finite differences") {
    const ops::RotaryTable t = ops::rotary_table(4, 8, 10000.0);
    const Tensor cos = table(t.cos), sin = table(t.sin);
    testing::check_gradients(
        [&](const std::vector<Tensor>& x) {
          return ops::rotary_embedding(x[0], cos, sin, 2, ops::RotaryPairs::halves);
        },
        {testing::input({2, 3, 8}, 3)});
    testing::check_gradients(
        [&](const std::vector<Tensor>& x) {
          return ops::rotary_embedding_qkv(x[0], cos, sin, 1, ops::RotaryPairs::halves, 1);
        },
        {testing::input({1, 3, 16}, 6)});  // n_head 2, n_kv_head 1
  }

  TEST_CASE("tables from given frequencies round each angle to float32, as transformers does") {
    const std::vector<float> inv_freq = {1.0f, 0.1f, 0.01f};
    const ops::RotaryTable t = ops::rotary_table(inv_freq, 3000);
    CHECK(t.cos.shape() == Shape{3000, 3});
    for (const std::size_t m : {std::size_t(0), std::size_t(7), std::size_t(2999)})
      for (std::size_t p = 0; p < 3; ++p) {
        const float angle = float(m) * inv_freq[p];
        CHECK(t.cos(m, p) == float(std::cos(double(angle))));
        CHECK(t.sin(m, p) == float(std::sin(double(angle))));
      }
    // float32 angles are not the double ones: theta_1 = 1000^(-2/6) = 0.1, and at position 2999
    // the angle's float32 rounding moves cos by many float roundings
    CHECK(std::abs(t.cos(2999, 1) - ops::rotary_table(6, 3000, 1000.0).cos(2999, 1)) > 1e-6f);
    CHECK_THROWS_WITH_AS(ops::rotary_table(std::vector<float>{}, 4),
                         doctest::Contains("expected at least one frequency"), ValueError);
    CHECK_THROWS_WITH_AS(ops::rotary_table(std::vector<float>{1.0f, NAN}, 4),
                         doctest::Contains("expected finite frequencies"), ValueError);
  }

}  // TEST_SUITE
