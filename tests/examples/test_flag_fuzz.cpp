// tests/examples/test_flag_fuzz.cpp: every flag of gpt, gpt_sample, copy_task and toy_training,
// one at a time, given each hostile value of a fixed list (NaN, infinities, -1, 0, 1e308, integers
// past 64 bits, empty text, words, a folder, /dev/null) on top of a tiny valid run. Whatever the
// value, the program must end by itself (a timeout), with exit status 0, 1 or 2, and say why when
// it is not 0: never an abort, a segfault or a silent failure. The flags are read from each
// program's --help, so a flag added later is fuzzed too. Each program runs in a scratch folder,
// so that values taken as file names ("nan", "-1") land there.
#include <doctest/doctest.h>

#if defined(TAPEGRAD_GPT) && defined(TAPEGRAD_COPY_TASK) && defined(TAPEGRAD_TOY_TRAINING)

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "../fortune_corpus.hpp"
#include "run_program.hpp"

namespace {

namespace fs = std::filesystem;
using tapegrad::testing::quoted;
using tapegrad::testing::run_program;

// The program's long flags, in the order its --help lists them.
std::vector<std::string> flags_of(const std::string& program) {
  const auto help = run_program(program, "--help", 30);
  REQUIRE(help.status == 0);
  std::vector<std::string> flags;
  const std::regex flag(R"(^\s+(?:-\w, )?(--[a-z][a-z0-9-]*))");
  std::istringstream lines(help.text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, flag) && m[1] != "--help") flags.push_back(m[1]);
  }
  REQUIRE(flags.size() >= 5);
  return flags;
}

struct Tally {
  int runs = 0, refused = 0, accepted = 0;
};

// Runs `program base flag value` for every flag and value; checks how each run ended.
Tally fuzz(const std::string& name, const std::string& program, const std::string& base,
           const fs::path& scratch) {
  const std::vector<std::string> values = {"nan",
                                           "inf",
                                           "-inf",
                                           "-1",
                                           "0",
                                           "0.5",
                                           "1e308",
                                           "9223372036854775807",
                                           "18446744073709551616",
                                           "''",
                                           "abc",
                                           "1abc",
                                           quoted(scratch.string()),
                                           "/dev/null"};
  Tally tally;
  for (const std::string& flag : flags_of(program))
    for (const std::string& value : values) {
      const std::string args = base + " " + flag + " " + value;
      const auto out = run_program(program, args, 30, scratch.string());
      ++tally.runs;
      INFO(name, " ", args, "\n",
           out.text.substr(out.text.size() > 3000 ? out.text.size() - 3000 : 0));
      CHECK(!out.timed_out);
      CHECK((out.status == 0 || out.status == 1 || out.status == 2));
      if (out.status == 2) {
        ++tally.refused;
        CHECK(out.text.find(name + ": ") != std::string::npos);  // one line naming what was wrong
      } else {
        ++tally.accepted;
      }
      if (out.status == 1) CHECK(!out.text.empty());
    }
  return tally;
}

fs::path scratch_folder(const std::string& name) {
  const fs::path dir = fs::path(TAPEGRAD_BINARY_DIR) / "test_output" / "flag_fuzz" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_SUITE("examples.flag_fuzz") {
  TEST_CASE("every flag of the example programs, given hostile values, ends in 0, 1 or 2") {
    const fs::path gpt_dir = scratch_folder("gpt");
    std::ofstream(gpt_dir / "corpus.txt") << tapegrad::testing::fortune_corpus(60, 5);
    const std::string gpt_base =
        "--data corpus.txt --n-layer 1 --n-embd 8 --n-head 2 --block-size 8 --batch-size 2 "
        "--steps 2 --eval-windows 2 --sample-tokens 0 --quiet --out run";
    REQUIRE(run_program(TAPEGRAD_GPT, gpt_base, 60, gpt_dir.string()).status <= 1);
    const fs::path checkpoint = gpt_dir / "run" / "last.safetensors";
    REQUIRE(fs::exists(checkpoint));
    const Tally gpt = fuzz("gpt", TAPEGRAD_GPT, gpt_base, gpt_dir);

    const fs::path sample_dir = scratch_folder("gpt_sample");
    const Tally sample =
        fuzz("gpt_sample", TAPEGRAD_GPT_SAMPLE,
             "--checkpoint " + quoted(checkpoint.string()) + " --tokens 5", sample_dir);
    const Tally copy = fuzz("copy_task", TAPEGRAD_COPY_TASK,
                            "--epochs 1 --batches 1 --eval-batches 0 --layers 1 --d-model 8 "
                            "--d-ff 8 --heads 2 --batch-size 4 --checkpoint ''",
                            scratch_folder("copy_task"));
    const Tally toy = fuzz("toy_training", TAPEGRAD_TOY_TRAINING, "--steps 2 --out out",
                           scratch_folder("toy_training"));
    MESSAGE("runs (refused, accepted): gpt ", gpt.runs, " (", gpt.refused, ", ", gpt.accepted,
            "), gpt_sample ", sample.runs, " (", sample.refused, ", ", sample.accepted,
            "), copy_task ", copy.runs, " (", copy.refused, ", ", copy.accepted, "), toy_training ",
            toy.runs, " (", toy.refused, ", ", toy.accepted, ")");
    // Most hostile values must be refused: a flag that took them all would be unchecked.
    CHECK(gpt.refused > gpt.runs / 2);
    CHECK(copy.refused > copy.runs / 2);
  }

  TEST_CASE("copy_task refuses a checkpoint it could not write before it trains") {
    for (const char* target : {"/dev/null", "/nonexistent-folder/x.safetensors", "/tmp"}) {
      CAPTURE(target);
      const auto out = run_program(TAPEGRAD_COPY_TASK,
                                   "--epochs 1 --batches 1 --eval-batches 0 --layers 1 --d-model 8 "
                                   "--d-ff 8 --heads 2 --checkpoint " +
                                       std::string(target),
                                   30);
      INFO(out.text);
      CHECK(out.status == 2);
      CHECK(out.text.find("copy_task: --checkpoint: ") != std::string::npos);
      CHECK(out.text.find("epoch") == std::string::npos);  // nothing trained
    }
  }
}

#endif
