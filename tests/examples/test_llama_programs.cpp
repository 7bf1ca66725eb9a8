// tests/examples/test_llama_programs.cpp: the GPT programs on a Llama folder in Hugging Face's
// layout, with LoRA adapters in PEFT's: gpt_eval scores a text (its loss the library's own count,
// window k reading tokens [kW, kW + W)), with and without --adapter; gpt_sample samples with the
// cache; gpt --init-from fine-tunes the folder, whole or with --lora-r, and writes what it trained
// (--export-hf, --export-adapter, --merge-adapter). The folder is a tiny Llama (2 layers, width
// 16, grouped-query attention) with a byte-level BPE tokenizer.json, written here. Every refusal
// ends with status 2 and one line naming what is wrong.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../fortune_corpus.hpp"
#include "../helpers.hpp"

#include "run_program.hpp"
#include "tiny_llama.hpp"

#if defined(TAPEGRAD_GPT) && defined(TAPEGRAD_GPT_EVAL) && defined(TAPEGRAD_GPT_SAMPLE)

namespace {

namespace fs = std::filesystem;
namespace tt = tapegrad::nn::transformer;
using namespace tapegrad;
using tapegrad::testing::ProgramOutput;

const fs::path& kTokenizer = tapegrad::testing::kTinyLlamaTokenizer;

ProgramOutput run(const std::string& program, const std::string& args) {
  return tapegrad::testing::run_program(program, args, 600);
}

std::string q(const fs::path& p) { return tapegrad::testing::quoted(p.string()); }

data::Tokenizer tokenizer() {
  return data::Tokenizer(data::HFTokenizer::load(kTokenizer.string()));
}

using tapegrad::testing::tiny_llama;  // dir/llama: the model and its tokenizer.json

// A LoRA adapter on q_proj and v_proj of the Llama in `base`, B drawn so that it changes the
// logits, in dir/adapter.
fs::path adapter_for(const fs::path& base, const fs::path& dir) {
  auto llama = pretrained::load_llama(base.string());
  nn::add_lora(*llama.model, {"q_proj", "v_proj"}, nn::LoRAOptions(4).lora_alpha(8),
               std::make_shared<Generator>(5));
  Generator g(6);
  for (auto& [path, layer] : nn::lora_layers(*llama.model)) {
    normal_(layer->lora_B->weight.mutable_data(), 0.0, 0.3, &g);
  }
  pretrained::save_lora_adapter(*llama.model, (dir / "adapter").string(), base.string());
  return dir / "adapter";
}

fs::path text_file(const fs::path& dir) {
  std::ofstream(dir / "text.txt", std::ios::binary) << tapegrad::testing::fortune_corpus(12, 11);
  return dir / "text.txt";
}

// The lines a program said, without the library's banner and the notes before a refusal.
int lines_said(const std::string& text) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);)
    n += !line.empty() && line.rfind("tapegrad ", 0) != 0 && line.rfind("note: ", 0) != 0;
  return n;
}

// The value of `key=` in the line that starts with `prefix`.
double value_in(const std::string& text, const std::string& prefix, const std::string& key) {
  const auto line = text.find(prefix);
  REQUIRE(line != std::string::npos);
  const auto at = text.find(" " + key + "=", line);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + key.size() + 2));
}

// The mean loss of the first `windows` windows of W tokens of `text` (window k reads tokens
// [kW, kW + W) and predicts the next of each), by the library.
double windows_loss(tt::LlamaForCausalLM& model, const fs::path& text, std::size_t W,
                    std::size_t windows) {
  model.eval();
  autograd::NoGradGuard no_grad;
  const std::vector<std::int64_t> ids =
      tokenizer().encode(tapegrad::testing::bytes_of(text), "the text");
  double nats = 0;
  std::size_t count = 0;
  for (std::size_t k = 0; k < windows; ++k) {
    IndexArray x = IndexArray::from_shape({1, W}), y = x;
    for (std::size_t t = 0; t < W; ++t) x(0, t) = ids[k * W + t], y(0, t) = ids[k * W + t + 1];
    nats += double(model.loss(x, y).item()) * double(W);
    count += W;
  }
  return nats / double(count);
}

}  // namespace

TEST_SUITE("examples.llama") {
  TEST_CASE(
      "gpt_eval scores a text with a Llama folder, and with a LoRA adapter: the library's "
      "loss over windows [kW, kW + W)") {
    const fs::path dir = tapegrad::testing::fresh_folder("llama_programs", "eval");
    const fs::path model_dir = tiny_llama(dir), adapter = adapter_for(model_dir, dir),
                   text = text_file(dir);
    const std::string args = " --text " + q(text) + " --window 8 --max-windows 3 --batch-size 2";
    const ProgramOutput plain = run(TAPEGRAD_GPT_EVAL, "--model " + q(model_dir) + args);
    INFO(plain.text);
    REQUIRE(plain.status == 0);
    CHECK(plain.text.find("gpt_eval: Hugging Face Llama folder") != std::string::npos);
    CHECK(plain.text.find("tokenizer hf") != std::string::npos);
    CHECK(value_in(plain.text, "gpt_eval result:", "tokens") == 24);
    auto base = pretrained::load_llama(model_dir.string());
    const double want = windows_loss(*base.model, text, 8, 3);
    CHECK(value_in(plain.text, "gpt_eval result:", "loss") == doctest::Approx(want).epsilon(1e-3));

    const ProgramOutput adapted =
        run(TAPEGRAD_GPT_EVAL, "--model " + q(model_dir) + " --adapter " + q(adapter) + args);
    INFO(adapted.text);
    REQUIRE(adapted.status == 0);
    CHECK(adapted.text.find("with the LoRA adapter") != std::string::npos);
    auto with = pretrained::load_llama(model_dir.string());
    pretrained::load_lora_adapter(*with.model, adapter.string());
    const double want_adapted = windows_loss(*with.model, text, 8, 3);
    CHECK(std::abs(want_adapted - want) > 1e-3);  // the adapter changes the scores
    CHECK(value_in(adapted.text, "gpt_eval result:", "loss") ==
          doctest::Approx(want_adapted).epsilon(1e-3));
  }

  TEST_CASE("gpt_sample samples from a Llama folder with an adapter, with and without the cache") {
    const fs::path dir = tapegrad::testing::fresh_folder("llama_programs", "sample");
    const fs::path model_dir = tiny_llama(dir), adapter = adapter_for(model_dir, dir);
    const ProgramOutput out =
        run(TAPEGRAD_GPT_SAMPLE, "--model " + q(model_dir) + " --adapter " + q(adapter) +
                                     " --prompt 'The cat' --tokens 12 --compare");
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(out.text.find("the same tokens") != std::string::npos);
    CHECK(out.text.find("gpt_sample result: prompt_tokens=") != std::string::npos);
    CHECK(out.text.find("Hugging Face Llama folder") != std::string::npos);
  }

  TEST_CASE(
      "gpt --init-from a Llama folder with --lora-r: the adapter in PEFT's layout, and the "
      "merged folder is the base with it folded in") {
    const fs::path dir = tapegrad::testing::fresh_folder("llama_programs", "lora");
    const fs::path model_dir = tiny_llama(dir), text = text_file(dir);
    const ProgramOutput out =
        run(TAPEGRAD_GPT, "--init-from " + q(model_dir) + " --data " + q(text) +
                              " --data-format text --block-size 16 --batch-size 2 --steps 4 "
                              "--eval-windows 2 --lr 1e-2 --sample-tokens 4 --quiet --lora-r 4 "
                              "--lora-alpha 16 --lora-targets q_proj,k_proj,v_proj,o_proj --out " +
                              q(dir / "run") + " --export-adapter " + q(dir / "adapter") +
                              " --merge-adapter --export-hf " + q(dir / "merged"));
    INFO(out.text);
    REQUIRE((out.status == 0 || out.status == 1));  // (1: the loss of 4 steps did not fall)
    CHECK(out.text.find("LoRA r=4") != std::string::npos);
    CHECK(out.text.find("gpt result: steps=4") != std::string::npos);
    const auto config =
        pretrained::read_lora_adapter_config((dir / "adapter/adapter_config.json").string());
    CHECK(config.r == 4);
    CHECK(config.lora_alpha == 16);
    CHECK(config.target_modules ==
          std::vector<std::string>{"k_proj", "o_proj", "q_proj", "v_proj"});
    CHECK(fs::exists(dir / "merged/tokenizer.json"));

    auto base = pretrained::load_llama(model_dir.string());
    pretrained::load_lora_adapter(*base.model, (dir / "adapter").string());
    nn::merge_lora(*base.model);
    const auto merged = pretrained::load_llama((dir / "merged").string());
    const auto want = base.model->state_dict(), got = merged.model->state_dict();
    REQUIRE(want.size() == got.size());
    for (const std::string& name : want.keys()) {
      INFO(name);
      CHECK(testing::all_close(got.at(name), want.at(name), 1e-6, 1e-6));
    }
    // the frozen weights did not move; the adapted ones did
    const auto original = pretrained::load_llama(model_dir.string()).model->state_dict();
    CHECK(testing::bit_equal(got.at("model.layers.0.mlp.up_proj.weight"),
                             original.at("model.layers.0.mlp.up_proj.weight")));
    CHECK_FALSE(testing::all_close(got.at("model.layers.0.self_attn.q_proj.weight"),
                                   original.at("model.layers.0.self_attn.q_proj.weight")));
    // the run's checkpoint: --resume refuses other adapters, or none, naming the note; gpt_eval
    // names the folders to read instead
    const std::string again = "--init-from " + q(model_dir) + " --data " + q(text) +
                              " --data-format text --block-size 16 --batch-size 2 --steps 8 "
                              "--eval-windows 2 --quiet --resume --out " +
                              q(dir / "run");
    for (const std::string lora : {" --lora-r 2", ""}) {
      const ProgramOutput other = run(TAPEGRAD_GPT, again + lora);
      INFO(other.text);
      CHECK(other.status == 2);
      CHECK(other.text.find("was made with another lora_") != std::string::npos);
    }
    const ProgramOutput checkpoint =
        run(TAPEGRAD_GPT_EVAL, "--model " + q(dir / "run/last.safetensors") + " --text " + q(text));
    INFO(checkpoint.text);
    CHECK(checkpoint.status == 2);
    CHECK(checkpoint.text.find("a checkpoint of a run that fine-tuned a Llama folder") !=
          std::string::npos);
    // and the folder scores as a Llama folder
    const ProgramOutput eval = run(TAPEGRAD_GPT_EVAL, "--model " + q(dir / "merged") + " --text " +
                                                          q(text) + " --max-windows 1");
    INFO(eval.text);
    CHECK(eval.status == 0);
  }

  TEST_CASE(
      "gpt --init-from a Llama folder trains every weight with --recompute, and --export-hf "
      "writes it back") {
    const fs::path dir = tapegrad::testing::fresh_folder("llama_programs", "full");
    const fs::path model_dir = tiny_llama(dir), text = text_file(dir);
    const ProgramOutput out = run(
        TAPEGRAD_GPT, "--init-from " + q(model_dir) + " --data " + q(text) +
                          " --data-format text --block-size 16 --batch-size 2 --steps 3 "
                          "--eval-windows 2 --sample-tokens 4 --quiet --recompute --dropout 0.1 "
                          "--out " +
                          q(dir / "run") + " --export-hf " + q(dir / "tuned"));
    INFO(out.text);
    REQUIRE((out.status == 0 || out.status == 1));
    CHECK(out.text.find("blocks recomputed in backward") != std::string::npos);
    const auto tuned = pretrained::load_llama((dir / "tuned").string()).model->state_dict();
    const auto original = pretrained::load_llama(model_dir.string()).model->state_dict();
    CHECK_FALSE(testing::all_close(tuned.at("model.layers.1.mlp.up_proj.weight"),
                                   original.at("model.layers.1.mlp.up_proj.weight")));
    CHECK(tapegrad::testing::bytes_of(dir / "tuned/config.json") ==
          tapegrad::testing::bytes_of(model_dir / "config.json"));
  }

  TEST_CASE(
      "a GPT trained with --lora-r keeps its adapters in the checkpoint, which gpt_sample "
      "and gpt_eval read") {
    const fs::path dir = tapegrad::testing::fresh_folder("llama_programs", "gpt_lora");
    const fs::path text = text_file(dir);
    const ProgramOutput out = run(
        TAPEGRAD_GPT, "--data " + q(text) +
                          " --data-format text --n-layer 1 --n-embd 16 "
                          "--n-head 2 --block-size 16 --batch-size 2 --steps 3 --eval-windows 2 "
                          "--sample-tokens 4 --quiet --lora-r 2 --out " +
                          q(dir / "run") + " --export-adapter " + q(dir / "adapter"));
    INFO(out.text);
    REQUIRE((out.status == 0 || out.status == 1));
    CHECK(fs::exists(dir / "adapter/adapter_model.safetensors"));
    const ProgramOutput sample =
        run(TAPEGRAD_GPT_SAMPLE, "--model " + q(dir / "run/last.safetensors") + " --tokens 8");
    INFO(sample.text);
    CHECK(sample.status == 0);
    const ProgramOutput eval =
        run(TAPEGRAD_GPT_EVAL, "--model " + q(dir / "run/last.safetensors") + " --text " + q(text) +
                                   " --max-windows 2");
    INFO(eval.text);
    CHECK(eval.status == 0);
  }

  TEST_CASE("the programs refuse what does not fit, in one line naming it") {
    const fs::path dir = tapegrad::testing::fresh_folder("llama_programs", "refusals");
    const fs::path model_dir = tiny_llama(dir), text = text_file(dir);
    fs::create_directories(dir / "bare");
    for (const char* name : {"config.json", "model.safetensors"})
      fs::copy_file(model_dir / name, dir / "bare" / name);
    const fs::path gpt2_adapter =
        fs::path(TAPEGRAD_SOURCE_DIR) / "tests/pretrained/fixtures/lora_tiny/gpt2";
    const std::string init = "--init-from " + q(model_dir) + " --data " + q(text) +
                             " --data-format text --block-size 8 --steps 2 --out " + q(dir / "run");
    const std::pair<std::string, std::string> cases[] = {
        {std::string(TAPEGRAD_GPT_EVAL) + "|--model " + q(dir / "bare") + " --text " + q(text),
         "has no tokenizer.json"},
        {std::string(TAPEGRAD_GPT_EVAL) + "|--model " + q(model_dir) + " --adapter " +
             q(gpt2_adapter) + " --text " + q(text),
         "transformer.h.0.attn.c_attn"},
        {std::string(TAPEGRAD_GPT_SAMPLE) + "|--model " + q(model_dir) + " --adapter " +
             q(dir / "none"),
         "--adapter: "},
        {std::string(TAPEGRAD_GPT) + "|" + init + " --lora-r 4 --export-hf " + q(dir / "e"),
         "--export-hf: the model trains LoRA adapters (--lora-r)"},
        {std::string(TAPEGRAD_GPT) + "|" + init + " --merge-adapter --export-hf " + q(dir / "e"),
         "--merge-adapter: expected --lora-r R"},
        {std::string(TAPEGRAD_GPT) + "|" + init + " --export-adapter " + q(dir / "a"),
         "--export-adapter: expected --lora-r R"},
        {std::string(TAPEGRAD_GPT) + "|" + init + " --lora-r 4 --lora-targets c_attn", "c_attn"},
        {std::string(TAPEGRAD_GPT) + "|" + init + " --n-layer 3",
         "--n-layer does not go with --init-from"},
    };
    for (const auto& [command, message] : cases) {
      const auto bar = command.find('|');
      const ProgramOutput out = run(command.substr(0, bar), command.substr(bar + 1));
      INFO(command);
      INFO(out.text);
      CHECK(out.status == 2);
      CHECK(out.text.find(message) != std::string::npos);
      CHECK(lines_said(out.text) == 1);
    }
  }
}

#endif
