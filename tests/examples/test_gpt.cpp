// tests/examples/test_gpt.cpp: the GPT example's programs, run as a learner runs them (their data
// pipeline is tapegrad::data, tested in tests/data): a short run lowers the validation loss, a run
// stopped and resumed ends with the same bits as one run straight through, and gpt_sample is reproducible and samples
// the same characters with and without the cache. The programs' paths come from
// examples/CMakeLists.txt (TAPEGRAD_GPT, TAPEGRAD_GPT_SAMPLE).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../fortune_corpus.hpp"
#include "../gpt2_files.hpp"

#include "run_program.hpp"

namespace {

namespace fs = std::filesystem;
using tapegrad::testing::bytes_of;

fs::path folder(const std::string& name) { return tapegrad::testing::fresh_folder("gpt", name); }

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

#ifdef TAPEGRAD_GPT

namespace {
using Output = tapegrad::testing::ProgramOutput;

Output run(const std::string& program, const std::string& args) {
  return tapegrad::testing::run_program(program, args, 600);
}

const char* kTiny =
    " --n-layer 2 --n-head 2 --n-embd 32 --block-size 16 --batch-size 8 --warmup 5 --eval-windows "
    "32";

fs::path tiny_corpus(const fs::path& dir) {
  write(dir / "corpus.txt", tapegrad::testing::fortune_corpus(400, 7));
  return dir / "corpus.txt";
}

bool same_tensors(const std::string& a, const std::string& b) {
  const tapegrad::io::SafetensorsFile fa = tapegrad::io::load_safetensors(a),
                                      fb = tapegrad::io::load_safetensors(b);
  if (fa.tensors().size() != fb.tensors().size()) return false;
  for (std::size_t i = 0; i < fa.tensors().size(); ++i) {
    const auto &x = fa.tensors()[i], &y = fb.tensors()[i];
    if (x.name != y.name || x.shape != y.shape || !std::ranges::equal(x.bytes(), y.bytes())) {
      MESSAGE("differs: ", x.name);
      return false;
    }
  }
  return true;
}
}  // namespace

TEST_SUITE("examples.gpt") {
  TEST_CASE(
      "a short run lowers the validation loss, writes its checkpoints and picture data, and "
      "samples") {
    const fs::path dir = folder("short");
    const Output out =
        run(TAPEGRAD_GPT, "--data '" + tiny_corpus(dir).string() + "' --steps 60 --eval-every 30" +
                              kTiny + " --sample-tokens 40 --out '" + (dir / "run").string() + "'");
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(out.text.find("gpt result: steps=60 val_loss=") != std::string::npos);
    CHECK(out.text.find("step 0: validation loss") != std::string::npos);
    CHECK(out.text.find("sample (temperature 0.8") != std::string::npos);
    for (const char* name : {"last.safetensors", "best.safetensors", "loss.dat", "val.dat",
                             "plots.gp", "attention_l1_h1.dat"})
      CHECK_MESSAGE(fs::exists(dir / "run" / name), name);
  }

  TEST_CASE("--pos alibi trains the library's ALiBi attention, and its checkpoint samples "
            "and resumes as ALiBi") {
    const fs::path dir = folder("alibi");
    const std::string data = "--data '" + tiny_corpus(dir).string() + "'" + kTiny +
                             " --eval-every 20 --sample-tokens 0 --out '" + (dir / "run").string() +
                             "'";
    const Output out = run(TAPEGRAD_GPT, data + " --steps 20 --pos alibi");
    INFO(out.text);
    REQUIRE(out.status == 0);
    CHECK(out.text.find("pos=alibi") != std::string::npos);
    auto loss_at = [&](const std::string& step) {
      const std::string key = "step " + step + ": validation loss ";
      const std::size_t at = out.text.find(key);
      REQUIRE(at != std::string::npos);
      return std::stod(out.text.substr(at + key.size()));
    };
    CHECK(loss_at("20") < loss_at("0") - 0.3);
    // No position table: the checkpoint holds the Blocks' attention and nothing for positions.
    const tapegrad::io::SafetensorsFile f =
        tapegrad::io::load_safetensors((dir / "run" / "best.safetensors").string());
    bool attention = false, positions = false;
    for (const auto& t : f.tensors()) {
      attention = attention || t.name.ends_with("transformer.h.0.attn.c_attn.weight");
      positions = positions || t.name.find("wpe") != std::string::npos;
    }
    CHECK(attention);
    CHECK_FALSE(positions);
    CHECK(f.metadata_value("progress.extra.gpt.position") == std::optional<std::string>("alibi"));
    // gpt_sample builds the same model from the notes (no cache: it runs the whole context).
    const std::string ckpt = "--checkpoint '" + (dir / "run" / "best.safetensors").string() + "'";
    const Output sampled = run(TAPEGRAD_GPT_SAMPLE, ckpt + " --prompt 'the cat' --tokens 12");
    INFO(sampled.text);
    CHECK(sampled.status == 0);
    CHECK(sampled.text.find("note: this model's attention keeps no cache") != std::string::npos);
    CHECK(sampled.text.find("12 characters in ") != std::string::npos);
    const Output compared = run(TAPEGRAD_GPT_SAMPLE, ckpt + " --compare");
    CHECK(compared.status == 2);
    CHECK(compared.text.find("--compare: this model's attention keeps no cache") !=
          std::string::npos);
    const Output resumed = run(TAPEGRAD_GPT, data + " --steps 30 --pos alibi --resume");
    INFO(resumed.text);
    CHECK(resumed.status == 0);
    CHECK(resumed.text.find("resumed at step 20") != std::string::npos);
  }

  TEST_CASE("a run stopped and resumed ends with the same bits as a run straight through") {
    const fs::path dir = folder("resume");
    const std::string data = " --data '" + tiny_corpus(dir).string() +
                             "' --steps 40 --eval-every 10 --sample-tokens 0" + kTiny;
    const Output straight =
        run(TAPEGRAD_GPT, data + " --out '" + (dir / "straight").string() + "'");
    REQUIRE(straight.status == 0);
    const Output first =
        run(TAPEGRAD_GPT, data + " --stop-after 20 --out '" + (dir / "parts").string() + "'");
    REQUIRE(first.status == 0);
    CHECK(first.text.find("stopped after step 20") != std::string::npos);
    const Output second =
        run(TAPEGRAD_GPT, data + " --resume --out '" + (dir / "parts").string() + "'");
    INFO(second.text);
    REQUIRE(second.status == 0);
    CHECK(second.text.find("resumed at step 20") != std::string::npos);
    // weights, AdamW moments and step counts, bit for bit
    CHECK(same_tensors((dir / "straight" / "last.safetensors").string(),
                       (dir / "parts" / "last.safetensors").string()));
    auto result = [](const std::string& text) { return text.substr(text.find("val_loss="), 16); };
    CHECK(result(straight.text) == result(second.text));
    // resuming with another model is refused, and nothing is overwritten
    const Output other = run(
        TAPEGRAD_GPT, data + " --resume --dropout 0.1 --out '" + (dir / "parts").string() + "'");
    CHECK(other.status == 2);
    CHECK(other.text.find("was made with another dropout") != std::string::npos);
  }

  TEST_CASE(
      "with --tokenizer bpe:N the GPT trains on BPE tokens, reports bits per byte, resumes and "
      "samples") {
    const fs::path dir = folder("bpe");
    const std::string data = " --data '" + tiny_corpus(dir).string() +
                             "' --steps 20 --eval-every 10 --sample-tokens 10 --tokenizer bpe:300" +
                             kTiny + " --out '" + (dir / "run").string() + "'";
    const Output first = run(TAPEGRAD_GPT, data + " --stop-after 10");
    INFO(first.text);
    REQUIRE(first.status == 0);
    // The tiny corpus has 33 merges in it: the BPE stops there, and says so.
    CHECK(first.text.find("the BPE has 289 tokens") != std::string::npos);
    CHECK(first.text.find("tokenizer bpe:300, vocabulary 289") != std::string::npos);
    CHECK(first.text.find("bits per byte") != std::string::npos);
    // --resume trains the same BPE again on the same training text: the notes agree.
    const Output second = run(TAPEGRAD_GPT, data + " --resume");
    INFO(second.text);
    REQUIRE(second.status == 0);
    CHECK(second.text.find("resumed at step 10") != std::string::npos);
    CHECK(second.text.find("sample (temperature 0.8, top-k 200, 10 tokens") != std::string::npos);
    CHECK(second.text.find(" val_bits_per_byte=") != std::string::npos);
    // The checkpoint holds the tokenizer: gpt_sample needs nothing else.
    const Output sampled =
        run(TAPEGRAD_GPT_SAMPLE, "--checkpoint '" + (dir / "run" / "best.safetensors").string() +
                                     "' --prompt 'the cat' --tokens 12");
    INFO(sampled.text);
    CHECK(sampled.status == 0);
    CHECK(sampled.text.find("12 tokens in ") != std::string::npos);
    // Another tokenizer is another model: --resume refuses it.
    const Output other = run(TAPEGRAD_GPT, data + " --resume --tokenizer char");
    CHECK(other.status == 2);
    CHECK(other.text.find("was made with another") != std::string::npos);
  }

  TEST_CASE("with --tokens and bpe-model:FILE the GPT trains on a token file of a saved BPE") {
    const fs::path dir = folder("bpe_tokens");
    const std::string text = tapegrad::testing::fortune_corpus(400, 7);
    const auto bpe =
        tapegrad::data::BytePairEncoding::train(text, 280, tapegrad::data::Pretokenizer::gpt2);
    bpe.save((dir / "corpus.bpe").string());
    const std::vector<std::uint32_t> ids = bpe.encode(text);
    {
      tapegrad::data::TokenFileWriter writer((dir / "corpus.tokens").string(),
                                             tapegrad::data::Tokenizer(bpe));
      writer.append(ids);
      writer.close();
    }
    const std::string args = " --tokens '" + (dir / "corpus.tokens").string() +
                             "' --tokenizer bpe-model:'" + (dir / "corpus.bpe").string() +
                             "' --steps 4 --eval-every 2 --sample-tokens 5" + kTiny + " --out '" +
                             (dir / "run").string() + "'";
    const Output out = run(TAPEGRAD_GPT, args);
    INFO(out.text);
    CHECK(out.status == 0);
    const std::size_t val = ids.size() / 10;
    CHECK(out.text.find("(" + std::to_string(ids.size() - val) + " training and " +
                        std::to_string(val) + " validation tokens, read from the file)") !=
          std::string::npos);
    CHECK(out.text.find("vocabulary 280") != std::string::npos);
    // The checkpoint keeps the BPE: gpt_sample needs neither the model file nor the tokens.
    fs::remove(dir / "corpus.bpe");
    const Output sampled =
        run(TAPEGRAD_GPT_SAMPLE, "--checkpoint '" + (dir / "run" / "best.safetensors").string() +
                                     "' --prompt 'the cat' --tokens 8");
    CHECK(sampled.status == 0);
    CHECK(sampled.text.find("8 tokens in ") != std::string::npos);
  }

  TEST_CASE("with --tokens the GPT trains on a token file of GPT-2's ids") {
    const fs::path gpt2 = tapegrad::testing::gpt2_folder();
    if (gpt2.empty()) return;
    const fs::path dir = folder("tokens");
    const std::string text = tapegrad::testing::fortune_corpus(400, 7);
    std::vector<std::uint32_t> ids;
    {
      const auto tokenizer = tapegrad::data::GPT2Tokenizer::load(gpt2.string());
      ids = tokenizer.encode(text);
      tapegrad::data::TokenFileWriter writer((dir / "corpus.tokens").string(), 50257, "gpt2",
                                             tapegrad::data::tokenizer_fingerprint(tokenizer));
      writer.append(ids);
      writer.close();
    }
    const std::string args = " --tokens '" + (dir / "corpus.tokens").string() +
                             "' --tokenizer gpt2:'" + gpt2.string() +
                             "' --steps 4 --eval-every 2 --sample-tokens 5" + kTiny + " --out '" +
                             (dir / "run").string() + "'";
    const Output out = run(TAPEGRAD_GPT, args);
    INFO(out.text);
    CHECK(out.status == 0);
    const std::size_t val = ids.size() / 10;  // --val-fraction 0.1, the last ids
    CHECK(out.text.find("(" + std::to_string(ids.size() - val) + " training and " +
                        std::to_string(val) + " validation tokens, read from the file)") !=
          std::string::npos);
    CHECK(out.text.find("vocabulary 50257") != std::string::npos);
    CHECK(out.text.find(" val_bits_per_byte=") != std::string::npos);
    // A file of another tokenizer's ids is refused before training.
    {
      tapegrad::data::TokenFileWriter writer((dir / "bpe.tokens").string(), 300, "bpe", 0);
      writer.append(std::vector<std::uint32_t>(200, 7));
      writer.close();
    }
    const Output other = run(TAPEGRAD_GPT, " --tokens '" + (dir / "bpe.tokens").string() +
                                               "' --tokenizer gpt2:'" + gpt2.string() + "'" +
                                               kTiny + " --out '" + (dir / "other").string() + "'");
    CHECK(other.status == 2);
    CHECK(other.text.find("holds ids of the tokenizer bpe (300 tokens, fingerprint "
                          "0000000000000000), not of --tokenizer gpt2:") != std::string::npos);
  }

  TEST_CASE(
      "resuming a finished run trains nothing and reports, and a run past --steps is refused") {
    const fs::path dir = folder("finished");
    const std::string data = " --data '" + tiny_corpus(dir).string() +
                             "' --eval-every 10 --sample-tokens 0" + kTiny + " --out '" +
                             (dir / "run").string() + "'";
    REQUIRE(run(TAPEGRAD_GPT, data + " --steps 20").status == 0);
    const std::string before = bytes_of(dir / "run" / "last.safetensors");
    const Output again = run(TAPEGRAD_GPT, data + " --steps 20 --resume");
    INFO(again.text);
    CHECK(again.status == 0);  // it crashed here (the median of no step times)
    CHECK(again.text.find("nothing to train") != std::string::npos);
    CHECK(again.text.find("gpt result: steps=20") != std::string::npos);
    const Output shorter = run(TAPEGRAD_GPT, data + " --steps 10 --resume");
    INFO(shorter.text);
    CHECK(shorter.status == 2);
    CHECK(shorter.text.find("--steps: the run in") != std::string::npos);
    CHECK(bytes_of(dir / "run" / "last.safetensors") == before);  // nothing written
  }

  TEST_CASE("a short run warms up within the run, validates often enough, and logs plain lines") {
    const fs::path dir = folder("short_defaults");
    // No --warmup (100) and no --eval-every: 16 steps warm up for 15 and validate at the end
    // (not every 2 steps: a validation writes a checkpoint, which for a large model takes longer
    // than a step; the default is --steps / 8, but at least 25).
    const Output out =
        run(TAPEGRAD_GPT, "--data '" + tiny_corpus(dir).string() +
                              "' --steps 16 --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 "
                              "--eval-windows 16 --sample-tokens 0 --out '" +
                              (dir / "run").string() + "'");
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(out.text.find("note: --warmup 100 is not shorter than the run") != std::string::npos);
    std::size_t validations = 0;
    for (std::size_t at = 0; (at = out.text.find(": validation loss", at)) != std::string::npos;
         ++at)
      ++validations;
    CHECK(validations == 2);  // step 0 and step 16
    // Not a terminal: no carriage returns or escape sequences in the log.
    CHECK(out.text.find('\r') == std::string::npos);
    CHECK(out.text.find('\x1b') == std::string::npos);
  }

  TEST_CASE("the same seed gives the same bits on one thread and on two") {
    const fs::path dir = folder("threads");
    const std::string data = " --data '" + tiny_corpus(dir).string() +
                             "' --steps 20 --eval-every 10 --sample-tokens 0" + kTiny +
                             " --dropout 0.1";
    REQUIRE(
        run(TAPEGRAD_GPT, data + " --threads 1 --out '" + (dir / "one").string() + "'").status ==
        0);
    REQUIRE(
        run(TAPEGRAD_GPT, data + " --threads 2 --out '" + (dir / "two").string() + "'").status ==
        0);
    CHECK(same_tensors((dir / "one" / "last.safetensors").string(),
                       (dir / "two" / "last.safetensors").string()));
  }

  TEST_CASE("--profile N prints the profiler's table of N steps, bf16 marked on the products of a "
            "--bf16 run, and changes nothing the run computes") {
    const fs::path dir = folder("profile");
    const std::string data = " --data '" + tiny_corpus(dir).string() +
                             "' --steps 20 --eval-every 20 --sample-tokens 0" + kTiny;
    const Output plain = run(TAPEGRAD_GPT, data + " --out '" + (dir / "plain").string() + "'");
    const Output profiled =
        run(TAPEGRAD_GPT, data + " --profile 4 --out '" + (dir / "profiled").string() + "'");
    INFO(profiled.text);
    REQUIRE(plain.status == 0);
    REQUIRE(profiled.status == 0);
    CHECK(profiled.text.find("profile of 4 training steps (11 to 14)") != std::string::npos);
    CHECK(profiled.text.find("\nlinear ") != std::string::npos);
    CHECK(profiled.text.find("(outside recorded ops)") != std::string::npos);
    CHECK(plain.text.find("profile of") == std::string::npos);
    CHECK(same_tensors((dir / "plain" / "last.safetensors").string(),
                       (dir / "profiled" / "last.safetensors").string()));
    // A run shorter than the warm-up and the window: its last steps, cut short by validation.
    const Output mixed = run(TAPEGRAD_GPT, data + " --steps 6 --eval-every 3 --bf16 --profile 5 "
                                                  "--out '" + (dir / "bf16").string() + "'");
    INFO(mixed.text);
    REQUIRE(mixed.status == 0);
    CHECK(mixed.text.find("profile of 2 training steps (2 to 3)") != std::string::npos);
    CHECK(mixed.text.find("\nlinear [bf16] ") != std::string::npos);
    CHECK(mixed.text.find("GFLOP/s (bf16)") != std::string::npos);
    const Output zero = run(TAPEGRAD_GPT, data + " --profile 0");
    CHECK(zero.status == 2);
    CHECK(zero.text.find("--profile") != std::string::npos);
  }

  TEST_CASE(
      "gpt_sample: the same seed gives the same text, and the cache changes nothing but the "
      "speed") {
    const fs::path dir = folder("sample");
    REQUIRE(run(TAPEGRAD_GPT, "--data '" + tiny_corpus(dir).string() +
                                  "' --steps 30 --eval-every 30 --sample-tokens 0" + kTiny +
                                  " --out '" + (dir / "run").string() + "'")
                .status == 0);
    const std::string ckpt = " --checkpoint '" + (dir / "run" / "best.safetensors").string() + "'";
    const Output a = run(TAPEGRAD_GPT_SAMPLE, ckpt + " --prompt 'the cat' --tokens 60 --seed 3");
    const Output b = run(TAPEGRAD_GPT_SAMPLE, ckpt + " --prompt 'the cat' --tokens 60 --seed 3");
    const Output c = run(TAPEGRAD_GPT_SAMPLE, ckpt + " --prompt 'the cat' --tokens 60 --seed 4");
    REQUIRE(a.status == 0);
    // after the program's first line, tapegrad's environment (kernel set, OpenBLAS core)
    CHECK(a.text.rfind("tapegrad ", 0) == 0);
    CHECK(a.text.find("\nthe cat") == a.text.find('\n'));
    auto text = [](const Output& o) { return o.text.substr(0, o.text.find("\n\n60 characters")); };
    CHECK(text(a) == text(b));
    CHECK(text(a) != text(c));
    const Output compared = run(TAPEGRAD_GPT_SAMPLE, ckpt + " --tokens 100 --compare");
    INFO(compared.text);
    CHECK(compared.status == 0);
    CHECK(compared.text.find("the same characters") != std::string::npos);
    const Output missing =
        run(TAPEGRAD_GPT_SAMPLE, " --checkpoint '" + (dir / "none.safetensors").string() + "'");
    CHECK(missing.status == 2);
  }

}  // TEST_SUITE

#endif  // TAPEGRAD_GPT
