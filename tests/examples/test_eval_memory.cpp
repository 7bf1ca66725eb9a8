// tests/examples/test_eval_memory.cpp: gpt_eval and gpt_sample count the memory of a pass from the
// sizes before they run one (examples/gpt/inference_memory.hpp), against what the process may use.
// A GPT-2 folder whose config.json says n_positions 2^20 (accepted) makes gpt_eval's default window
// the whole text, whose attention weights grow with its square: refused at once, naming --window
// and the window that fits, which then runs. The programs run under `ulimit -v` (512 MiB), so
// the figures are the same on any machine. gpt_sample refuses a cache of keys and values that
// would not fit (it is allocated for the whole context) and --no-cache passes that would not,
// naming the flag, and --compare leaves out the full-context pass of a million positions.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include <tapegrad/train/gpt_model.hpp>

#include "../../examples/gpt/inference_memory.hpp"
#include "../fortune_corpus.hpp"
#include "../gpt2_files.hpp"
#include "run_program.hpp"

namespace {

namespace fs = std::filesystem;
namespace tt = tapegrad::nn::transformer;
using tapegrad::testing::bytes_of;
using tapegrad::testing::has;
using tapegrad::testing::ProgramOutput;
using tapegrad::testing::quoted;

std::string q(const fs::path& p) { return quoted(p.string()); }

// `program args` with the address space limited to `kib` KiB, its output and exit status.
ProgramOutput run_limited(const std::string& program, const std::string& args, long kib,
                          const fs::path& dir) {
  const fs::path out = dir / "out.txt", status = dir / "status.txt";
  const std::string command = "ulimit -v " + std::to_string(kib) + " && { timeout -s KILL 300 " +
                              quoted(program) + " " + args + " </dev/null >" + q(out) +
                              " 2>&1; echo $? >" + q(status) + "; }";
  REQUIRE(std::system(command.c_str()) == 0);
  ProgramOutput result;
  result.status = std::atoi(bytes_of(status).c_str());
  result.text = bytes_of(out);
  return result;
}

// A GPT-2 of `layers` blocks, width 8, 2 heads, GPT-2's tokenizer, and a context of 2^20
// positions (config.json's largest n_positions): 35 MB, mostly the position table.
fs::path long_context_gpt2(const fs::path& dir, const std::string& gpt2_files, int layers = 1) {
  const tt::GPT model(
      tt::GPTConfig(50257, std::int64_t(1) << 20).n_layer(layers).n_head(2).n_embd(8).gelu("tanh"),
      std::make_shared<tapegrad::Generator>(5));
  const auto tokenizer = tapegrad::data::GPT2Tokenizer::load(gpt2_files);
  const fs::path folder = dir / ("gpt2_" + std::to_string(layers));
  tapegrad::pretrained::save_gpt2(model, folder.string(), &tokenizer);
  return folder;
}

constexpr long kLimit = 512 << 10;  // KiB, for ulimit -v: 512 MiB

}  // namespace

TEST_SUITE("examples.gpt2") {
  TEST_CASE("the memory of a pass is counted from the sizes, and the longest window fits") {
    const tt::GPTConfig c = tt::GPTConfig(50257, 1024).n_layer(12).n_head(12).n_embd(768);
    // (B, T) = (2, 1024): 12 x 2048 x 768 activations, 2 x 12 x 1024^2 attention weights, and
    // 83 rows of logits (16 MiB of them) with three arrays of their size in the cross entropy.
    CHECK(tapegrad::train::logit_rows(50257) == 83);
    CHECK(tapegrad::train::logit_rows(65) == 64527);
    CHECK(gpt::forward_bytes(c, 2, 1024, 83) ==
          doctest::Approx(4.0 * (12.0 * 2048 * 768 + 2.0 * 12 * 1024 * 1024 + 4.0 * 83 * 50257)));
    CHECK(gpt::cache_bytes(c, 1) == doctest::Approx(4.0 * 2 * 12 * 1024 * 768));
    for (const double budget : {1e7, 1e8, 1e9, 1e10}) {
      const std::int64_t T = gpt::longest_window(c, 2, 1 << 20, 83, budget);
      CAPTURE(budget);
      CHECK(T >= 1);
      CHECK(gpt::forward_bytes(c, 2, double(T), 83) <= budget);
      CHECK(gpt::forward_bytes(c, 2, double(T + 1), 83) > budget);
    }
    CHECK(gpt::longest_window(c, 2, 1 << 20, 83, 1e3) == 0);  // not even one position
    CHECK(gpt::longest_window(c, 1, 100, 83, 1e12) == 100);   // at most the longest asked
  }

#if defined(TAPEGRAD_GPT_EVAL) && defined(TAPEGRAD_GPT_SAMPLE)
  TEST_CASE("gpt_eval refuses a default window of a 2^20 context that memory cannot hold") {
    TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED();
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "eval_memory");
    const fs::path model = long_context_gpt2(dir, files);
    std::ofstream(dir / "text.txt") << tapegrad::testing::fortune_corpus(900, 3);  // ~8,000 tokens
    const std::string args = "--model " + q(model) + " --text " + q(dir / "text.txt") + " --quiet";
    const ProgramOutput refused = run_limited(TAPEGRAD_GPT_EVAL, args, kLimit, dir);
    INFO(refused.text);
    CHECK(refused.status == 2);
    CHECK(has(refused.text,
              "(the default: the model's context, 1048576 positions, or the text's "
              "tokens when fewer): scoring 1 window of "));
    CHECK(has(refused.text, "needs about "));
    CHECK(has(refused.text, "this machine leaves the run (80 % of 512.00 MiB, less the "));
    CHECK(!has(refused.text, "gpt_eval result:"));
    CHECK(!has(refused.text, "out of memory"));
    // The window it names runs within the same limit.
    std::smatch m;
    REQUIRE(std::regex_search(refused.text, m, std::regex("give --window ([0-9]+) or less")));
    const ProgramOutput fits =
        run_limited(TAPEGRAD_GPT_EVAL, args + " --window " + m[1].str(), kLimit, dir);
    INFO(fits.text);
    CHECK(fits.status == 0);
    CHECK(has(fits.text, "gpt_eval result: loss="));
  }

  TEST_CASE(
      "gpt_sample bounds a 2^20 context: --no-cache refused by --tokens, --compare's pass "
      "skipped") {
    TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED();
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt2_programs", "sample_memory");
    const fs::path model = long_context_gpt2(dir, files);
    const ProgramOutput refused = run_limited(
        TAPEGRAD_GPT_SAMPLE, "--model " + q(model) + " --no-cache --tokens 100000", kLimit, dir);
    INFO(refused.text);
    CHECK(refused.status == 2);
    CHECK(has(refused.text,
              "gpt_sample: --tokens 100000: sampling without the cache runs the model "
              "on up to 100001 positions for every new token, which needs about "));
    CHECK(has(refused.text, "or fewer"));
    CHECK(!has(refused.text, "out of memory"));

    CHECK(run_limited(TAPEGRAD_GPT_SAMPLE, "--model " + q(model) + " --no-cache --tokens 20",
                      kLimit, dir)
              .status == 0);

    const ProgramOutput compared =
        run_limited(TAPEGRAD_GPT_SAMPLE, "--model " + q(model) + " --tokens 10 --compare --seed 1",
                    kLimit, dir);
    INFO(compared.text);
    CHECK(compared.status == 0);
    CHECK(has(compared.text, "the same tokens"));
    CHECK(has(compared.text,
              "one pass over a full context of 1048576 tokens: not timed, it would "
              "need about "));

    // Eight blocks: a cache of 2 x 8 x 2^20 x 8 floats (512 MiB), allocated at once.
    const fs::path deep = long_context_gpt2(dir, files, 8);
    const ProgramOutput cached =
        run_limited(TAPEGRAD_GPT_SAMPLE, "--model " + q(deep) + " --tokens 20", kLimit, dir);
    INFO(cached.text);
    CHECK(cached.status == 2);
    CHECK(has(cached.text,
              "gpt_sample: --model: the cache of keys and values of this model's "
              "context, 1048576 positions (2 x 8 layers x 1048576 x 8 floats, "
              "allocated at once), needs about 512."));
    CHECK(has(cached.text, "sample with --no-cache, which needs about "));
    CHECK(!has(cached.text, "out of memory"));
    const ProgramOutput uncached = run_limited(
        TAPEGRAD_GPT_SAMPLE, "--model " + q(deep) + " --tokens 20 --no-cache", kLimit, dir);
    INFO(uncached.text);
    CHECK(uncached.status == 0);
  }
#endif
}
