// tests/examples/test_gpt2_programs.cpp: the GPT programs on a Hugging Face GPT-2 folder, as a
// user with OpenAI's weights runs them: gpt_eval scores a text (and its loss is the library's own
// count), gpt_sample samples with the cache, gpt --init-from fine-tunes with accumulated
// gradients and --export-hf writes a folder that loads back with the trained weights. The folder
// is a small GPT-2 with GPT-2's own tokenizer (50,257 tokens, from .cache/gpt2), written by
// save_gpt2. Bad flags and files end with status 2 and one line.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../fortune_corpus.hpp"
#include "../gpt2_files.hpp"
#include "../helpers.hpp"

#include "run_program.hpp"

#if defined(TAPEGRAD_GPT) && defined(TAPEGRAD_GPT_EVAL)

namespace {

namespace fs = std::filesystem;
namespace tt = tapegrad::nn::transformer;
using tapegrad::testing::ProgramOutput;

ProgramOutput run(const std::string& program, const std::string& args) {
  return tapegrad::testing::run_program(program, args, 600);
}

std::string q(const fs::path& p) { return tapegrad::testing::quoted(p.string()); }

// A small GPT-2 (2 blocks, width 8, context 16) with GPT-2's tokenizer, in `dir`.
fs::path small_gpt2(const fs::path& dir, const std::string& gpt2_files) {
  const tt::GPT model(tt::GPTConfig(50257, 16).n_layer(2).n_head(2).n_embd(8).gelu("tanh"),
                      std::make_shared<tapegrad::Generator>(3));
  const auto tokenizer = tapegrad::data::GPT2Tokenizer::load(gpt2_files);
  tapegrad::pretrained::save_gpt2(model, (dir / "gpt2").string(), &tokenizer);
  return dir / "gpt2";
}

fs::path text_file(const fs::path& dir, std::size_t entries) {
  std::ofstream(dir / "text.txt", std::ios::binary)
      << tapegrad::testing::fortune_corpus(entries, 11);
  return dir / "text.txt";
}

// The value of `key=` in the line that starts with `prefix`.
double value_in(const std::string& text, const std::string& prefix, const std::string& key) {
  const auto line = text.find(prefix);
  REQUIRE(line != std::string::npos);
  const auto at = text.find(" " + key + "=", line);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + key.size() + 2));
}

}  // namespace

TEST_SUITE("examples.gpt2") {
  TEST_CASE("gpt_eval scores a text with a GPT-2 folder: the library's loss over its windows") {
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "eval");
    const fs::path model_dir = small_gpt2(dir, files), text = text_file(dir, 12);
    const ProgramOutput out = run(
        TAPEGRAD_GPT_EVAL, "--model " + q(model_dir) + " --text " + q(text) + " --batch-size 3");
    INFO(out.text);
    REQUIRE(out.status == 0);
    CHECK(out.text.find("gpt_eval: Hugging Face GPT-2 folder") != std::string::npos);

    // The same count by hand: windows of 16 tokens, each predicting its next ones.
    auto gpt2 = tapegrad::pretrained::load_gpt2(model_dir.string());
    gpt2.model->eval();
    const std::string bytes = tapegrad::testing::bytes_of(text);
    std::vector<std::int64_t> ids;
    for (const std::uint32_t id :
         gpt2.tokenizer->encode(bytes, tapegrad::data::SpecialTokens::ordinary))
      ids.push_back(id);
    tapegrad::autograd::NoGradGuard no_grad;
    double nats = 0.0;
    std::size_t predicted = 0;
    for (std::size_t at = 0; at + 1 < ids.size(); at += 16) {
      const std::size_t T = std::min<std::size_t>(16, ids.size() - 1 - at);
      tapegrad::IndexArray x = tapegrad::IndexArray::from_shape({1, T}), y = x;
      for (std::size_t t = 0; t < T; ++t) x(0, t) = ids[at + t], y(0, t) = ids[at + t + 1];
      y.reshape({T});
      const tapegrad::Tensor logits = tapegrad::ops::reshape(gpt2.model->forward(x), {-1, 50257});
      nats += tapegrad::ops::cross_entropy(logits, y,
                                           tapegrad::ops::CrossEntropyOptions().reduction("sum"))
                  .item();
      predicted += T;
    }
    CHECK(value_in(out.text, "gpt_eval result:", "tokens") == double(predicted));
    CHECK(value_in(out.text, "gpt_eval result:", "loss") ==
          doctest::Approx(nats / double(predicted)).epsilon(1e-4));
    CHECK(value_in(out.text, "gpt_eval result:", "bits_per_byte") ==
          doctest::Approx(
              nats / std::log(2.0) /
              double(bytes.size() - gpt2.tokenizer->bytes_of(std::uint32_t(ids[0])).size()))
              .epsilon(1e-3));
    CHECK(value_in(out.text, "gpt_eval result:", "perplexity") ==
          doctest::Approx(std::exp(nats / double(predicted))).epsilon(1e-3));

    // --max-windows and --window cut the work
    const ProgramOutput two = run(TAPEGRAD_GPT_EVAL, "--model " + q(model_dir) + " --text " +
                                                         q(text) + " --max-windows 2 --window 8");
    INFO(two.text);
    CHECK(two.status == 0);
    CHECK(value_in(two.text, "gpt_eval result:", "tokens") == 16);
  }

  TEST_CASE("gpt_eval refuses what it cannot score, in one line") {
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "eval_refusals");
    const fs::path model_dir = small_gpt2(dir, files), text = text_file(dir, 3);
    const auto refused = [&](const std::string& args, const std::string& message) {
      const ProgramOutput out = run(TAPEGRAD_GPT_EVAL, args);
      INFO(out.text);
      CHECK(out.status == 2);
      CHECK(out.text.find(message) != std::string::npos);
    };
    refused("--model " + q(model_dir) + " --text " + q(dir / "absent.txt"), "absent.txt");
    refused("--model " + q(model_dir) + " --text " + q(text) + " --window 17",
            "--window 17: expected at most the model's context, 16 tokens");
    refused("--model " + q(dir / "nowhere") + " --text " + q(text), "no such file or folder");
    refused("--model " + q(model_dir) + " --text " + q(dir), "--text");
    std::ofstream(dir / "one.txt") << "Hello";
    refused("--model " + q(model_dir) + " --text " + q(dir / "one.txt"),
            "holds 1 token(s); scoring needs at least 2");
    std::ofstream(dir / "bad.txt", std::ios::binary) << "ok \xff no";
    refused("--model " + q(model_dir) + " --text " + q(dir / "bad.txt"), "UTF-8");
    fs::remove(model_dir / "vocab.json");
    refused("--model " + q(model_dir) + " --text " + q(text), "holds merges.txt but no vocab.json");
  }

  TEST_CASE("gpt_sample samples from a GPT-2 folder with the cache and reports both speeds") {
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "sample");
    const fs::path model_dir = small_gpt2(dir, files);
    const ProgramOutput out = run(TAPEGRAD_GPT_SAMPLE, "--model " + q(model_dir) +
                                                           " --prompt 'Hello, world' --tokens 30 "
                                                           "--top-k 5 --seed 3 --compare");
    INFO(out.text);
    CHECK(out.status == 0);  // --compare: the same tokens without the cache
    CHECK(out.text.find("gpt_sample: Hugging Face GPT-2 folder") != std::string::npos);
    CHECK(out.text.find("Hello, world") != std::string::npos);
    CHECK(out.text.find("the same tokens") != std::string::npos);
    CHECK(value_in(out.text, "gpt_sample result:", "prompt_tokens") == 3);  // Hello , Ġworld
    CHECK(value_in(out.text, "gpt_sample result:", "new_tokens") == 30);
    CHECK(value_in(out.text, "gpt_sample result:", "tokens_per_s") > 0);
  }

  TEST_CASE("gpt --init-from fine-tunes a GPT-2 folder, and --export-hf writes what it trained") {
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "finetune");
    const fs::path model_dir = small_gpt2(dir, files), text = text_file(dir, 200);
    const std::string common = "--init-from " + q(model_dir) + " --data " + q(text) +
                               " --steps 6 --eval-every 3 --eval-windows 8 --warmup 1 --lr 1e-2 "
                               "--sample-tokens 5 --block-size 12 ";
    const ProgramOutput out =
        run(TAPEGRAD_GPT, common + "--batch-size 2 --grad-accum 2 --out " + q(dir / "run") +
                              " --export-hf " + q(dir / "exported"));
    INFO(out.text);
    CHECK((out.status == 0 || out.status == 1));
    CHECK(out.text.find("batch 2 x 2 micro-batches, from ") != std::string::npos);
    CHECK(out.text.find("tokenizer gpt2:") != std::string::npos);
    CHECK(out.text.find("exported the model after step 6") != std::string::npos);
    // the export holds the weights the checkpoint holds, and GPT-2's tokenizer
    const auto exported = tapegrad::pretrained::load_gpt2((dir / "exported").string());
    REQUIRE(exported.tokenizer);
    CHECK(exported.tokenizer->vocab_size() == 50257);
    const tapegrad::io::SafetensorsFile last =
        tapegrad::io::load_safetensors((dir / "run" / "last.safetensors").string());
    for (const auto& [name, p] : exported.model->named_parameters()) {
      CAPTURE(name);
      CHECK(tapegrad::testing::bit_equal(p.data(), last.to_float("model." + name)));
    }
    // gpt_eval and gpt_sample read the fine-tuned checkpoint as well as the folder
    const ProgramOutput eval =
        run(TAPEGRAD_GPT_EVAL, "--model " + q(dir / "run" / "last.safetensors") + " --text " +
                                   q(text) + " --max-windows 2");
    INFO(eval.text);
    CHECK(eval.status == 0);
    const ProgramOutput eval_hf =
        run(TAPEGRAD_GPT_EVAL,
            "--model " + q(dir / "exported") + " --text " + q(text) + " --max-windows 2");
    CHECK(value_in(eval.text, "gpt_eval result:", "loss") ==
          value_in(eval_hf.text, "gpt_eval result:", "loss"));

    // never overwritten, and the model's flags come from the folder
    const ProgramOutput again = run(
        TAPEGRAD_GPT, common + "--out " + q(dir / "run2") + " --export-hf " + q(dir / "exported"));
    CHECK(again.status == 2);
    CHECK(again.text.find("already holds model.safetensors") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run2" / "last.safetensors"));
    fs::create_directories(dir / "other");
    std::ofstream(dir / "other" / "config.json") << "{}";
    const ProgramOutput other =
        run(TAPEGRAD_GPT, common + "--out " + q(dir / "run5") + " --export-hf " + q(dir / "other"));
    CHECK(other.status == 2);
    CHECK(other.text.find("already holds config.json") != std::string::npos);
    const ProgramOutput file =
        run(TAPEGRAD_GPT, common + "--out " + q(dir / "run6") + " --export-hf " + q(text));
    CHECK(file.status == 2);
    CHECK(file.text.find("a file of that name is there") != std::string::npos);
    // --resume with other training windows is refused, as any other change of the run
    REQUIRE(run(TAPEGRAD_GPT, common + "--stop-after 3 --out " + q(dir / "run7")).status == 0);
    const ProgramOutput windows =
        run(TAPEGRAD_GPT, common + "--resume --block-size 8 --out " + q(dir / "run7"));
    CHECK(windows.status == 2);
    CHECK(windows.text.find("was made with another train_block_size") != std::string::npos);
    const ProgramOutput sizes = run(TAPEGRAD_GPT, common + "--n-layer 3 --out " + q(dir / "run3"));
    CHECK(sizes.status == 2);
    CHECK(sizes.text.find("--n-layer does not go with --init-from") != std::string::npos);
    const ProgramOutput longer =
        run(TAPEGRAD_GPT, common + "--block-size 17 --out " + q(dir / "run4"));
    CHECK(longer.status == 2);
    CHECK(longer.text.find("--block-size 17: expected at most the n_positions") !=
          std::string::npos);
  }

  TEST_CASE(
      "gpt --init-from a GPT-2 folder with --lora-r: the adapter in PEFT's layout, merged "
      "into the exported folder, and gpt_eval --adapter scores as the merged folder") {
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "lora");
    const fs::path model_dir = small_gpt2(dir, files), text = text_file(dir, 200);
    const ProgramOutput out =
        run(TAPEGRAD_GPT, "--init-from " + q(model_dir) + " --data " + q(text) +
                              " --steps 4 --eval-windows 4 --warmup 1 --lr 1e-2 --sample-tokens 4 "
                              "--block-size 12 --batch-size 2 --lora-r 2 --out " +
                              q(dir / "run") + " --export-adapter " + q(dir / "adapter") +
                              " --merge-adapter --export-hf " + q(dir / "merged"));
    INFO(out.text);
    REQUIRE((out.status == 0 || out.status == 1));
    const auto config = tapegrad::pretrained::read_lora_adapter_config(
        (dir / "adapter" / "adapter_config.json").string());
    CHECK(config.target_modules == std::vector<std::string>{"c_attn"});  // PEFT's GPT-2 default
    CHECK(config.fan_in_fan_out);                                        // GPT-2's Conv1D
    auto base = tapegrad::pretrained::load_gpt2(model_dir.string());
    tapegrad::pretrained::load_lora_adapter(*base.model, (dir / "adapter").string());
    tapegrad::nn::merge_lora(*base.model);
    const auto merged = tapegrad::pretrained::load_gpt2((dir / "merged").string());
    const auto want = base.model->state_dict(), got = merged.model->state_dict();
    for (const std::string& name : want.keys()) {
      CAPTURE(name);
      CHECK(tapegrad::testing::all_close(got.at(name), want.at(name), 1e-6, 1e-6));
    }
    const std::string score = " --text " + q(text) + " --max-windows 2";
    const ProgramOutput adapted = run(
        TAPEGRAD_GPT_EVAL, "--model " + q(model_dir) + " --adapter " + q(dir / "adapter") + score);
    const ProgramOutput folded = run(TAPEGRAD_GPT_EVAL, "--model " + q(dir / "merged") + score);
    INFO(adapted.text);
    REQUIRE(adapted.status == 0);
    REQUIRE(folded.status == 0);
    CHECK(value_in(adapted.text, "gpt_eval result:", "loss") ==
          doctest::Approx(value_in(folded.text, "gpt_eval result:", "loss")).epsilon(1e-3));
  }

  TEST_CASE("--grad-accum K over batches of B trains as one batch of K * B") {
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "accumulate");
    const fs::path model_dir = small_gpt2(dir, files), text = text_file(dir, 200);
    const std::string common = "--init-from " + q(model_dir) + " --data " + q(text) +
                               " --steps 3 --eval-every 3 --eval-windows 8 --warmup 1 "
                               "--sample-tokens 0 --block-size 12 --clip 0 ";
    const ProgramOutput whole = run(TAPEGRAD_GPT, common + "--batch-size 4 --out " + q(dir / "a"));
    const ProgramOutput parts =
        run(TAPEGRAD_GPT, common + "--batch-size 2 --grad-accum 2 --out " + q(dir / "b"));
    INFO(whole.text);
    INFO(parts.text);
    // the same windows (drawn in the same order), the mean of two means of 2 = the mean of 4
    CHECK(value_in(whole.text, "gpt result:", "train_loss") ==
          doctest::Approx(value_in(parts.text, "gpt result:", "train_loss")).epsilon(1e-4));
    CHECK(value_in(whole.text, "gpt result:", "val_loss") ==
          doctest::Approx(value_in(parts.text, "gpt result:", "val_loss")).epsilon(1e-4));
  }
}

#endif
