// tests/transformer/test_gpt_extension.cpp: the GPT's extension points (transformer/gpt.hpp,
// gpt_parts.hpp). An attention written on the public API (ALiBi, alibi.hpp), a learner's MLP and
// norm take the Block's places, by registered name or through GPTConfig's factories; the built-in
// choices are the same factories (a config that names them explicitly gives the same bits); an
// attention without a cache samples without one; position "none" has no table; a factory that
// returns null, a name registered twice and a name never registered are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/transformer/alibi.hpp>
#include <tapegrad/transformer/gpt_parts.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
namespace tt = tapegrad::nn::transformer;

namespace {
tt::GPTConfig tiny() { return tt::GPTConfig(13, 8).n_layer(2).n_head(2).n_embd(8); }

// A learner's norm: x / rms(x) * g, one gain for the whole row (ScaleNorm).
class ScaleNorm : public nn::UnaryModule {
 public:
  explicit ScaleNorm(double size)
      : gain(register_parameter("gain", Parameter(Array{float(std::sqrt(size))}))) {}
  Tensor forward(const Tensor& x) override {
    const Tensor rms = ops::sqrt(ops::mean(x * x, -1, true) + 1e-5);
    return x / rms * gain;
  }
  Parameter gain;
};

// A learner's MLP: one Linear, squared ReLU, another Linear.
class SquaredMLP : public nn::UnaryModule {
 public:
  SquaredMLP(std::int64_t C, std::shared_ptr<Generator> g)
      : up(register_module("up", std::make_shared<nn::Linear>(nn::LinearOptions(C, 2 * C), g))),
        down(register_module("down", std::make_shared<nn::Linear>(nn::LinearOptions(2 * C, C), g))) {}
  Tensor forward(const Tensor& x) override {
    return down->forward(ops::relu_squared(up->forward(x)));
  }
  std::shared_ptr<nn::Linear> up, down;
};

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

IndexArray ids(std::size_t B, std::size_t T, std::int64_t V, std::int64_t shift) {
  IndexArray a = IndexArray::from_shape({B, T});
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = (std::int64_t(i) * 5 + shift) % V;
  return a;
}
}  // namespace

TEST_SUITE("nn.transformer.gpt_extension") {
  TEST_CASE("ALiBi, an attention written on the public API, plugs into the Block by name and trains") {
    const auto config = tiny().position("none").attention("alibi");
    tt::GPT model(config, std::make_shared<Generator>(1));
    const auto& block = static_cast<tt::Block&>((*model.transformer->h)[0]);
    REQUIRE(dynamic_cast<const tt::AlibiAttention*>(block.attn.get()) != nullptr);
    CHECK(model.transformer->wpe == nullptr);
    const std::vector<std::string> n = names(model);
    CHECK(std::find(n.begin(), n.end(), "transformer.h.1.attn.c_attn.weight") != n.end());
    CHECK(model.repr().find("(attn): AlibiAttention(") != std::string::npos);
    // nanoGPT's initialisation reaches it: its c_proj is a residual projection, by name.
    const auto& attn = dynamic_cast<const tt::AlibiAttention&>(*block.attn);
    CHECK(attn.c_proj->weight.data().size() == 64);
    // Its parameters get their gradients, and 40 steps of AdamW learn a fixed sequence.
    const IndexArray x = ids(4, 8, 13, 0), y = ids(4, 8, 13, 5);
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
    const double first = model.loss(x, y).item();
    double last = first;
    for (int step = 0; step < 40; ++step) {
      opt.zero_grad();
      Tensor loss = model.loss(x, y);
      loss.backward();
      CHECK(attn.c_attn->weight.has_grad());
      opt.step();
      last = loss.item();
    }
    CHECK(last < 0.5 * first);
  }

  TEST_CASE("ALiBi's bias: a key further back gets less weight, each head by its own slope") {
    tt::AlibiAttention attn(tiny().n_head(2).position("none"), std::make_shared<Generator>(2));
    const Array b = attn.bias(4);
    CHECK(b(0, 3, 3) == 0.0f);
    CHECK(b(0, 3, 0) == doctest::Approx(-3.0 / 16.0));  // slope 2^-4 for head 0 of 2
    CHECK(b(1, 3, 0) == doctest::Approx(-3.0 / 256.0));  // 2^-8 for the last head
    // Equal queries and keys: the weights of a row fall with the distance.
    Tensor x(xt::ones<float>({1, 4, 8}));
    Array weights;
    attn.eval();
    attn.forward(x, &weights);
    CHECK(weights(0, 0, 3, 3) > weights(0, 0, 3, 2));
    CHECK(weights(0, 0, 3, 2) > weights(0, 0, 3, 0));
  }

  TEST_CASE("an attention without a cache samples the same tokens, without the cache") {
    tt::GPT model(tiny().position("none").attention("alibi"),
                  std::make_shared<Generator>(3));
    CHECK_FALSE(model.supports_cache());
    const IndexArray prompt = ids(2, 3, 13, 1);
    Generator a(9), b(9);
    const IndexArray with = model.generate(prompt, tt::GenerateOptions(12), a);
    const IndexArray without = model.generate(prompt, tt::GenerateOptions(12).use_cache(false), b);
    CHECK(with == without);
    CHECK(with.shape()[1] == 15);
    CHECK_THROWS_WITH_AS(model.forward_cached(prompt),
                         doctest::Contains("an attention of this model keeps no cache"),
                         ValueError);
    tt::GPT builtin(tiny(), std::make_shared<Generator>(3));
    CHECK(builtin.supports_cache());
  }

  TEST_CASE("a forward_cached that throws inside the blocks leaves the cache empty, not half "
            "advanced") {
    // An MLP that throws when told to, in the second block only: both blocks' attentions have
    // cached the new position by then, while the GPT's count of cached positions has not moved.
    struct Throwing : nn::UnaryModule {
      bool* armed;
      explicit Throwing(bool* a) : armed(a) {}
      Tensor forward(const Tensor& x) override {
        check<ValueError>(!*armed, "armed");
        return x;
      }
    };
    bool armed = false, never = false;
    int built = 0;
    const auto config = tiny().make_mlp([&](const tt::GPTConfig&, std::shared_ptr<Generator>) {
      return std::make_shared<Throwing>(++built == 2 ? &armed : &never);
    });
    tt::GPT model(config, std::make_shared<Generator>(8));
    model.eval();
    const IndexArray prompt = ids(1, 3, 13, 2), next = ids(1, 1, 13, 4);
    model.forward_cached(prompt);
    armed = true;
    CHECK_THROWS_WITH_AS(model.forward_cached(next), doctest::Contains("armed"), ValueError);
    armed = false;
    // Empty again: the next call starts at position 0, as the uncached forward does.
    CHECK(testing::all_close(model.forward_cached(prompt), model.last_logits(prompt), 1e-6, 1e-5));
  }

  TEST_CASE("a learner's norm and MLP take the places of ln_1, ln_2, ln_f and mlp") {
    const auto config =
        tiny()
            .make_norm([](const tt::GPTConfig& c, std::shared_ptr<Generator>) {
              return std::make_shared<ScaleNorm>(double(c.n_embd()));
            })
            .make_mlp([](const tt::GPTConfig& c, std::shared_ptr<Generator> g) {
              return std::make_shared<SquaredMLP>(c.n_embd(), g);
            });
    tt::GPT model(config, std::make_shared<Generator>(4));
    const std::vector<std::string> n = names(model);
    for (const char* name : {"transformer.h.0.ln_1.gain", "transformer.h.0.ln_2.gain",
                             "transformer.h.1.mlp.up.weight", "transformer.h.1.mlp.down.bias",
                             "transformer.ln_f.gain"})
      CHECK_MESSAGE(std::find(n.begin(), n.end(), name) != n.end(), name);
    CHECK(std::find(n.begin(), n.end(), "transformer.h.0.mlp.c_fc.weight") == n.end());
    Tensor loss = model.loss(ids(2, 8, 13, 0), ids(2, 8, 13, 2));
    loss.backward();
    for (const auto& [name, p] : model.named_parameters()) CHECK_MESSAGE(p.has_grad(), name);
    // The learner's modules are gradient-checked like any op composition.
    ScaleNorm norm(4.0);
    testing::check_gradients([&](const std::vector<Tensor>& t) { return norm.forward(t[0]); },
                             {testing::input({3, 4}, 5)});
  }

  TEST_CASE("the built-in choices are factories too: naming them gives the same bits") {
    for (const std::string norm : {"layernorm", "rmsnorm"}) {
      CAPTURE(norm);
      const auto plain = tiny().norm(norm).mlp("swiglu").position("rope");
      const auto named = tt::GPTConfig(plain)
                             .make_attention(tt::attention_factory(plain))
                             .make_mlp(tt::mlp_factory(plain))
                             .make_norm(tt::norm_factory(plain));
      tt::GPT a(plain, std::make_shared<Generator>(6)), b(named, std::make_shared<Generator>(6));
      CHECK(names(a) == names(b));
      const IndexArray x = ids(2, 8, 13, 3), y = ids(2, 8, 13, 4);
      CHECK(a.loss(x, y).item() == b.loss(x, y).item());
      CHECK(a.repr() == b.repr());
    }
  }

  TEST_CASE("position none: no table, the token embedding and dropout only") {
    tt::GPT model(tiny().n_layer(1).position("none"), std::make_shared<Generator>(7));
    CHECK(model.transformer->wpe == nullptr);
    CHECK(model.transformer->wte != nullptr);
    CHECK(model.num_params() == model.num_params(false));
    // Without positions or a bias, one block of the built-in attention sees a set: a window's last
    // position gives the same logits whatever the order of the tokens before it.
    IndexArray a = IndexArray::from_shape({1, 4}), b = a;
    a(0, 0) = 1, a(0, 1) = 2, a(0, 2) = 3, a(0, 3) = 4;
    b(0, 0) = 3, b(0, 1) = 1, b(0, 2) = 2, b(0, 3) = 4;
    model.eval();
    const Array la = model.last_logits(a), lb = model.last_logits(b);
    CHECK(testing::all_close(la, lb, 1e-6, 1e-6));
  }

  TEST_CASE("a factory that returns null is refused, naming it") {
    CHECK_THROWS_WITH_AS(
        tt::GPT(tiny().make_attention([](const tt::GPTConfig&, std::shared_ptr<Generator>) {
          return std::shared_ptr<tt::BlockAttention>();
        })),
        doctest::Contains("GPT: the factory make_attention returned null"), ValueError);
    CHECK_THROWS_WITH_AS(
        tt::GPT(tiny().make_norm([](const tt::GPTConfig&, std::shared_ptr<Generator>) {
          return std::shared_ptr<nn::UnaryModule>();
        })),
        doctest::Contains("GPT: the factory make_norm returned null"), ValueError);
  }

  TEST_CASE("a learner's parts registered by name build the same model as their factories") {
    tt::register_norm("test_scalenorm", [](const tt::GPTConfig& c, std::shared_ptr<Generator>) {
      return std::make_shared<ScaleNorm>(double(c.n_embd()));
    });
    tt::register_mlp("test_squared_mlp", [](const tt::GPTConfig& c, std::shared_ptr<Generator> g) {
      return std::make_shared<SquaredMLP>(c.n_embd(), std::move(g));
    });
    const auto by_name = tiny().norm("test_scalenorm").mlp("test_squared_mlp");
    const auto by_factory = tiny()
                                .make_norm(tt::registered_norm("test_scalenorm"))
                                .make_mlp(tt::registered_mlp("test_squared_mlp"));
    tt::GPT a(by_name, std::make_shared<Generator>(8)), b(by_factory, std::make_shared<Generator>(8));
    CHECK(names(a) == names(b));
    const IndexArray x = ids(2, 8, 13, 3), y = ids(2, 8, 13, 4);
    CHECK(a.loss(x, y).item() == b.loss(x, y).item());
    const std::vector<std::string> norms = tt::registered_norms();
    CHECK(std::find(norms.begin(), norms.end(), "test_scalenorm") != norms.end());
    CHECK(std::find(norms.begin(), norms.end(), "layernorm") != norms.end());
  }

  TEST_CASE("a name registered twice, a malformed name and an unregistered name are refused") {
    const auto factory = tt::registered_attention("causal");
    tt::register_attention("test_twice", factory);
    CHECK_THROWS_WITH_AS(tt::register_attention("test_twice", factory),
                         doctest::Contains("register_attention: the attention \"test_twice\" is "
                                           "registered already"),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::register_attention("causal", factory),
                         doctest::Contains("is registered already"), ValueError);
    CHECK_THROWS_WITH_AS(tt::register_mlp("My MLP", tt::registered_mlp("gelu")),
                         doctest::Contains("expected a name of 1 to 64 characters of [a-z0-9_-], "
                                           "got \"My MLP\""),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::register_norm("test_null", nullptr),
                         doctest::Contains("the factory is null"), ValueError);
    CHECK_THROWS_WITH_AS(
        tt::GPT(tiny().attention("mqa")),
        doctest::Contains("GPT: the attention \"mqa\" is not registered in this program "
                          "(registered: alibi, causal, test_twice); a program that builds a model "
                          "with a part of its own registers it first, by name, with "
                          "tapegrad::nn::transformer::register_attention(\"mqa\", factory)"),
        ValueError);
  }

  TEST_CASE("ALiBi refuses a position table beside it") {
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().attention("alibi")),
                         doctest::Contains("AlibiAttention: expected position \"none\""),
                         ValueError);
  }
}
