// tests/examples/test_tokenize_guards.cpp: what examples/tokenize refuses before it spends time or
// memory, and what it never loses. Its --out never replaces a file it reads (the same file by
// device and inode: the same name, a symbolic link, a hard link), with or without --force; an
// --out it could not write is named, with the system's reason, before training; a text too large
// for the memory the process may use (`ulimit -v` here, so the test is the same on any machine)
// is refused from its size before it is read; a model whose tokens a BPE file cannot hold is
// refused before it is saved; and --decode writes the text of ids that stand for more bytes than
// memory holds.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <tapegrad/data/bpe.hpp>

#include "../gpt2_files.hpp"
#include "run_program.hpp"

#ifdef TAPEGRAD_TOKENIZE

namespace {

namespace fs = std::filesystem;
using tapegrad::testing::bytes_of;
using tapegrad::testing::has;
using tapegrad::testing::ProgramOutput;
using tapegrad::testing::quoted;

std::string q(const fs::path& p) { return quoted(p.string()); }

ProgramOutput tokenize(const std::string& args, int seconds = 60) {
  return tapegrad::testing::run_program(TAPEGRAD_TOKENIZE, args, seconds);
}

// `tokenize args` with the address space of the process limited to `kib` KiB (`ulimit -v`), its
// standard input from `input`, and its standard output counted into `out_bytes` (not kept).
ProgramOutput tokenize_limited(const std::string& args, long kib, const std::string& input,
                               std::uintmax_t* out_bytes, const fs::path& dir) {
  const fs::path err = dir / "err.txt", status = dir / "status.txt", count = dir / "count.txt";
  const std::string command = "ulimit -v " + std::to_string(kib) + " && { timeout -s KILL 120 " +
                              quoted(TAPEGRAD_TOKENIZE) + " " + args + " <" + quoted(input) +
                              " 2>" + q(err) + "; echo $? >" + q(status) + "; } | wc -c >" +
                              q(count);
  REQUIRE(std::system(command.c_str()) == 0);
  if (out_bytes != nullptr) *out_bytes = std::strtoull(bytes_of(count).c_str(), nullptr, 10);
  ProgramOutput out;
  out.status = std::atoi(bytes_of(status).c_str());
  out.text = bytes_of(err);
  return out;
}

void check_refused(const ProgramOutput& out, const std::string& part) {
  INFO(out.text);
  CHECK(out.status == 2);
  CHECK(has(out.text, part));
  CHECK(!has(out.text, "terminate called"));
  CHECK(!has(out.text, "compression:"));  // nothing was trained or encoded
}

std::string small_text() {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "the cat sat on the mat; the hat on the cat. " + std::to_string(i % 7) + "\n";
  return text;
}

// A folder nothing can be created in, for root too (who ignores permission bits): the immutable
// attribute, taken back when the object goes. False when this file system or process cannot.
struct ReadOnlyFolder {
  fs::path dir;
  bool immutable = false;
  bool made = false;
  explicit ReadOnlyFolder(const fs::path& d) : dir(d) {
    if (::geteuid() == 0) {
      immutable = std::system(("chattr +i " + q(dir) + " 2>/dev/null").c_str()) == 0;
    } else {
      fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
    }
    std::ofstream probe(dir / "probe");  // whether it worked
    made = !probe;
  }
  ~ReadOnlyFolder() {
    if (immutable) (void)std::system(("chattr -i " + q(dir) + " 2>/dev/null").c_str());
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, ec);
  }
};

}  // namespace

TEST_SUITE("examples.tokenize") {
  TEST_CASE("--out never replaces a file the run reads, by name or link, even with --force") {
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "identity");
    std::ofstream(dir / "t.txt") << small_text();
    REQUIRE(tokenize("--train-bpe 280 --text " + q(dir / "t.txt") + " --out " + q(dir / "m.bpe"))
                .status == 0);
    const std::string model = bytes_of(dir / "m.bpe"), text = bytes_of(dir / "t.txt");
    fs::create_symlink(dir / "m.bpe", dir / "link.bpe");
    fs::create_symlink("t.txt", dir / "link.txt");
    fs::create_hard_link(dir / "t.txt", dir / "hard.txt");
    fs::create_hard_link(dir / "m.bpe", dir / "hard.bpe");
    const std::string encode = "--bpe " + q(dir / "m.bpe") + " --text " + q(dir / "t.txt");
    const std::string train = "--train-bpe 270 --text " + q(dir / "t.txt");
    // (the output, the flag it is refused beside, the path that flag was given)
    const struct {
      std::string args, out, flag, path;
    } cases[] = {
        {encode, (dir / "m.bpe").string(), "--bpe", (dir / "m.bpe").string()},
        {encode, (dir / "link.bpe").string(), "--bpe", (dir / "m.bpe").string()},
        {encode, (dir / "hard.bpe").string(), "--bpe", (dir / "m.bpe").string()},
        {encode, (dir / "t.txt").string(), "--text", (dir / "t.txt").string()},
        {encode, (dir / "." / "hard.txt").string(), "--text", (dir / "t.txt").string()},
        {train, (dir / "t.txt").string(), "--text", (dir / "t.txt").string()},
        {train, (dir / "link.txt").string(), "--text", (dir / "t.txt").string()},
        {train, (dir / "hard.txt").string(), "--text", (dir / "t.txt").string()},
    };
    for (const auto& c : cases)
      for (const std::string force : {" --force", ""}) {
        CAPTURE(c.args);
        CAPTURE(c.out);
        CAPTURE(force);
        check_refused(tokenize(c.args + " --out " + quoted(c.out) + force),
                      "--out: '" + c.out + "' is the file " + c.flag + " reads ('" + c.path +
                          "'); an output never replaces an input, not even with --force");
      }
    CHECK(bytes_of(dir / "m.bpe") == model);
    CHECK(bytes_of(dir / "t.txt") == text);
    CHECK(fs::is_symlink(dir / "link.bpe"));
    CHECK(fs::hard_link_count(dir / "t.txt") == 2);

    // GPT-2's folder: each of the files its tokenizer is read from.
    const std::string files = tapegrad::testing::gpt2_folder();
    if (files.empty()) return;
    const fs::path gpt2 = dir / "gpt2";
    fs::create_directories(gpt2);
    for (const char* name : {"encoder.json", "vocab.bpe"})
      fs::copy_file(fs::path(files) / name, gpt2 / name);
    tapegrad::testing::copy_gpt2_tokenizer(files, gpt2);  // vocab.json and merges.txt
    for (const char* name : {"encoder.json", "vocab.bpe", "vocab.json", "merges.txt"}) {
      CAPTURE(name);
      const std::string before = bytes_of(gpt2 / name);
      check_refused(tokenize("--gpt2 " + q(gpt2) + " --text " + q(dir / "t.txt") + " --out " +
                             q(gpt2 / name) + " --force"),
                    "--out: '" + (gpt2 / name).string() + "' is the file --gpt2 reads");
      CHECK(bytes_of(gpt2 / name) == before);
    }
    CHECK(tokenize("--gpt2 " + q(gpt2) + " --text " + q(dir / "t.txt") + " --out " +
                   q(gpt2 / "t.tokens"))
              .status == 0);
  }

  TEST_CASE(
      "an --out folder where nothing can be written is named, with the reason, before training") {
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "read_only");
    std::ofstream(dir / "t.txt") << small_text();
    REQUIRE(tokenize("--train-bpe 280 --text " + q(dir / "t.txt") + " --out " + q(dir / "m.bpe"))
                .status == 0);
    fs::create_directories(dir / "locked");
    std::ofstream(dir / "locked" / "old.bpe") << bytes_of(dir / "m.bpe");
    const ReadOnlyFolder locked(dir / "locked");
    if (!locked.made) {
      std::printf("[skipped: this file system cannot make a folder read-only for this user]\n");
      return;
    }
    const std::string reason = ::geteuid() == 0 ? "Operation not permitted" : "Permission denied";
    const std::string folder =
        "cannot create a temporary file in its folder '" + (dir / "locked").string() + "'";
    for (const std::string& args :
         {"--train-bpe 300 --text " + q(dir / "t.txt") + " --out " + q(dir / "locked" / "new.bpe"),
          "--train-bpe 300 --text " + q(dir / "t.txt") + " --out " + q(dir / "locked" / "old.bpe") +
              " --force",
          "--bpe " + q(dir / "m.bpe") + " --text " + q(dir / "t.txt") + " --out " +
              q(dir / "locked" / "t.tokens")}) {
      CAPTURE(args);
      const ProgramOutput out = tokenize(args);
      check_refused(out, "--out: '" + (dir / "locked").string());
      CHECK(has(out.text, folder));
      CHECK(has(out.text, reason));
      CHECK(!has(out.text, "a BPE of 300 tokens"));  // refused before training
    }
  }

  TEST_CASE("a text too large for the memory the process may use is refused before it is read") {
    TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED();
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "memory");
    // 1 GiB, the most tokenize reads, sparse: no disk used. Reading it whole would take 1 GiB,
    // which the limit of 1 GiB of address space does not give: the refusal must come first.
    std::ofstream(dir / "big.txt") << "x";
    fs::resize_file(dir / "big.txt", std::uintmax_t(1) << 30);
    const auto start = std::chrono::steady_clock::now();
    const ProgramOutput out = tokenize_limited(
        "--train-bpe 300 --text " + q(dir / "big.txt") + " --out " + q(dir / "big.bpe"), 1 << 20,
        "/dev/null", nullptr, dir);
    check_refused(out, "--text: training a BPE on the 1024 MiB of '" + (dir / "big.txt").string() +
                           "' needs about 28.062 GiB of memory (28 bytes per byte of text), more "
                           "than the ");
    CHECK(has(out.text, " MiB this machine leaves a run (80 % of 1.00 GiB, less the "));
    CHECK(has(out.text, "train on a part of the text, at most "));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
    CHECK(!fs::exists(dir / "big.bpe"));
  }

  TEST_CASE("a model whose tokens a BPE file cannot hold is refused before it is saved") {
    // Merges of "aaaa...": tokens of 2, 4, 8, ... bytes; merge 20 makes one of 2 MiB, more than
    // the 1 MiB a token of a BPE file may hold (BytePairEncoding::load would refuse the file).
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "long_tokens");
    std::ofstream(dir / "a.txt") << std::string(std::size_t(4) << 20, 'a');
    const ProgramOutput out =
        tokenize("--train-bpe 300 --text " + q(dir / "a.txt") + " --out " + q(dir / "a.bpe"));
    check_refused(out, "--train-bpe 300: merge 20 of '" + (dir / "a.txt").string() +
                           "' makes a token of 2097152 bytes");
    CHECK(has(out.text, "nothing was saved: give --train-bpe 276 or less"));
    CHECK(!fs::exists(dir / "a.bpe"));
    // Asked for more tokens than the text has pairs: the refusal is the one line, with no note
    // before it on the size of a model that is not saved.
    const ProgramOutput many =
        tokenize("--train-bpe 65536 --text " + q(dir / "a.txt") + " --out " + q(dir / "a.bpe"));
    check_refused(many, "--train-bpe 65536: merge 20 of '");
    CHECK(!has(many.text, "no pair was left to merge"));
    // What the message says loads back.
    REQUIRE(tokenize("--train-bpe 276 --text " + q(dir / "a.txt") + " --out " + q(dir / "a.bpe"))
                .status == 0);
    CHECK(tapegrad::data::BytePairEncoding::load((dir / "a.bpe").string()).vocab_size() == 276);
  }

  TEST_CASE("an --out under a file that is not a folder is named as such") {
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "out_under_a_file");
    std::ofstream(dir / "t.txt") << small_text();
    check_refused(tokenize("--train-bpe 270 --text " + q(dir / "t.txt") + " --out " +
                           q(dir / "t.txt" / "m.bpe")),
                  "tokenize: --out: '" + (dir / "t.txt").string() + "' is not a folder");
    check_refused(tokenize("--train-bpe 270 --text " + q(dir / "t.txt") + " --out " +
                           q(dir / "none" / "m.bpe")),
                  "tokenize: --out: the folder '" + (dir / "none").string() + "' does not exist");
  }

  TEST_CASE("a --bpe that is not a regular file is named once, its flag first") {
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "bpe_not_a_file");
    std::ofstream(dir / "t.txt") << small_text();
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    for (const std::string& model : {(dir / "fifo").string(), std::string("/dev/null")}) {
      const ProgramOutput out = tokenize("--bpe " + quoted(model) + " --text " + q(dir / "t.txt"));
      check_refused(out, "tokenize: --bpe: '" + model + "' is not a regular file");
      CHECK(!has(out.text, "--bpe: --bpe:"));
    }
  }

  TEST_CASE("standard output that is the file being read is refused before a byte is written") {
    // `tokenize ... --text t.txt >> t.txt` once read its own ids back as text, and grew the file
    // until the disk was full; `--decode < ids >> ids` appended text to the ids it read.
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "stdout_is_input");
    std::ofstream(dir / "t.txt") << small_text();
    REQUIRE(tokenize("--train-bpe 270 --text " + q(dir / "t.txt") + " --out " + q(dir / "m.bpe"))
                .status == 0);
    std::ofstream(dir / "ids") << "1 2 3 104\n";
    fs::create_symlink(dir / "t.txt", dir / "link.txt");
    const std::string text = bytes_of(dir / "t.txt"), ids = bytes_of(dir / "ids");
    // `tokenize args` with its standard output appended to `out` and its input from `in`.
    const auto appending = [&](const std::string& args, const fs::path& in, const fs::path& out) {
      const std::string command = "timeout -s KILL 60 " + quoted(TAPEGRAD_TOKENIZE) + " " + args +
                                  " <" + q(in) + " >>" + q(out) + " 2>" + q(dir / "err.txt") +
                                  "; echo $? >" + q(dir / "status.txt");
      REQUIRE(std::system(command.c_str()) == 0);
      ProgramOutput result;
      result.status = std::atoi(bytes_of(dir / "status.txt").c_str());
      result.text = bytes_of(dir / "err.txt");
      return result;
    };
    const std::string model = "--bpe " + q(dir / "m.bpe");
    check_refused(appending(model + " --text " + q(dir / "t.txt"), "/dev/null", dir / "t.txt"),
                  "tokenize: standard output is the file --text '" + (dir / "t.txt").string() +
                      "', which this run reads");
    check_refused(appending(model + " --text " + q(dir / "link.txt"), "/dev/null", dir / "t.txt"),
                  "tokenize: standard output is the file --text");
    CHECK(bytes_of(dir / "t.txt") == text);
    check_refused(appending(model + " --decode", dir / "ids", dir / "ids"),
                  "tokenize: standard output is the file of standard input");
    CHECK(bytes_of(dir / "ids") == ids);
  }

  TEST_CASE("--special-token is checked before the text is read or trained on, on one line") {
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "special_first");
    std::ofstream(dir / "empty.txt") << "";
    std::ofstream(dir / "t.txt") << small_text();
    // An empty text would be refused too; the special token is refused first, before any reading
    // (a training of minutes used to end in this refusal).
    check_refused(tokenize("--train-bpe 270 --text " + q(dir / "empty.txt") + " --out " +
                           q(dir / "m.bpe") + " --special-token ''"),
                  "tokenize: --special-token: ");
    const ProgramOutput line_end =
        tokenize("--train-bpe 270 --text " + q(dir / "empty.txt") + " --out " + q(dir / "m.bpe") +
                 " --special-token " + quoted("a\nb"));
    check_refused(line_end, "tokenize: --special-token: ");
    CHECK(has(line_end.text, "\"a\\nb\" holds a line end"));
    CHECK(has(line_end.text, "tokenize: --special-token: special token 0 \"a\\nb\" holds"));
    CHECK(std::count(line_end.text.begin(), line_end.text.end(), '\n') == 2);  // and the kernels'
    check_refused(tokenize("--train-bpe 1048576 --text " + q(dir / "t.txt") + " --out " +
                           q(dir / "m.bpe") + " --special-token '<|end|>'"),
                  "tokenize: --special-token: --train-bpe 1048576 and 1 special tokens make more");
    CHECK(!fs::exists(dir / "m.bpe"));
  }

  TEST_CASE("a token file the disk refuses is named by --out, and nothing is left of it") {
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "out_refused");
    std::string text;
    for (int i = 0; i < 40; ++i) text += small_text();
    std::ofstream(dir / "t.txt") << text;
    REQUIRE(tokenize("--train-bpe 270 --text " + q(dir / "t.txt") + " --out " + q(dir / "m.bpe"))
                .status == 0);
    // Files of at most 16 KiB (ulimit -f counts blocks of 1 KiB in bash, 512 bytes in dash: 8 KiB
    // or 16 KiB), SIGXFSZ ignored: a write past the limit fails with EFBIG, as a full disk would.
    const std::string command = "ulimit -f 16 && trap '' XFSZ && timeout -s KILL 60 " +
                                quoted(TAPEGRAD_TOKENIZE) + " --bpe " + q(dir / "m.bpe") +
                                " --text " + q(dir / "t.txt") + " --out " + q(dir / "o.tokens") +
                                " </dev/null >/dev/null 2>" + q(dir / "err.txt") + "; echo $? >" +
                                q(dir / "status.txt");
    REQUIRE(std::system(command.c_str()) == 0);
    ProgramOutput out;
    out.status = std::atoi(bytes_of(dir / "status.txt").c_str());
    out.text = bytes_of(dir / "err.txt");
    check_refused(out, "tokenize: --out: ");
    CHECK(has(out.text, "File too large"));
    for (const auto& entry : fs::directory_iterator(dir))
      CHECK(entry.path().filename().string().find("o.tokens") == std::string::npos);
  }

  TEST_CASE("--decode writes the text of ids that stand for more bytes than memory holds") {
    TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED();
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "decode_stream");
    std::ofstream(dir / "a.txt") << std::string(std::size_t(1) << 20, 'a');
    REQUIRE(tokenize("--train-bpe 276 --text " + q(dir / "a.txt") + " --out " + q(dir / "a.bpe"))
                .status == 0);
    // Id 275 stands for 2^20 bytes: 1,100 of them are 1.1 GiB of text, under a limit of 1 GiB.
    {
      std::ofstream ids(dir / "ids.txt");
      for (int i = 0; i < 1100; ++i) ids << "275 ";
    }
    std::uintmax_t written = 0;
    const ProgramOutput out = tokenize_limited("--bpe " + q(dir / "a.bpe") + " --decode", 1 << 20,
                                               (dir / "ids.txt").string(), &written, dir);
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(written == std::uintmax_t(1100) << 20);
  }

  TEST_CASE("--decode in batches gives the text of all the ids at once, characters cut or not") {
    const fs::path dir = tapegrad::testing::fresh_folder("tokenize", "decode_batches");
    std::string e_acute;
    for (int i = 0; i < 300; ++i) e_acute += "\xC3\xA9";
    std::ofstream(dir / "e.txt") << e_acute;
    REQUIRE(tokenize("--train-bpe 265 --text " + q(dir / "e.txt") + " --out " + q(dir / "e.bpe"))
                .status == 0);
    const auto bpe = tapegrad::data::BytePairEncoding::load((dir / "e.bpe").string());
    const std::uint32_t longest = 264;  // many "é", its last byte 0xA9: no batch ends after it
    REQUIRE(bpe.bytes_of(longest).size() >= 64);
    // More than a batch (16 MiB) of tokens that end inside no character, then an 'a' (a batch may
    // end after it), a lone first byte of a character, more of them, a lone continuation byte.
    std::vector<std::uint32_t> ids;
    const std::size_t n = (std::size_t(20) << 20) / bpe.bytes_of(longest).size();
    ids.insert(ids.end(), n, longest);
    ids.insert(ids.end(), {97, 0xC3});
    ids.insert(ids.end(), n, longest);
    ids.insert(ids.end(), {0xA9, 97, 0xC3});
    {
      std::ofstream text(dir / "ids.txt");
      for (const std::uint32_t id : ids) text << id << ' ';
    }
    const std::string command = quoted(TAPEGRAD_TOKENIZE) + " --bpe " + q(dir / "e.bpe") +
                                " --decode <" + q(dir / "ids.txt") + " >" + q(dir / "out.txt") +
                                " 2>" + q(dir / "err.txt");
    REQUIRE(std::system(command.c_str()) == 0);
    CHECK(bytes_of(dir / "out.txt") == bpe.decode(ids));
  }
}

#endif  // TAPEGRAD_TOKENIZE
