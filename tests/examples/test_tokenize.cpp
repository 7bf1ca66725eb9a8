// tests/examples/test_tokenize.cpp: examples/tokenize as a learner runs it: a BPE trained on a
// small text, the text encoded to ids and the ids decoded back through standard input to the same
// text; and every input that makes no sense refused with one line naming the flag or the file and
// exit status 2, never a hang on a FIFO or /dev/zero.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <tapegrad/data/token_file.hpp>

#include "../gpt2_files.hpp"
#include "run_program.hpp"

// The helpers run the program, so they exist only when it was built (examples on).
#ifdef TAPEGRAD_TOKENIZE

namespace {

namespace fs = std::filesystem;
using tapegrad::testing::bytes_of;
using tapegrad::testing::has;
using tapegrad::testing::quoted;

fs::path fresh_folder(const std::string& name) {
  return tapegrad::testing::fresh_folder("tokenize", name);
}

// A small text with enough repeats for merges, and a few bytes beyond ASCII (UTF-8).
std::string small_text() {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "the cat sat on the mat; the hat on the cat. Übermäßig " + std::to_string(i % 7) + "\n";
  return text;
}

struct Run {
  int status = -1;  // -1: a signal or timeout's kill
  std::string out, err;
};

// `tokenize args` with standard input from `input` (a file name), standard output and standard
// error captured apart: the ids or the text alone on one, the messages on the other.
Run run_tokenize(const std::string& args, const fs::path& input, const fs::path& err_file) {
  const std::string command = "timeout -s KILL 60 " + quoted(TAPEGRAD_TOKENIZE) + " " + args +
                              " <" + quoted(input.string()) + " 2>" + quoted(err_file.string());
  Run run;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) && WEXITSTATUS(status) <= 128 ? WEXITSTATUS(status) : -1;
  if (run.status == 124) run.status = -1;
  run.err = bytes_of(err_file);
  return run;
}

// One line of error: the program's name first, nothing from CLI11 or the C++ runtime after it.
void check_refused(const tapegrad::testing::ProgramOutput& out, const std::string& part) {
  INFO(out.text);
  CHECK(out.status == 2);
  CHECK(!out.timed_out);
  CHECK(has(out.text, "tokenize: "));
  CHECK(has(out.text, part));
  CHECK(!has(out.text, "terminate called"));
  CHECK(!has(out.text, "compression:"));  // nothing was trained or encoded
}

}  // namespace

TEST_SUITE("examples.tokenize") {
  TEST_CASE("a BPE trained on a text encodes it, and its ids decode back through stdin") {
    const fs::path dir = fresh_folder("round_trip");
    const std::string text = small_text();
    std::ofstream(dir / "text.txt", std::ios::binary) << text;
    const std::string model = quoted((dir / "model.bpe").string());

    const Run trained = run_tokenize(
        "--train-bpe 300 --text " + quoted((dir / "text.txt").string()) + " --out " + model,
        "/dev/null", dir / "train.err");
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    CHECK(has(trained.err, "a BPE of 300 tokens (44 merges)"));
    CHECK(has(trained.err, "compression: " + std::to_string(text.size()) + " bytes in "));
    CHECK(has(trained.err, "bytes per token"));
    CHECK(bytes_of(dir / "model.bpe").rfind("tapegrad-bpe 1\nvocab_size 300\n", 0) == 0);

    const Run encoded =
        run_tokenize("--bpe " + model + " --text " + quoted((dir / "text.txt").string()),
                     "/dev/null", dir / "encode.err");
    INFO(encoded.err);
    REQUIRE(encoded.status == 0);
    // One line of ids, separated by single spaces; fewer ids than bytes: the merges compress.
    REQUIRE(!encoded.out.empty());
    CHECK(encoded.out.back() == '\n');
    CHECK(encoded.out.find('\n') == encoded.out.size() - 1);
    std::istringstream ids(encoded.out);
    std::size_t count = 0, above_bytes = 0;
    for (unsigned id; ids >> id; ++count) {
      CHECK(id < 300);
      above_bytes += id >= 256;
    }
    CHECK(count < text.size() / 2);
    CHECK(above_bytes > 0);
    CHECK(has(encoded.err, "compression: " + std::to_string(text.size()) + " bytes in " +
                               std::to_string(count) + " tokens: "));

    std::ofstream(dir / "ids.txt", std::ios::binary) << encoded.out;
    const Run decoded =
        run_tokenize("--bpe " + model + " --decode", dir / "ids.txt", dir / "decode.err");
    INFO(decoded.err);
    CHECK(decoded.status == 0);
    CHECK(decoded.out == text);

    // Any whitespace separates ids; leading zeros are read as decimal.
    std::ofstream(dir / "spaced.txt") << "\t0116 104\n\n101  ";
    const Run spaced =
        run_tokenize("--bpe " + model + " --decode", dir / "spaced.txt", dir / "spaced.err");
    CHECK(spaced.status == 0);
    CHECK(spaced.out == "the");
  }

  TEST_CASE("an existing --out is replaced only with --force, and never a device or a folder") {
    const fs::path dir = fresh_folder("out");
    std::ofstream(dir / "text.txt") << small_text();
    std::ofstream(dir / "model.bpe") << "my notes";
    const std::string base = "--train-bpe 260 --text " + quoted((dir / "text.txt").string());
    const auto run = [&](const std::string& args) {
      return tapegrad::testing::run_program(TAPEGRAD_TOKENIZE, base + " " + args, 60);
    };
    check_refused(
        run("--out " + quoted((dir / "model.bpe").string())),
        "--out: '" + (dir / "model.bpe").string() + "' exists; add --force to replace it");
    CHECK(bytes_of(dir / "model.bpe") == "my notes");
    check_refused(run("--out /dev/null --force"), "--out: '/dev/null' exists and is not a regular");
    check_refused(run("--out " + quoted(dir.string()) + " --force"), "is a folder");
    check_refused(run("--out " + quoted((dir / "text.txt").string()) + " --force"),
                  "is the file --text reads");
    check_refused(run("--out " + quoted((dir / "nowhere" / "m.bpe").string())),
                  "--out: the folder '" + (dir / "nowhere").string() + "' does not exist");
    check_refused(run("--out ''"), "--out: expected a file name");

    const auto replaced = run("--out " + quoted((dir / "model.bpe").string()) + " --force");
    INFO(replaced.text);
    CHECK(replaced.status == 0);
    CHECK(has(replaced.text, "replacing '" + (dir / "model.bpe").string() + "' (--force)"));
    CHECK(bytes_of(dir / "model.bpe").rfind("tapegrad-bpe 1\nvocab_size 260\n", 0) == 0);
  }

  TEST_CASE("flags that make no sense together, or out of range, are refused with one line") {
    const fs::path dir = fresh_folder("flags");
    std::ofstream(dir / "text.txt") << small_text();
    REQUIRE(tapegrad::testing::run_program(
                TAPEGRAD_TOKENIZE, "--train-bpe 270 --text " + quoted((dir / "text.txt").string()) +
                                       " --out " + quoted((dir / "model.bpe").string()))
                .status == 0);
    const std::string text = " --text " + quoted((dir / "text.txt").string());
    const std::string model = " --bpe " + quoted((dir / "model.bpe").string());
    const std::string out = " --out " + quoted((dir / "new.bpe").string());
    const std::pair<std::string, std::string> cases[] = {
        {"", "nothing to do"},
        {"--train-bpe 300 --decode" + text + out, "--decode does not go with --train-bpe"},
        {"--train-bpe 300" + model + text + out, "--train-bpe and --bpe do not go together"},
        {"--train-bpe 300" + out, "--train-bpe needs --text"},
        {"--train-bpe 300" + text, "--train-bpe needs --out"},
        {"--train-bpe 100" + text + out, "--train-bpe: expected an integer in [256, 1048576]"},
        {"--train-bpe 2000000" + text + out, "--train-bpe: expected an integer in [256, 1048576]"},
        {"--train-bpe -1" + text + out, "--train-bpe: expected an integer"},
        {"--train-bpe 3e2" + text + out, "--train-bpe: expected an integer"},
        {model, "--bpe needs --text FILE (to encode it) or --decode"},
        {model + " --decode" + text, "--decode reads the ids from standard input"},
        {"--decode", "--decode needs --bpe MODEL"},
        {text, "nothing to do"},
        {model + " --decode" + out, "--out goes with --train-bpe (the model) or with --text"},
        {model + text + " --force", "--force goes with --out"},
        {model + text + " extra", "extra"},
        {"--nonsense", "--nonsense"},
        {model + " --gpt2 ." + text, "--bpe and --gpt2 do not go together"},
        {"--gpt2 ." + text + out + " --train-bpe 300", "--train-bpe and --gpt2 do not go together"},
        {"--gpt2 .", "--gpt2 needs --text FILE (to encode it) or --decode"},
        {model + text + " --pretokenizer gpt2", "--pretokenizer goes with --train-bpe"},
        {model + text + " --special-token '<|x|>'", "--special-token goes with --train-bpe"},
        {model + " --decode --special allow", "--special goes with --text FILE when it is encoded"},
        {"--train-bpe 300" + text + out + " --special allow", "--special goes with --text FILE"},
        {model + text + " --special yes", "--special: Check yes value in {"},
        {"--train-bpe 300" + text + out + " --pretokenizer words", "--pretokenizer: Check words"},
        {"--train-bpe 300" + text + out + " --special-token ''",
         "--special-token: special token 0 \"\" is empty"},
        {"--train-bpe 300" + text + out + " --special-token '<|a|>' --special-token '<|a|>'",
         "special token 1 \"<|a|>\" is given twice"},
    };
    for (const auto& [args, message] : cases) {
      CAPTURE(args);
      check_refused(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE, args, 30), message);
    }
    CHECK(!fs::exists(dir / "new.bpe"));
    const auto help = tapegrad::testing::run_program(TAPEGRAD_TOKENIZE, "--help", 30);
    CHECK(help.status == 0);
    CHECK(has(help.text, "--train-bpe"));
    CHECK(has(help.text, "--decode"));
    CHECK(has(help.text, "tokenize --bpe MODEL --text FILE --out FILE.tokens"));  // not --gpt2 only
  }

  TEST_CASE("files that are not regular, too large, missing or damaged: one line naming them") {
    const fs::path dir = fresh_folder("files");
    std::ofstream(dir / "text.txt") << small_text();
    std::ofstream(dir / "empty.txt");
    std::ofstream(dir / "latin1.txt") << "caf\xE9 au lait";
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    std::ofstream(dir / "huge.txt") << "x";
    fs::resize_file(dir / "huge.txt", (std::uintmax_t(1) << 30) + 1);  // sparse: no disk used
    std::ofstream(dir / "damaged.bpe")
        << "tapegrad-bpe 1\nvocab_size 258\npretokenizer none\n97 97\n300 1\n";
    REQUIRE(tapegrad::testing::run_program(
                TAPEGRAD_TOKENIZE, "--train-bpe 270 --text " + quoted((dir / "text.txt").string()) +
                                       " --out " + quoted((dir / "model.bpe").string()))
                .status == 0);
    const auto path = [&](const char* name) { return quoted((dir / name).string()); };
    const std::string model = " --bpe " + path("model.bpe");
    const std::string train = "--train-bpe 300 --out " + path("new.bpe");
    const std::pair<std::string, std::string> cases[] = {
        {"--text /dev/zero --bpe /dev/null", "--bpe: '/dev/null' is not a regular file"},
        {model + " --text /dev/zero", "--text: '/dev/zero' is not a regular file"},
        {model + " --text " + path("fifo"), "--text: '" + (dir / "fifo").string() + "' is not"},
        {model + " --text " + path("huge.txt"), "MiB this program reads"},
        {model + " --text " + path("missing.txt"), "--text: cannot read '"},
        {model + " --text " + quoted(dir.string()), "is a folder; --text expects a file"},
        {model + " --text ''", "--text: expected a file name"},
        {"--bpe " + path("fifo") + " --decode", "--bpe: '" + (dir / "fifo").string() + "' is not"},
        {"--bpe /dev/zero --decode", "--bpe: '/dev/zero' is not a regular file"},
        {"--bpe " + path("missing.bpe") + " --decode", "--bpe: cannot read"},
        {"--bpe " + path("text.txt") + " --decode", "line 1: expected the header"},
        {"--bpe " + path("damaged.bpe") + " --decode", "damaged.bpe line 5"},
        {train + " --text /dev/zero", "--text: '/dev/zero' is not a regular file"},
        {train + " --text " + path("fifo"), "is not a regular file"},
        {train + " --text " + path("empty.txt"), "is empty: nothing to train on"},
        {train + " --pretokenizer gpt2 --text " + path("latin1.txt"),
         "--text: '" + (dir / "latin1.txt").string() +
             "': gpt2_pieces: the text is not valid UTF-8 at byte 3"},
        {"--gpt2 " + path("missing") + " --decode", "--gpt2: GPT2Tokenizer::load: "},
        {"--gpt2 " + path("text.txt") + " --decode", "is not a folder"},
        {"--gpt2 " + quoted(dir.string()) + " --decode",
         "holds neither encoder.json and vocab.bpe"},
    };
    for (const auto& [args, message] : cases) {
      CAPTURE(args);
      const auto start = std::chrono::steady_clock::now();
      check_refused(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE, args, 10), message);
      CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    }
    CHECK(!fs::exists(dir / "new.bpe"));
  }

  TEST_CASE("--decode refuses what is not ids at its first byte, /dev/zero included") {
    const fs::path dir = fresh_folder("decode");
    std::ofstream(dir / "text.txt") << small_text();
    const std::string model = quoted((dir / "model.bpe").string());
    REQUIRE(tapegrad::testing::run_program(
                TAPEGRAD_TOKENIZE,
                "--train-bpe 270 --text " + quoted((dir / "text.txt").string()) + " --out " + model)
                .status == 0);
    std::ofstream(dir / "letters.txt") << "97 98 x 99";
    std::ofstream(dir / "negative.txt") << "97 -1";
    std::ofstream(dir / "too_big.txt") << "97 270";
    std::ofstream(dir / "huge_id.txt") << "97 123456789012345678901234567890";
    const std::pair<std::string, std::string> cases[] = {
        {"/dev/zero", "standard input: expected decimal ids separated by whitespace, got 0x00"},
        {(dir / "letters.txt").string(), "got 'x' at byte 6"},
        {(dir / "negative.txt").string(), "got '-' at byte 3"},
        {(dir / "too_big.txt").string(),
         "id 270 (number 2) is not below the tokenizer's vocab_size"},
        {(dir / "huge_id.txt").string(), "(number 2) is not below the tokenizer's vocab_size 270"},
    };
    for (const auto& [input, message] : cases) {
      CAPTURE(input);
      const Run run = run_tokenize("--bpe " + model + " --decode", input, dir / "err.txt");
      INFO(run.err);
      CHECK(run.status == 2);
      CHECK(run.out.empty());
      CHECK(has(run.err, "tokenize: standard input: "));
      CHECK(has(run.err, message));
    }
    // Nothing on standard input: no ids, no text.
    const Run empty = run_tokenize("--bpe " + model + " --decode", "/dev/null", dir / "err.txt");
    CHECK(empty.status == 0);
    CHECK(empty.out.empty());
  }

  TEST_CASE("GPT-2's tokenizer from --gpt2, special tokens, and a BPE split as GPT-2 splits") {
    const fs::path dir = fresh_folder("gpt2");
    const fs::path gpt2 = tapegrad::testing::gpt2_folder();  // "" (and skipped) without the files
    std::ofstream(dir / "hello.txt") << "hello world";
    std::ofstream(dir / "eot.txt") << "a<|endoftext|>b";
    if (!gpt2.empty()) {
      const std::string with = "--gpt2 " + quoted(gpt2.string());
      const Run hello = run_tokenize(with + " --text " + quoted((dir / "hello.txt").string()),
                                     "/dev/null", dir / "hello.err");
      CHECK(hello.status == 0);
      CHECK(hello.out == "31373 995\n");
      CHECK(has(hello.err, "compression: 11 bytes in 2 tokens: 5.500 bytes per token"));
      const std::string eot = " --text " + quoted((dir / "eot.txt").string());
      check_refused(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE, with + eot, 30),
                    "holds the special token \"<|endoftext|>\" at byte 1");
      CHECK(run_tokenize(with + eot + " --special allow", "/dev/null", dir / "e.err").out ==
            "64 50256 65\n");
      const Run ordinary =
          run_tokenize(with + eot + " --special ordinary", "/dev/null", dir / "o.err");
      CHECK(ordinary.status == 0);
      CHECK(ordinary.out.find("50256") == std::string::npos);
      std::ofstream(dir / "ids.txt") << "31373 995 50256";
      const Run decoded = run_tokenize(with + " --decode", dir / "ids.txt", dir / "d.err");
      CHECK(decoded.out == "hello world<|endoftext|>");
      std::ofstream(dir / "bad_ids.txt") << "31373 50257";
      const Run bad = run_tokenize(with + " --decode", dir / "bad_ids.txt", dir / "b.err");
      CHECK(bad.status == 2);
      CHECK(has(bad.err, "id 50257 (number 2) is not below the tokenizer's vocab_size 50257"));
    }

    // A BPE trained with GPT-2's pretokenizer and a special token keeps both in its file.
    std::ofstream(dir / "text.txt") << small_text();
    const std::string model = quoted((dir / "model.bpe").string());
    const Run trained = run_tokenize(
        "--train-bpe 280 --pretokenizer gpt2 --special-token '<|endoftext|>' "
        "--text " +
            quoted((dir / "text.txt").string()) + " --out " + model,
        "/dev/null", dir / "train.err");
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    CHECK(has(trained.err, "a BPE of 281 tokens (24 merges, 1 special)"));
    CHECK(bytes_of(dir / "model.bpe")
              .rfind("tapegrad-bpe 1\nvocab_size 281\npretokenizer gpt2\n", 0) == 0);
    CHECK(run_tokenize(
              "--bpe " + model + " --special allow --text " + quoted((dir / "eot.txt").string()),
              "/dev/null", dir / "eot.err")
              .out == "97 280 98\n");
  }

  TEST_CASE("--out with --text writes a token file of the ids, streamed when GPT-2 cuts the text") {
    const fs::path dir = fresh_folder("token_file");
    const std::string text = small_text();
    std::ofstream(dir / "text.txt", std::ios::binary) << text;
    const std::string in = " --text " + quoted((dir / "text.txt").string());
    const std::string model = quoted((dir / "model.bpe").string());
    REQUIRE(run_tokenize("--train-bpe 280 --pretokenizer gpt2" + in + " --out " + model,
                         "/dev/null", dir / "train.err")
                .status == 0);
    const Run printed = run_tokenize("--bpe " + model + in, "/dev/null", dir / "ids.err");
    const std::string out = " --out " + quoted((dir / "ids.tokens").string());
    const Run written = run_tokenize("--bpe " + model + in + out, "/dev/null", dir / "file.err");
    INFO(written.err);
    REQUIRE(written.status == 0);
    CHECK(written.out.empty());
    CHECK(has(written.err, "ids of bpe (280 tokens) written to"));
    const tapegrad::data::TokenFile file =
        tapegrad::data::TokenFile::open((dir / "ids.tokens").string());
    CHECK(file.tokenizer() == "bpe");
    CHECK(file.vocab_size() == 280);
    std::istringstream ids(printed.out);
    std::size_t i = 0;
    for (unsigned id; ids >> id; ++i) {
      REQUIRE(i < file.size());
      CHECK(file[i] == id);
    }
    CHECK(i == file.size());
    // An existing file is replaced only with --force.
    const Run again = run_tokenize("--bpe " + model + in + out, "/dev/null", dir / "again.err");
    CHECK(again.status == 2);
    CHECK(has(again.err, "exists; add --force to replace it"));
    CHECK(
        run_tokenize("--bpe " + model + in + out + " --force", "/dev/null", dir / "f.err").status ==
        0);
  }
}

#endif  // TAPEGRAD_TOKENIZE
