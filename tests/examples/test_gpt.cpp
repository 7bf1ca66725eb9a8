// tests/examples/test_gpt.cpp: the GPT example's data pipeline (examples/gpt/text_data.hpp) and its
// programs, run as a learner runs them: the split never puts an entry on both sides, the vocabulary
// and batches are as documented, a short run lowers the validation loss, a run stopped and resumed
// ends with the same bits as one run straight through, and gpt_sample is reproducible and samples
// the same characters with and without the cache. The programs' paths come from
// examples/CMakeLists.txt (TAPEGRAD_GPT, TAPEGRAD_GPT_SAMPLE).
#include <algorithm>
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../../examples/gpt/text_data.hpp"
#include "../fortune_corpus.hpp"

namespace {

namespace fs = std::filesystem;

fs::path folder(const std::string& name) {
  const fs::path dir = fs::path(TAPEGRAD_BINARY_DIR) / "test_output" / "gpt" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_SUITE("examples.gpt") {
  TEST_CASE(
      "entries are cut at % lines (or paragraphs), blank ones dropped, repeated texts kept once") {
    const fs::path dir = folder("entries");
    write(dir / "a", "one\ntwo lines\n%\n\n%\nthree\n%\n");
    write(dir / "b", "three\n%\nfour\n");                       // "three" again: dropped
    write(dir / "c", "para one\nstill one\n\npara two\n\n\n");  // no % lines: paragraphs
    const auto entries =
        gpt::read_entries({(dir / "a").string(), (dir / "b").string(), (dir / "c").string()});
    REQUIRE(entries.size() == 5);
    CHECK(entries[0] == U"one\ntwo lines\n");
    CHECK(entries[1] == U"three\n");
    CHECK(entries[2] == U"four\n");
    CHECK(entries[3] == U"para one\nstill one\n");
    CHECK(entries[4] == U"para two\n");
    CHECK(gpt::join_entries({U"a\n", U"b\n"}) == U"a\n%\nb\n%\n");
    write(dir / "bad", std::string("ok\n\xff\xfe\n"));
    CHECK_THROWS_WITH_AS(gpt::read_entries({(dir / "bad").string()}),
                         doctest::Contains("is not UTF-8 text"), std::runtime_error);
  }

  TEST_CASE("the split is by whole entries, seeded, 10 percent, and no entry is on both sides") {
    std::vector<std::string> files = gpt::fortune_files();
    if (files.empty()) {  // without Debian's fortunes: a corpus of our own
      const fs::path dir = folder("split");
      write(dir / "corpus", tapegrad::testing::fortune_corpus(3000, 1));
      files = {(dir / "corpus").string()};
    }
    const auto entries = gpt::read_entries(files);
    const gpt::Split s = gpt::split_entries(entries, 0.1, 0);
    CHECK(s.train.size() + s.val.size() == entries.size());
    CHECK(s.val.size() == std::size_t(std::floor(double(entries.size()) * 0.1 + 0.5)));
    const std::set<std::u32string> train(s.train.begin(), s.train.end());
    CHECK(train.size() == s.train.size());  // each text once
    for (const std::u32string& e : s.val) CHECK(train.count(e) == 0);
    const gpt::Split again = gpt::split_entries(entries, 0.1, 0),
                     other = gpt::split_entries(entries, 0.1, 1);
    CHECK(again.val == s.val);
    CHECK(other.val != s.val);
    CHECK_THROWS_WITH_AS(gpt::split_entries({U"only\n"}, 0.1, 0),
                         doctest::Contains("needs at least 2"), std::runtime_error);
  }

  TEST_CASE(
      "the vocabulary: the training text's characters sorted from id 1, <unk> at 0, stored as "
      "text") {
    const gpt::Vocabulary v(U"b\u00e9a b\n");
    CHECK(v.size() == 6);  // <unk>, "\n", " ", "a", "b", "é"
    CHECK(v.id(U'\n') == 1);
    CHECK(v.id(U' ') == 2);
    CHECK(v.id(U'a') == 3);
    CHECK(v.id(U'b') == 4);
    CHECK(v.id(U'\u00e9') == 5);
    CHECK(v.id(U'z') == gpt::Vocabulary::kUnk);
    const std::vector<std::int64_t> ids = v.encode(U"abz");
    CHECK(v.decode(ids.data(), ids.size()) == "ab\xEF\xBF\xBD");  // <unk> prints as U+FFFD
    const gpt::Vocabulary back = gpt::Vocabulary::from_text(v.to_text());
    CHECK(back.to_text() == v.to_text());
    CHECK(back.id(U'b') == 4);
  }

  TEST_CASE("batches are windows of consecutive ids, the targets shifted by one") {
    std::vector<std::int64_t> ids(100);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int64_t(i);
    tapegrad::Generator g(0);
    const auto starts = gpt::random_starts(ids.size(), 8, 5, g);
    const gpt::Batch b = gpt::windows(ids, starts, 8);
    CHECK(b.x.shape() == tapegrad::Shape{5, 8});
    for (std::size_t r = 0; r < 5; ++r) {
      CHECK(starts[r] + 8 < ids.size());
      for (std::size_t t = 0; t < 8; ++t) {
        CHECK(b.x(r, t) == std::int64_t(starts[r] + t));
        CHECK(b.y(r, t) == b.x(r, t) + 1);
      }
    }
    CHECK_THROWS_WITH_AS(gpt::random_starts(8, 8, 1, g), doctest::Contains("has no window of 9"),
                         std::runtime_error);
  }

}  // TEST_SUITE

#ifdef TAPEGRAD_GPT

namespace {
struct Output {
  int status = -1;
  std::string text;
};

Output run(const std::string& program, const std::string& args) {
  const std::string command =
      "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 '" + program + "' " + args + " 2>&1";
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.text.append(buffer, n);
  const int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
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
    CHECK(a.text.rfind("the cat", 0) == 0);
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
