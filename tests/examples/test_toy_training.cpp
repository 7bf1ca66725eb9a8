// tests/examples/test_toy_training.cpp: runs the built examples/toy_training program and checks
// what it claims, the way a learner would run it: exit status 0 and the report's lines, for a few
// seeds, dense and sparse; exit status 1 when a run is too short for the claims to hold; clear
// errors for bad flags; the data and the drawing instructions without gnuplot; an exact resume
// from a checkpoint, and a damaged checkpoint refused with nothing overwritten.
// The program's path comes from examples/CMakeLists.txt (TAPEGRAD_TOY_TRAINING); without the
// examples (TAPEGRAD_BUILD_EXAMPLES=OFF) there is nothing to run and this file is empty.
#include <doctest/doctest.h>

#ifdef TAPEGRAD_TOY_TRAINING

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "run_program.hpp"

namespace {

namespace fs = std::filesystem;

using Output = tapegrad::testing::ProgramOutput;

// Runs toy_training with `args` (and `env` assignments such as "PATH=/x") and captures everything
// it prints.
Output run_toy_training(const std::string& args, const std::string& env = "") {
  return tapegrad::testing::run_program(TAPEGRAD_TOY_TRAINING, args, 300, "", env);
}

// A fresh folder for one test's output files.
std::string folder(const std::string& name) {
  const fs::path dir = fs::path(TAPEGRAD_BINARY_DIR) / "test_output" / "toy_training" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

bool has(const Output& out, const std::string& text) {
  return out.text.find(text) != std::string::npos;
}

// The "weights' fingerprint" line of a report, or "" if there is none.
std::string weights_fingerprint(const Output& out) {
  std::smatch m;
  return std::regex_search(out.text, m, std::regex("weights' fingerprint: (0x[0-9a-f]{16})"))
             ? m[1].str()
             : "";
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The bytes of `file` saved to `path` with fresh checksums (of its tensors and its metadata), as
// a deliberate edit would be: what only the program's own checks can refuse.
std::string resigned(const tapegrad::io::SafetensorsFile& file, const std::string& path) {
  tapegrad::io::save_safetensors(path, file);
  return bytes_of(path);
}

// The number captured by `pattern`'s first group, or -1.
double number(const Output& out, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(out.text, m, std::regex(pattern)) ? std::stod(m[1]) : -1.0;
}

}  // namespace

TEST_SUITE("examples.toy_training") {
  TEST_CASE("the default run holds every claim, for several seeds") {
    for (const char* seed : {"1", "2", "3"}) {
      CAPTURE(seed);
      const Output out = run_toy_training(std::string("--seed ") + seed + " --out " +
                                          folder(std::string("seed") + seed));
      INFO(out.text);
      CHECK(out.status == 0);
      CHECK(has(out, "All 12 claims hold."));
      CHECK_FALSE(has(out, "FAILED"));
      // The report's facts, line by line.
      CHECK(has(out, "  ok      training loss fell from "));
      CHECK(number(out, "held-out accuracy ([0-9.]+) %") > 90.0);
      CHECK(has(out, "  ok      it uses the word AND its position"));
      CHECK(has(out, "  ok      synonyms grew alike"));
      CHECK(has(out, "  ok      every word's row moved"));
      CHECK(has(out, "  ok      the padding row is still exactly zero"));
      CHECK(std::regex_search(
          out.text,
          std::regex("ok      pe's fingerprint is (0x[0-9a-f]{16}) after training, \\1 before")));
      CHECK(has(out, "  ok      pos->verify(): "));
      CHECK(has(out,
                "  ok      pos.pe (1, 64, 16) is a buffer with no gradient, not a parameter (those "
                "are embed.lut.weight, out.weight, out.bias)"));
      CHECK(has(out, "  ok      eval mode is deterministic"));
      CHECK(has(out, "  ok      in eval mode Dropout is the identity"));
    }
  }

  TEST_CASE("the kernel sets the README says give the same bits give the same weights") {
    // The README names, in one sentence, the kernel sets whose toy training ends with the same
    // weights' fingerprint. This test reads that sentence and checks it on every named set this
    // CPU can run: a set added to the sentence (reference, say, which sums in another order) must
    // first hold here.
    std::string readme = bytes_of(std::string(TAPEGRAD_SOURCE_DIR) + "/README.md");
    readme = std::regex_replace(readme, std::regex("\\s+"), " ");
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_search(readme, m,
                                      std::regex("Nor does the choice among the fast kernel sets: "
                                                 "([^.]*) give the same bits")),
                    "the README's sentence about the kernel sets moved: update this test with it");
    std::vector<std::string> claimed;
    const std::string list = m[1].str();
    const std::regex name("`([a-z0-9]+)`");
    for (std::sregex_iterator it(list.begin(), list.end(), name), end; it != end; ++it)
      claimed.push_back((*it)[1].str());
    REQUIRE(claimed.size() >= 2);
    std::vector<std::string> runnable;
    for (const tapegrad::CpuCapability c : tapegrad::available_cpu_capabilities())
      runnable.emplace_back(tapegrad::to_string(c));
    std::string first;
    std::size_t checked = 0;
    for (const std::string& set : claimed) {
      CAPTURE(set);
      if (std::find(runnable.begin(), runnable.end(), set) == runnable.end()) continue;
      const Output o = run_toy_training("--steps 100 --out " + folder("claimed_set_" + set),
                                        "TAPEGRAD_CPU_CAPABILITY=" + set);
      INFO(o.text);
      REQUIRE(o.status == 0);
      REQUIRE(has(o, "kernels " + set));
      const std::string fingerprint = weights_fingerprint(o);
      REQUIRE_FALSE(fingerprint.empty());
      if (first.empty()) first = fingerprint;
      CHECK(fingerprint == first);
      ++checked;
    }
    CHECK(checked >= 2);  // baseline runs everywhere, and x86-64 CPUs of the last decade have avx2
  }

  TEST_CASE("two runs with the same seed end with the same weights, another seed with others") {
    const std::string a =
        weights_fingerprint(run_toy_training("--steps 100 --out " + folder("same_seed_a")));
    const std::string b =
        weights_fingerprint(run_toy_training("--steps 100 --out " + folder("same_seed_b")));
    const std::string c = weights_fingerprint(
        run_toy_training("--steps 100 --seed 2 --out " + folder("same_seed_c")));
    REQUIRE(a.size() == 18);
    CHECK(a == b);
    CHECK(a != c);
  }

  TEST_CASE("the sparse run holds every claim, and SparseAdam leaves unused rows bit-identical") {
    const Output out = run_toy_training("--sparse --out " + folder("sparse"));
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(has(out, "All 13 claims hold."));
    CHECK(has(out, "SparseAdam (embedding) + Adam"));
    // The claim is not vacuous: rows were left out of batches hundreds of times.
    CHECK(number(out,
                 "ok      SparseAdam left alone, bit for bit, every row a step's batch did not use "
                 "\\(([0-9]+) times\\)") > 100);
  }

  TEST_CASE("under dense Adam, rows a batch did not use move anyway") {
    const Output out = run_toy_training("--steps 200 --out " + folder("dense_momentum"));
    INFO(out.text);
    CHECK(number(out, "Adam moved a row its step's batch did not use ([0-9]+) of") > 0);
  }

  TEST_CASE("a run too short to learn reports its failed claims and exits with 1") {
    const Output out = run_toy_training("--steps 5 --out " + folder("too_short"));
    INFO(out.text);
    CHECK(out.status == 1);
    CHECK(has(out, "  FAILED  "));
    CHECK(has(out, "claims FAILED."));
  }

  TEST_CASE("bad flags are refused with a message that names them") {
    const std::string out_dir = " --out " + folder("bad_flags");
    struct Case {
      const char* args;
      const char* message;
    };
    for (const Case& c :
         {Case{"--no-such-flag", "The following argument was not expected: --no-such-flag"},
          Case{"--steps 0", "--steps: expected an integer in [1, 10000000], got '0'"},
          Case{"--steps many", "--steps: expected an integer in [1, 10000000], got 'many'"},
          Case{"--lr -1", "--lr: expected a number > 0, got '-1'"},
          Case{"--lr ' 1'", "--lr: expected a number > 0, got ' 1'"},
          Case{"--lr '1 '", "--lr: expected a number > 0, got '1 '"},
          Case{"--lr 1e-3x", "--lr: expected a number > 0, got '1e-3x'"},
          Case{"--seed -3", "--seed: expected an integer in [0, 2^64), got '-3'"},
          Case{"--vocab 5 --synonyms 4", "--vocab: expected at least two meanings"},
          Case{"stray", "The following argument was not expected: stray"}}) {
      CAPTURE(c.args);
      const Output out = run_toy_training(c.args + out_dir);
      CHECK(out.status == 2);
      CHECK_MESSAGE(has(out, c.message), out.text);
    }
    const Output help = run_toy_training("--help");
    CHECK(help.status == 0);
    for (const char* flag :
         {"--steps", "--lr", "--warmup", "--batch-size", "--d-model", "--vocab", "--synonyms",
          "--seed", "--threads", "--sparse", "--out", "--checkpoint", "--resume"})
      CHECK_MESSAGE(has(help, flag), flag);
  }

  TEST_CASE("without gnuplot the program still writes the data and says how to draw the pictures") {
    const std::string dir = folder("no_gnuplot");
    const Output out = run_toy_training("--steps 150 --out '" + dir + "'", "PATH=/nonexistent");
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(has(out, "gnuplot is not installed"));
    CHECK(
        has(out, "the data files and plots.gp are in '" + dir +
                     "' (apt-get install gnuplot-nox, then run gnuplot plots.gp in that folder)"));
    for (const char* file : {"pe.dat", "loss.dat", "held_out.dat", "similarity_before.dat",
                             "similarity_after.dat", "plots.gp"})
      CHECK_MESSAGE(fs::file_size(fs::path(dir) / file) > 0, file);
    CHECK_FALSE(fs::exists(fs::path(dir) / "pe.png"));
    // The loss file has one line per step.
    std::ifstream loss(fs::path(dir) / "loss.dat");
    int lines = 0;
    for (std::string line; std::getline(loss, line);) ++lines;
    CHECK(lines == 150);
  }

  TEST_CASE(
      "an --out name that a shell would misread gets its pictures, and no other file "
      "appears") {
    if (!fs::exists("/usr/bin/gnuplot")) {
      std::printf("[skipped: gnuplot is not installed]\n");
      return;
    }
    const std::string dir = folder("odd_name");
    // A leading dash (an option to cd), quotes, a dollar and a semicolon.
    const std::string name = "-x 'y' \"$HOME\"; touch INJECTED";
    const Output out = tapegrad::testing::run_program(
        TAPEGRAD_TOY_TRAINING, "--steps 150 " + tapegrad::testing::quoted("--out=" + name), 300,
        dir);
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(has(out, "pictures: " + name + "/pe.png, loss.png, similarity.png (drawn by gnuplot"));
    for (const char* picture : {"pe.png", "loss.png", "similarity.png"})
      CHECK_MESSAGE(bytes_of(dir + "/" + name + "/" + picture).starts_with("\x89PNG"), picture);
    std::vector<std::string> entries;
    for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path().filename());
    CHECK(entries == std::vector<std::string>{name});
  }

  TEST_CASE("a run resumed from its checkpoint ends with the same weights as an unbroken run") {
    for (const char* mode : {"", "--sparse"}) {
      CAPTURE(mode);
      const std::string tag = *mode ? "sparse" : "dense";
      const std::string whole_dir = folder("whole_" + tag), half = folder("half_" + tag),
                        rest = folder("rest_" + tag);
      const Output whole = run_toy_training(std::string(mode) + " --steps 200 --out " + whole_dir);
      const Output first = run_toy_training(std::string(mode) + " --steps 100 --out " + half);
      REQUIRE(first.status == 0);
      // The settings (--sparse included) come from the checkpoint: only --steps is given again.
      const Output second = run_toy_training("--resume " + half +
                                             "/checkpoint.safetensors --steps 200 --out " + rest);
      INFO(second.text);
      CHECK(second.status == 0);
      CHECK(has(second, "resumed from " + half + "/checkpoint.safetensors at step 100"));
      CHECK(weights_fingerprint(second) == weights_fingerprint(whole));
      CHECK(weights_fingerprint(first) != weights_fingerprint(whole));
      // The report and the loss curve cover the whole run, not only the resumed half.
      CHECK(number(second, "training loss fell from ([0-9.]+) \\(step 1\\)") ==
            number(whole, "training loss fell from ([0-9.]+) \\(step 1\\)"));
      CHECK(bytes_of(rest + "/loss.dat") == bytes_of(whole_dir + "/loss.dat"));
    }
  }

  TEST_CASE(
      "resuming keeps the run's settings: a flag that contradicts them, or no step left, is "
      "refused") {
    const std::string dir = folder("settings");
    REQUIRE(run_toy_training("--steps 100 --out " + dir).status == 0);
    const std::string checkpoint = dir + "/checkpoint.safetensors";
    const std::string saved = bytes_of(checkpoint);
    const Output other_width =
        run_toy_training("--resume " + checkpoint + " --d-model 32 --out " + folder("settings2"));
    CHECK(other_width.status == 2);
    CHECK_MESSAGE(
        has(other_width,
            "--d-model 32: the checkpoint's run used 16; leave the flag out to continue that run"),
        other_width.text);
    const Output same_seed = run_toy_training("--resume " + checkpoint +
                                              " --seed 1 --steps 120 --out " + folder("settings3"));
    CHECK_MESSAGE(same_seed.status == 0, same_seed.text);
    const Output done =
        run_toy_training("--resume " + checkpoint + " --steps 100 --out " + folder("settings4"));
    CHECK(done.status == 2);
    CHECK_MESSAGE(has(done, "the run is at step 100 already; ask for more with --steps"),
                  done.text);
    CHECK(bytes_of(checkpoint) == saved);
  }

  TEST_CASE(
      "a damaged checkpoint is refused, and neither it nor the checkpoint to write is touched") {
    const std::string dir = folder("damaged");
    REQUIRE(run_toy_training("--steps 100 --out " + dir).status == 0);
    const std::string good = bytes_of(dir + "/checkpoint.safetensors");
    REQUIRE(good.size() > 1000);
    std::string huge_header = good;
    huge_header[5] = '\x7f';  // header length far beyond the file
    std::string bad_json = good;
    bad_json[9] = '#';                       // the header's JSON, broken
    tapegrad::io::SafetensorsFile not_ours;  // valid safetensors, not toy_training's
    not_ours.add("weight", tapegrad::Array{1.0f, 2.0f});
    tapegrad::io::SafetensorsFile mismatched = tapegrad::io::parse_safetensors(good);
    mismatched.set_metadata("progress.extra.d-model",
                            "32");  // settings that do not fit its tensors
    struct Case {
      const char* name;
      std::string bytes;
      const char* message;
    };
    for (const Case& c :
         {Case{"empty", "", "HeaderTooSmall"},
          Case{"truncated", good.substr(0, good.size() - 4), "MetadataIncompleteBuffer"},
          Case{"huge_header", huge_header, "HeaderTooLarge"},
          Case{"bad_json", bad_json, "InvalidHeaderDeserialization"},
          Case{"not_ours", tapegrad::io::serialize_safetensors(not_ours),
               "expected a toy_training checkpoint"},
          Case{"mismatched", resigned(mismatched, dir + "/resigned.safetensors"),
               "size mismatch"}}) {
      CAPTURE(c.name);
      const std::string damaged = dir + "/" + c.name + ".safetensors",
                        other = dir + "/other.safetensors";
      const std::string out = folder(std::string("damaged_out_") + c.name);
      write_bytes(damaged, c.bytes);
      write_bytes(other, good);
      const Output o =
          run_toy_training("--resume " + damaged + " --checkpoint " + other + " --out " + out);
      INFO(o.text);
      CHECK(o.status == 2);
      CHECK(has(o, "toy_training: "));
      CHECK(has(o, c.message));
      CHECK(bytes_of(damaged) == c.bytes);  // the damaged file is left as it was
      CHECK(bytes_of(other) == good);       // and the checkpoint to write untouched
      CHECK(fs::is_empty(out));             // nothing else written either
    }
  }

  TEST_CASE(
      "a hand-edited checkpoint is held to the rules of the flags, naming the setting and the "
      "file") {
    const std::string dir = folder("edited");
    REQUIRE(run_toy_training("--steps 100 --out " + dir).status == 0);
    const std::string good = bytes_of(dir + "/checkpoint.safetensors");
    // An edit that keeps the old checksums is refused by them, naming the entry.
    tapegrad::io::SafetensorsFile unsigned_edit = tapegrad::io::parse_safetensors(good);
    unsigned_edit.set_metadata("progress.extra.synonyms", "0");
    const std::string unsigned_path = dir + "/unsigned.safetensors";
    write_bytes(unsigned_path, tapegrad::io::serialize_safetensors(unsigned_edit));
    const Output refused =
        run_toy_training("--resume " + unsigned_path + " --out " + folder("edited_out_unsigned"));
    CHECK(refused.status == 2);
    CHECK(has(refused,
              "ChecksumMismatch: expected the value of __metadata__ entry "
              "'progress.extra.synonyms'"));
    // The cases below are saved with fresh checksums, as a deliberate edit would be: the
    // program's own checks must refuse them.
    struct Case {
      const char* name;
      const char* key;      // a __metadata__ entry of the checkpoint
      const char* value;    // what the hand edit puts there
      const char* message;  // what toy_training must say
    };
    for (const Case& c :
         {// Each stored setting passes its flag's rule: the run would divide by zero (synonyms 0),
          // be killed for memory (batch-size, d-model 1e8), or name the wrong thing without it.
          Case{"synonyms_0", "progress.extra.synonyms", "0",
               "the checkpoint's setting --synonyms is refused: expected an integer in [2, 1000], "
               "got '0'"},
          Case{"synonyms_negative", "progress.extra.synonyms", "-1",
               "the checkpoint's setting --synonyms is refused: expected an integer in [2, 1000], "
               "got '-1'"},
          Case{"seed_text", "progress.extra.seed", "abc",
               "the checkpoint's setting --seed is refused: expected an integer in [0, 2^64), got "
               "'abc'"},
          Case{"batch_huge", "progress.extra.batch-size", "100000000",
               "the checkpoint's setting --batch-size is refused: expected an integer in [1, "
               "4096], got '100000000'"},
          Case{"batch_1e8", "progress.extra.batch-size", "1e8",
               "the checkpoint's setting --batch-size is refused: expected an integer in [1, "
               "4096], got '1e8'"},
          Case{"d_model_huge", "progress.extra.d-model", "100000000",
               "the checkpoint's setting --d-model is refused: expected an integer in [1, 4096], "
               "got '100000000'"},
          Case{"lr_nan", "progress.extra.lr", "nan",
               "the checkpoint's setting --lr is refused: expected a number > 0"},
          Case{"warmup_0", "progress.extra.warmup", "0",
               "the checkpoint's setting --warmup is refused"},
          Case{"vocab_0", "progress.extra.vocab", "0",
               "the checkpoint's setting --vocab is refused"},
          Case{"sparse_2", "progress.extra.sparse", "2",
               "the checkpoint's setting --sparse is refused: expected 0 or 1, got '2'"},
          // The settings together pass the flags' joint check.
          Case{"vocab_small", "progress.extra.vocab", "5",
               "the checkpoint's settings are refused: --vocab: expected at least two meanings"},
          // The run's progress and history are numbers where numbers belong.
          Case{"step_negative", "progress.step", "-3",
               "expected progress.step and progress.data_position to be counts (>= 0), got -3"},
          Case{"loss_text", "progress.extra.loss", "2.5 abc",
               "expected the loss of step 2 as a number, got 'abc'"},
          Case{"held_out_text", "progress.extra.held-out-loss", "0:2.5 x:1",
               "expected held-out losses as step:loss with a step in [0, 100], got 'x:1'"}}) {
      CAPTURE(c.name);
      tapegrad::io::SafetensorsFile edited = tapegrad::io::parse_safetensors(good);
      edited.set_metadata(c.key, c.value);
      const std::string path = dir + "/" + c.name + ".safetensors",
                        other = dir + "/other.safetensors";
      const std::string bytes = resigned(edited, path);
      const std::string out = folder(std::string("edited_out_") + c.name);
      write_bytes(path, bytes);
      write_bytes(other, good);
      const Output o =
          run_toy_training("--resume " + path + " --checkpoint " + other + " --out " + out);
      INFO(o.text);
      CHECK(o.status == 2);                     // an error, not a signal or an OOM kill
      CHECK(has(o, "toy_training: --resume"));  // the program's check or the library's,
      CHECK(has(o, "'" + path + "': "));        // naming the file
      CHECK(has(o, c.message));
      CHECK(bytes_of(path) == bytes);
      CHECK(bytes_of(other) == good);
      CHECK(fs::is_empty(out));
    }
  }

}  // TEST_SUITE

#endif  // TAPEGRAD_TOY_TRAINING
