// tests/examples/test_gpt_data.cpp: what gpt trains on, run as a learner runs it: a fortune file
// is read as entries and any other text as one stream (--data-format, said in the header line),
// a fortune file with Windows line ends is still a fortune file, a token file must come from the
// very tokenizer given (its fingerprint; a version 1 file is read with a warning), an empty token
// file is named as such, and a token file truncated under a running gpt stops it with exit 2
// naming the file, never a crash. The library parts are tested in tests/data.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../fortune_corpus.hpp"
#include "run_program.hpp"

namespace {

namespace fs = std::filesystem;
using tapegrad::testing::has;
using tapegrad::testing::quoted;

fs::path fresh_folder(const std::string& name) {
  return tapegrad::testing::fresh_folder("gpt_data", name);
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string hex(std::uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}

// Plain text with no "%" line: lines of words, no blank lines, no separators.
std::string plain_text(std::size_t lines) {
  static const char* words[] = {"to", "be", "or", "not", "that", "is", "the", "question"};
  tapegrad::Generator g(5);
  std::string text;
  for (std::size_t l = 0; l < lines; ++l) {
    for (int w = 0; w < 6; ++w) text += std::string(w ? " " : "") + words[g.randint(0, 8)];
    text += l % 2 ? ".\n" : ",\n";
  }
  return text;
}

}  // namespace

#ifdef TAPEGRAD_GPT

namespace {

using Output = tapegrad::testing::ProgramOutput;

const char* kSmall =
    " --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --steps 2 "
    "--eval-windows 8 --sample-tokens 0";

Output gpt(const std::string& args) {
  return tapegrad::testing::run_program(TAPEGRAD_GPT, args, 300);
}

// One line of error, exit 2, the program's name first.
void check_refused(const Output& out, const std::string& part) {
  INFO(out.text);
  CHECK(out.status == 2);
  CHECK(has(out.text, "gpt: "));
  CHECK(has(out.text, part));
}

}  // namespace

TEST_SUITE("examples.gpt_data") {
  TEST_CASE(
      "a fortune file is read as fortunes, any other text as one stream, and the header "
      "says which") {
    const fs::path dir = fresh_folder("forms");
    write(dir / "fortunes.txt", tapegrad::testing::fortune_corpus(300, 3));
    const std::string text = plain_text(200);
    write(dir / "plain.txt", text);

    const Output fortunes = gpt("--data " + quoted((dir / "fortunes.txt").string()) + kSmall +
                                " --out " + quoted((dir / "f").string()));
    INFO(fortunes.text);
    CHECK(fortunes.status == 0);
    CHECK(has(fortunes.text, "gpt: 1 file as --data-format fortunes, "));
    CHECK(has(fortunes.text, " validation entries ("));

    // The text as it is: the first int(n * 0.9) characters train, the rest validate, nothing is
    // added (so no "%" in the vocabulary: <unk> and the training text's characters).
    const Output stream = gpt("--data " + quoted((dir / "plain.txt").string()) + kSmall +
                              " --out " + quoted((dir / "t").string()));
    INFO(stream.text);
    CHECK(stream.status == 0);
    const std::size_t n = text.size(), train = n * 9 / 10;
    CHECK(has(stream.text,
              "gpt: 1 file as --data-format text, one stream split by characters at "
              "--val-fraction 0.1 (" +
                  std::to_string(train) + " and " + std::to_string(n - train) + " tokens, "));
    const std::set<char> characters(text.begin(), text.begin() + std::ptrdiff_t(train));
    CHECK(characters.count('%') == 0);
    CHECK(has(stream.text, "vocabulary " + std::to_string(characters.size() + 1) + "\n"));

    // The flag decides: the fortune file read as one stream, the text file as entries (its
    // paragraphs: one, so refused, with the other form named).
    const Output as_text =
        gpt("--data " + quoted((dir / "fortunes.txt").string()) + " --data-format text" + kSmall +
            " --out " + quoted((dir / "ft").string()));
    CHECK(as_text.status == 0);
    CHECK(has(as_text.text, "gpt: 1 file as --data-format text, one stream"));
    check_refused(gpt("--data " + quoted((dir / "plain.txt").string()) + " --data-format fortunes" +
                      kSmall + " --out " + quoted((dir / "tf").string())),
                  "expected text of at least 2 entries (separated by '%' lines or blank lines), "
                  "got 1 in '" +
                      (dir / "plain.txt").string() +
                      "'; --data-format text reads the files as one stream");
  }

  TEST_CASE("files of both forms are refused, asking for --data-format, and the flag is checked") {
    const fs::path dir = fresh_folder("mixed");
    write(dir / "fortunes.txt", tapegrad::testing::fortune_corpus(300, 3));
    write(dir / "plain.txt", plain_text(200));
    const std::string out = " --out " + quoted((dir / "out").string());
    check_refused(gpt("--data " + quoted((dir / "fortunes.txt").string()) + " " +
                      quoted((dir / "plain.txt").string()) + kSmall + out),
                  "--data: '" + (dir / "fortunes.txt").string() +
                      "' is a fortune file (a line holding only %) and '" +
                      (dir / "plain.txt").string() + "' is not; give --data-format fortunes");
    const Output both =
        gpt("--data " + quoted((dir / "fortunes.txt").string()) + " " +
            quoted((dir / "plain.txt").string()) + " --data-format text" + kSmall + out);
    CHECK(both.status == 0);
    CHECK(has(both.text, "gpt: 2 files as --data-format text"));
    check_refused(gpt("--data " + quoted((dir / "plain.txt").string()) + " --data-format words" +
                      kSmall + out),
                  "--data-format");
    check_refused(gpt("--tokens x.tokens --tokenizer bpe-model:x.bpe --data-format text" +
                      std::string(kSmall) + out),
                  "--data-format text does not go with --tokens");
  }

  TEST_CASE("--resume refuses a run made with another --data-format") {
    const fs::path dir = fresh_folder("resume");
    write(dir / "fortunes.txt", tapegrad::testing::fortune_corpus(300, 3));
    const std::string args = "--data " + quoted((dir / "fortunes.txt").string()) + kSmall +
                             " --steps 4 --out " + quoted((dir / "out").string());
    REQUIRE(gpt(args + " --stop-after 2").status == 0);
    check_refused(gpt(args + " --resume --data-format text"), "made with another data_format");
    const Output resumed = gpt(args + " --resume --data-format fortunes");
    INFO(resumed.text);
    CHECK(resumed.status == 0);
    CHECK(has(resumed.text, "resumed at step 2"));
  }

  TEST_CASE("a fortune file with Windows line ends (CRLF) is read as its entries") {
    const fs::path dir = fresh_folder("crlf");
    const std::string lf = tapegrad::testing::fortune_corpus(300, 3);
    std::string crlf;
    for (const char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    write(dir / "lf.txt", lf);
    write(dir / "crlf.txt", crlf);
    const std::size_t entries = tapegrad::data::read_entries({(dir / "lf.txt").string()}).size();
    const std::size_t val = std::size_t(double(entries) * 0.1 + 0.5);
    const Output out = gpt("--data " + quoted((dir / "crlf.txt").string()) + kSmall + " --out " +
                           quoted((dir / "out").string()));
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(has(out.text, "gpt: 1 file as --data-format fortunes, " + std::to_string(entries - val) +
                            " training and " + std::to_string(val) + " validation entries"));
  }

  TEST_CASE("gpt --tokens refuses a token file of another BPE of the same size, naming both") {
    const fs::path dir = fresh_folder("fingerprint");
    const std::string corpus = tapegrad::testing::fortune_corpus(400, 7);
    std::string shouted = corpus;  // the same words in capitals: other merges, as many
    for (char& c : shouted) c = char(std::toupper(static_cast<unsigned char>(c)));
    const auto mine = tapegrad::data::BytePairEncoding::train(corpus, 280,
                                                              tapegrad::data::Pretokenizer::gpt2),
               other = tapegrad::data::BytePairEncoding::train(shouted, 280,
                                                               tapegrad::data::Pretokenizer::gpt2);
    REQUIRE(mine.vocab_size() == 280);
    REQUIRE(other.vocab_size() == 280);
    mine.save((dir / "mine.bpe").string());
    other.save((dir / "other.bpe").string());
    const std::vector<std::uint32_t> ids = mine.encode(corpus);
    {
      tapegrad::data::TokenFileWriter writer((dir / "corpus.tokens").string(),
                                             tapegrad::data::Tokenizer(mine));
      writer.append(ids);
      writer.close();
    }
    const std::string tokens = "--tokens " + quoted((dir / "corpus.tokens").string()) + kSmall +
                               " --out " + quoted((dir / "out").string());
    const std::string other_flag = "--tokenizer bpe-model:" + (dir / "other.bpe").string();
    check_refused(gpt(tokens + " --tokenizer bpe-model:" + quoted((dir / "other.bpe").string())),
                  "--tokens: '" + (dir / "corpus.tokens").string() +
                      "' holds ids of the tokenizer bpe (280 tokens, fingerprint " +
                      hex(tapegrad::data::tokenizer_fingerprint(mine)) + "), not of " + other_flag +
                      ", bpe (280 tokens, fingerprint " +
                      hex(tapegrad::data::tokenizer_fingerprint(other)) + ")");
    const Output right =
        gpt(tokens + " --tokenizer bpe-model:" + quoted((dir / "mine.bpe").string()));
    INFO(right.text);
    CHECK(right.status == 0);
    CHECK(!has(right.text, "gpt: warning"));

    // The same ids in a version 1 file (no fingerprint): trained on, with a warning.
    std::string v1 = tapegrad::testing::bytes_of(dir / "corpus.tokens");
    v1[16] = 1;                               // the version
    v1.replace(56, 8, std::string(8, '\0'));  // the name field's last 8 bytes: NUL
    write(dir / "v1.tokens", v1);
    const Output old = gpt("--tokens " + quoted((dir / "v1.tokens").string()) + kSmall + " --out " +
                           quoted((dir / "out_v1").string()) +
                           " --tokenizer bpe-model:" + quoted((dir / "other.bpe").string()));
    INFO(old.text);
    CHECK(old.status == 0);
    CHECK(has(old.text, "gpt: warning: --tokens: '" + (dir / "v1.tokens").string() +
                            "' is a version 1 token file"));
  }

  TEST_CASE("an empty token file, or data too short for a window, is named with its size") {
    const fs::path dir = fresh_folder("empty_tokens");
    const auto bpe = tapegrad::data::BytePairEncoding::train(
        tapegrad::testing::fortune_corpus(100, 1), 260, tapegrad::data::Pretokenizer::gpt2);
    bpe.save((dir / "m.bpe").string());
    for (const std::size_t n : {std::size_t(0), std::size_t(30)}) {
      CAPTURE(n);
      {
        tapegrad::data::TokenFileWriter writer((dir / "t.tokens").string(),
                                               tapegrad::data::Tokenizer(bpe));
        writer.append(std::vector<std::uint32_t>(n, 7));
        writer.close();
      }
      check_refused(gpt("--tokens " + quoted((dir / "t.tokens").string()) +
                        " --tokenizer bpe-model:" + quoted((dir / "m.bpe").string()) + kSmall +
                        " --out " + quoted((dir / "out").string())),
                    "--tokens: '" + (dir / "t.tokens").string() + "' holds " + std::to_string(n) +
                        " ids" + (n == 0 ? " (the file is empty)" : "") + ", " +
                        std::to_string(n - n / 10) + " for training and " + std::to_string(n / 10) +
                        " for validation");
    }
    write(dir / "short.txt", "forty characters of text, and no more!!\n");
    check_refused(gpt("--data " + quoted((dir / "short.txt").string()) + kSmall + " --out " +
                      quoted((dir / "out").string())),
                  "--data: '" + (dir / "short.txt").string() +
                      "' gives 36 training and 4 validation tokens (--val-fraction 0.1); each "
                      "needs more than one window of --block-size 16 + 1 tokens");
  }

  TEST_CASE("a token file truncated under a running gpt stops it with exit 2 naming the file") {
    const fs::path dir = fresh_folder("truncated");
    const auto bpe = tapegrad::data::BytePairEncoding::train(
        tapegrad::testing::fortune_corpus(400, 7), 280, tapegrad::data::Pretokenizer::gpt2);
    bpe.save((dir / "m.bpe").string());
    const fs::path tokens = dir / "corpus.tokens";
    {
      tapegrad::data::TokenFileWriter writer(tokens.string(), tapegrad::data::Tokenizer(bpe));
      const std::string corpus = tapegrad::testing::fortune_corpus(4000, 9);
      writer.append(bpe.encode(corpus));
      writer.close();
    }
    // gpt in the background, its output in a file; a long run, so that it is training when the
    // file is cut.
    const fs::path log = dir / "log.txt";
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      const std::string bpe_flag = "bpe-model:" + (dir / "m.bpe").string(),
                        out = (dir / "out").string();
      ::execl(TAPEGRAD_GPT, TAPEGRAD_GPT, "--tokens", tokens.c_str(), "--tokenizer",
              bpe_flag.c_str(), "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size",
              "16", "--batch-size", "4", "--steps", "10000000", "--eval-every", "10000000",
              "--eval-windows", "8", "--sample-tokens", "0", "--out", out.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Wait (at most 120 s: a hang guard, not a timing) for the first validation, then cut the file.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!has(tapegrad::testing::bytes_of(log), "step 0: validation loss") &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(::truncate(tokens.c_str(), 64 + 2 * 100) == 0);
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(child, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (done == 0) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      FAIL("gpt did not stop after its token file was truncated");
    }
    const std::string text = tapegrad::testing::bytes_of(log);
    INFO(text);
    CHECK_MESSAGE(!WIFSIGNALED(status), "killed by signal ", WTERMSIG(status));
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(has(text, "'" + tokens.string() + "' shrank from "));
  }
}

#endif  // TAPEGRAD_GPT
