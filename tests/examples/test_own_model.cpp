// tests/examples/test_own_model.cpp: examples/own_model, a learner's GPT with multi-query attention
// registered by name and trained by tapegrad::train: its checkpoint names the part, a resumed run
// rebuilds it, and a program that has not registered the name refuses the file, naming the part
// and the call that registers it.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "run_program.hpp"

using tapegrad::testing::has;
using tapegrad::testing::quoted;
using tapegrad::testing::run_program;
namespace fs = std::filesystem;

TEST_SUITE("examples.own_model") {
  TEST_CASE("a learner's registered attention trains, resumes, and is named in its checkpoint") {
    const fs::path dir = tapegrad::testing::fresh_folder("own_model", "mqa");
    std::ofstream(dir / "corpus.txt") << [] {
      std::string text;
      for (int i = 0; i < 300; ++i)
        text += "the quick brown fox jumps over the lazy dog " + std::to_string(i % 7) + "\n";
      return text;
    }();
    const std::string common = "--data " + quoted((dir / "corpus.txt").string()) + " --out " +
                               quoted((dir / "run").string());
    const auto first = run_program(TAPEGRAD_OWN_MODEL, common + " --steps 8 --quiet");
    INFO(first.text);
    REQUIRE(first.status == 0);
    CHECK(has(first.text, "attention=mqa"));
    CHECK(has(first.text, "without a cache: the attention keeps none"));
    const auto file = tapegrad::io::load_safetensors((dir / "run" / "last.safetensors").string());
    CHECK(file.metadata_value("progress.extra.gpt.attention") == "mqa");

    const auto resumed = run_program(TAPEGRAD_OWN_MODEL, common + " --steps 10 --resume --quiet");
    INFO(resumed.text);
    CHECK(resumed.status == 0);
    CHECK(has(resumed.text, "resumed at step 8"));

    // gpt_sample has not registered "mqa": it refuses the checkpoint and says how to register it.
    const auto sample = run_program(
        TAPEGRAD_GPT_SAMPLE, "--model " + quoted((dir / "run" / "best.safetensors").string()));
    INFO(sample.text);
    CHECK(sample.status == 2);
    CHECK(has(sample.text,
              "its model's attention: the attention \"mqa\" is not registered in this "
              "program (registered: alibi, causal)"));
    CHECK(has(sample.text, "register_attention(\"mqa\", factory)"));
    // So does gpt --resume of that folder, before it trains.
    const auto gpt = run_program(TAPEGRAD_GPT, common + " --steps 12 --resume --attention causal");
    CHECK(gpt.status == 2);
  }

  TEST_CASE("--steps is read whole: 1e3, 10abc, ' 7' and 2^64 are refused, not cut") {
    // (std::atoll took "1e3" for 1 step, "10abc" for 10, and 99999999999999999999 for 2^63 - 1
    // steps, which trained for ever.)
    const fs::path dir = tapegrad::testing::fresh_folder("own_model", "steps");  // (its --out)
    for (const std::string steps : {"1e3", "10abc", " 7", "99999999999999999999", "0", "-1", ""}) {
      CAPTURE(steps);
      const auto out =
          run_program(TAPEGRAD_OWN_MODEL, "--steps " + quoted(steps), 60, dir.string());
      INFO(out.text);
      CHECK(out.status == 2);
      CHECK(has(out.text,
                "own_model: --steps: expected an integer in [1, 10000000], got '" + steps + "'"));
    }
  }
}
