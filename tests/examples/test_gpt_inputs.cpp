// tests/examples/test_gpt_inputs.cpp: the GPT programs refuse bad input the way the library does:
// one line naming the flag or the file and exit status 2, before any training, never an abort or
// a segfault; and no run replaces a better best.safetensors. Each case here once crashed, hung or
// went on silently. The checkpoint notes' checks (tapegrad/train/gpt_model.hpp) are also called
// directly, on a file held in memory, so that each check is seen on its own.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include <tapegrad/train.hpp>
#include "../fortune_corpus.hpp"
#include "run_program.hpp"

namespace {

namespace fs = std::filesystem;
namespace tt = tapegrad::nn::transformer;
using tapegrad::testing::bytes_of;
using tapegrad::testing::has;
using tapegrad::testing::quoted;

fs::path fresh_folder(const std::string& name) {
  return tapegrad::testing::fresh_folder("gpt_inputs", name);
}

// One line of error: the program's name first, nothing from CLI11 or the C++ runtime after it.
void check_refused(const tapegrad::testing::ProgramOutput& out, const std::string& program,
                   const std::string& part) {
  INFO(out.text);
  CHECK(out.status == 2);
  CHECK(has(out.text, program + ": "));
  CHECK(has(out.text, part));
  CHECK(!has(out.text, "terminate called"));
  CHECK(!has(out.text, "stoll"));
}

// A GPT checkpoint of the tiny model, in memory, with its notes (as gpt writes them).
struct TinyCheckpoint {
  tt::GPTConfig config = tt::GPTConfig(5, 8).n_layer(2).n_head(2).n_embd(8);
  tapegrad::data::Tokenizer tokenizer{tapegrad::data::Vocabulary(U"%\nab")};
  tt::GPT model{config, std::make_shared<tapegrad::Generator>(0)};
  tapegrad::io::SafetensorsFile file() {
    tapegrad::optim::AdamW opt(model.parameters());
    tapegrad::io::TrainingCheckpoint ckpt(model, opt);
    std::map<std::string, std::string> notes = tapegrad::train::model_notes(config, tokenizer);
    return ckpt.to_file({0, 0, notes});
  }
};

std::string refusal(tapegrad::io::SafetensorsFile f) {
  try {
    tapegrad::train::read_model_notes(f, "x.safetensors");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

#ifdef TAPEGRAD_GPT

TEST_SUITE("examples.gpt_inputs") {
  TEST_CASE("the parameter count from the sizes is the built model's, for every choice") {
    for (const char* pos : {"learned", "sinusoidal", "rope"})
      for (const char* norm : {"layernorm", "rmsnorm"})
        for (const char* mlp : {"gelu", "relu_squared", "swiglu"}) {
          const auto c =
              tt::GPTConfig(11, 6).n_layer(2).n_head(2).n_embd(12).position(pos).norm(norm).mlp(
                  mlp);
          const tt::GPT model(c);
          CHECK_MESSAGE(tapegrad::train::parameter_count(c) == double(model.num_params(false)), pos, norm, mlp);
        }
  }

  TEST_CASE("a checkpoint's notes are parsed strictly, bounded, and must fit its tensors") {
    TinyCheckpoint t;
    CHECK(refusal(t.file()).empty());
    auto with = [&](const std::string& key, const std::string& value) {
      tapegrad::io::SafetensorsFile f = t.file();
      f.set_metadata("progress.extra." + key, value);
      return refusal(std::move(f));
    };
    CHECK(has(with("gpt.n_layer", "1abc"), "'gpt.n_layer': expected an integer in [1, 1000]"));
    CHECK(has(with("gpt.n_layer", "abc"), "got 'abc'"));
    CHECK(has(with("gpt.n_layer", "1000000"), "expected an integer in [1, 1000]"));
    CHECK(has(with("gpt.n_layer", "3"), "the notes gpt.n_layer"));  // 2 blocks in the file
    CHECK(has(with("gpt.n_layer", "1"), "gpt.n_layer"));
    CHECK(has(with("gpt.n_embd", "16"), "gpt.vocab and gpt.n_embd"));
    CHECK(has(with("gpt.n_head", "3"), "multiple of n_head"));
    CHECK(has(with("gpt.block_size", "9"), "gpt.block_size"));  // the learned table is 8 rows
    CHECK(has(with("gpt.gelu", "sigmoid"), "expected one of none, tanh"));
    CHECK(has(with("gpt.dropout", "nan"), "'gpt.dropout': expected a number in [0, 1]"));
    CHECK(has(with("gpt.vocab", "%ab"), "gpt.vocab"));    // one character fewer: shapes
    CHECK(has(with("gpt.vocab", "\n%%a"), "gpt.vocab"));  // a character twice
    CHECK(refusal(t.file()).empty());
    CHECK(has(with("gpt.vocab", "ba\n%"), "gpt.vocab"));  // not ascending
    CHECK(has(with("gpt.tokenizer", "words"), "'gpt.tokenizer': expected one of char, bpe, gpt2"));
    CHECK(has(with("gpt.tokenizer", "bpe"), "the note 'gpt.vocab' line 1: expected the header"));
    CHECK(has(with("gpt.tokenizer", "gpt2"), "expected \"gpt2_ids N\""));
  }

  TEST_CASE("a checkpoint keeps its BPE: read back, it encodes as the one trained") {
    const auto bpe = tapegrad::data::BytePairEncoding::train("ab ab ab", 257,
                                                             tapegrad::data::Pretokenizer::gpt2);
    const tapegrad::data::Tokenizer bpe_tokenizer(bpe);
    const tt::GPTConfig bpe_config = tt::GPTConfig(257, 8).n_layer(2).n_head(2).n_embd(8);
    tt::GPT model{bpe_config, std::make_shared<tapegrad::Generator>(0)};
    tapegrad::optim::AdamW opt(model.parameters());
    tapegrad::io::TrainingCheckpoint ckpt(model, opt);
    const auto file = [&] {
      return ckpt.to_file({0, 0, tapegrad::train::model_notes(bpe_config, bpe_tokenizer)});
    };
    const auto [config, tokenizer] = tapegrad::train::read_model_notes(file(), "x.safetensors");
    CHECK(tokenizer.name() == "bpe");
    CHECK(config.vocab_size() == 257);
    CHECK(tokenizer.encode("ab ab", "text") == std::vector<std::int64_t>{256, ' ', 256});
    // The notes and the tensors must agree: a BPE of another size is refused.
    tapegrad::io::SafetensorsFile f = file();
    f.set_metadata("progress.extra.gpt.vocab", tapegrad::data::BytePairEncoding().to_text());
    CHECK(has(refusal(std::move(f)), "gpt.vocab and gpt.n_embd"));
  }

  TEST_CASE("gpt refuses hostile flags, data and folders with one line, before training") {
    const fs::path dir = fresh_folder("flags");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    std::ofstream(dir / "a_file") << "x";
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    std::ofstream(dir / "huge.txt") << "x";
    fs::resize_file(dir / "huge.txt", (16u << 20) + 1);  // sparse: no disk used
    const std::string base = " --data " + quoted((dir / "corpus.txt").string()) +
                             " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 --steps 2 "
                             "--eval-windows 4 --sample-tokens 0 --out " +
                             quoted((dir / "out").string());
    const std::pair<std::string, std::string> cases[] = {
        {"--lr nan", "--lr: expected a number in (0, 10], got 'nan'"},
        {"--beta1 nan", "--beta1: expected a number in [0, 1)"},
        {"--beta2 1", "--beta2: expected a number in [0, 1), got '1'"},
        {"--weight-decay nan", "--weight-decay: expected a number"},
        {"--min-lr nan", "--min-lr: expected a number"},
        {"--min-lr 0.1", "--min-lr: expected at most --lr"},
        {"--clip nan", "--clip: expected a number"},
        {"--seed -1", "--seed: expected an integer in [0, 2^64), got '-1'"},
        {"--batch-size 1e8", "--batch-size: expected an integer in [1, 65536], got '1e8'"},
        {"--batch-size 65536 --block-size 400 --n-layer 1000", "GiB"},  // (on any machine)
        {"--eval-windows 1e9", "--eval-windows: expected an integer"},
        {"--n-layer 100000", "--n-layer: expected an integer in [1, 1000]"},
        {"--n-layer 1000 --n-embd 2048", "parameters, more than the 2e+08"},
        {"--n-head 3", "--n-head: expected a divisor of --n-embd"},
        {"--steps 1abc", "--steps: expected an integer"},
        {"--out " + quoted((dir / "a_file").string()), "exists and is not a folder"},
        {"--out /dev/null", "'/dev/null' exists and is not a folder"},
        {"--out ''", "--out: expected a folder name, got ''"},
        {"--out " + quoted((dir / "a_file" / "sub").string()), "--out: cannot create the folder"},
        {"--data " + quoted((dir / "fifo").string()), "is not a regular file"},
        {"--data /dev/zero", "'/dev/zero' is not a regular file"},
        {"--data " + quoted(dir.string()), "is a folder; --data expects text files"},
        {"--data " + quoted((dir / "huge.txt").string()), "MiB this program reads"},
        {"--tokenizer words",
         "--tokenizer: expected char, bpe:N with N in [257, 65536], bpe-model:FILE, gpt2:DIR or "
         "hf:tokenizer.json"},
        {"--tokenizer bpe-model:" + quoted((dir / "fifo").string()), "is not a regular file"},
        {"--tokenizer bpe-model:" + quoted((dir / "corpus.txt").string()),
         "line 1: expected the header \"tapegrad-bpe 1\""},
        {"--tokenizer bpe:256", "--tokenizer: expected char, bpe:N with N in [257, 65536]"},
        {"--tokenizer bpe:1e3", "got 'bpe:1e3'"},
        {"--tokenizer bpe:", "got 'bpe:'"},
        {"--tokenizer gpt2:" + quoted((dir / "nowhere").string()),
         "--tokenizer: GPT2Tokenizer::load: "},
        {"--tokenizer gpt2:" + quoted(dir.string()), "holds neither encoder.json and vocab.bpe"},
        {"--tokens x.tokens", "--tokens and --data do not go together"},
    };
    for (const auto& [args, message] : cases) {
      CAPTURE(args);
      check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT, base + " " + args, 60), "gpt",
                    message);
    }
    CHECK(!fs::exists(dir / "out" / "last.safetensors"));
  }

  TEST_CASE("--tokens, --init-from and --export-hf given empty are refused, not read as absent") {
    // (An unset shell variable, --tokens "$TOKENS", once trained on --data or the fortunes, started
    // from random weights, or exported nothing, each with exit status 0.)
    const fs::path dir = fresh_folder("empty_names");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    const std::string base = " --data " + quoted((dir / "corpus.txt").string()) +
                             " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 --steps 2 "
                             "--eval-windows 4 --sample-tokens 0 --out " +
                             quoted((dir / "out").string());
    const std::pair<std::string, std::string> cases[] = {
        {"--tokens ''", "gpt: --tokens: expected a file name, got ''"},
        {"--init-from ''", "gpt: --init-from: expected a folder name, got ''"},
        {"--export-hf ''", "gpt: --export-hf: expected a folder name, got ''"},
    };
    for (const auto& [args, message] : cases) {
      CAPTURE(args);
      check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT, base + " " + args, 60), "gpt",
                    message);
    }
    CHECK(!fs::exists(dir / "out" / "last.safetensors"));
  }

  TEST_CASE("a --tokens or --init-from that cannot be used is named by its flag first") {
    // The readers name the file and themselves (TokenFile::open, load_gpt2); the message starts
    // with the flag the user gave.
    const fs::path dir = fresh_folder("input_flags");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    fs::create_directories(dir / "empty_folder");
    // (--init-from gives the model's sizes: they are given with --tokens only.)
    const std::string base =
        " --steps 2 --eval-windows 4 --sample-tokens 0 --out " + quoted((dir / "out").string());
    const std::string bpe = " --tokenizer bpe-model:" + quoted((dir / "m.bpe").string()) +
                            " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8";
    REQUIRE(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE,
                                           "--train-bpe 260 --text " +
                                               quoted((dir / "corpus.txt").string()) + " --out " +
                                               quoted((dir / "m.bpe").string()),
                                           60)
                .status == 0);
    const std::pair<std::string, std::string> cases[] = {
        {"--tokens " + quoted((dir / "fifo").string()) + bpe, "gpt: --tokens: "},
        {"--tokens " + quoted((dir / "corpus.txt").string()) + bpe, "gpt: --tokens: "},
        {"--tokens " + quoted((dir / "nowhere").string()) + bpe, "gpt: --tokens: "},
        {"--data " + quoted((dir / "corpus.txt").string()) + " --init-from " +
             quoted((dir / "fifo").string()),
         "gpt: --init-from: "},
        {"--data " + quoted((dir / "corpus.txt").string()) + " --init-from " +
             quoted((dir / "empty_folder").string()),
         "gpt: --init-from: "},
    };
    for (const auto& [args, message] : cases) {
      CAPTURE(args);
      check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT, base + " " + args, 60), "gpt",
                    message);
    }
  }

  TEST_CASE("a flag's value holding a line end is shown escaped, in the one line of the error") {
    const auto out = tapegrad::testing::run_program(TAPEGRAD_GPT, "--steps " + quoted("1\n2"), 60);
    check_refused(out, "gpt", "gpt: --steps: expected an integer in [1, 10000000], got '1\\n2'");
    // The kernel set's line, then the error's: two lines in all.
    CHECK(std::count(out.text.begin(), out.text.end(), '\n') == 2);
  }

  TEST_CASE("text that --data cannot use and a checkpoint --resume cannot use name their flag") {
    // ("'x.txt' is not UTF-8 text" named no flag; "expected text of at least 2 entries, got 0"
    // named no file; the checkpoint's reader named itself, not --resume.)
    const fs::path dir = fresh_folder("data_resume_named");
    std::string latin1;
    for (int i = 0; i < 50; ++i) latin1 += "caf\xe9 au lait\n%\n";
    std::ofstream(dir / "latin1.txt") << latin1;
    std::ofstream(dir / "percent.txt") << "%\n%\n%\n";
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    const std::string small =
        " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 --steps 2 "
        "--eval-windows 4 --sample-tokens 0 --out " +
        quoted((dir / "out").string());
    check_refused(tapegrad::testing::run_program(
                      TAPEGRAD_GPT, "--data " + quoted((dir / "latin1.txt").string()) + small, 60),
                  "gpt", "gpt: --data: '" + (dir / "latin1.txt").string() + "' is not UTF-8 text");
    check_refused(
        tapegrad::testing::run_program(
            TAPEGRAD_GPT,
            "--data " + quoted((dir / "percent.txt").string()) + " --data-format fortunes" + small,
            60),
        "gpt",
        "gpt: --data: expected text of at least 2 entries (separated by '%' lines or "
        "blank lines), got 0 in '" +
            (dir / "percent.txt").string() + "'");
    const std::string run = "--data " + quoted((dir / "corpus.txt").string()) + small;
    REQUIRE(tapegrad::testing::run_program(TAPEGRAD_GPT, run, 60).status <= 1);
    const fs::path last = dir / "out" / "last.safetensors";
    fs::resize_file(last, fs::file_size(last) / 2);  // cut: its tensors end past the file's end
    const auto resumed = tapegrad::testing::run_program(TAPEGRAD_GPT, run + " --resume", 60);
    check_refused(resumed, "gpt", "gpt: --resume: ");
    CHECK(has(resumed.text, last.string()));
  }

  TEST_CASE("the ids of a step's micro-batches count in its memory, and --grad-accum is named") {
    // (--batch-size 4096 --grad-accum 1024 passed the bound, then ran out of memory reading the
    // step's batches: "out of memory", no flag named.) Here the ids alone are 128 GiB, the rest of
    // the step a twelfth of that: refused on any machine of less than 170 GB.
    TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED();  // (a guard: the old code allocated)
    const fs::path dir = fresh_folder("grad_accum_memory");
    std::string text;
    for (int i = 0; i < 10000; ++i) text += "ab";
    std::ofstream(dir / "ab.txt") << text;
    const std::string command =
        "ulimit -v 3145728 && " + quoted(TAPEGRAD_GPT) + " --data " +
        quoted((dir / "ab.txt").string()) +
        " --data-format text --n-layer 1 --n-head 1 --n-embd 2 --block-size 128 --batch-size "
        "65536 --grad-accum 1024 --steps 1 --eval-windows 4 --sample-tokens 0 --out " +
        quoted((dir / "out").string()) + " </dev/null >" + quoted((dir / "out.txt").string()) +
        " 2>&1; echo $? >" + quoted((dir / "status.txt").string());
    REQUIRE(std::system(command.c_str()) == 0);
    tapegrad::testing::ProgramOutput out;
    out.status = std::atoi(bytes_of(dir / "status.txt").c_str());
    out.text = bytes_of(dir / "out.txt");
    check_refused(out, "gpt",
                  "gpt: --batch-size, --grad-accum, --block-size, --n-layer, --n-embd: a training "
                  "step would hold about ");
    CHECK(has(out.text, "of ids for its 1024 micro-batches"));
    CHECK(!has(out.text, "step 0: validation"));
  }

  TEST_CASE("the validation windows count in the memory bound, and --eval-windows is named") {
    // (--eval-windows 100000 --block-size 2048 held 3.3 GB of windows, never bounded.) Here they
    // are 6.1 GiB under a limit of 3 GiB, the rest of the run 130 MB.
    TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED();  // (a guard: the old code allocated)
    const fs::path dir = fresh_folder("eval_windows_memory");
    std::string text;
    for (int i = 0; i < 30000; ++i) text += "ab";
    std::ofstream(dir / "ab.txt") << text;
    const std::string command =
        "ulimit -v 3145728 && " + quoted(TAPEGRAD_GPT) + " --data " +
        quoted((dir / "ab.txt").string()) +
        " --data-format text --n-layer 1 --n-head 1 --n-embd 2 --block-size 4096 --batch-size 1 "
        "--eval-windows 100000 --steps 1 --sample-tokens 0 --out " +
        quoted((dir / "out").string()) + " </dev/null >" + quoted((dir / "out.txt").string()) +
        " 2>&1; echo $? >" + quoted((dir / "status.txt").string());
    REQUIRE(std::system(command.c_str()) == 0);
    tapegrad::testing::ProgramOutput out;
    out.status = std::atoi(bytes_of(dir / "status.txt").c_str());
    out.text = bytes_of(dir / "out.txt");
    check_refused(out, "gpt",
                  "gpt: --batch-size, --eval-windows, --block-size, --n-layer, --n-embd: a "
                  "training step would hold about ");
    CHECK(has(out.text, "of ids for the 100000 validation windows the run keeps"));
    CHECK(has(out.text,
              "lower --batch-size (--grad-accum K keeps the batch with K times smaller "
              "steps), --eval-windows, --block-size"));
  }

  TEST_CASE("--resume refuses a dangling last.safetensors before training") {
    const fs::path dir = fresh_folder("dangling");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    fs::create_directories(dir / "out");
    fs::create_symlink(dir / "nowhere" / "last.safetensors", dir / "out" / "last.safetensors");
    const auto out = tapegrad::testing::run_program(
        TAPEGRAD_GPT, "--data " + quoted((dir / "corpus.txt").string()) +
                          " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 --steps 2 "
                          "--eval-windows 4 --sample-tokens 0 --resume --out " +
                          quoted((dir / "out").string()));
    check_refused(out, "gpt", "is a symbolic link to");
    CHECK(!has(out.text, "step 0: validation"));  // it refused before training
  }

  TEST_CASE("a new run says it replaces last.safetensors, and refuses one that is no checkpoint") {
    const fs::path dir = fresh_folder("new_run");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    const std::string base = "--data " + quoted((dir / "corpus.txt").string()) +
                             " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 --steps 2 "
                             "--eval-windows 4 --sample-tokens 0 --out " +
                             quoted((dir / "out").string());
    REQUIRE(tapegrad::testing::run_program(TAPEGRAD_GPT, base).status <= 1);
    const auto again = tapegrad::testing::run_program(TAPEGRAD_GPT, base);
    INFO(again.text);
    CHECK(again.status <= 1);
    CHECK(has(again.text, "is replaced at the first save (--resume continues that run instead)"));
    // A link to a file that is not a checkpoint: refused before training, the file untouched.
    std::ofstream(dir / "notes.txt") << "my notes";
    fs::remove(dir / "out" / "last.safetensors");
    fs::create_symlink(dir / "notes.txt", dir / "out" / "last.safetensors");
    const auto refused = tapegrad::testing::run_program(TAPEGRAD_GPT, base);
    check_refused(refused, "gpt", "would be replaced by this run's checkpoint, but it is not one");
    CHECK(!has(refused.text, "step 0: validation"));
    CHECK(bytes_of(dir / "notes.txt") == "my notes");
  }

  TEST_CASE("no run replaces a better best.safetensors, resumed or not") {
    const fs::path dir = fresh_folder("best");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(400, 7);
    const std::string base = "--data " + quoted((dir / "corpus.txt").string()) +
                             " --n-layer 1 --n-embd 32 --n-head 2 --block-size 16 --warmup 5 "
                             "--eval-windows 32 --sample-tokens 0 --out " +
                             quoted((dir / "out").string());
    REQUIRE(
        tapegrad::testing::run_program(TAPEGRAD_GPT, base + " --steps 60 --eval-every 30").status ==
        0);
    const std::string best = bytes_of(dir / "out" / "best.safetensors");
    fs::remove(dir / "out" / "last.safetensors");
    // Two steps validate far worse than sixty: the better best file must stay.
    const auto resumed =
        tapegrad::testing::run_program(TAPEGRAD_GPT, base + " --steps 2 --eval-every 1 --resume");
    INFO(resumed.text);
    CHECK(has(resumed.text, "is kept unless this run does better"));
    CHECK(!has(resumed.text, "best so far, saved"));
    CHECK(bytes_of(dir / "out" / "best.safetensors") == best);
    const auto fresh =
        tapegrad::testing::run_program(TAPEGRAD_GPT, base + " --steps 2 --eval-every 1");
    CHECK(fresh.status <= 1);
    CHECK(bytes_of(dir / "out" / "best.safetensors") == best);
    // A best file whose loss cannot be read is not replaced blindly.
    std::ofstream(dir / "out" / "best.safetensors") << "not a checkpoint";
    check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT, base + " --steps 2"), "gpt",
                  "move it away or choose another --out");
  }

  TEST_CASE("--resume refuses a checkpoint whose history or best loss was tampered with") {
    const fs::path dir = fresh_folder("tampered");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    const std::string base = "--data " + quoted((dir / "corpus.txt").string()) +
                             " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 --warmup 2 "
                             "--eval-windows 4 --sample-tokens 0 --eval-every 2 --out " +
                             quoted((dir / "out").string());
    REQUIRE(
        tapegrad::testing::run_program(TAPEGRAD_GPT, base + " --steps 8 --stop-after 4").status ==
        0);
    const fs::path last = dir / "out" / "last.safetensors";
    const std::string good = bytes_of(last);
    const std::pair<std::string, std::string> edits[] = {
        {"best_val", "abc"},
        {"best_val", "-1"},
        {"best_val", "nan"},
        {"history.train", ""},
        {"history.train", "1 2 x"},
        {"history.val", ""},
        {"history.val", "0x1p+2 0x1p+0"},
        {"gpt.n_layer", "1abc"},
        {"gpt.vocab", "abc"},
    };
    for (const auto& [key, value] : edits) {
      CAPTURE(key);
      CAPTURE(value);
      tapegrad::io::SafetensorsFile f = tapegrad::io::load_safetensors(last.string());
      f.set_metadata("progress.extra." + key, value);
      const std::string tampered = tapegrad::io::serialize_safetensors(f);
      std::ofstream(last, std::ios::binary | std::ios::trunc) << tampered;
      const auto out = tapegrad::testing::run_program(TAPEGRAD_GPT, base + " --steps 8 --resume");
      check_refused(out, "gpt", "last.safetensors");
      CHECK(bytes_of(last) == tampered);  // nothing trained, nothing written
      std::ofstream(last, std::ios::binary | std::ios::trunc) << good;
    }
    // A best loss edited to 0 is read as a loss but does not stop best.safetensors from updating.
    tapegrad::io::SafetensorsFile f = tapegrad::io::load_safetensors(last.string());
    f.set_metadata("progress.extra.best_val", "0");
    tapegrad::io::save_safetensors(last.string(), f);  // with fresh checksums, as a deliberate edit
    const auto resumed = tapegrad::testing::run_program(TAPEGRAD_GPT, base + " --steps 8 --resume");
    INFO(resumed.text);
    CHECK(resumed.status == 0);
    CHECK(!has(resumed.text, "best_val_loss=0.0000"));
  }

  TEST_CASE("gpt_sample refuses hostile flags and checkpoints with one line") {
    const fs::path dir = fresh_folder("sample");
    std::ofstream(dir / "corpus.txt") << tapegrad::testing::fortune_corpus(200, 3);
    REQUIRE(tapegrad::testing::run_program(
                TAPEGRAD_GPT, "--data " + quoted((dir / "corpus.txt").string()) +
                                  " --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 --steps 2 "
                                  "--eval-windows 4 --sample-tokens 0 --out " +
                                  quoted((dir / "out").string()))
                .status <= 1);
    const std::string ckpt = " --checkpoint " + quoted((dir / "out" / "last.safetensors").string());
    const std::pair<std::string, std::string> cases[] = {
        {"--temperature nan", "--temperature: expected a number in [0.01, 100], got 'nan'"},
        {"--temperature 1e-45", "--temperature: expected a number in [0.01, 100]"},
        {"--tokens 9223372036854775807", "--tokens: expected an integer in [0, 100000]"},
        {"--tokens 1e9", "--tokens: expected an integer"},
        {"--seed -1", "--seed: expected an integer in [0, 2^64)"},
        {"--prompt ''", "--prompt: expected at least one character"},
        {"--checkpoint /dev/null", "/dev/null"},
        {"--checkpoint " + quoted(dir.string()), dir.string()},
    };
    for (const auto& [args, message] : cases) {
      CAPTURE(args);
      check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT_SAMPLE, ckpt + " " + args, 60),
                    "gpt_sample", message);
    }
    // A checkpoint whose notes claim a million blocks, or none in words, is refused at once.
    const fs::path last = dir / "out" / "last.safetensors", edited = dir / "edited.safetensors";
    for (const char* n_layer : {"1000000", "abc", "1abc", "2"}) {
      CAPTURE(n_layer);
      tapegrad::io::SafetensorsFile f = tapegrad::io::load_safetensors(last.string());
      f.set_metadata("progress.extra.gpt.n_layer", n_layer);
      std::ofstream(edited, std::ios::binary | std::ios::trunc)
          << tapegrad::io::serialize_safetensors(f);
      check_refused(tapegrad::testing::run_program(TAPEGRAD_GPT_SAMPLE,
                                                   "--checkpoint " + quoted(edited.string()), 60),
                    "gpt_sample", "edited.safetensors");
    }
    // NaN weights with checksums written afresh (as a diverged run would save them, or a
    // deliberate edit): refused by name, not sampled.
    const tapegrad::io::SafetensorsFile f = tapegrad::io::load_safetensors(last.string());
    tapegrad::io::SafetensorsFile nan_weights;
    std::string poisoned;
    for (const auto& r : f.tensors()) {
      if (poisoned.empty() && r.dtype == tapegrad::io::Dtype::F32 && r.name.starts_with("model.") &&
          r.name.ends_with(".weight")) {
        poisoned = r.name;
        tapegrad::Array w = f.to_float(r.name);
        w.fill(std::numeric_limits<float>::quiet_NaN());
        nan_weights.add(r.name, std::move(w));
      } else {
        nan_weights.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
      }
    }
    for (const auto& [alias, target] : f.aliases()) nan_weights.add_alias(alias, target);
    for (const auto& [key, value] : f.metadata()) nan_weights.set_metadata(key, value);
    REQUIRE(!poisoned.empty());
    tapegrad::io::save_safetensors(edited.string(), nan_weights);
    const auto out = tapegrad::testing::run_program(TAPEGRAD_GPT_SAMPLE,
                                                    "--checkpoint " + quoted(edited.string()), 60);
    INFO(out.text);
    check_refused(out, "gpt_sample", "edited.safetensors");
    CHECK(has(out.text, "' holds nan"));  // the parameter named (a tied one by its module name)
  }
}

#endif  // TAPEGRAD_GPT
