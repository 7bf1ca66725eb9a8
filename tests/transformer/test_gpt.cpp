// tests/transformer/test_gpt.cpp: the GPT model's semantics: names and shapes as nanoGPT's, the
// tied table, nanoGPT's initialisation, the optimizer groups, the parameter and FLOP counts, errors,
// checkpoints, and generation (reproducible, cached == uncached, greedy with top_k 1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <tapegrad/tapegrad.hpp>
#include <xtensor/xview.hpp>

#include "../helpers.hpp"
#include "../io/scratch.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;
namespace tt = tapegrad::nn::transformer;

namespace {
using Names = std::vector<std::string>;

tt::GPTConfig tiny(std::string pos = "learned") {
  return tt::GPTConfig(13, 8).n_layer(2).n_head(2).n_embd(8).position(std::move(pos));
}

IndexArray ids(std::initializer_list<std::initializer_list<std::int64_t>> rows) {
  IndexArray a = IndexArray::from_shape({rows.size(), rows.begin()->size()});
  std::size_t i = 0;
  for (const auto& r : rows)
    for (std::int64_t v : r) a.data()[i++] = v;
  return a;
}

double sample_std(const Array& a) {
  double mean = 0.0, sq = 0.0;
  for (float v : a) mean += v;
  mean /= double(a.size());
  for (float v : a) sq += (v - mean) * (v - mean);
  return std::sqrt(sq / double(a.size()));
}
}  // namespace

TEST_SUITE("nn.transformer.gpt") {
  TEST_CASE(
      "parameter names and shapes are nanoGPT's, the token table is lm_head's weight, listed "
      "once") {
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    const auto named = model.named_parameters();
    Names names;
    for (const auto& [n, p] : named) names.push_back(n);
    CHECK(names.front() == "transformer.wte.weight");
    CHECK(names[1] == "transformer.wpe.weight");
    CHECK(names[2] == "transformer.h.0.ln_1.weight");
    CHECK(names[4] == "transformer.h.0.attn.c_attn.weight");
    CHECK(names.back() == "transformer.ln_f.bias");
    CHECK(std::find(names.begin(), names.end(), "lm_head.weight") == names.end());  // the tie: once
    CHECK(names.size() == 2 + 2 * 12 + 2);
    CHECK(model.lm_head->weight.is_same(model.transformer->wte->weight));
    CHECK(model.token_embedding().is_same(model.lm_head->weight));
    CHECK(model.transformer->wte->weight.shape() == Shape{13, 8});
    CHECK(model.transformer->wpe->weight.shape() == Shape{8, 8});
    const auto& block = static_cast<tt::Block&>((*model.transformer->h)[0]);
    const auto& attn = dynamic_cast<const tt::CausalSelfAttention&>(*block.attn);
    const auto& mlp = dynamic_cast<const tt::MLP&>(*block.mlp);
    CHECK(attn.c_attn->weight.shape() == Shape{24, 8});
    CHECK(mlp.c_fc->weight.shape() == Shape{32, 8});
    CHECK(mlp.c_proj->weight.shape() == Shape{8, 32});
    const nn::StateDict sd = model.state_dict();
    CHECK(sd.contains("lm_head.weight"));
    REQUIRE(sd.aliases().size() == 1);
    CHECK(sd.aliases()[0] ==
          std::pair<std::string, std::string>{"lm_head.weight", "transformer.wte.weight"});
  }

  TEST_CASE(
      "sinusoidal positions use the seeds' Embeddings and PositionalEncoding, pe is a buffer that "
      "stays fixed") {
    tt::GPT model(tiny("sinusoidal"), std::make_shared<Generator>(0));
    CHECK(model.transformer->wpe == nullptr);
    REQUIRE(model.transformer->wpe_table != nullptr);
    const auto named = model.named_parameters();
    CHECK(named.front().first == "transformer.wte.lut.weight");
    CHECK(model.lm_head->weight.is_same(model.transformer->wte_scaled->lut->weight));
    const auto buffers = model.named_buffers();
    REQUIRE(buffers.size() == 1);
    CHECK(buffers[0].first == "transformer.wpe.pe");
    CHECK(buffers[0].second.shape() == Shape{1, 8, 8});
    const std::uint64_t fingerprint = model.transformer->wpe_table->fingerprint();
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
    Tensor loss = model.loss(ids({{1, 2, 3, 4}}), ids({{2, 3, 4, 5}}));
    loss.backward();
    opt.step();
    CHECK(model.transformer->wpe_table->fingerprint() == fingerprint);
    model.transformer->wpe_table->verify();
    // the token rows are scaled by sqrt(n_embd) before the table is added
    model.eval();
    autograd::NoGradGuard no_grad;
    const Tensor x = model.transformer->wte_scaled->forward(ids({{3}}));
    CHECK(x.data()(0, 0, 0) == model.token_embedding().data()(3, 0) * float(std::sqrt(8.0)));
  }

  TEST_CASE(
      "initialisation is nanoGPT's: N(0, 0.02), residual projections smaller, biases 0, norms 1") {
    tt::GPT model(tt::GPTConfig(64, 16).n_layer(4).n_head(4).n_embd(64),
                  std::make_shared<Generator>(3));
    const auto& block = static_cast<tt::Block&>((*model.transformer->h)[1]);
    const auto& attn = dynamic_cast<const tt::CausalSelfAttention&>(*block.attn);
    const auto& mlp = dynamic_cast<const tt::MLP&>(*block.mlp);
    CHECK(sample_std(attn.c_attn->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(mlp.c_fc->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(model.token_embedding().data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(model.transformer->wpe->weight.data()) == doctest::Approx(0.02).epsilon(0.1));
    const double residual = 0.02 / std::sqrt(8.0);
    CHECK(sample_std(attn.c_proj->weight.data()) == doctest::Approx(residual).epsilon(0.05));
    CHECK(sample_std(mlp.c_proj->weight.data()) == doctest::Approx(residual).epsilon(0.05));
    CHECK(bit_equal(attn.c_attn->bias.data(), xt::zeros<float>({192})));
    CHECK(bit_equal(dynamic_cast<const nn::LayerNorm&>(*block.ln_1).weight.data(), xt::ones<float>({64})));
    CHECK(bit_equal(dynamic_cast<const nn::LayerNorm&>(*block.ln_2).bias.data(), xt::zeros<float>({64})));
    // the same seed gives the same weights, another seed others
    tt::GPT again(tt::GPTConfig(64, 16).n_layer(4).n_head(4).n_embd(64),
                  std::make_shared<Generator>(3));
    tt::GPT other(tt::GPTConfig(64, 16).n_layer(4).n_head(4).n_embd(64),
                  std::make_shared<Generator>(4));
    CHECK(nn::diff_state_dicts(model.state_dict(), again.state_dict()).identical());
    CHECK_FALSE(nn::diff_state_dicts(model.state_dict(), other.state_dict()).identical());
  }

  TEST_CASE(
      "forward gives (B, T, vocab) logits, loss is their mean cross-entropy, ignore_index left "
      "out") {
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    const IndexArray x = ids({{1, 2, 3}, {4, 5, 6}}), y = ids({{2, 3, 0}, {5, 6, 7}});
    const Tensor logits = model.forward(x);
    CHECK(logits.shape() == Shape{2, 3, 13});
    IndexArray flat = y;
    flat.reshape({6});
    const Tensor reference = ops::cross_entropy(ops::reshape(logits, {-1, 13}), flat,
                                                ops::CrossEntropyOptions().ignore_index(0));
    CHECK(model.loss(x, y, 0).item() == reference.item());
    // the features: ln_f's output, and the attention weights of every block
    std::vector<Array> weights;
    const Tensor h = model.features(x, &weights);
    CHECK(h.shape() == Shape{2, 3, 8});
    REQUIRE(weights.size() == 2);
    CHECK(weights[1].shape() == Shape{2, 2, 3, 3});
  }

  TEST_CASE("every token position sees only itself and earlier positions") {
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    const Array a = model.forward(ids({{1, 2, 3, 4, 5}})).data();
    const Array b = model.forward(ids({{1, 2, 3, 9, 11}})).data();
    for (std::size_t t = 0; t < 5; ++t) {
      const bool same = bit_equal(Array(xt::view(a, 0, t)), Array(xt::view(b, 0, t)));
      CHECK(same == (t < 3));
    }
  }

  TEST_CASE("bad configurations, long inputs and unknown ids are refused with clear messages") {
    CHECK_THROWS_WITH_AS(tt::GPT(tt::GPTConfig(0, 8)),
                         doctest::Contains("GPT: expected vocab_size >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tt::GPTConfig(13, 0)),
                         doctest::Contains("expected block_size >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().n_layer(0)),
                         doctest::Contains("expected n_layer >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        tt::GPT(tiny().n_embd(10).n_head(4)),
        doctest::Contains(
            "expected n_embd to be a multiple of n_head, got n_embd = 10 and n_head = 4"),
        ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().dropout(1.5)),
                         doctest::Contains("dropout probability has to be between 0 and 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        tt::GPT(tiny().position("rotary")),
        doctest::Contains(
            "expected position \"learned\", \"sinusoidal\", \"rope\" or \"none\", got \"rotary\""),
        ValueError);
    CHECK_THROWS_WITH_AS(tt::GPT(tiny().gelu("fast")),
                         doctest::Contains("approximate argument must be either none or tanh"),
                         ValueError);
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    CHECK_THROWS_WITH_AS(
        model.forward(ids({{1, 2, 3, 4, 5, 6, 7, 8, 9}})),
        doctest::Contains("Cannot forward sequence of length 9, block size is only 8"), ShapeError);
    CHECK_THROWS_WITH_AS(model.forward(IndexArray{1, 2, 3}),
                         doctest::Contains("expected idx of shape (B, T), got (3,)"), ShapeError);
    CHECK_THROWS_WITH_AS(model.forward(ids({{1, 13}})),
                         doctest::Contains("index out of range in self"), IndexError);
    CHECK_THROWS_WITH_AS(model.forward(ids({{1, 13}})),
                         doctest::Contains("expected ids in [0, 13), got 13 at position (0, 1)"),
                         IndexError);
    CHECK_THROWS_WITH_AS(model.loss(ids({{1, 2}}), ids({{1, 2, 3}})),
                         doctest::Contains("expected targets of the shape of idx"), ShapeError);
  }

  TEST_CASE("parameter_groups puts the Linear weights only in the decayed group, as nanoGPT") {
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    const tt::ParameterGroups groups = model.parameter_groups();
    std::set<std::string> decay, none;
    for (const Parameter& p : groups.decay) decay.insert(p.name());
    for (const Parameter& p : groups.no_decay) none.insert(p.name());
    CHECK(decay.size() == 2 * 4);
    CHECK(decay.count("transformer.h.1.mlp.c_proj.weight") == 1);
    CHECK(none.count("transformer.wte.weight") == 1);  // the table shared with lm_head: no decay
    CHECK(none.count("transformer.wpe.weight") == 1);
    CHECK(none.count("transformer.h.0.ln_1.weight") == 1);
    CHECK(none.count("transformer.h.0.attn.c_attn.bias") == 1);
    CHECK(decay.size() + none.size() == model.parameters().size());
    optim::AdamW opt({{groups.decay, optim::AdamWOptions(1e-3).weight_decay(0.1)},  // none twice
                      {groups.no_decay, optim::AdamWOptions(1e-3).weight_decay(0.0)}});
  }

  TEST_CASE("num_params leaves the position table out, flops_per_token is nanoGPT's estimate") {
    tt::GPT model(tt::GPTConfig(65, 64),
                  std::make_shared<Generator>(0));  // the baby GPT on 65 characters
    const std::int64_t per_block =
        (128 * 384 + 384) + (128 * 128 + 128) + (128 * 512 + 512) + (512 * 128 + 128) + 4 * 128;
    CHECK(model.num_params() == 4 * per_block + 65 * 128 + 2 * 128);
    CHECK(model.num_params(false) == model.num_params() + 64 * 128);
    CHECK(model.flops_per_token() == 6.0 * double(model.num_params()) + 12.0 * 4 * 4 * 32 * 64);
  }

  TEST_CASE("prints as nanoGPT's modules do") {
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    const std::string r = model.repr();
    CHECK(r.find("(lm_head): TiedLinear(in_features=8, out_features=13, bias=False)") !=
          std::string::npos);
    CHECK(r.find("(gelu): GELU(approximate='none')") != std::string::npos);
    CHECK(r.find("(c_attn): Linear(in_features=8, out_features=24, bias=True)") !=
          std::string::npos);
    CHECK(r.find("(transformer): ModuleDict(") != std::string::npos);
  }

  TEST_CASE("a checkpoint stores the tied table once and a fresh model loads it exactly") {
    const std::string path = (testing::scratch_dir("gpt_checkpoint") / "gpt.safetensors").string();
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    io::save(model, path);
    const io::SafetensorsFile f = io::load_safetensors(path);
    CHECK(f.tensors().size() == model.parameters().size());  // 28 tensors: the table once
    REQUIRE(f.aliases().size() == 1);
    CHECK(f.aliases()[0].first == "transformer.wte.weight");  // stored under the smaller name
    CHECK(f.aliases()[0].second == "lm_head.weight");
    tt::GPT fresh(tiny(), std::make_shared<Generator>(9));
    io::load(fresh, path);
    CHECK(fresh.lm_head->weight.is_same(fresh.token_embedding()));  // still one parameter
    const IndexArray x = ids({{1, 2, 3}});
    CHECK(bit_equal(fresh.forward(x).data(), model.forward(x).data()));
  }

  TEST_CASE(
      "generation: the same seed gives the same text, with the cache, the same tokens as without") {
    for (const std::string pos : {"learned", "sinusoidal"}) {
      CAPTURE(pos);
      tt::GPT model(tiny(pos), std::make_shared<Generator>(1));
      const IndexArray prompt = ids({{1, 2, 3}, {4, 5, 6}});
      const auto options =
          tt::GenerateOptions(30).temperature(1.5);  // block 8: the context restarts 6 times
      Generator a(5), b(5), c(5), d(6);
      const IndexArray cached = model.generate(prompt, options, a);
      CHECK(cached.shape() == Shape{2, 33});
      for (std::size_t row = 0; row < 2; ++row)
        for (std::size_t t = 0; t < 3; ++t) CHECK(cached(row, t) == prompt(row, t));
      CHECK(cached == model.generate(prompt, options, b));
      CHECK(cached == model.generate(prompt, tt::GenerateOptions(options).use_cache(false), c));
      CHECK_FALSE(cached == model.generate(prompt, options, d));
      for (std::int64_t id : cached) CHECK((0 <= id && id < 13));
    }
  }

  TEST_CASE("top_k 1 is greedy decoding: each token is the argmax of the model's last logits") {
    tt::GPT model(tiny(), std::make_shared<Generator>(2));
    model.eval();
    Generator gen(0);
    const IndexArray out = model.generate(ids({{3, 1}}), tt::GenerateOptions(5).top_k(1), gen);
    for (std::size_t t = 2; t < 7; ++t) {
      IndexArray context = IndexArray::from_shape({1, t});
      std::copy_n(out.data(), t, context.data());
      const Array logits = model.forward(context).data();
      std::size_t best = 0;
      for (std::size_t v = 1; v < 13; ++v)
        if (logits(0, t - 1, v) > logits(0, t - 1, best)) best = v;
      CHECK(out(0, t) == std::int64_t(best));
    }
  }

  TEST_CASE(
      "generation refuses bad options and prompts, samples in eval mode and restores the mode") {
    tt::GPT model(tiny().dropout(0.5), std::make_shared<Generator>(1));
    Generator gen(0);
    CHECK_THROWS_WITH_AS(model.generate(ids({{1}}), tt::GenerateOptions(3).temperature(0.0), gen),
                         doctest::Contains("expected a temperature > 0, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(model.generate(ids({{1}}), tt::GenerateOptions(3).top_k(0), gen),
                         doctest::Contains("expected top_k >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(model.generate(ids({{1}}), tt::GenerateOptions(-1), gen),
                         doctest::Contains("expected max_new_tokens >= 0, got -1"), ValueError);
    CHECK_THROWS_WITH_AS(model.generate(IndexArray{1, 2}, tt::GenerateOptions(3), gen),
                         doctest::Contains("expected a prompt idx of shape (B, t) with t >= 1"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(model.generate(ids({{1, 20}}), tt::GenerateOptions(3), gen),
                         doctest::Contains("expected ids in [0, 13), got 20 at position (0, 1)"),
                         IndexError);
    CHECK(model.is_training());
    Generator a(1), b(1);
    const IndexArray first =
        model.generate(ids({{1}}), tt::GenerateOptions(10), a);  // dropout 0.5, yet:
    CHECK(first == model.generate(ids({{1}}), tt::GenerateOptions(10).use_cache(false), b));
    CHECK(model.is_training());
    const std::size_t before = autograd::tape().size();
    model.generate(ids({{1}}), tt::GenerateOptions(3), gen);
    CHECK(autograd::tape().size() == before);
  }

  TEST_CASE("a short training run lowers the loss") {
    tt::GPT model(tiny(), std::make_shared<Generator>(0));
    const tt::ParameterGroups groups = model.parameter_groups();
    const auto adamw = optim::AdamWOptions(1e-2).betas({0.9, 0.99});
    optim::AdamW opt({{groups.decay, optim::AdamWOptions(adamw).weight_decay(0.1)},
                      {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}});
    const IndexArray x = ids({{1, 2, 3, 4, 5, 6, 7, 8}, {8, 7, 6, 5, 4, 3, 2, 1}});
    const IndexArray y = ids({{2, 3, 4, 5, 6, 7, 8, 9}, {7, 6, 5, 4, 3, 2, 1, 0}});
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < 60; ++step) {
      Tensor loss = model.loss(x, y);
      loss.backward();
      optim::clip_grad_norm_(model.parameters(), 1.0);
      opt.step();
      opt.zero_grad();
      if (step == 0) first = loss.item();
      last = loss.item();
    }
    CHECK(first == doctest::Approx(std::log(13.0)).epsilon(0.05));  // uniform at the start
    CHECK(last < 0.2f * first);
  }

}  // TEST_SUITE
