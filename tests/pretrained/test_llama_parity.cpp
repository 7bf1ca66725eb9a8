// tests/pretrained/test_llama_parity.cpp: tiny Llamas in Hugging Face's layout, loaded by tapegrad,
// against PyTorch running transformers' LlamaForCausalLM semantics (scripts/golden/llama_hf.py,
// which wrote the fixtures: tests/pretrained/fixtures/llama_tiny/): a tied and an untied model
// (grouped-query attention, 4 query heads on 2 key/value heads), the untied one again in BF16
// and in two shards, the tied one in F16 and under two rope_scaling rules. On every kernel set
// this CPU runs: the logits equal PyTorch's, greedy decoding with the cache picks PyTorch's ids,
// and a fine-tuning step's loss and gradients equal PyTorch's.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <tapegrad/core/autocast.hpp>
#include <tapegrad/core/cpu.hpp>
#include <tapegrad/tapegrad.hpp>

#include "../capability_guard.hpp"
#include "../helpers.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
namespace fs = std::filesystem;
namespace tt = tapegrad::nn::transformer;

namespace {

const std::string kFixtures =
    std::string(TAPEGRAD_SOURCE_DIR) + "/tests/pretrained/fixtures/llama_tiny";

const io::SafetensorsFile& golden() {
  static const io::SafetensorsFile f = io::load_safetensors(kFixtures + "/golden.safetensors");
  return f;
}

// The largest |a - b|, against the largest |b| (at least 1).
double relative_diff(const Array& a, const Array& b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0.0, scale = 1.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])));
    scale = std::max(scale, std::abs(double(b.data()[i])));
  }
  return worst / scale;
}

// The first `rows` rows of ids (B, T).
IndexArray first_rows(const IndexArray& ids, std::size_t rows) {
  IndexArray out = IndexArray::from_shape({rows, ids.shape()[1]});
  std::copy_n(ids.data(), out.size(), out.data());
  return out;
}

// Every kernel set this CPU runs, each in turn for `body`.
template <class Body>
void on_every_kernel_set(Body body) {
  testing::CapabilityGuard guard;
  for (const CpuCapability set : available_cpu_capabilities()) {
    CAPTURE(to_string(set));
    set_cpu_capability(set);
    body();
  }
}

// The logits of `variant`'s model on the golden batch (or its first row) against PyTorch's.
void check_logits(const tt::LlamaForCausalLM& loaded, const std::string& variant) {
  auto& model = const_cast<tt::LlamaForCausalLM&>(loaded);
  model.eval();
  autograd::NoGradGuard no_grad;
  const Array expected = golden().to_float(variant + ".logits");
  const IndexArray idx = first_rows(golden().to_int64("idx"), expected.shape()[0]);
  const double diff = relative_diff(model.forward(idx).data(), expected);
  MESSAGE(variant, ": largest logit difference from PyTorch, relative to the largest logit: ",
          diff);
  CHECK(diff < 2e-6);
}

}  // namespace

TEST_SUITE("pretrained.llama_parity") {
  TEST_CASE("the tied and the untied Llama's logits equal PyTorch's, on every kernel set") {
    for (const std::string variant : {"tied", "untied"}) {
      CAPTURE(variant);
      const auto llama = pretrained::load_llama(kFixtures + "/" + variant);
      CHECK(llama.config.model.tie_word_embeddings() == (variant == "tied"));
      CHECK(llama.config.model.kv_heads() == 2);
      on_every_kernel_set([&] { check_logits(*llama.model, variant); });
    }
  }

  TEST_CASE("greedy decoding with the cache picks PyTorch's ids, and so does decoding without it") {
    for (const std::string variant : {"tied", "untied"}) {
      CAPTURE(variant);
      const auto llama = pretrained::load_llama(kFixtures + "/" + variant);
      const IndexArray prompt = golden().to_int64(variant + ".greedy.prompt"),
                       expected = golden().to_int64(variant + ".greedy.out");
      CHECK(golden().to_float(variant + ".greedy.min_gap")() > 1e-3);
      on_every_kernel_set([&] {
        for (const bool cache : {true, false}) {
          CAPTURE(cache);
          Generator gen(0);  // (top-k 1 draws nothing at random)
          const IndexArray out =
              llama.model->generate(prompt, tt::GenerateOptions(20).top_k(1).use_cache(cache), gen);
          CHECK(out == expected);
        }
      });
    }
  }

  TEST_CASE("a fine-tuning step's loss and gradients equal PyTorch's, on every kernel set") {
    for (const std::string variant : {"tied", "untied"}) {
      CAPTURE(variant);
      const auto llama = pretrained::load_llama(kFixtures + "/" + variant);  // training mode
      const auto params = llama.model->named_parameters();
      on_every_kernel_set([&] {
        llama.model->zero_grad();
        const Tensor loss =
            llama.model->loss(golden().to_int64("idx"), golden().to_int64("targets"));
        loss.backward();
        CHECK(loss.item() ==
              doctest::Approx(golden().to_float(variant + ".loss")()).epsilon(1e-6));
        std::size_t compared = 0;
        for (const auto& [name, p] : params) {
          const std::string key = variant + ".grad." + name;
          if (!golden().contains(key)) continue;
          CAPTURE(name);
          const double diff = relative_diff(p.grad(), golden().to_float(key));
          MESSAGE(name, ": largest gradient difference, relative to the largest: ", diff);
          CHECK(diff < 1e-5);
          ++compared;
        }
        CHECK(compared == 6);
      });
    }
  }

  TEST_CASE("BF16 weights in two shards load as the untied model's rounded to BF16") {
    const auto f32 = pretrained::load_llama(kFixtures + "/untied");
    const auto bf16 = pretrained::load_llama(kFixtures + "/untied_bf16_sharded");
    const auto a = f32.model->named_parameters(), b = bf16.model->named_parameters();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i].first);
      CHECK(a[i].first == b[i].first);
      Array rounded = a[i].second.data();
      for (float& v : rounded) v = autocast::round_to_bf16(v);
      CHECK(testing::bit_equal(b[i].second.data(), rounded));
    }
    on_every_kernel_set([&] { check_logits(*bf16.model, "untied_bf16_sharded"); });
  }

  TEST_CASE("F16 weights are widened to float32: the logits equal PyTorch's") {
    const auto f16 = pretrained::load_llama(kFixtures + "/tied_f16");
    on_every_kernel_set([&] { check_logits(*f16.model, "tied_f16"); });
  }

  TEST_CASE("rope_scaling linear and llama3: the logits equal PyTorch's") {
    const std::string config = testing::bytes_of(kFixtures + "/tied/config.json");
    for (const auto& [variant, scaling] :
         {std::pair<std::string, std::string>{"tied_linear",
                                              R"({"rope_type": "linear", "factor": 2.0})"},
          std::pair<std::string, std::string>{
              "tied_llama3",
              R"({"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,)"
              R"( "original_max_position_embeddings": 1024, "rope_type": "llama3"})"}}) {
      CAPTURE(variant);
      const fs::path dir = testing::fresh_folder("llama_parity", variant);
      fs::copy_file(kFixtures + "/tied/model.safetensors", dir / "model.safetensors");
      std::string text = config;
      const std::string null_scaling = "\"rope_scaling\": null";
      REQUIRE(text.find(null_scaling) != std::string::npos);
      text.replace(text.find(null_scaling), null_scaling.size(), "\"rope_scaling\": " + scaling);
      testing::write_file(dir / "config.json", text);
      const auto llama = pretrained::load_llama(dir.string());
      REQUIRE(llama.config.model.rope_scaling());
      on_every_kernel_set([&] { check_logits(*llama.model, variant); });
    }
  }
}  // TEST_SUITE
