// tests/pretrained/test_lora_adapter.cpp: LoRA adapter folders in PEFT's layout, in and out:
// adapter_config.json read field by field (PEFT's defaults, every refusal naming its field), every
// hostile or mismatched folder refused in one line naming the file and what is wrong, with the
// model left as it was, and an adapter made here saved whole and loaded back to the bit.
// (tests/pretrained/test_lora_parity.cpp checks values against PyTorch's.)
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include <tapegrad/autograd/grad_mode.hpp>
#include <tapegrad/core/errors.hpp>
#include <tapegrad/io.hpp>
#include <tapegrad/io/staged_folder.hpp>
#include <tapegrad/pretrained.hpp>

#include "../helpers.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
namespace fs = std::filesystem;
using json = nlohmann::json;
using pretrained::load_lora_adapter;
using pretrained::read_lora_adapter_config;
using pretrained::save_lora_adapter;

namespace {

const std::string kFixtures = std::string(TAPEGRAD_SOURCE_DIR) + "/tests/pretrained/fixtures";
const std::string kAdapter = kFixtures + "/lora_tiny/llama";  // q_proj, v_proj of llama_tiny/tied
const std::string kPrefix = "base_model.model.model.layers.";

json fixture_config() { return json::parse(testing::bytes_of(kAdapter + "/adapter_config.json")); }

io::SafetensorsFile fixture_tensors() {
  return io::load_safetensors(kAdapter + "/adapter_model.safetensors");
}

// A folder of its own holding `config` and `tensors`.
fs::path adapter_folder(const std::string& name, const json& config,
                        const io::SafetensorsFile& tensors) {
  const fs::path dir = testing::fresh_folder("lora_adapter", name);
  testing::write_file(dir / "adapter_config.json", config.dump(2));
  io::save_safetensors((dir / "adapter_model.safetensors").string(), tensors);
  return dir;
}

// The fixture's tensors with `edit` applied to a copy (name -> values; an absent name drops it).
io::SafetensorsFile edited(const std::function<void(std::map<std::string, Array>&)>& edit) {
  const io::SafetensorsFile f = fixture_tensors();
  std::map<std::string, Array> tensors;
  for (const auto& t : f.tensors()) tensors.emplace(t.name, f.to_float(t.name));
  edit(tensors);
  io::SafetensorsFile out;
  for (auto& [name, values] : tensors) out.add(name, std::move(values));
  return out;
}

// `config` with `field` set to `value`.
json with(json config, const std::string& field, json value) {
  config[field] = std::move(value);
  return config;
}

// A config file of its own: the fixture's with `edit` applied.
std::string config_file(const std::string& name, const std::function<void(json&)>& edit) {
  json config = fixture_config();
  edit(config);
  const fs::path dir = testing::fresh_folder("lora_adapter_config", name);
  testing::write_file(dir / "adapter_config.json", config.dump(2));
  return (dir / "adapter_config.json").string();
}

std::shared_ptr<nn::transformer::LlamaForCausalLM> tied_llama() {
  return pretrained::load_llama(kFixtures + "/llama_tiny/tied").model;
}

// A model no refusal has touched: no adapter, every parameter trainable.
void check_unchanged(const nn::Module& model) {
  CHECK(nn::lora_layers(model).empty());
  for (const auto& [name, p] : model.named_parameters()) CHECK_MESSAGE(p.requires_grad(), name);
}

}  // namespace

TEST_SUITE("pretrained.lora_adapter") {
  TEST_CASE("adapter_config.json: PEFT's fields, and PEFT's defaults for those absent") {
    const auto c = read_lora_adapter_config(kAdapter + "/adapter_config.json");
    CHECK(c.r == 4);
    CHECK(c.lora_alpha == 8.0);
    CHECK(c.lora_dropout == 0.05);
    CHECK(c.target_modules == std::vector<std::string>{"v_proj", "q_proj"});
    CHECK_FALSE(c.target_modules_pattern);
    CHECK_FALSE(c.fan_in_fan_out);
    CHECK_FALSE(c.use_rslora);
    CHECK(c.base_model_name_or_path == "llama_tiny/tied");
    CHECK(c.task_type == "CAUSAL_LM");
    CHECK(c.options().scaling() == 2.0);

    const auto minimal = read_lora_adapter_config(config_file("minimal", [](json& j) {
      j = json{{"peft_type", "LORA"}, {"target_modules", json::array({"q_proj"})}};
    }));
    CHECK(minimal.r == 8);  // LoraConfig's defaults
    CHECK(minimal.lora_alpha == 8.0);
    CHECK(minimal.lora_dropout == 0.0);
    CHECK(minimal.task_type == "");
    CHECK(minimal.base_model_name_or_path == "");

    const auto pattern = read_lora_adapter_config(config_file("pattern", [](json& j) {
      j["target_modules"] = R"(.*\.(q_proj|v_proj))";
      j["exclude_modules"] = "";  // PEFT's "off" values: null, false, "", [] and {}
      j["layers_to_transform"] = json::array();
    }));
    REQUIRE(pattern.target_modules_pattern);
    CHECK(pattern.targets("model.layers.0.self_attn.q_proj"));
    CHECK_FALSE(pattern.targets("model.layers.0.self_attn.k_proj"));
    CHECK_FALSE(pattern.targets("q_proj"));  // a full match, as re.fullmatch
  }

  TEST_CASE("adapter_config.json: what is not PEFT's plain LoRA is refused, naming the field") {
    const std::vector<std::tuple<std::string, std::function<void(json&)>, std::string>> cases = {
        {"peft_type", [](json& j) { j["peft_type"] = "IA3"; },
         "peft_type: expected \"LORA\", got \"IA3\": only LoRA adapters are implemented"},
        {"no_peft_type", [](json& j) { j.erase("peft_type"); }, "peft_type: expected \"LORA\""},
        {"task_type", [](json& j) { j["task_type"] = "SEQ_CLS"; },
         "task_type: expected \"CAUSAL_LM\" or null, got \"SEQ_CLS\""},
        {"bias", [](json& j) { j["bias"] = "lora_only"; },
         "bias: expected \"none\", got \"lora_only\""},
        {"r", [](json& j) { j["r"] = 0; }, "r: expected an integer in [1, 1048576], got 0"},
        {"r_text", [](json& j) { j["r"] = "4"; }, "r: expected an integer, got string \"4\""},
        {"alpha", [](json& j) { j["lora_alpha"] = -8; }, "lora_alpha: expected a number in (0"},
        {"dropout", [](json& j) { j["lora_dropout"] = 2; },
         "lora_dropout: expected a number in [0, 1]"},
        {"targets", [](json& j) { j["target_modules"] = json::array(); },
         "target_modules: expected the names of the adapted modules"},
        {"no_targets", [](json& j) { j.erase("target_modules"); },
         "target_modules: expected the names of the adapted modules"},
        {"target_kind", [](json& j) { j["target_modules"] = json::array({1}); },
         "target_modules: expected a list of module names, got an element 1"},
        {"regex", [](json& j) { j["target_modules"] = "(q_proj"; },
         "target_modules: the pattern \"(q_proj\" is not a regular expression"},
        {"dora", [](json& j) { j["use_dora"] = true; },
         "use_dora: expected it unset (null, false or empty), got true: DoRA"},
        {"rank_pattern",
         [](json& j) {
           j["rank_pattern"] = json{{"q_proj", 8}};
         },
         "rank_pattern: expected it unset (null, false or empty), got {\"q_proj\":8}: a rank per "
         "module is not implemented"},
        {"layers", [](json& j) { j["layers_to_transform"] = json::array({0}); },
         "layers_to_transform: expected it unset"},
        {"modules_to_save", [](json& j) { j["modules_to_save"] = json::array({"lm_head"}); },
         "modules_to_save: expected it unset"},
        {"pissa", [](json& j) { j["init_lora_weights"] = "pissa"; },
         "init_lora_weights: expected true, false, \"gaussian\" or \"eva\", got \"pissa\""},
        {"new_flag", [](json& j) { j["use_something_new"] = true; },
         "use_something_new: expected false, got true: a setting this reader does not implement"},
        {"not_object", [](json& j) { j = json::array(); }, "expected a JSON object of settings"},
    };
    for (const auto& [name, edit, phrase] : cases) {
      CAPTURE(name);
      const std::string path = config_file(name, edit);
      CHECK_THROWS_WITH_AS(
          read_lora_adapter_config(path),
          doctest::Contains(("read_lora_adapter_config: '" + path + "': ").c_str()),
          CheckpointError);
      CHECK_THROWS_WITH_AS(read_lora_adapter_config(path), doctest::Contains(phrase.c_str()),
                           CheckpointError);
    }
  }

  TEST_CASE("a folder without PEFT's two files is refused, naming what is there") {
    auto model = tied_llama();
    const fs::path dir = testing::fresh_folder("lora_adapter", "folders");
    CHECK_THROWS_WITH_AS(load_lora_adapter(*model, (dir / "absent").string()),
                         doctest::Contains("absent': no such folder"), CheckpointError);
    testing::write_file(dir / "file", "x");
    CHECK_THROWS_WITH_AS(load_lora_adapter(*model, (dir / "file").string()),
                         doctest::Contains("expected a folder (adapter_config.json, "
                                           "adapter_model.safetensors), got a file"),
                         CheckpointError);
    CHECK_THROWS_WITH_AS(load_lora_adapter(*model, dir.string()),
                         doctest::Contains("has no adapter_config.json"), CheckpointError);
    fs::copy_file(kAdapter + "/adapter_config.json", dir / "adapter_config.json");
    CHECK_THROWS_WITH_AS(load_lora_adapter(*model, dir.string()),
                         doctest::Contains("has no adapter_model.safetensors"), CheckpointError);
    testing::write_file(dir / "adapter_model.bin", "a pickle");
    CHECK_THROWS_WITH_AS(load_lora_adapter(*model, dir.string()),
                         doctest::Contains("holds adapter_model.bin and no "
                                           "adapter_model.safetensors. tapegrad reads safetensors "
                                           "only and never unpickles"),
                         CheckpointError);
    check_unchanged(*model);
  }

  TEST_CASE("matrices that do not fit the base model are refused, and the model stays as it was") {
    const json config = fixture_config();
    const std::string q = kPrefix + "0.self_attn.q_proj";
    using Edit = std::function<void(std::map<std::string, Array>&)>;
    const Edit none = [](auto&) {};
    const std::vector<std::tuple<std::string, json, Edit, std::string>> cases = {
        {"shape", config, Edit([&](auto& t) {
           t[q + ".lora_A.weight"] = xt::zeros<float>({4, 31});
         }),
         "'" + q + ".lora_A.weight' is (4, 31), expected (4, 32) (r, in_features) to fit Linear '" +
             q.substr(17) + "' (in_features 32, out_features 32)"},
        {"shape_b", config, Edit([&](auto& t) {
           t[q + ".lora_B.weight"] = xt::zeros<float>({30, 4});
         }),
         "'" + q + ".lora_B.weight' is (30, 4), expected (32, 4) (out_features, r)"},
        {"r", with(config, "r", 8), none,
         "'" + q + ".lora_A.weight' is (4, 32): its r 4 disagrees with r 8 in adapter_config.json"},
        {"absent_module", config, Edit([&](auto& t) {
           t[kPrefix + "7.self_attn.q_proj.lora_A.weight"] = t[q + ".lora_A.weight"];
         }),
         "'" + kPrefix +
             "7.self_attn.q_proj.lora_A.weight' names the module "
             "'model.layers.7.self_attn.q_proj', which the model does not have: the "
             "adapter is for another base model"},
        {"gpt2_on_llama", config, Edit([&](auto& t) {
           t["base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"] =
               xt::zeros<float>({4, 8});
         }),
         "'base_model.model.transformer.h.0.attn.c_attn.lora_A.weight' names the module "
         "'transformer.h.0.attn.c_attn', which the model does not have"},
        {"not_linear", with(config, "target_modules", json::array({"q_proj", "v_proj", "mlp"})),
         Edit([&](auto& t) {
           t[kPrefix + "0.mlp.lora_A.weight"] = xt::zeros<float>({4, 32});
         }),
         "'" + kPrefix +
             "0.mlp.lora_A.weight' names the module 'model.layers.0.mlp', which is "
             "not a Linear"},
        {"adapter_name", config, Edit([&](auto& t) {
           t[q + ".lora_A.default.weight"] = t[q + ".lora_A.weight"];
           t.erase(q + ".lora_A.weight");
         }),
         "unexpected key '" + q +
             ".lora_A.default.weight': it holds an adapter's name ('default'), "
             "which PEFT's saved files leave out"},
        {"no_prefix", config, Edit([&](auto& t) {
           t[q.substr(17) + ".lora_A.weight"] = t[q + ".lora_A.weight"];
           t.erase(q + ".lora_A.weight");
         }),
         "unexpected key 'model.layers.0.self_attn.q_proj.lora_A.weight': expected PEFT's "
         "base_model.model.<module path>.lora_A.weight"},
        {"half", config, Edit([&](auto& t) { t.erase(q + ".lora_B.weight"); }),
         "missing key '" + q +
             ".lora_B.weight' (model.layers.0.self_attn.q_proj has only one of "
             "its two matrices)"},
        {"untargeted", with(config, "target_modules", json::array({"q_proj"})), none,
         "'" + kPrefix +
             "0.self_attn.v_proj.lora_A.weight' adapts 'model.layers.0.self_attn."
             "v_proj', which adapter_config.json's target_modules does not name"},
        {"targeted_absent",
         with(config, "target_modules", json::array({"q_proj", "v_proj", "k_proj"})), none,
         "missing key '" + kPrefix +
             "0.self_attn.k_proj.lora_A.weight': adapter_config.json's "
             "target_modules names 'model.layers.0.self_attn.k_proj', but "
             "the file holds no adapter for it"},
        {"not_finite", config, Edit([&](auto& t) {
           t[q + ".lora_B.weight"](3, 1) = std::numeric_limits<float>::infinity();
         }),
         "'" + q + ".lora_B.weight' holds a value that is not finite"},
        {"empty", config, [](auto& t) { t.clear(); }, "holds no adapter matrices"},
    };
    for (const auto& [name, cfg, edit, phrase] : cases) {
      CAPTURE(name);
      auto model = tied_llama();
      const fs::path dir = adapter_folder(name, cfg, edited(edit));
      CHECK_THROWS_WITH_AS(
          load_lora_adapter(*model, dir.string()),
          doctest::Contains(("load_lora_adapter: '" + (dir / "adapter_model.safetensors").string() +
                             "': " + phrase)
                                .c_str()),
          CheckpointError);
      check_unchanged(*model);
    }
    {
      auto model = tied_llama();
      io::SafetensorsFile f;
      const io::SafetensorsFile base = fixture_tensors();
      for (const auto& t : base.tensors())
        if (t.name != q + ".lora_A.weight") f.add(t.name, base.to_float(t.name));
      IndexArray a = xt::zeros<std::int64_t>({4, 32});
      f.add(q + ".lora_A.weight", std::move(a));
      const fs::path int_dir = adapter_folder("integers", config, f);
      CHECK_THROWS_WITH_AS(
          load_lora_adapter(*model, int_dir.string()),
          doctest::Contains(
              ("'" + q + ".lora_A.weight' holds I64, expected floating-point").c_str()),
          CheckpointError);
      check_unchanged(*model);
    }
  }

  TEST_CASE("an adapter is loaded onto a base model: a second one on the same layers is refused") {
    auto model = tied_llama();
    const auto config = load_lora_adapter(*model, kAdapter);
    CHECK(config.r == 4);
    for (const auto& [name, p] : model->named_parameters())
      CHECK_MESSAGE(p.requires_grad() == (name.find(".lora_") != std::string::npos), name);
    CHECK(nn::parameter_groups(*model).decay.size() == 8);
    CHECK_THROWS_WITH_AS(load_lora_adapter(*model, kAdapter),
                         doctest::Contains("'model.layers.0.self_attn.q_proj' has an adapter "
                                           "already; load adapters onto the base model"),
                         CheckpointError);
    CHECK(nn::lora_layers(*model).size() == 4);
  }

  TEST_CASE("an adapter made here is saved as a whole folder and loads back to the bit") {
    auto gpt2 = pretrained::load_gpt2(kFixtures + "/gpt2_tiny/plain");
    nn::add_lora(*gpt2.model, {"c_attn"}, nn::LoRAOptions(2).lora_alpha(4).lora_dropout(0.1),
                 std::make_shared<Generator>(3));
    for (const auto& [path, layer] : nn::lora_layers(*gpt2.model)) {
      Generator g(7);
      layer->lora_B->weight.mutable_data() = randn(layer->lora_B->weight.shape(), &g);
    }
    const fs::path root = testing::fresh_folder("lora_adapter", "whole");
    const std::string target = (root / "adapter").string();
    {
      io::StagedFolder out(target, "--export-adapter");
      save_lora_adapter(*gpt2.model, out.staging().string(), "gpt2_tiny/plain");
      CHECK_FALSE(fs::exists(fs::path(target) / "adapter_model.safetensors"));  // not yet
      out.commit();
    }
    CHECK(fs::exists(fs::path(target) / "adapter_config.json"));
    const auto config = read_lora_adapter_config(target + "/adapter_config.json");
    CHECK(config.fan_in_fan_out);  // GPT-2's Conv1D
    CHECK(config.target_modules == std::vector<std::string>{"c_attn"});
    CHECK(config.r == 2);
    CHECK(config.lora_alpha == 4.0);
    CHECK(config.lora_dropout == 0.1);
    CHECK(config.base_model_name_or_path == "gpt2_tiny/plain");

    auto again = pretrained::load_gpt2(kFixtures + "/gpt2_tiny/plain");
    load_lora_adapter(*again.model, target);
    const auto a = gpt2.model->named_parameters(), b = again.model->named_parameters();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i].first);
      CHECK(a[i].first == b[i].first);
      CHECK(testing::bit_equal(a[i].second.data(), b[i].second.data()));
    }
    gpt2.model->eval();
    again.model->eval();
    autograd::NoGradGuard no_grad;
    const IndexArray idx{{1, 50, 700, 3}};
    CHECK(testing::bit_equal(gpt2.model->forward(idx).data(), again.model->forward(idx).data()));
  }

  TEST_CASE("the saved target_modules name exactly the layers adapted, by the shortest end") {
    const auto targets_after = [](const std::vector<std::string>& given) {
      auto gpt2 = pretrained::load_gpt2(kFixtures + "/gpt2_tiny/plain");
      nn::add_lora(*gpt2.model, given, nn::LoRAOptions(2));
      return pretrained::lora_adapter_config_of(*gpt2.model).target_modules;
    };
    CHECK(targets_after({"c_proj"}) == std::vector<std::string>{"c_proj"});
    CHECK(targets_after({"attn.c_proj"}) == std::vector<std::string>{"attn.c_proj"});
    CHECK(targets_after({"c_attn", "c_fc"}) == std::vector<std::string>{"c_attn", "c_fc"});
    CHECK(targets_after({"h.1.mlp.c_proj"}) == std::vector<std::string>{"1.mlp.c_proj"});
    auto llama = tied_llama();
    nn::add_lora(*llama, {"v_proj", "q_proj"}, nn::LoRAOptions(2));
    const auto c = pretrained::lora_adapter_config_of(*llama, "x");
    CHECK(c.target_modules == std::vector<std::string>{"q_proj", "v_proj"});
    CHECK_FALSE(c.fan_in_fan_out);
  }

  TEST_CASE("saving refuses a model without adapters, or adapters PEFT's one config cannot hold") {
    auto llama = tied_llama();
    const fs::path dir = testing::fresh_folder("lora_adapter", "refused_save");
    CHECK_THROWS_WITH_AS(save_lora_adapter(*llama, dir.string()),
                         doctest::Contains("expected a model with LoRA adapters"), ValueError);
    nn::add_lora(*llama, {"q_proj"}, nn::LoRAOptions(4));
    nn::add_lora(*llama, {"v_proj"}, nn::LoRAOptions(2));
    CHECK_THROWS_WITH_AS(save_lora_adapter(*llama, dir.string()),
                         doctest::Contains("expected every adapter to have the same r, lora_alpha, "
                                           "lora_dropout and use_rslora"),
                         ValueError);
    CHECK_FALSE(fs::exists(dir / "adapter_config.json"));
  }
}  // TEST_SUITE
