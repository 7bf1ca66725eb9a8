// tests/examples/test_eval_inputs.cpp: gpt_eval and gpt_sample on inputs a hostile user tries,
// each refused in one line that names the flag, the file and the reason, before anything is
// loaded or allocated: a --text larger than gpt_eval scores, or whose tokenizing would not fit in
// the memory the process may use (`ulimit -v` here), a FIFO, a symbolic link in a loop; and a
// result that cannot be written (standard output on a full disk) is a failure, not exit 0.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../gpt2_files.hpp"
#include "run_program.hpp"

#if defined(TAPEGRAD_GPT_EVAL) && defined(TAPEGRAD_GPT_SAMPLE)

namespace {

namespace fs = std::filesystem;
using tapegrad::testing::bytes_of;
using tapegrad::testing::has;
using tapegrad::testing::ProgramOutput;
using tapegrad::testing::quoted;

std::string q(const fs::path& p) { return quoted(p.string()); }

void check_refused(const ProgramOutput& out, const std::string& program, const std::string& part) {
  INFO(out.text);
  CHECK(out.status == 2);
  CHECK(has(out.text, program + ": " + part));
  CHECK(!has(out.text, "out of memory"));
  CHECK(!has(out.text, "terminate called"));
}

// `program args >/dev/full`: what it said on standard error, and its exit status.
ProgramOutput run_into_full_disk(const std::string& program, const std::string& args,
                                 const fs::path& dir) {
  const std::string command = quoted(program) + " " + args + " </dev/null >/dev/full 2>" +
                              q(dir / "err.txt") + "; echo $? >" + q(dir / "status.txt");
  REQUIRE(std::system(command.c_str()) == 0);
  ProgramOutput out;
  out.status = std::atoi(bytes_of(dir / "status.txt").c_str());
  out.text = bytes_of(dir / "err.txt");
  return out;
}

}  // namespace

TEST_SUITE("examples.gpt_inputs") {
  TEST_CASE("gpt_eval refuses a --text it should not read, from its size, before loading a model") {
    const fs::path dir = tapegrad::testing::fresh_folder("gpt_inputs", "eval_text");
    std::ofstream(dir / "big.txt") << "x";
    fs::resize_file(dir / "big.txt", std::uintmax_t(300) << 20);  // sparse: no disk used
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    const std::string model = " --model " + q(dir / "no_model");  // never reached
    check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT_EVAL,
                                                 "--text " + q(dir / "big.txt") + model, 30),
                  "gpt_eval",
                  "--text: '" + (dir / "big.txt").string() +
                      "' holds 300 MiB, more than the 256 MiB gpt_eval scores");
    check_refused(
        tapegrad::testing::run_program(TAPEGRAD_GPT_EVAL, "--text " + q(dir / "fifo") + model, 30),
        "gpt_eval", "--text: '" + (dir / "fifo").string() + "': expected a regular file");

    TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED();
    // 200 MiB whose tokenizing could take 32 bytes a byte, under a limit of 2 GiB.
    fs::resize_file(dir / "big.txt", std::uintmax_t(200) << 20);
    const std::string command = "ulimit -v 2097152 && " + quoted(TAPEGRAD_GPT_EVAL) + " --text " +
                                q(dir / "big.txt") + model + " >" + q(dir / "out.txt") +
                                " 2>&1; echo $? >" + q(dir / "status.txt");
    REQUIRE(std::system(command.c_str()) == 0);
    ProgramOutput limited;
    limited.status = std::atoi(bytes_of(dir / "status.txt").c_str());
    limited.text = bytes_of(dir / "out.txt");
    check_refused(limited, "gpt_eval",
                  "--text: tokenizing the 200 MiB of '" + (dir / "big.txt").string() +
                      "' may need up to 6.25 GiB (32 bytes per byte of text), more than the ");
    CHECK(has(limited.text, "score a part of it, at most "));
  }

  TEST_CASE("a score or a sample that cannot be written to standard output is a failure") {
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path dir = tapegrad::testing::fresh_folder("gpt_inputs", "full_disk");
    namespace tt = tapegrad::nn::transformer;
    const tt::GPT model(tt::GPTConfig(50257, 16).n_layer(1).n_head(2).n_embd(8).gelu("tanh"),
                        std::make_shared<tapegrad::Generator>(3));
    const auto tokenizer = tapegrad::data::GPT2Tokenizer::load(files);
    tapegrad::pretrained::save_gpt2(model, (dir / "gpt2").string(), &tokenizer);
    std::ofstream(dir / "t.txt") << "a short text to score, in a few windows of sixteen tokens\n";
    const ProgramOutput eval = run_into_full_disk(
        TAPEGRAD_GPT_EVAL, "--model " + q(dir / "gpt2") + " --text " + q(dir / "t.txt"), dir);
    check_refused(eval, "gpt_eval", "cannot write to standard output: the result is lost");
    const ProgramOutput sample =
        run_into_full_disk(TAPEGRAD_GPT_SAMPLE, "--model " + q(dir / "gpt2") + " --tokens 5", dir);
    check_refused(sample, "gpt_sample", "cannot write to standard output: the text is lost");
  }

  TEST_CASE("a flag is named as it was typed, and one the program does not know is named first") {
    // (`gpt_sample --checkpoint` without its value was "--model: 1 required TEXT missing": the
    // flag's first name, not the alias typed. CLI11 checks the required flags before the unknown
    // ones: `gpt_eval --modle m` was "--model is required", not that --modle is no flag.)
    check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT_SAMPLE, "--checkpoint", 30),
                  "gpt_sample", "--checkpoint: 1 required TEXT missing (--help lists the flags)");
    check_refused(
        tapegrad::testing::run_program(TAPEGRAD_GPT_SAMPLE, "--tokens 5 --checkpoint", 30),
        "gpt_sample", "--checkpoint: 1 required TEXT missing");
    check_refused(
        tapegrad::testing::run_program(TAPEGRAD_GPT_EVAL, "--text t.txt --modle m", 30), "gpt_eval",
        "The following arguments were not expected: --modle m; and --model is required (--help "
        "lists the flags)");
  }

  TEST_CASE("a --model that is not a model is named by its flag first, whatever it is") {
    // The readers (load_safetensors, load_gpt2) name the file and themselves; the message starts
    // with the flag the user gave.
    const fs::path dir = tapegrad::testing::fresh_folder("gpt_inputs", "model_kinds");
    std::ofstream(dir / "t.txt") << "some text to score\n";
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    fs::create_directories(dir / "empty_folder");
    for (const std::string& model : {(dir / "fifo").string(), std::string("/dev/null"),
                                     (dir / "empty_folder").string(), (dir / "t.txt").string()}) {
      CAPTURE(model);
      check_refused(
          tapegrad::testing::run_program(TAPEGRAD_GPT_EVAL,
                                         "--model " + q(model) + " --text " + q(dir / "t.txt"), 30),
          "gpt_eval", "--model: ");
      check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT_SAMPLE, "--model " + q(model), 30),
                    "gpt_sample", "--model: ");
    }
  }

  TEST_CASE("a --model that is a symbolic link in a loop is named with the system's reason") {
    const fs::path dir = tapegrad::testing::fresh_folder("gpt_inputs", "model_loop");
    std::ofstream(dir / "t.txt") << "some text to score\n";
    fs::create_symlink(dir / "loop_b", dir / "loop_a");
    fs::create_symlink(dir / "loop_a", dir / "loop_b");
    check_refused(
        tapegrad::testing::run_program(
            TAPEGRAD_GPT_EVAL, "--model " + q(dir / "loop_a") + " --text " + q(dir / "t.txt"), 30),
        "gpt_eval",
        "--model: '" + (dir / "loop_a").string() + "': Too many levels of symbolic links");
    check_refused(
        tapegrad::testing::run_program(TAPEGRAD_GPT_SAMPLE, "--model " + q(dir / "loop_a"), 30),
        "gpt_sample",
        "--model: '" + (dir / "loop_a").string() + "': Too many levels of symbolic links");
  }
}

#endif
