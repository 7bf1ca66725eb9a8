// tests/nn/test_positional_encoding.cpp: PositionalEncoding — the table (double reference, float32
// bit patterns, PyTorch parity), odd d_model, the forward contract and its errors, the buffer's
// immutability (not a parameter, no gradient, fingerprint stable, verify), and the state dict.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "models.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

std::vector<std::uint32_t> row_bits(const Array& pe, std::size_t pos) {
  std::vector<std::uint32_t> out;
  for (std::size_t j = 0; j < pe.shape()[2]; ++j) out.push_back(bits(pe(0, pos, j)));
  return out;
}

Tensor randn_tensor(const Shape& shape, std::uint64_t seed, bool requires_grad = false) {
  Generator g(seed);
  return Tensor(randn(shape, &g), requires_grad);
}
}  // namespace

TEST_SUITE("nn.positional_encoding") {
  TEST_CASE("position 0 encodes as 0, 1, 0, 1, ...") {
    const Array pe = sinusoid_table(3, 6);
    CHECK(pe.shape() == Shape{1, 3, 6});
    for (std::size_t j = 0; j < 6; ++j) CHECK(pe(0, 0, j) == (j % 2 == 0 ? 0.0f : 1.0f));
  }

  TEST_CASE("the table matches the double-precision reference vectors bit for bit") {
    const Array pe4 = sinusoid_table(3, 4);
    CHECK(row_bits(pe4, 1) ==
          std::vector<std::uint32_t>{0x3F576AA4, 0x3F0A5140, 0x3C23D657, 0x3F7FFCB9});
    CHECK(row_bits(pe4, 2) ==
          std::vector<std::uint32_t>{0x3F68C7B7, 0xBED51133, 0x3CA3D43E, 0x3F7FF2E5});
    CHECK(all_close(Array{pe4(0, 1, 0), pe4(0, 1, 1), pe4(0, 1, 2), pe4(0, 1, 3)},
                    Array{0.8414710f, 0.5403023f, 0.0099998f, 0.9999500f}, 1e-7, 0));
    CHECK(all_close(Array{pe4(0, 2, 0), pe4(0, 2, 1), pe4(0, 2, 2), pe4(0, 2, 3)},
                    Array{0.9092974f, -0.4161468f, 0.0199987f, 0.9998000f}, 1e-7, 0));
    // d = 5 (odd): the last column is a sine. Bits from scripts/golden/positional_encoding.py (double).
    const Array pe5 = sinusoid_table(2, 5);
    CHECK(all_close(Array{pe5(0, 1, 0), pe5(0, 1, 1), pe5(0, 1, 2), pe5(0, 1, 3), pe5(0, 1, 4)},
                    Array{0.8414710f, 0.5403023f, 0.0251162f, 0.9996845f, 0.0006310f}, 1e-7, 0));
    CHECK(row_bits(pe5, 1) ==
          std::vector<std::uint32_t>{0x3F576AA4, 0x3F0A5140, 0x3CCDC089, 0x3F7FEB53, 0x3A2566D4});
  }

  TEST_CASE("the table agrees with an independent double reference within 1e-7") {
    // sin(pos / 10000^(2i/d)) written with pow, not with the exp form the code uses.
    for (std::int64_t d : {16, 17}) {
      const Array pe = sinusoid_table(200, d);
      double worst = 0.0;
      for (std::size_t pos = 0; pos < 200; ++pos)
        for (std::size_t j = 0; j < static_cast<std::size_t>(d); ++j) {
          const double a = double(pos) / std::pow(10000.0, double(j - j % 2) / double(d));
          worst = std::max(
              worst, std::abs(double(pe(0, pos, j)) - (j % 2 == 0 ? std::sin(a) : std::cos(a))));
        }
      CHECK(worst <= 1e-7);
    }
  }

  TEST_CASE("the table agrees with PyTorch's float32 table within about one ulp of the angle") {
    // scripts/golden/positional_encoding.py, torch 1.13.1: the tutorials' table, d_model = 512,
    // columns 0, 1, 9, 10, 255, 256, 510, 511. Tolerance atol(pos) = 1e-6 + 1.2e-7 * pos, about one
    // float32 ulp of the angle: PyTorch's table is computed in float32, tapegrad's in double.
    const std::size_t cols[] = {0, 1, 9, 10, 255, 256, 510, 511};
    const std::pair<std::size_t, Array> golden[] = {
        {1,
         {8.414709568e-01f, 5.403023362e-01f, 6.479058862e-01f, 7.415397763e-01f, 9.999462962e-01f,
          9.999833070e-03f, 1.036633257e-04f, 1.000000000e+00f}},
        {7,
         {6.569865942e-01f, 7.539022565e-01f, 9.755831957e-01f, -4.219973385e-01f, 9.973683953e-01f,
          6.994284689e-02f, 7.256432436e-04f, 9.999997616e-01f}},
        {96,
         {9.835877419e-01f, -1.804304570e-01f, 1.193517745e-01f, -9.964575768e-01f,
          5.443624258e-01f, 8.191915751e-01f, 9.951515123e-03f, 9.999504685e-01f}},
        {100,
         {-5.063656569e-01f, 8.623188734e-01f, 2.012461573e-01f, 9.599284530e-01f, 5.091212988e-01f,
          8.414709568e-01f, 1.036614738e-02f, 9.999462962e-01f}},
        {517,
         {9.784440994e-01f, -2.065117210e-01f, -2.659597248e-02f, -9.962574244e-01f,
          6.027976274e-01f, -8.971104622e-01f, 5.356828868e-02f, 9.985641837e-01f}},
        {999,
         {-2.646075189e-02f, 9.996498227e-01f, -3.990205526e-01f, -9.071601629e-01f,
          -5.968845487e-01f, -5.356031656e-01f, 1.033746600e-01f, 9.946424961e-01f}},
    };
    const Array pe = sinusoid_table(1000, 512);
    for (const auto& [pos, want] : golden) {
      Array got = Array::from_shape({8});
      for (std::size_t c = 0; c < 8; ++c) got(c) = pe(0, pos, cols[c]);
      CAPTURE(pos);
      CHECK(all_close(got, want, 1e-6 + 1.2e-7 * double(pos), 0));
    }
  }

  TEST_CASE("pe is a buffer of shape (1, max_len, d_model), never a parameter") {
    PositionalEncoding pos(16, 0.1, 64);
    CHECK(pos.pe.shape() == Shape{1, 64, 16});
    CHECK(pos.named_parameters().empty());
    REQUIRE(pos.named_buffers().size() == 1);
    CHECK(pos.named_buffers()[0].first == "pe");
    CHECK_FALSE(pos.pe.requires_grad());
    CHECK_THROWS_WITH_AS(pos.pe.requires_grad_(true),
                         doctest::Contains("register it as a Parameter to train it"), ValueError);
    auto gen = std::make_shared<Generator>(0);
    testing::TinyLM model(gen);
    CHECK(model.pos->pe.name() == "pos.pe");
    for (const auto& [name, p] : model.named_parameters()) CHECK(name != "pos.pe");
  }

  TEST_CASE("in eval mode the output is exactly x plus the first L rows of pe, and deterministic") {
    PositionalEncoding pos(6, 0.5, 10);
    pos.eval();
    const Tensor x = randn_tensor({2, 4, 6}, 3);
    const Tensor y1 = pos.forward(x), y2 = pos.forward(x);
    Array want = Array::from_shape({2, 4, 6});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t l = 0; l < 4; ++l)
        for (std::size_t j = 0; j < 6; ++j)
          want(b, l, j) = x.data()(b, l, j) + pos.pe.data()(0, l, j);
    CHECK(bit_equal(y1.data(), want));
    CHECK(bit_equal(y1.data(), y2.data()));
  }

  TEST_CASE("an odd d_model works end to end") {
    PositionalEncoding pos(5, 0.0, 8);
    const Tensor x(xt::zeros<float>({1, 3, 5}));
    const Tensor y = pos.forward(x);
    CHECK(y.shape() == Shape{1, 3, 5});
    CHECK(y.data()(0, 1, 4) == sinusoid_table(8, 5)(0, 1, 4));
    CHECK(y.data()(0, 1, 4) > 0.0f);  // a sine column: sin(small angle) > 0
  }

  TEST_CASE("in training mode the dropout applies to x + pe with the module's mask") {
    PositionalEncoding pos(8, 0.25, 16, std::make_shared<Generator>(7));
    const Tensor x = randn_tensor({3, 5, 8}, 1);
    const Tensor y = pos.forward(x);
    const auto& mask = pos.dropout->last_mask();
    REQUIRE(mask.shape() == x.shape());
    const float scale = 1.0f / 0.75f;
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < x.numel(); ++i) {
      const std::size_t l = (i / 8) % 5, j = i % 8;
      const float sum = x.data().data()[i] + pos.pe.data()(0, l, j);
      CHECK(y.data().data()[i] == (mask.data()[i] ? sum * scale : 0.0f));
      dropped += mask.data()[i] == 0;
    }
    CHECK(dropped > 0);
  }

  TEST_CASE("the gradient goes to x only and pe never receives one") {
    PositionalEncoding pos(4, 0.0, 8);
    Tensor x = randn_tensor({2, 3, 4}, 5, true);
    ops::sum(pos.forward(x)).backward();
    CHECK(all_close(x.grad(), xt::ones<float>({2, 3, 4})));
    CHECK_FALSE(pos.pe.has_grad());
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("the module's gradient matches finite differences") {
    PositionalEncoding pos(4, 0.0, 8);
    const Tensor x = randn_tensor({2, 3, 4}, 9, true);
    const auto r = gradcheck([&](const std::vector<Tensor>& t) { return pos.forward(t[0]); }, {x});
    CHECK_MESSAGE(r.ok, r);
    pos.eval();
    const auto r_eval =
        gradcheck([&](const std::vector<Tensor>& t) { return pos.forward(t[0]); }, {x});
    CHECK_MESSAGE(r_eval.ok, r_eval);
  }

  TEST_CASE("nothing is recorded under NoGradGuard") {
    PositionalEncoding pos(4, 0.5, 8);
    const Tensor x = randn_tensor({1, 2, 4}, 2, true);
    autograd::NoGradGuard no_grad;
    const Tensor y = pos.forward(x);
    CHECK(autograd::tape().empty());
    CHECK_FALSE(y.requires_grad());
  }

  TEST_CASE("forward checks rank, width and length with PyTorch's text first") {
    testing::TutorialModel model(8, 20, 6);
    auto pos = model.src_embed->ptr<PositionalEncoding>(1);
    CHECK_THROWS_WITH_AS(
        pos->forward(Tensor(xt::zeros<float>({2, 7, 4}))),
        doctest::Contains(
            "PositionalEncoding 'src_embed.1': expected x of shape (B, L, 8), got (2, 7, 4)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(pos->forward(Tensor(xt::zeros<float>({7, 8}))),
                         doctest::Contains("expected x of shape (B, L, 8), got (7, 8)"),
                         ShapeError);
    PositionalEncoding root(4, 0.1, 200);
    CHECK_THROWS_WITH_AS(
        root.forward(Tensor(xt::zeros<float>({1, 230, 4}))),
        doctest::Contains("The size of tensor a (230) must match the size of tensor b (200) at "
                          "non-singleton dimension 1 | PositionalEncoding: expected sequence "
                          "length <= max_len 200, got 230; raise max_len"),
        ShapeError);
    CHECK(root.forward(Tensor(xt::zeros<float>({1, 200, 4}))).shape() ==
          Shape{1, 200, 4});  // L == max_len fits
  }

  TEST_CASE("bad sizes and probabilities are refused at construction") {
    CHECK_THROWS_WITH_AS(PositionalEncoding(0, 0.1),
                         doctest::Contains("expected d_model > 0, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(PositionalEncoding(4, 0.1, 0),
                         doctest::Contains("expected max_len > 0, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(PositionalEncoding(4, 1.5),
                         doctest::Contains("dropout probability has to be between 0 and 1"),
                         ValueError);
  }

  TEST_CASE("the fingerprint is stable over training and verify() passes") {
    auto gen = std::make_shared<Generator>(11);
    testing::TinyLM model(gen);
    const std::uint64_t fp = model.pos->fingerprint();
    CHECK(fp == model.pos->pe.fingerprint());
    const IndexArray ids = {{1, 2, 3, 4, 0, 0}, {5, 6, 7, 8, 9, 0}};
    for (int step = 0; step < 5; ++step) {  // plain SGD by hand
      Tensor logits = model.forward(ids);
      ops::sum(ops::mul(logits, logits)).backward();
      autograd::NoGradGuard no_grad;
      for (Parameter& p : model.parameters()) {
        Array& w = p.mutable_data();
        const Array& g = p.grad();
        for (std::size_t i = 0; i < w.size(); ++i) w.data()[i] -= 0.01f * g.data()[i];
        p.zero_grad();
      }
    }
    CHECK(model.pos->fingerprint() == fp);
    model.pos->pe.expect_unchanged(fp);
    CHECK_NOTHROW(model.pos->verify());
  }

  TEST_CASE("verify names the first differing position and both values") {
    PositionalEncoding pos(4, 0.1, 8);
    CHECK_NOTHROW(pos.verify());
    const float before = pos.pe.data()(0, 3, 2);
    pos.pe.mutable_data()(0, 3, 2) = 0.5f;
    pos.pe.mutable_data()(0, 5, 1) = 0.5f;
    std::ostringstream want;
    want.precision(10);
    want << "PositionalEncoding: pe differs from the sinusoid table at (pos, j) = (3, 2): expected "
         << before;
    CHECK_THROWS_WITH_AS(pos.verify(), doctest::Contains(want.str().c_str()), InvariantError);
    CHECK_THROWS_WITH_AS(pos.verify(), doctest::Contains("got 0.5 (0x3F000000)"), InvariantError);
  }

  TEST_CASE("verify reports a table loaded from elsewhere") {
    PositionalEncoding pos(4, 0.1, 8);
    StateDict sd = pos.state_dict();
    sd.at("pe")(0, 6, 1) =
        std::nextafter(sd.at("pe")(0, 6, 1), 2.0f);  // one ulp off, as a float32 table is
    pos.load_state_dict(sd);
    CHECK_THROWS_WITH_AS(pos.verify(), doctest::Contains("at (pos, j) = (6, 1)"), InvariantError);
  }

  TEST_CASE("the state dict holds pe when persistent, and omits it otherwise") {
    testing::TutorialModel model(8, 20, 12);
    const StateDict sd = model.state_dict();
    REQUIRE(sd.contains("src_embed.1.pe"));
    CHECK(sd.at("src_embed.1.pe").shape() == Shape{1, 12, 8});

    PositionalEncoding transient(PositionalEncodingOptions(8, 0.1).max_len(12).persistent(false));
    CHECK(transient.state_dict().empty());
    CHECK(transient.named_buffers().size() == 1);  // still a buffer of the module
    // so a checkpoint made with another max_len loads:
    PositionalEncoding other(PositionalEncodingOptions(8, 0.1).max_len(50).persistent(false));
    CHECK(transient.load_state_dict(other.state_dict()).to_string() ==
          "<All keys matched successfully>");
    // while the persistent table refuses it, naming max_len:
    PositionalEncoding a(8, 0.1, 12), b(8, 0.1, 50);
    CHECK_THROWS_WITH_AS(a.load_state_dict(b.state_dict()),
                         doctest::Contains("'pe' depends on max_len"), StateDictError);
  }

  TEST_CASE("options and printing") {
    PositionalEncoding pos(PositionalEncodingOptions(32, 0.1).max_len(100));
    CHECK(pos.options().d_model() == 32);
    CHECK(pos.options().max_len() == 100);
    CHECK(pos.options().persistent());
    CHECK(pos.repr() == "PositionalEncoding(\n  (dropout): Dropout(p=0.1, inplace=False)\n)");
  }
}  // TEST_SUITE
