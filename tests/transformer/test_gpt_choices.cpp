// tests/transformer/test_gpt_choices.cpp: the GPT's composable block, GPTConfig's norm, mlp and
// position choices: the modules and names each choice makes, the config's checks, nanoGPT's
// initialisation of the new pieces, a short training run of every combination, a gradcheck of the
// whole model with RMSNorm, SwiGLU and RoPE, and generation with the cache for RoPE.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
namespace tt = tapegrad::nn::transformer;

namespace {
tt::GPTConfig tiny() { return tt::GPTConfig(13, 8).n_layer(2).n_head(2).n_embd(8); }

IndexArray ids(std::initializer_list<std::initializer_list<std::int64_t>> rows) {
  IndexArray a = IndexArray::from_shape({rows.size(), rows.begin()->size()});
  std::size_t i = 0;
  for (const auto& r : rows)
    for (std::int64_t v : r) a.data()[i++] = v;
  return a;
}

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

double sample_std(const Array& a) {
  double mean = 0.0, sq = 0.0;
  for (float v : a) mean += v;
  mean /= double(a.size());
  for (float v : a) sq += (v - mean) * (v - mean);
  return std::sqrt(sq / double(a.size()));
}
}  // namespace

TEST_SUITE("nn.transformer.gpt_choices") {
  TEST_CASE("norm rmsnorm puts an RMSNorm (weight only) in every norm slot, under the same names") {
    tt::GPT model(tiny().norm("rmsnorm"), std::make_shared<Generator>(0));
    const auto n = names(model);
    CHECK(has(n, "transformer.h.0.ln_1.weight"));
    CHECK_FALSE(has(n, "transformer.h.0.ln_1.bias"));
    CHECK(has(n, "transformer.h.1.ln_2.weight"));
    CHECK(has(n, "transformer.ln_f.weight"));
    CHECK_FALSE(has(n, "transformer.ln_f.bias"));
    CHECK(n.size() == 2 + 2 * 10 + 1);
    const auto& block = static_cast<tt::Block&>((*model.transformer->h)[0]);
    const auto* rms = dynamic_cast<const nn::RMSNorm*>(block.ln_1.get());
    REQUIRE(rms != nullptr);
    CHECK(rms->options().eps() == std::optional<double>(1e-5));
    CHECK(testing::bit_equal(rms->weight.data(), xt::ones<float>({8})));
    CHECK(model.repr().find("(ln_1): RMSNorm((8,), eps=1e-05, elementwise_affine=True)") !=
          std::string::npos);
  }

  TEST_CASE("mlp relu_squared is c_fc -> relu(x)^2 -> c_proj, with gelu's parameters") {
    tt::GPT model(tt::GPTConfig(64, 16).n_layer(2).n_head(4).n_embd(64).mlp("relu_squared"),
                  std::make_shared<Generator>(0));
    tt::GPT gelu(tt::GPTConfig(64, 16).n_layer(2).n_head(4).n_embd(64),
                 std::make_shared<Generator>(0));
    const auto n = model.named_parameters(), g = gelu.named_parameters();
    REQUIRE(n.size() == g.size());
    for (std::size_t i = 0; i < n.size(); ++i) {  // the same names, shapes and initial values
      CHECK(n[i].first == g[i].first);
      CHECK(testing::bit_equal(n[i].second.data(), g[i].second.data()));
    }
    auto& block = static_cast<tt::Block&>((*model.transformer->h)[0]);
    auto& mlp = dynamic_cast<tt::MLP&>(*block.mlp);
    REQUIRE(mlp.relu_squared != nullptr);
    CHECK(mlp.gelu == nullptr);
    CHECK(mlp.swiglu == nullptr);
    const Tensor x = testing::input({2, 3, 64}, 4, false);
    const Array h = mlp.c_fc->forward(x).data();
    const Array want = mlp.c_proj->forward(ops::relu_squared(Tensor(h))).data();
    autograd::NoGradGuard no_grad;
    mlp.eval();
    CHECK(testing::bit_equal(mlp.forward(x).data(), want));
  }

  TEST_CASE("mlp swiglu is SwiGLU(C, 8C/3) with biases, whose w2 starts as a residual projection") {
    tt::GPT model(tt::GPTConfig(64, 16).n_layer(4).n_head(4).n_embd(64).mlp("swiglu"),
                  std::make_shared<Generator>(3));
    const auto n = names(model);
    CHECK(has(n, "transformer.h.0.mlp.swiglu.w1.weight"));
    CHECK(has(n, "transformer.h.0.mlp.swiglu.w2.bias"));
    CHECK(has(n, "transformer.h.0.mlp.swiglu.w3.weight"));
    CHECK_FALSE(has(n, "transformer.h.0.mlp.c_fc.weight"));
    const auto& block = static_cast<tt::Block&>((*model.transformer->h)[1]);
    const auto& block_mlp = dynamic_cast<const tt::MLP&>(*block.mlp);
    REQUIRE(block_mlp.swiglu != nullptr);
    CHECK(block_mlp.c_fc == nullptr);
    CHECK(block_mlp.swiglu->w1->weight.shape() == Shape{170, 64});  // 2 * 256 / 3, rounded down
    CHECK(block_mlp.swiglu->w2->weight.shape() == Shape{64, 170});
    CHECK(sample_std(block_mlp.swiglu->w1->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(block_mlp.swiglu->w3->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(block_mlp.swiglu->w2->weight.data()) ==
          doctest::Approx(0.02 / std::sqrt(8.0)).epsilon(0.05));
    CHECK(testing::bit_equal(block_mlp.swiglu->w2->bias.data(), xt::zeros<float>({64})));
    // the parameters of the MLP it replaces, within a percent
    const double mlp = 2.0 * 64 * 256, swiglu = 3.0 * 64 * 170;
    CHECK(swiglu / mlp == doctest::Approx(1.0).epsilon(0.01));
  }

  TEST_CASE("position rope has no position table: each attention owns unsaved rotary tables") {
    tt::GPT model(tiny().position("rope"), std::make_shared<Generator>(0));
    const auto n = names(model);
    CHECK(n.front() == "transformer.wte.weight");
    CHECK_FALSE(has(n, "transformer.wpe.weight"));
    CHECK(model.transformer->wpe == nullptr);
    CHECK(model.transformer->drop != nullptr);
    CHECK(n.size() == 1 + 2 * 12 + 2);
    const auto buffers = model.named_buffers();
    REQUIRE(buffers.size() == 4);
    CHECK(buffers[0].first == "transformer.h.0.attn.rotary.cos");
    CHECK(buffers[0].second.shape() == Shape{8, 2});  // block_size, head_dim / 2
    const nn::StateDict sd = model.state_dict();
    for (const auto& [key, value] : sd.items()) CHECK(key.find("rotary") == std::string::npos);
    CHECK(model.num_params() == model.num_params(false));  // nothing to leave out
    // a learned-positions GPT's checkpoint loads, but for its position table
    tt::GPT learned(tiny(), std::make_shared<Generator>(1));
    const nn::IncompatibleKeys keys = model.load_state_dict(learned.state_dict(), false);
    CHECK(keys.missing_keys.empty());
    CHECK(keys.unexpected_keys == std::vector<std::string>{"transformer.wpe.weight"});
  }

  TEST_CASE("the default config is nanoGPT's block, as before the choices") {
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    const tt::GPTConfig& c = model.config();
    CHECK(c.norm() == "layernorm");
    CHECK(c.mlp() == "gelu");
    CHECK(c.position() == "learned");
    const auto& block = static_cast<tt::Block&>((*model.transformer->h)[0]);
    CHECK(dynamic_cast<const nn::LayerNorm*>(block.ln_1.get()) != nullptr);
    CHECK(dynamic_cast<const tt::CausalSelfAttention&>(*block.attn).rotary == nullptr);
    CHECK(dynamic_cast<const tt::MLP&>(*block.mlp).swiglu == nullptr);
    CHECK(model.named_buffers().empty());
  }

  TEST_CASE("the default GPT's initial weights are bit for bit those of nanoGPT's order of draws") {
    // FNV-1a fingerprints of the baby GPT's parameters (seed 0), as the GPT made them before its
    // block became composable (a private init_weights): the same draws in the same order.
    for (const auto& [pos, expected] : {std::pair{"learned", 0x71ae3f2ecfa715baull},
                                        std::pair{"sinusoidal", 0xbb753b251f509788ull}}) {
      CAPTURE(pos);
      tt::GPT model(tt::GPTConfig(65, 64).position(pos).dropout(0.1),
                    std::make_shared<Generator>(0));
      std::uint64_t combined = 1469598103934665603ull;
      for (const Parameter& p : model.parameters())
        combined = (combined ^ fingerprint(p.data())) * 1099511628211ull;
      CHECK(combined == expected);
    }
  }

  TEST_CASE("bad choices are refused, naming the field and the accepted values") {
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().norm("batchnorm")),
                         doctest::Contains("GPT: the norm \"batchnorm\" is not registered in this "
                                           "program (registered: layernorm, rmsnorm)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().mlp("relu")),
                         doctest::Contains("GPT: the mlp \"relu\" is not registered in this program "
                                           "(registered: gelu, relu_squared, swiglu"),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().attention("flash")),
                         doctest::Contains("GPT: the attention \"flash\" is not registered"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        tt::GPT(tiny().position("alibi")),
        doctest::Contains(
            "expected position \"learned\", \"sinusoidal\", \"rope\" or \"none\", got \"alibi\""),
        ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tt::GPTConfig(13, 8).n_head(4).n_embd(12).position("rope")),
                         doctest::Contains("expected an even head size n_embd / n_head with "
                                           "position \"rope\""),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().mlp("swiglu").gelu("tanh")),
                         doctest::Contains("expected gelu \"none\" with mlp \"swiglu\""),
                         ValueError);
    CHECK_NOTHROW(tt::validate(tiny().norm("rmsnorm").mlp("swiglu").position("rope")));
    CHECK_THROWS_AS(tt::validate(tiny().n_layer(0)), ValueError);
  }

  TEST_CASE("a short training run lowers the loss with every norm, mlp and position") {
    const IndexArray x = ids({{1, 2, 3, 4, 5, 6, 7, 8}, {8, 7, 6, 5, 4, 3, 2, 1}});
    const IndexArray y = ids({{2, 3, 4, 5, 6, 7, 8, 9}, {7, 6, 5, 4, 3, 2, 1, 0}});
    for (const std::string norm : {"layernorm", "rmsnorm"})
      for (const std::string mlp : {"gelu", "relu_squared", "swiglu"})
        for (const std::string pos : {"learned", "sinusoidal", "rope"}) {
          CAPTURE(norm);
          CAPTURE(mlp);
          CAPTURE(pos);
          tt::GPT model(tiny().norm(norm).mlp(mlp).position(pos), std::make_shared<Generator>(0));
          const tt::ParameterGroups groups = model.parameter_groups();
          const auto adamw = optim::AdamWOptions(1e-2).betas({0.9, 0.99});
          optim::AdamW opt({{groups.decay, optim::AdamWOptions(adamw).weight_decay(0.1)},
                            {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}});
          float first = 0.0f, last = 0.0f;
          for (int step = 0; step < 40; ++step) {
            Tensor loss = model.loss(x, y);
            loss.backward();
            optim::clip_grad_norm_(model.parameters(), 1.0);
            opt.step();
            opt.zero_grad();
            if (step == 0) first = loss.item();
            last = loss.item();
          }
          CHECK(first == doctest::Approx(std::log(13.0)).epsilon(0.05));  // uniform at the start
          CHECK(last < 0.3f * first);
        }
  }

  TEST_CASE(
      "the gradient of a whole small GPT with RMSNorm, SwiGLU and RoPE matches finite "
      "differences") {
    tt::GPT model(
        tt::GPTConfig(7, 4).n_layer(1).n_head(2).n_embd(4).norm("rmsnorm").mlp("swiglu").position(
            "rope"),
        std::make_shared<Generator>(5));
    {  // weights of order 1, so that the queries and keys matter to the logits (nanoGPT's 0.02
       // would leave their gradients below gradcheck's tolerance), non-trivial norms and biases
      autograd::NoGradGuard no_grad;
      Generator g(6);
      for (const auto& [name, p] : model.named_parameters()) {
        const bool norm = name.find("ln_") != std::string::npos;
        for (float& v : p.mutable_data()) v = (norm ? 1.0f : 0.0f) + 0.25f * float(g.normal());
      }
    }
    const IndexArray idx = ids({{1, 5, 2, 6}, {3, 3, 0, 4}});
    const std::vector<Parameter> params = model.parameters();
    const std::vector<Tensor> inputs(params.begin(), params.end());
    // A step of 3e-3 rather than 1e-2: with weights of order 1 the third derivatives are large
    // enough for 1e-2's truncation error (about 1%) to exceed the tolerance at a few elements.
    GradcheckOptions options;
    options.eps = 3e-3;
    const GradcheckResult r =
        gradcheck([&](const std::vector<Tensor>&) { return model.forward(idx); }, inputs, options);
    CHECK(r.checked == 264);  // every parameter: wte 28, block 232, ln_f 4
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("RoPE: the cached forward gives the uncached logits, position after position") {
    tt::GPT model(tiny().position("rope").norm("rmsnorm").mlp("swiglu"),
                  std::make_shared<Generator>(2));
    model.eval();
    const IndexArray seq = ids({{3, 1, 4, 1, 5, 9, 2, 6}, {2, 7, 1, 8, 2, 8, 1, 8}});
    autograd::NoGradGuard no_grad;
    const Tensor full = model.forward(seq);  // (2, 8, 13)
    model.reset_cache();
    for (std::size_t t = 0; t < 8; ++t) {
      IndexArray token = IndexArray::from_shape({2, 1});
      token(0, 0) = seq(0, t);
      token(1, 0) = seq(1, t);
      const Array cached = model.forward_cached(token);  // position t, after t cached
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t v = 0; v < 13; ++v)
          CHECK(cached(b, v) == doctest::Approx(full.data()(b, t, v)).epsilon(1e-5));
    }
    CHECK_THROWS_WITH_AS(model.forward_cached(ids({{1}, {2}})),
                         doctest::Contains("expected positions up to block_size 8, got 8 cached + "
                                           "1 new"),
                         ShapeError);
    model.reset_cache();
    model.forward_cached(ids({{1}, {2}}));
    CHECK_THROWS_WITH_AS(model.forward_cached(ids({{1}})),
                         doctest::Contains("expected tokens of batch size 2 (the cache's)"),
                         ShapeError);
  }

  TEST_CASE("generation with RoPE: the cache gives the same tokens as without, across restarts") {
    for (const std::string norm : {"layernorm", "rmsnorm"}) {
      CAPTURE(norm);
      tt::GPT model(tiny().position("rope").norm(norm).mlp("swiglu"),
                    std::make_shared<Generator>(1));
      const IndexArray prompt = ids({{1, 2, 3}, {4, 5, 6}});
      const auto options =
          tt::GenerateOptions(30).temperature(1.5);  // the context restarts 6 times
      Generator a(5), b(5), c(6);
      const IndexArray cached = model.generate(prompt, options, a);
      CHECK(cached.shape() == Shape{2, 33});
      CHECK(cached == model.generate(prompt, tt::GenerateOptions(options).use_cache(false), b));
      CHECK_FALSE(cached == model.generate(prompt, options, c));
    }
  }

}  // TEST_SUITE
