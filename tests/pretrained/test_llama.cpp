// tests/pretrained/test_llama.cpp: Llama folders in Hugging Face's layout, in and out, on small
// models this file builds: config.json read field by field (transformers' defaults, every refusal
// naming its field), save_pretrained's layout written and read back to the bit, sharded folders
// and their index, and every hostile folder refused before a weight is read, in one line naming
// the file and the key. (tests/pretrained/test_llama_parity.cpp checks values against PyTorch's.)
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>

#include <xtensor/xbuilder.hpp>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/core/memory.hpp>
#include <tapegrad/io.hpp>
#include <tapegrad/nn/skip_init.hpp>
#include <tapegrad/pretrained.hpp>

#include "../helpers.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
namespace fs = std::filesystem;
namespace tt = tapegrad::nn::transformer;
using pretrained::load_llama;
using pretrained::read_llama_config;
using pretrained::save_llama;

namespace {

tt::LlamaConfig tiny_config(bool tied = false) {
  return tt::LlamaConfig()
      .vocab_size(37)
      .hidden_size(16)
      .intermediate_size(24)
      .num_hidden_layers(2)
      .num_attention_heads(4)
      .num_key_value_heads(2)
      .max_position_embeddings(16)
      .tie_word_embeddings(tied);
}

std::shared_ptr<tt::LlamaForCausalLM> tiny_model(bool tied = false, std::uint64_t seed = 1) {
  return std::make_shared<tt::LlamaForCausalLM>(tiny_config(tied),
                                                std::make_shared<Generator>(seed));
}

// A folder holding `model` as save_llama writes it.
fs::path saved(const std::string& name, const tt::LlamaForCausalLM& model) {
  const fs::path dir = testing::fresh_folder("llama", name);
  save_llama(model, dir.string());
  return dir;
}

// The message of loading `dir`, which must be refused with a CheckpointError.
std::string refusal(const fs::path& dir) {
  try {
    load_llama(dir.string());
  } catch (const CheckpointError& e) {
    return e.what();
  }
  FAIL("expected ", dir.string(), " to be refused");
  return "";
}

// The file rewritten by `edit`, which gets its contents.
void edit_file(const fs::path& file, const std::function<void(io::SafetensorsFile&)>& edit) {
  io::SafetensorsFile f = io::load_safetensors(file.string());
  io::SafetensorsFile out;
  edit(f);
  for (const auto& t : f.tensors())
    out.add_raw(t.name, t.dtype, t.shape, {t.bytes().begin(), t.bytes().end()});
  for (const auto& [k, v] : f.metadata())
    if (k.rfind("tapegrad.", 0) != 0) out.set_metadata(k, v);  // (checksums written afresh)
  io::save_safetensors(file.string(), out);
}

// An edit that drops `key`.
std::function<void(io::SafetensorsFile&)> drop(const std::string& key) {
  return [key](io::SafetensorsFile& f) {
    io::SafetensorsFile kept;
    for (const auto& t : f.tensors())
      if (t.name != key) kept.add_raw(t.name, t.dtype, t.shape, {t.bytes().begin(), t.bytes().end()});
    f = std::move(kept);
  };
}

// The tensors of `dir`/model.safetensors split into two shards and an index mapping them.
void shard(const fs::path& dir) {
  const io::SafetensorsFile f = io::load_safetensors((dir / "model.safetensors").string());
  io::SafetensorsFile parts[2];
  std::string map;
  for (std::size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    const std::size_t part = i % 2;
    parts[part].add_raw(t.name, t.dtype, t.shape, {t.bytes().begin(), t.bytes().end()});
    map += std::string(map.empty() ? "" : ", ") + "\"" + t.name + "\": \"model-0000" +
           std::to_string(part + 1) + "-of-00002.safetensors\"";
  }
  for (std::size_t part = 0; part < 2; ++part)
    io::save_safetensors(
        (dir / ("model-0000" + std::to_string(part + 1) + "-of-00002.safetensors")).string(),
        parts[part]);
  testing::write_file(dir / "model.safetensors.index.json",
                      "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {" + map + "}}");
  fs::remove(dir / "model.safetensors");
}

void check_same_parameters(const tt::LlamaForCausalLM& a, const tt::LlamaForCausalLM& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i].first);
    CHECK(pa[i].first == pb[i].first);
    CHECK(testing::bit_equal(pa[i].second.data(), pb[i].second.data()));
  }
}

// A config.json: the tiny sizes, then `extra` fields ("" for none), with model_type llama.
std::string config_text(const std::string& extra) {
  return "{\"model_type\": \"llama\", \"vocab_size\": 37, \"hidden_size\": 16, "
         "\"intermediate_size\": 24, \"num_hidden_layers\": 2, \"num_attention_heads\": 4" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

fs::path config_file(const std::string& name, const std::string& text) {
  const fs::path path = testing::fresh_folder("llama_config", name) / "config.json";
  testing::write_file(path, text);
  return path;
}

// The message of reading a config.json of `text`, which must be refused as InvalidConfig.
std::string config_refusal(const std::string& name, const std::string& text) {
  try {
    read_llama_config(config_file(name, text).string());
  } catch (const CheckpointError& e) {
    CHECK(e.kind == "InvalidConfig");
    return e.what();
  }
  FAIL("expected the config ", name, " to be refused");
  return "";
}

}  // namespace

TEST_SUITE("pretrained.llama") {
  TEST_CASE("read_llama_config reads the sizes, and transformers' defaults for the rest") {
    const auto c = read_llama_config(config_file("minimal", config_text("")).string());
    CHECK(c.model.vocab_size() == 37);
    CHECK(c.model.hidden_size() == 16);
    CHECK(c.model.kv_heads() == 4);  // num_key_value_heads defaults to num_attention_heads
    CHECK(c.model.head_size() == 4);
    CHECK(c.model.rms_norm_eps() == 1e-6);
    CHECK(c.model.rope_theta() == 10000.0);
    CHECK(c.model.max_position_embeddings() == 2048);
    CHECK_FALSE(c.model.tie_word_embeddings());
    CHECK_FALSE(c.model.rope_scaling());
    CHECK_FALSE(c.bos_token_id);
    CHECK(c.eos_token_ids.empty());

    const auto d = read_llama_config(
        config_file("full",
                    config_text("\"num_key_value_heads\": 2, \"head_dim\": 6, \"rms_norm_eps\": "
                                "1e-5, \"rope_theta\": 500000.0, \"max_position_embeddings\": 64, "
                                "\"tie_word_embeddings\": true, \"bos_token_id\": 1, "
                                "\"eos_token_id\": [2, 5], \"hidden_act\": \"silu\", "
                                "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 4}, "
                                "\"attention_bias\": true, \"pretraining_tp\": 1, "
                                "\"torch_dtype\": \"bfloat16\""))
            .string());
    CHECK(d.model.kv_heads() == 2);
    CHECK(d.model.head_size() == 6);  // head_dim given: not hidden_size / heads
    CHECK(d.model.rope_theta() == 500000.0);
    CHECK(d.model.tie_word_embeddings());
    CHECK(d.model.attention_bias());
    CHECK(d.bos_token_id == 1);
    CHECK(d.eos_token_ids == std::vector<std::int64_t>{2, 5});
    REQUIRE(d.model.rope_scaling());
    CHECK(d.model.rope_scaling()->rope_type == "linear");
    CHECK(d.model.rope_scaling()->factor == 4.0);
    // written back and read again: the same
    const auto e = read_llama_config(config_file("round_trip", d.to_json()).string());
    CHECK(e.to_json() == d.to_json());
    CHECK(e.eos_token_list);
  }

  TEST_CASE("read_llama_config refuses what the Llama does not compute, naming the field") {
    const auto refused = [](const std::string& name, const std::string& extra,
                            const std::string& expected) {
      CAPTURE(name);
      const std::string m = config_refusal(name, config_text(extra));
      CHECK_MESSAGE(m.find(expected) != std::string::npos, m);
    };
    refused("kv", "\"num_key_value_heads\": 3",
            "num_key_value_heads: expected a divisor of num_attention_heads (4)");
    refused("kv_range", "\"num_key_value_heads\": 0",
            "num_key_value_heads: expected an integer in [1, 4096], got 0");
    refused("head_dim_odd", "\"head_dim\": 5",
            "head_dim: expected an even head size (its columns turn in pairs), got 5");
    refused("act", "\"hidden_act\": \"gelu\"", "hidden_act: expected \"silu\"");
    refused("eps", "\"rms_norm_eps\": 0", "rms_norm_eps: expected a number in (0, 1), got 0");
    refused("theta", "\"rope_theta\": -1", "rope_theta: expected a number in (0, ");
    refused("dynamic", "\"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}",
            "rope_scaling: rope_type \"dynamic\" is not implemented (implemented: null or "
            "\"default\", \"linear\", \"llama3\")");
    refused("yarn", "\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 2.0}",
            "rope_type \"yarn\" is not implemented");
    refused("scaling_factor", "\"rope_scaling\": {\"rope_type\": \"linear\"}",
            "rope_scaling.factor: missing (rope_type \"linear\" needs it)");
    refused("llama3_missing", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}",
            "rope_scaling.low_freq_factor: missing");
    refused("scaling_type", "\"rope_scaling\": 3", "rope_scaling: expected null or an object");
    refused("dropout", "\"attention_dropout\": 2", "attention_dropout: expected a number in [0, 1]");
    refused("eos", "\"eos_token_id\": \"</s>\"", "eos_token_id: expected a token id");
    refused("tie", "\"tie_word_embeddings\": 1", "tie_word_embeddings: expected a boolean");

    std::string m = config_refusal(
        "heads", "{\"model_type\": \"llama\", \"vocab_size\": 37, \"hidden_size\": 16, "
                 "\"intermediate_size\": 24, \"num_hidden_layers\": 2, \"num_attention_heads\": 3}");
    CHECK(m.find("num_attention_heads: expected a divisor of hidden_size (16) when head_dim is not "
                 "given, got 3") != std::string::npos);
    m = config_refusal(
        "odd_head", "{\"model_type\": \"llama\", \"vocab_size\": 37, \"hidden_size\": 12, "
                    "\"intermediate_size\": 24, \"num_hidden_layers\": 2, \"num_attention_heads\": 4}");
    CHECK(m.find("num_attention_heads: expected an even head size hidden_size / "
                 "num_attention_heads (its columns turn in pairs), got 12 / 4 = 3") !=
          std::string::npos);
    m = config_refusal("gpt2", "{\"model_type\": \"gpt2\", \"n_embd\": 8}");
    CHECK(m.find("model_type: expected \"llama\", got \"gpt2\"") != std::string::npos);
    m = config_refusal("missing", "{\"model_type\": \"llama\", \"vocab_size\": 37}");
    CHECK(m.find("hidden_size: missing (a Llama config.json gives vocab_size, hidden_size, "
                 "intermediate_size, num_hidden_layers and num_attention_heads)") !=
          std::string::npos);
    m = config_refusal("huge", config_text("\"max_position_embeddings\": 100000000"));
    CHECK(m.find("max_position_embeddings: expected an integer in [1, 2097152]") !=
          std::string::npos);
    m = config_refusal("float", "{\"model_type\": \"llama\", \"vocab_size\": 37.0}");
    CHECK(m.find("vocab_size: expected an integer, got number 37.0") != std::string::npos);
    CHECK(m.find("read_llama_config: '") == 0);
  }

  TEST_CASE("save_llama writes save_pretrained's layout: the model's keys, no tied head") {
    for (const bool tied : {false, true}) {
      CAPTURE(tied);
      const auto model = tiny_model(tied);
      const fs::path dir = saved(tied ? "tied_layout" : "untied_layout", *model);
      const io::SafetensorsFile f = io::load_safetensors((dir / "model.safetensors").string());
      CHECK(f.metadata_value("format") == "pt");
      CHECK(f.has_tensor("model.embed_tokens.weight"));
      CHECK(f.has_tensor("model.layers.1.self_attn.k_proj.weight"));
      CHECK(f.record("model.layers.1.self_attn.k_proj.weight").shape == Shape{8, 16});
      CHECK(f.record("model.layers.0.mlp.down_proj.weight").shape == Shape{16, 24});
      CHECK(f.has_tensor("model.norm.weight"));
      CHECK(f.contains("lm_head.weight") == !tied);
      CHECK_FALSE(f.contains("model.rotary_emb.cos"));
      CHECK(f.tensors().size() == (tied ? 20u : 21u));
      const auto c = read_llama_config((dir / "config.json").string());
      CHECK(c.model.num_key_value_heads() == 2);
      CHECK(c.model.tie_word_embeddings() == tied);
    }
  }

  TEST_CASE("load_llama after save_llama gives the same bits, and the same logits") {
    for (const bool tied : {false, true}) {
      CAPTURE(tied);
      const auto model = tiny_model(tied, 7);
      const fs::path dir = saved(tied ? "tied_round_trip" : "untied_round_trip", *model);
      const auto loaded = load_llama(dir.string());
      check_same_parameters(*model, *loaded.model);
      model->eval();
      loaded.model->eval();
      const IndexArray idx = {{1, 5, 9, 36, 0, 2}};
      CHECK(testing::bit_equal(model->forward(idx).data(), loaded.model->forward(idx).data()));
      // and sharded: the same weights from two files and an index
      shard(dir);
      check_same_parameters(*model, *load_llama(dir.string()).model);
    }
  }

  TEST_CASE("LlamaWeights reads into a model its trainer built, and refuses one of other sizes") {
    const auto model = tiny_model(false, 3);
    const fs::path dir = saved("weights", *model);
    const pretrained::LlamaWeights weights(dir.string(), tiny_config());
    CHECK(weights.files() == std::vector<std::string>{(dir / "model.safetensors").string()});
    tt::LlamaForCausalLM other(tiny_config(), std::make_shared<Generator>(9));
    weights.read_into(other);
    check_same_parameters(*model, other);
    tt::LlamaForCausalLM wider(tiny_config().intermediate_size(32));
    CHECK_THROWS_WITH_AS(weights.read_into(wider),
                         doctest::Contains("LlamaWeights::read_into: expected a LlamaForCausalLM "
                                           "of vocab_size 37, hidden_size 16, intermediate_size "
                                           "24"),
                         ValueError);
  }

  TEST_CASE("load_llama refuses a missing, unexpected or misshapen key before reading a weight") {
    const auto model = tiny_model();
    const auto with_edit = [&](const std::string& name,
                               const std::function<void(io::SafetensorsFile&)>& edit) {
      const fs::path dir = saved(name, *model);
      edit_file(dir / "model.safetensors", edit);
      return dir;
    };
    std::string m = refusal(with_edit("missing", drop("model.layers.1.mlp.up_proj.weight")));
    CHECK(m.find("model.safetensors': missing key 'model.layers.1.mlp.up_proj.weight' (a Llama "
                 "(config.json: vocab_size 37") != std::string::npos);
    CHECK(m.find("has 21 weights)") != std::string::npos);

    m = refusal(with_edit("extra", [](io::SafetensorsFile& f) {
      f.add("model.layers.2.input_layernorm.weight", Array(xt::ones<float>({16})));
    }));
    CHECK(m.find("unexpected key 'model.layers.2.input_layernorm.weight': a Llama (config.json: ") !=
          std::string::npos);

    m = refusal(with_edit("shape", [](io::SafetensorsFile& f) {
      drop("model.layers.0.self_attn.k_proj.weight")(f);  // as if every head had its own keys
      f.add("model.layers.0.self_attn.k_proj.weight", Array(xt::zeros<float>({16, 16})));
    }));
    CHECK(m.find("'model.layers.0.self_attn.k_proj.weight' is (16, 16), config.json says (8, 16)") !=
          std::string::npos);
    CHECK(m.find("num_key_value_heads 2") != std::string::npos);

    m = refusal(with_edit("dtype", [](io::SafetensorsFile& f) {
      drop("model.norm.weight")(f);
      f.add("model.norm.weight", IndexArray(xt::zeros<std::int64_t>({16})));
    }));
    CHECK(m.find("'model.norm.weight' holds I64, expected floating-point weights") !=
          std::string::npos);

    m = refusal(with_edit("inv_freq_shape", [](io::SafetensorsFile& f) {
      f.add("model.layers.0.self_attn.rotary_emb.inv_freq", Array(xt::ones<float>({3})));
    }));
    CHECK(m.find("'model.layers.0.self_attn.rotary_emb.inv_freq' is (3,), expected the rotary "
                 "buffer (2,) (head_dim / 2)") != std::string::npos);

    // older files' rotary buffers, of the right shape, are skipped
    const fs::path old = with_edit("inv_freq", [](io::SafetensorsFile& f) {
      f.add("model.layers.1.self_attn.rotary_emb.inv_freq", Array{1.0f, 0.01f});
    });
    check_same_parameters(*model, *load_llama(old.string()).model);
  }

  TEST_CASE("a tied model: a stored lm_head.weight must be the token table") {
    const auto model = tiny_model(true, 5);
    const fs::path same = saved("tied_head_same", *model);
    edit_file(same / "model.safetensors", [&](io::SafetensorsFile& f) {
      f.add("lm_head.weight", Array(model->token_embedding().data()));
    });
    check_same_parameters(*model, *load_llama(same.string()).model);
    const fs::path other = saved("tied_head_other", *model);
    edit_file(other / "model.safetensors", [&](io::SafetensorsFile& f) {
      Array head = model->token_embedding().data();
      head(3, 2) += 1.0f;
      f.add("lm_head.weight", std::move(head));
    });
    const std::string m = refusal(other);
    CHECK(m.find("lm_head.weight differs from model.embed_tokens.weight at (3, 2)") !=
          std::string::npos);
    CHECK(m.find("config.json says tie_word_embeddings true") != std::string::npos);
  }

  TEST_CASE("load_llama refuses weights that are not finite, naming the key") {
    const auto model = tiny_model();
    const fs::path dir = saved("nan", *model);
    edit_file(dir / "model.safetensors", [](io::SafetensorsFile& f) {
      drop("model.layers.1.mlp.gate_proj.weight")(f);
      Array w = xt::zeros<float>({24, 16});
      w(2, 1) = NAN;
      f.add("model.layers.1.mlp.gate_proj.weight", std::move(w));
    });
    CHECK(refusal(dir).find("'model.layers.1.mlp.gate_proj.weight' holds nan at flat position 33") !=
          std::string::npos);
  }

  TEST_CASE("a sharded folder: every key in the file its index names, every file in the folder") {
    const auto model = tiny_model();
    const auto sharded = [&](const std::string& name) {
      const fs::path dir = saved(name, *model);
      shard(dir);
      return dir;
    };
    const auto rewrite_index = [](const fs::path& dir, const std::string& from,
                                  const std::string& to) {
      std::string text = testing::bytes_of(dir / "model.safetensors.index.json");
      REQUIRE(text.find(from) != std::string::npos);
      text.replace(text.find(from), from.size(), to);
      testing::write_file(dir / "model.safetensors.index.json", text);
    };
    fs::path dir = sharded("outside");
    rewrite_index(dir, "\"model.norm.weight\": \"model-0000",
                  "\"model.norm.weight\": \"../x/model-0000");
    std::string m = refusal(dir);
    CHECK(m.find("weight_map['model.norm.weight']: expected the name of a file in the folder, got "
                 "\"../x/model-0000") != std::string::npos);

    dir = sharded("absent_file");
    rewrite_index(dir, "\"model.norm.weight\": \"model-0000",
                  "\"model.norm.weight\": \"absent-0000");
    m = refusal(dir);
    CHECK(m.find("weight_map['model.norm.weight'] names 'absent-0000") != std::string::npos);
    CHECK(m.find("which is not in the folder") != std::string::npos);

    dir = sharded("wrong_file");  // model.norm.weight is in one shard, the index names the other
    {
      const std::string text = testing::bytes_of(dir / "model.safetensors.index.json");
      const std::string key = "\"model.norm.weight\": \"model-0000";
      const char shard_digit = text[text.find(key) + key.size()];
      rewrite_index(dir, key + shard_digit, key + (shard_digit == '1' ? '2' : '1'));
    }
    m = refusal(dir);
    CHECK(m.find("holds 'model.norm.weight', which model.safetensors.index.json maps to") !=
          std::string::npos);
    CHECK(m.find("a key is in exactly one file") != std::string::npos);

    dir = sharded("unmapped");
    rewrite_index(dir, "\"model.norm.weight\": ", "\"model.norm.weight.unused\": ");
    m = refusal(dir);
    CHECK(m.find("holds 'model.norm.weight', which model.safetensors.index.json does not map") !=
          std::string::npos);

    dir = sharded("not_json");
    testing::write_file(dir / "model.safetensors.index.json", "{\"weight_map\": [1, 2]}");
    m = refusal(dir);
    CHECK(m.find("expected a JSON object with a \"weight_map\" object of key -> file name") !=
          std::string::npos);
  }

  TEST_CASE("load_llama refuses a folder without safetensors, and a pickle, saying how to convert") {
    const fs::path empty = testing::fresh_folder("llama", "empty");
    testing::write_file(empty / "config.json", config_text(""));
    std::string m = refusal(empty);
    CHECK(m.find("has no model.safetensors nor model.safetensors.index.json") != std::string::npos);
    testing::write_file(empty / "pytorch_model.bin", "not read");
    m = refusal(empty);
    CHECK(m.find("holds pytorch_model.bin and no model.safetensors") != std::string::npos);
    CHECK(m.find("never unpickles") != std::string::npos);
    CHECK(refusal(empty / "absent").find("no such folder") != std::string::npos);
    const fs::path no_config = testing::fresh_folder("llama", "no_config");
    CHECK(refusal(no_config).find("has no config.json") != std::string::npos);
  }

  TEST_CASE("load_llama refuses a model larger than the machine's memory before allocating it") {
    // The sizes of a model of some 290 GB in float32, its keys and shapes all there: the header
    // of a BF16 model.safetensors written by hand, and the file made as long as its data says by
    // a sparse resize, which costs nothing on disk.
    const tt::LlamaConfig huge = tiny_config()
                                     .vocab_size(1 << 22)
                                     .hidden_size(1 << 14)
                                     .intermediate_size(1 << 16)
                                     .num_hidden_layers(1)
                                     .num_attention_heads(128)
                                     .num_key_value_heads(8);
    if (double(machine_memory_bytes()) > 3e11) return;  // (a machine that holds it)
    const fs::path dir = testing::fresh_folder("llama", "huge");
    testing::write_file(dir / "config.json", pretrained::llama_folder_config(huge).to_json());
    const std::size_t V = 1 << 22, C = 1 << 14, F = 1 << 16, KD = 8 * 128;
    const std::vector<std::pair<std::string, std::vector<std::size_t>>> weights = {
        {"model.embed_tokens.weight", {V, C}},
        {"model.layers.0.self_attn.q_proj.weight", {C, C}},
        {"model.layers.0.self_attn.k_proj.weight", {KD, C}},
        {"model.layers.0.self_attn.v_proj.weight", {KD, C}},
        {"model.layers.0.self_attn.o_proj.weight", {C, C}},
        {"model.layers.0.mlp.gate_proj.weight", {F, C}},
        {"model.layers.0.mlp.up_proj.weight", {F, C}},
        {"model.layers.0.mlp.down_proj.weight", {C, F}},
        {"model.layers.0.input_layernorm.weight", {C}},
        {"model.layers.0.post_attention_layernorm.weight", {C}},
        {"model.norm.weight", {C}},
        {"lm_head.weight", {V, C}}};
    std::string header = "{";
    std::size_t offset = 0;
    for (const auto& [name, shape] : weights) {
      std::size_t bytes = 2;
      std::string dims;
      for (const std::size_t d : shape) {
        bytes *= d;
        dims += (dims.empty() ? "" : ",") + std::to_string(d);
      }
      header += (header.size() > 1 ? "," : "") + std::string("\"") + name +
                "\":{\"dtype\":\"BF16\",\"shape\":[" + dims + "],\"data_offsets\":[" +
                std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
      offset += bytes;
    }
    header += "}";
    header += std::string((8 - header.size() % 8) % 8, ' ');
    std::string length(8, '\0');
    for (std::size_t b = 0; b < 8; ++b) length[b] = char((header.size() >> (8 * b)) & 0xff);
    testing::write_file(dir / "model.safetensors", length + header);
    fs::resize_file(dir / "model.safetensors", 8 + header.size() + offset);
    const std::string m = refusal(dir);
    CHECK_MESSAGE(m.find("the model of config.json's sizes needs") != std::string::npos, m);
    CHECK(m.find("more than the") != std::string::npos);
    fs::remove(dir / "model.safetensors");
  }

  TEST_CASE("read_model_type tells a Llama folder from a GPT-2 one") {
    const fs::path dir = saved("model_type", *tiny_model());
    CHECK(pretrained::read_model_type(dir.string()) == "llama");
    testing::write_file(dir / "config.json", "{\"model_type\": \"gpt2\"}");
    CHECK(pretrained::read_model_type(dir.string()) == "gpt2");
  }
}  // TEST_SUITE
