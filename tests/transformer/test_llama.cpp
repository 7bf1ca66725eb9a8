// tests/transformer/test_llama.cpp: LlamaForCausalLM as a module: transformers' names and shapes,
// the tables out of the state dict, the config's checks naming the field, transformers' rotary
// frequencies (default, linear, llama3), the cache giving the uncached logits, dropout on the
// weights only in training, and the norms staying float32 under bf16 autocast. (Its values against
// PyTorch's: tests/pretrained/test_llama_parity.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <tapegrad/core/autocast.hpp>
#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;

namespace {

tt::LlamaConfig tiny(bool tied) {
  return tt::LlamaConfig()
      .vocab_size(11)
      .hidden_size(16)
      .intermediate_size(24)
      .num_hidden_layers(2)
      .num_attention_heads(4)
      .num_key_value_heads(2)
      .max_position_embeddings(40)
      .rms_norm_eps(1e-5)
      .tie_word_embeddings(tied);
}

IndexArray ids(std::size_t B, std::size_t T, std::int64_t seed) {
  IndexArray a = IndexArray::from_shape({B, T});
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = (seed * 7 + std::int64_t(i) * 5) % 11;
  return a;
}

// The columns [from, to) of ids (B, T).
IndexArray columns(const IndexArray& a, std::size_t from, std::size_t to) {
  IndexArray out = IndexArray::from_shape({a.shape()[0], to - from});
  for (std::size_t b = 0; b < a.shape()[0]; ++b)
    for (std::size_t t = from; t < to; ++t) out(b, t - from) = a(b, t);
  return out;
}

}  // namespace

TEST_SUITE("nn.transformer.llama") {
  TEST_CASE("parameters carry transformers' keys and shapes, the rotary tables stay out") {
    tt::LlamaForCausalLM untied(tiny(false), std::make_shared<Generator>(1));
    const auto params = untied.named_parameters();
    std::vector<std::string> names;
    for (const auto& [name, p] : params) names.push_back(name);
    const std::vector<std::string> first = {
        "model.embed_tokens.weight",
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight",
        "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.mlp.gate_proj.weight",
        "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.mlp.down_proj.weight",
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight"};
    REQUIRE(names.size() == 1 + 2 * 9 + 2);
    CHECK(std::vector<std::string>(names.begin(), names.begin() + 10) == first);
    CHECK(names[names.size() - 2] == "model.norm.weight");
    CHECK(names.back() == "lm_head.weight");
    CHECK(params[2].second.shape() == Shape{8, 16});   // k_proj: 2 key/value heads of 4
    CHECK(params[4].second.shape() == Shape{16, 16});  // o_proj
    CHECK(params[7].second.shape() == Shape{16, 24});  // down_proj
    CHECK(untied.state_dict().keys() == names);        // no buffer is persistent
    CHECK(untied.named_buffers().size() == 2);         // model.rotary_emb.cos and .sin

    tt::LlamaForCausalLM tied(tiny(true), std::make_shared<Generator>(1));
    CHECK(tied.named_parameters().size() == names.size() - 1);  // the table once
    CHECK(tied.state_dict().keys().back() == "lm_head.weight");  // as an alias of the table
    CHECK(tied.tied_lm_head->weight.data().data() == tied.token_embedding().data().data());
    CHECK(tied.num_params() == untied.num_params() - 11 * 16);
  }

  TEST_CASE("a new Llama is initialised as transformers': N(0, initializer_range), norms 1") {
    tt::LlamaForCausalLM a(tiny(false).initializer_range(0.5), std::make_shared<Generator>(3));
    tt::LlamaForCausalLM b(tiny(false).initializer_range(0.5), std::make_shared<Generator>(3));
    const auto pa = a.named_parameters(), pb = b.named_parameters();
    for (std::size_t i = 0; i < pa.size(); ++i) CHECK(bit_equal(pa[i].second.data(), pb[i].second.data()));
    const Array& w = a.model->embed_tokens->weight.data();
    double sq = 0.0;
    for (const float v : w) sq += double(v) * double(v);
    CHECK(std::sqrt(sq / double(w.size())) == doctest::Approx(0.5).epsilon(0.15));
    for (const float v : a.model->norm->weight.data()) CHECK(v == 1.0f);
  }

  TEST_CASE("the config is checked in one place, each refusal naming the field") {
    CHECK_THROWS_WITH_AS(tt::LlamaForCausalLM(tiny(false).num_key_value_heads(3)),
                         doctest::Contains("expected num_key_value_heads dividing "
                                           "num_attention_heads = 4"),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::LlamaForCausalLM(tiny(false).hidden_act("gelu")),
                         doctest::Contains("expected hidden_act \"silu\", got \"gelu\""),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::LlamaForCausalLM(tiny(false).hidden_size(12)),
                         doctest::Contains("expected hidden_size to be an even multiple of "
                                           "num_attention_heads"),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::LlamaForCausalLM(tiny(false).head_dim(5)),
                         doctest::Contains("expected an even head_dim >= 2"), ValueError);
    tt::LlamaRopeScaling yarn;
    yarn.rope_type = "yarn";
    CHECK_THROWS_WITH_AS(tt::LlamaForCausalLM(tiny(false).rope_scaling(yarn)),
                         doctest::Contains("expected rope_scaling of rope_type \"linear\" or "
                                           "\"llama3\", got \"yarn\""),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::LlamaForCausalLM(tiny(false).rms_norm_eps(0.0)),
                         doctest::Contains("expected rms_norm_eps in (0, 1)"), ValueError);
    // head_dim given: the heads need not fill hidden_size
    tt::LlamaForCausalLM wide(tiny(false).head_dim(6));
    CHECK(wide.model->rotary_emb->cos.shape() == Shape{40, 3});
    CHECK(static_cast<tt::LlamaDecoderLayer&>((*wide.model->layers)[0])
              .self_attn->q_proj->weight.shape() == Shape{24, 16});
  }

  TEST_CASE("rotary frequencies: transformers' default, linear and llama3 rules, in float32") {
    const tt::LlamaConfig c = tiny(false).head_dim(8).rope_theta(10000.0);
    const std::vector<float> plain = tt::llama_inv_freq(c);
    REQUIRE(plain.size() == 4);
    for (std::size_t p = 0; p < 4; ++p)
      CHECK(plain[p] == 1.0f / float(std::pow(10000.0, double(float(2 * p) / 8.0f))));
    tt::LlamaRopeScaling linear;
    linear.rope_type = "linear";
    linear.factor = 4.0;
    const std::vector<float> divided = tt::llama_inv_freq(tiny(false).head_dim(8).rope_scaling(linear));
    for (std::size_t p = 0; p < 4; ++p) CHECK(divided[p] == plain[p] / 4.0f);
    // llama3 with L = 1024, factors 1 and 4: wavelengths 2 pi / (1, 0.1, 0.01, 0.001) = 6.3, 63,
    // 628, 6283: kept, kept, blended (between 1024 / 4 and 1024), divided by 8
    tt::LlamaRopeScaling llama3;
    llama3.original_max_position_embeddings = 1024;
    const std::vector<float> f = tt::llama_inv_freq(tiny(false).head_dim(8).rope_scaling(llama3));
    CHECK(f[0] == plain[0]);
    CHECK(f[1] == plain[1]);
    CHECK(f[2] < plain[2]);
    CHECK(f[2] > plain[2] / 8.0f);
    CHECK(f[3] == plain[3] / 8.0f);
    // the model's tables come from them
    tt::LlamaForCausalLM model(tiny(false).rope_scaling(llama3));
    const std::vector<float> model_freq = tt::llama_inv_freq(model.config());
    CHECK(bit_equal(model.model->rotary_emb->cos.data(), ops::rotary_table(model_freq, 40).cos));
  }

  TEST_CASE("the cache gives the uncached logits: the whole prompt, then one position at a time") {
    for (const bool tied : {false, true}) {
      CAPTURE(tied);
      tt::LlamaForCausalLM model(tiny(tied), std::make_shared<Generator>(5));
      model.eval();
      autograd::NoGradGuard no_grad;
      const IndexArray x = ids(2, 37, 1);  // past the cache's first capacity of 16 rows
      const Array full = model.forward(x).data();  // (2, 37, 11)
      model.reset_cache();
      std::size_t at = 0;
      for (const std::size_t step : {std::size_t(5), std::size_t(1), std::size_t(12), std::size_t(1),
                                     std::size_t(18)}) {
        const Array last = model.forward_cached(columns(x, at, at + step));
        at += step;
        Array expected = Array::from_shape({2, 11});
        for (std::size_t b = 0; b < 2; ++b)
          for (std::size_t v = 0; v < 11; ++v) expected(b, v) = full(b, at - 1, v);
        CHECK(testing::all_close(last, expected, 1e-5, 1e-5));
      }
      CHECK(at == 37);
      CHECK_THROWS_WITH_AS(model.forward_cached(columns(x, 0, 4)),
                           doctest::Contains("expected positions up to max_position_embeddings "
                                             "40, got 37 cached + 4 new"),
                           ShapeError);
      CHECK_THROWS_WITH_AS(model.forward_cached(ids(3, 1, 0)),
                           doctest::Contains("expected tokens of batch size 2 (the cache's)"),
                           ShapeError);
      model.reset_cache();
      CHECK(testing::all_close(model.forward_cached(columns(x, 0, 3)),
                               model.last_logits(columns(x, 0, 3)), 1e-5, 1e-5));
    }
  }

  TEST_CASE("generate samples the same tokens with and without the cache") {
    tt::LlamaForCausalLM model(tiny(true), std::make_shared<Generator>(6));
    const auto sample = [&](bool cache) {
      Generator gen(42);
      return model.generate(ids(2, 3, 4),
                            tt::GenerateOptions(50).temperature(0.8).use_cache(cache), gen);
    };
    const IndexArray cached = sample(true);
    CHECK(cached.shape() == Shape{2, 53});  // past max_position_embeddings 40: the context restarts
    CHECK(cached == sample(false));
  }

  TEST_CASE("attention dropout drops the weights in training only, and changes nothing else") {
    tt::LlamaForCausalLM model(tiny(false).attention_dropout(0.5), std::make_shared<Generator>(2));
    tt::LlamaForCausalLM plain(tiny(false), std::make_shared<Generator>(2));
    const IndexArray x = ids(1, 6, 3);
    autograd::NoGradGuard no_grad;
    CHECK_FALSE(bit_equal(model.forward(x).data(), plain.forward(x).data()));
    model.eval();
    plain.eval();
    CHECK(bit_equal(model.forward(x).data(), plain.forward(x).data()));
  }

  TEST_CASE("under bf16 autocast only the products round: the norms stay float32") {
    tt::LlamaForCausalLM model(tiny(false), std::make_shared<Generator>(8));
    model.eval();
    autograd::NoGradGuard no_grad;
    const Tensor x = testing::input({2, 5, 16}, 3, false);
    const Array outside = model.model->norm->forward(x).data();
    Array inside, logits_bf16;
    {
      autocast::bf16 mixed;
      inside = model.model->norm->forward(x).data();
      logits_bf16 = model.forward(ids(2, 5, 1)).data();
    }
    CHECK(bit_equal(inside, outside));
    const Array logits = model.forward(ids(2, 5, 1)).data();
    CHECK_FALSE(bit_equal(logits, logits_bf16));
    CHECK(testing::all_close(logits, logits_bf16, 5e-2, 5e-2));
  }

  TEST_CASE("loss, its ignore_index, and the optimizer groups") {
    tt::LlamaForCausalLM model(tiny(false), std::make_shared<Generator>(4));
    IndexArray targets = ids(2, 6, 2);
    const float all = model.loss(ids(2, 6, 1), targets).item();
    CHECK(std::isfinite(all));
    targets(0, 0) = -1;
    CHECK(model.loss(ids(2, 6, 1), targets).item() != all);
    CHECK_THROWS_WITH_AS(model.loss(ids(2, 6, 1), ids(2, 5, 1)),
                         doctest::Contains("expected targets of the shape of idx"), ShapeError);
    CHECK_THROWS_WITH_AS(model.forward(ids(1, 41, 1)),
                         doctest::Contains("expected idx (B, T) with T <= max_position_embeddings "
                                           "40"),
                         ShapeError);
    const auto groups = model.parameter_groups();
    CHECK(groups.decay.size() == 2 * 7 + 1);  // the Linear weights, lm_head's included
    CHECK(groups.no_decay.size() == 1 + 2 * 2 + 1);  // the table and the norms
  }
}  // TEST_SUITE
