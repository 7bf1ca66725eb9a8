// tests/pretrained/test_lora_parity.cpp: LoRA adapters in PEFT's layout, loaded by tapegrad onto
// the tiny Llama and GPT-2 fixtures, against PyTorch running PEFT's lora.Linear
// (scripts/golden/lora_peft.py, which wrote tests/pretrained/fixtures/lora_tiny/): on every kernel
// set the logits with the adapter equal PyTorch's, a fine-tuning step's gradients reach A and B
// only and equal PyTorch's, the merged weights equal PEFT's merge (GPT-2's in its Conv1D layout);
// F16 and BF16 adapters load as the F32 one rounded; "all-linear" with rsLoRA adapts what PEFT
// adapts; an adapter tapegrad saves holds the fixture's keys and values.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

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

const std::string kFixtures = std::string(TAPEGRAD_SOURCE_DIR) + "/tests/pretrained/fixtures";
const std::string kLora = kFixtures + "/lora_tiny";

const io::SafetensorsFile& golden() {
  static const io::SafetensorsFile f = io::load_safetensors(kLora + "/golden.safetensors");
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

Array transposed(const Array& a) {
  Array t = Array::from_shape({a.shape()[1], a.shape()[0]});
  for (std::size_t i = 0; i < a.shape()[0]; ++i)
    for (std::size_t j = 0; j < a.shape()[1]; ++j) t(j, i) = a(i, j);
  return t;
}

// The first `n` entries of the last axis of x (B, T, V).
Array head_of(const Array& x, std::size_t n) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], V = x.shape()[2];
  Array out = Array::from_shape({B, T, n});
  for (std::size_t r = 0; r < B * T; ++r) std::copy_n(x.data() + r * V, n, out.data() + r * n);
  return out;
}

Array logsumexp_rows(const Array& x) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], V = x.shape()[2];
  Array out = Array::from_shape({B, T});
  for (std::size_t r = 0; r < B * T; ++r) {
    const float* row = x.data() + r * V;
    const double m = *std::max_element(row, row + V);
    double s = 0.0;
    for (std::size_t v = 0; v < V; ++v) s += std::exp(double(row[v]) - m);
    out.data()[r] = float(m + std::log(s));
  }
  return out;
}

template <class Body>
void on_every_kernel_set(Body body) {
  testing::CapabilityGuard guard;
  for (const CpuCapability set : available_cpu_capabilities()) {
    CAPTURE(to_string(set));
    set_cpu_capability(set);
    body();
  }
}

// The tied Llama with the PEFT adapter `variant` (llama, llama_f16, llama_bf16) loaded onto it.
pretrained::PretrainedLlama llama_with(const std::string& variant) {
  auto llama = pretrained::load_llama(kFixtures + "/llama_tiny/tied");
  pretrained::load_lora_adapter(*llama.model, kLora + "/" + variant);
  return llama;
}

Array llama_logits(tt::LlamaForCausalLM& model) {
  model.eval();
  autograd::NoGradGuard no_grad;
  return model.forward(golden().to_int64("llama.idx")).data();
}

// Every adapter gradient of `model` against golden `prefix`.grad.<PEFT key>, and no gradient on
// any other parameter. Returns how many were compared.
std::size_t check_adapter_gradients(const nn::Module& model, const std::string& prefix,
                                    double tolerance) {
  std::size_t compared = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    CAPTURE(name);
    if (name.find(".lora_") == std::string::npos) {
      CHECK_FALSE(p.has_grad());  // frozen: no gradient
      continue;
    }
    REQUIRE(p.has_grad());
    const double diff =
        relative_diff(p.grad(), golden().to_float(prefix + ".grad.base_model.model." + name));
    MESSAGE(name, ": largest gradient difference, relative to the largest: ", diff);
    CHECK(diff < tolerance);
    ++compared;
  }
  return compared;
}

}  // namespace

TEST_SUITE("pretrained.lora_parity") {
  TEST_CASE("a PEFT adapter on the tied Llama: the logits equal PyTorch's, on every kernel set") {
    auto llama = llama_with("llama");
    const auto layers = nn::lora_layers(*llama.model);
    REQUIRE(layers.size() == 4);
    CHECK(layers[0].first == "model.layers.0.self_attn.q_proj");
    CHECK(layers[0].second->lora_options().scaling() == 2.0);
    CHECK(layers[0].second->lora_options().lora_dropout() == doctest::Approx(0.05));
    on_every_kernel_set([&] {
      const double diff =
          relative_diff(llama_logits(*llama.model), golden().to_float("llama.logits"));
      MESSAGE("largest logit difference from PyTorch, relative to the largest logit: ", diff);
      CHECK(diff < 2e-6);
    });
  }

  TEST_CASE("a fine-tuning step's gradients reach A and B only, and equal PyTorch's") {
    auto llama = llama_with("llama");
    llama.model->eval();  // no dropout: its masks are streams no two frameworks share
    on_every_kernel_set([&] {
      llama.model->zero_grad();
      const Tensor loss =
          llama.model->loss(golden().to_int64("llama.idx"), golden().to_int64("llama.targets"));
      loss.backward();
      CHECK(loss.item() == doctest::Approx(golden().to_float("llama.loss")()).epsilon(1e-6));
      CHECK(check_adapter_gradients(*llama.model, "llama", 1e-5) == 8);
    });
  }

  TEST_CASE("merging folds the adapter into the weights as PEFT does, and keeps the logits") {
    auto llama = llama_with("llama");
    const Array with_adapter = llama_logits(*llama.model);
    CHECK(nn::merge_lora(*llama.model) == 4);
    std::size_t compared = 0;
    for (const auto& [name, p] : llama.model->named_parameters()) {
      CHECK(name.find("lora_") == std::string::npos);
      const std::string key = "llama.merged." + name;
      if (!golden().contains(key)) continue;
      CAPTURE(name);
      CHECK(relative_diff(p.data(), golden().to_float(key)) < 1e-6);
      ++compared;
    }
    CHECK(compared == 4);
    CHECK(relative_diff(llama_logits(*llama.model), with_adapter) < 1e-5);
    CHECK(relative_diff(llama_logits(*llama.model), golden().to_float("llama.logits")) < 1e-5);
  }

  TEST_CASE("greedy decoding through the cache runs the adapters too: the ids of the long way") {
    auto llama = llama_with("llama");
    auto gpt2 = pretrained::load_gpt2(kFixtures + "/gpt2_tiny/plain");
    pretrained::load_lora_adapter(*gpt2.model, kLora + "/gpt2");
    const IndexArray prompt{{3, 14, 15, 92, 65}};
    for (tt::CausalLM* model :
         std::initializer_list<tt::CausalLM*>{llama.model.get(), gpt2.model.get()}) {
      model->eval();
      std::vector<IndexArray> outs;
      for (const bool cache : {true, false}) {
        Generator gen(0);  // top-k 1 draws nothing at random
        outs.push_back(
            tt::generate(*model, prompt, tt::GenerateOptions(12).top_k(1).use_cache(cache), gen));
      }
      CHECK(outs[0] == outs[1]);
    }
    // and the adapter changes what is chosen: the base model picks other ids
    auto base = pretrained::load_llama(kFixtures + "/llama_tiny/tied");
    base.model->eval();
    Generator a(0), b(0);
    CHECK(base.model->generate(prompt, tt::GenerateOptions(12).top_k(1), a) !=
          llama.model->generate(prompt, tt::GenerateOptions(12).top_k(1), b));
  }

  TEST_CASE("F16 and BF16 adapters load as the F32 one rounded to those types") {
    const auto f32 = llama_with("llama");
    for (const std::string variant : {"llama_f16", "llama_bf16"}) {
      CAPTURE(variant);
      const auto narrow = llama_with(variant);
      const auto a = nn::lora_layers(*f32.model), b = nn::lora_layers(*narrow.model);
      REQUIRE(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].first);
        for (const auto& [wide, got] :
             {std::pair{&a[i].second->lora_A->weight, &b[i].second->lora_A->weight},
              std::pair{&a[i].second->lora_B->weight, &b[i].second->lora_B->weight}}) {
          if (variant == "llama_bf16") {
            Array rounded = wide->data();
            for (float& v : rounded) v = autocast::round_to_bf16(v);
            CHECK(testing::bit_equal(got->data(), rounded));
            continue;
          }
          // F16: each value a half (normal here: 10 mantissa bits, the low 13 of float32's zero),
          // and the nearest to the float32 one (within half a unit of the last place).
          for (std::size_t k = 0; k < wide->numel(); ++k) {
            const float w = wide->data().data()[k], g = got->data().data()[k];
            CHECK((std::bit_cast<std::uint32_t>(g) & 0x1fffu) == 0u);
            const int exponent = std::ilogb(g == 0.0f ? w : g);
            CHECK(std::abs(double(g) - double(w)) <= std::ldexp(1.0, exponent - 11));
          }
        }
      }
    }
  }

  TEST_CASE("\"all-linear\" with rsLoRA adapts every Linear but lm_head, as PEFT does") {
    auto llama = pretrained::load_llama(kFixtures + "/llama_tiny/untied");
    const auto config = pretrained::load_lora_adapter(*llama.model, kLora + "/llama_all_linear");
    CHECK(config.target_modules_pattern == "all-linear");
    CHECK(config.use_rslora);
    const auto layers = nn::lora_layers(*llama.model);
    CHECK(layers.size() == 14);
    for (const auto& [path, layer] : layers) CHECK(path != "lm_head");
    CHECK(layers[0].second->lora_options().scaling() == doctest::Approx(4.0 / std::sqrt(2.0)));
    // Every layer adapted with B ~ N(0, 0.5) at scaling 2.83 amplifies rounding: PyTorch's own
    // float32 logits here are 6.7e-6 (relative) from the same model run in float64, and OpenBLAS's
    // SkylakeX kernels land 1.0e-5 from PyTorch's. The bound is three times float32's own error.
    on_every_kernel_set([&] {
      CHECK(relative_diff(llama_logits(*llama.model),
                          golden().to_float("llama_all_linear.logits")) < 2e-5);
    });
  }

  TEST_CASE("a PEFT adapter on GPT-2's Conv1D layers: logits, loss and gradients equal PyTorch's") {
    auto gpt2 = pretrained::load_gpt2(kFixtures + "/gpt2_tiny/plain");
    const auto config = pretrained::load_lora_adapter(*gpt2.model, kLora + "/gpt2");
    CHECK(config.fan_in_fan_out);
    const auto layers = nn::lora_layers(*gpt2.model);
    REQUIRE(layers.size() == 6);  // c_attn, and c_proj of the attention and of the MLP
    CHECK(layers[1].first == "transformer.h.0.attn.c_proj");
    CHECK(layers[2].first == "transformer.h.0.mlp.c_proj");
    gpt2.model->eval();
    const IndexArray idx = golden().to_int64("gpt2.idx"),
                     targets = golden().to_int64("gpt2.targets");
    on_every_kernel_set([&] {
      {
        autograd::NoGradGuard no_grad;
        const Array logits = gpt2.model->forward(idx).data();
        CHECK(relative_diff(head_of(logits, 256), golden().to_float("gpt2.logits_head")) < 2e-6);
        CHECK(relative_diff(logsumexp_rows(logits), golden().to_float("gpt2.logsumexp")) < 2e-6);
      }
      gpt2.model->zero_grad();
      const Tensor loss = gpt2.model->loss(idx, targets);
      loss.backward();
      CHECK(loss.item() == doctest::Approx(golden().to_float("gpt2.loss")()).epsilon(1e-6));
      CHECK(check_adapter_gradients(*gpt2.model, "gpt2", 1e-5) == 12);
    });
  }

  TEST_CASE("GPT-2's merged weights equal PEFT's fan_in_fan_out merge once saved as Conv1D") {
    auto gpt2 = pretrained::load_gpt2(kFixtures + "/gpt2_tiny/plain");
    pretrained::load_lora_adapter(*gpt2.model, kLora + "/gpt2");
    nn::merge_lora(*gpt2.model);
    const fs::path dir = testing::fresh_folder("lora_parity", "gpt2_merged");
    pretrained::save_gpt2(*gpt2.model, dir.string());
    const io::SafetensorsFile saved = io::load_safetensors((dir / "model.safetensors").string());
    std::size_t compared = 0;
    for (const auto& [name, p] : gpt2.model->named_parameters()) {
      const std::string key = "gpt2.merged." + name;
      if (!golden().contains(key)) continue;
      CAPTURE(name);
      const Array conv1d = golden().to_float(key);  // (in, out), as GPT-2 stores it
      CHECK(relative_diff(transposed(p.data()), conv1d) < 1e-6);
      CHECK(relative_diff(saved.to_float(name), conv1d) < 1e-6);
      ++compared;
    }
    CHECK(compared == 6);
  }

  TEST_CASE("an adapter tapegrad saves holds the PEFT file's keys, shapes, values and settings") {
    for (const std::string variant : {"llama", "gpt2"}) {
      CAPTURE(variant);
      std::shared_ptr<nn::Module> model;
      if (variant == "llama")
        model = pretrained::load_llama(kFixtures + "/llama_tiny/tied").model;
      else
        model = pretrained::load_gpt2(kFixtures + "/gpt2_tiny/plain").model;
      pretrained::load_lora_adapter(*model, kLora + "/" + variant);
      const fs::path dir = testing::fresh_folder("lora_parity", "saved_" + variant);
      pretrained::save_lora_adapter(*model, dir.string(), "base-model");
      const io::SafetensorsFile ours =
          io::load_safetensors((dir / "adapter_model.safetensors").string());
      const io::SafetensorsFile peft =
          io::load_safetensors(kLora + "/" + variant + "/adapter_model.safetensors");
      REQUIRE(ours.tensors().size() == peft.tensors().size());
      for (const io::TensorRecord& t : peft.tensors()) {
        CAPTURE(t.name);
        REQUIRE(ours.has_tensor(t.name));
        CHECK(ours.record(t.name).dtype == io::Dtype::F32);
        CHECK(testing::bit_equal(ours.to_float(t.name), peft.to_float(t.name)));
      }
      CHECK(ours.metadata_value("format") == "pt");
      using json = nlohmann::json;
      const json mine = json::parse(testing::bytes_of(dir / "adapter_config.json"));
      const json theirs =
          json::parse(testing::bytes_of(kLora + "/" + variant + "/adapter_config.json"));
      for (const char* field : {"peft_type", "task_type", "r", "lora_alpha", "lora_dropout", "bias",
                                "fan_in_fan_out", "use_rslora", "use_dora", "inference_mode"})
        CHECK_MESSAGE(mine[field] == theirs[field], field);
      std::set<std::string> ours_targets = mine["target_modules"],
                            their_targets = theirs["target_modules"];
      CHECK(ours_targets == their_targets);
      CHECK(mine["base_model_name_or_path"] == "base-model");
      CHECK(pretrained::read_lora_adapter_config((dir / "adapter_config.json").string()).r == 4);
    }
  }
}  // TEST_SUITE
