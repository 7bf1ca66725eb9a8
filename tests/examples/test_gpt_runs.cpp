// tests/examples/test_gpt_runs.cpp: the GPT program against what happens around a run, as a
// hostile or unlucky user meets it: --out names that are shell syntax, training text that is
// gnuplot syntax, links and FIFOs where its files go, its own inputs given as outputs, a second run
// on the same folder or export, Ctrl-C (once, twice), SIGTERM, a token file that shrinks under
// it, and a step larger than the machine's memory. Each case runs the built program
// (TAPEGRAD_GPT, from examples/CMakeLists.txt) in a folder of its own.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../fortune_corpus.hpp"
#include "../test_files.hpp"
#include "background_program.hpp"
#include "run_program.hpp"

#ifdef TAPEGRAD_GPT

namespace {

namespace fs = std::filesystem;
using tapegrad::testing::BackgroundProgram;
using tapegrad::testing::bytes_of;
using tapegrad::testing::Ended;
using tapegrad::testing::has;
using tapegrad::testing::ProgramOutput;
using tapegrad::testing::quoted;

fs::path folder(const std::string& name) {
  return tapegrad::testing::fresh_folder("gpt_runs", name);
}

fs::path corpus(const fs::path& dir) {
  tapegrad::testing::write_file(dir / "corpus.txt", tapegrad::testing::fortune_corpus(400, 7));
  return dir / "corpus.txt";
}

// The small run: a few seconds at most, pictures and all.
const std::string kSmall =
    " --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --steps 5 --warmup 1 "
    "--eval-windows 8 --sample-tokens 0";

// A run long enough to be stopped in the middle: a thousand steps of a few milliseconds, a
// progress line every hundred. Its flags as an argument vector.
std::vector<std::string> long_run(const fs::path& data, const fs::path& out,
                                  std::vector<std::string> more = {}) {
  std::vector<std::string> args{
      TAPEGRAD_GPT, "--data",   data.string(), "--n-layer",      "2",   "--n-head",
      "2",          "--n-embd", "32",          "--block-size",   "32",  "--batch-size",
      "8",          "--warmup", "5",           "--eval-windows", "8",   "--sample-tokens",
      "0",          "--steps",  "1000",        "--eval-every",   "250", "--out",
      out.string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

ProgramOutput run(const std::string& args, const std::string& cwd = "") {
  return tapegrad::testing::run_program(TAPEGRAD_GPT, args, 300, cwd);
}

// The arguments of `argv` (after the program) as one quoted command line, for run().
std::string arguments(const std::vector<std::string>& argv) {
  std::string args;
  for (std::size_t i = 1; i < argv.size(); ++i) args += " " + tapegrad::testing::quoted(argv[i]);
  return args;
}

// The same tensors, bit for bit (names, shapes, bytes).
bool same_tensors(const fs::path& a, const fs::path& b) {
  const tapegrad::io::SafetensorsFile fa = tapegrad::io::load_safetensors(a.string()),
                                      fb = tapegrad::io::load_safetensors(b.string());
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

// The step a checkpoint holds.
std::int64_t step_of(const fs::path& checkpoint) {
  const auto f = tapegrad::io::load_safetensors(checkpoint.string());
  return std::stoll(f.metadata_value("progress.step").value_or("-1"));
}

// The number printed right after `prefix` in `text`, or -1 when `prefix` is not there.
std::int64_t number_after(const std::string& text, const std::string& prefix) {
  const std::size_t at = text.find(prefix);
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + prefix.size()));
}

// The entries of a folder, by name.
std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

bool gnuplot_installed() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"})
    if (fs::exists(fs::path(dir) / "gnuplot")) return true;
  return false;
}

bool is_png(const fs::path& path) { return bytes_of(path).starts_with("\x89PNG\r\n\x1a\n"); }

// What a run of kSmall leaves in its --out folder.
const std::set<std::string> kSmallRunFiles = {
    "last.safetensors",    "best.safetensors",    "loss.dat", "val.dat",      "plots.gp",
    "attention_l0_h0.dat", "attention_l0_h1.dat", "loss.png", "attention.png"};

}  // namespace

TEST_SUITE("examples.gpt_runs") {
  TEST_CASE(
      "no --out name reaches a shell: quotes, dollars, semicolons, spaces, a newline and a "
      "leading dash each get their pictures, and no other file appears") {
    const fs::path dir = folder("out_names");
    corpus(dir);
    const bool drawn = gnuplot_installed();
    if (!drawn)
      std::printf("[skipped: gnuplot is not installed, so the pictures are not checked]\n");
    // The leading '-' is given as a user would, in CLI11's --out=VALUE form.
    const std::vector<std::string> names = {"x'; touch INJECTED; '", "bob's \"run\" $HOME",
                                            "$(touch INJECTED)`touch INJECTED`;",
                                            "two\nlines and spaces", "-dash; touch INJECTED"};
    std::set<std::string> expected = {"corpus.txt"};
    for (const std::string& name : names) {
      CAPTURE(name);
      const ProgramOutput out =
          run("--data corpus.txt" + kSmall + " " + quoted("--out=" + name), dir.string());
      INFO(out.text);
      CHECK(out.status == 0);
      expected.insert(name);
      CHECK(entries(dir) == expected);  // the injection would have made a file here
      std::set<std::string> files = kSmallRunFiles;
      if (!drawn) files.erase("loss.png"), files.erase("attention.png");
      CHECK(entries(dir / name) == files);
      if (!drawn) continue;
      CHECK(is_png(dir / name / "loss.png"));
      CHECK(is_png(dir / name / "attention.png"));
      CHECK(has(out.text, "pictures: " + name + "/loss.png, " + name + "/attention.png\n"));
    }
  }

  TEST_CASE(
      "the training text reaches gnuplot only as text: a label with backquotes runs "
      "nothing") {
    if (!gnuplot_installed()) {
      std::printf("[skipped: gnuplot is not installed]\n");
      return;
    }
    const fs::path dir = folder("backquotes");
    // Every entry starts with `>x`: in a double-quoted gnuplot string that is a shell command
    // (the redirection makes a file in the folder gnuplot runs in).
    std::string text;
    tapegrad::Generator g(3);
    const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog"};
    for (int e = 0; e < 300; ++e) {
      text += "`>x`";
      for (int w = 0; w < 8; ++w) text += std::string(" ") + words[g.randint(0, 8)];
      text += ".\n%\n";
    }
    tapegrad::testing::write_file(dir / "corpus.txt", text);
    const ProgramOutput out = run("--data corpus.txt" + kSmall + " --out run", dir.string());
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(has(out.text, "attention line: \"`>x`"));
    CHECK(entries(dir / "run") == kSmallRunFiles);
    CHECK(entries(dir) == std::set<std::string>{"corpus.txt", "run"});
    CHECK(is_png(dir / "run" / "attention.png"));
  }

  TEST_CASE(
      "the pictures listed are the pictures drawn: a token file has no attention line, "
      "and no attention.png") {
    if (!gnuplot_installed()) {
      std::printf("[skipped: gnuplot is not installed]\n");
      return;
    }
    const fs::path dir = folder("tokens_pictures");
    const std::string text = tapegrad::testing::fortune_corpus(400, 7);
    tapegrad::testing::write_file(dir / "corpus.txt", text);
    REQUIRE(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE,
                                           "--train-bpe 280 --text corpus.txt --out corpus.bpe",
                                           120, dir.string())
                .status == 0);
    REQUIRE(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE,
                                           "--bpe corpus.bpe --text corpus.txt --out corpus.tokens",
                                           120, dir.string())
                .status == 0);
    const ProgramOutput out =
        run("--tokens corpus.tokens --tokenizer bpe-model:corpus.bpe" + kSmall + " --out o",
            dir.string());
    INFO(out.text);
    CHECK(out.status == 0);
    CHECK(has(out.text, "pictures: o/loss.png\n"));
    CHECK_FALSE(has(out.text, "attention.png"));
    CHECK(is_png(dir / "o" / "loss.png"));
    CHECK_FALSE(fs::exists(dir / "o" / "attention.png"));
  }

  TEST_CASE(
      "a FIFO or a link to another file where a picture or its data goes is refused before "
      "training, and nothing is written through it") {
    const fs::path dir = folder("outputs");
    const fs::path data = corpus(dir);
    tapegrad::testing::write_file(dir / "notes.txt", "my notes");
    struct Case {
      std::string name;  // in --out
      bool fifo;         // else a symbolic link to notes.txt
    };
    for (const Case& c : {Case{"plots.gp", true}, Case{"loss.png", false},
                          Case{"attention_l0_h0.dat", false}, Case{"val.dat", true}}) {
      CAPTURE(c.name);
      const fs::path out = dir / ("out_" + c.name);
      fs::create_directories(out);
      if (c.fifo)
        REQUIRE(::mkfifo((out / c.name).c_str(), 0600) == 0);
      else
        fs::create_symlink(dir / "notes.txt", out / c.name);
      const ProgramOutput r = tapegrad::testing::run_program(
          TAPEGRAD_GPT,
          "--data " + quoted(data.string()) + kSmall + " --out " + quoted(out.string()), 60);
      INFO(r.text);
      CHECK(r.status == 2);
      CHECK(has(r.text, "gpt: --out: '" + (out / c.name).string() + "' would be replaced"));
      CHECK_FALSE(has(r.text, "step 0: validation loss"));
      CHECK(bytes_of(dir / "notes.txt") == "my notes");
    }
  }

  TEST_CASE("an output never replaces an input: --data in --out, or linked there, is refused") {
    const fs::path dir = folder("inputs");
    const std::string text = tapegrad::testing::fortune_corpus(400, 7);
    // The text itself in the folder, under a name the run writes.
    fs::create_directories(dir / "out");
    tapegrad::testing::write_file(dir / "out" / "loss.dat", text);
    const ProgramOutput same = run("--data out/loss.dat" + kSmall + " --out out", dir.string());
    INFO(same.text);
    CHECK(same.status == 2);
    CHECK(has(same.text,
              "gpt: --out: 'out/loss.dat' is the file --data reads ('out/loss.dat'); "
              "an output never replaces an input"));
    CHECK(bytes_of(dir / "out" / "loss.dat") == text);
    // A link in the folder to the text given elsewhere: the same file.
    tapegrad::testing::write_file(dir / "corpus.txt", text);
    fs::create_directories(dir / "out2");
    fs::create_symlink(dir / "corpus.txt", dir / "out2" / "val.dat");
    const ProgramOutput linked = run("--data corpus.txt" + kSmall + " --out out2", dir.string());
    INFO(linked.text);
    CHECK(linked.status == 2);
    CHECK(has(linked.text, "gpt: --out: 'out2/val.dat' is the file --data reads ('corpus.txt')"));
    CHECK(bytes_of(dir / "corpus.txt") == text);
  }

  TEST_CASE(
      "Ctrl-C finishes the step, saves last.safetensors, says how to resume and exits 130, "
      "resumed, the run ends with the bits of a run straight through") {
    const fs::path dir = folder("sigint");
    const fs::path data = corpus(dir);
    Ended stopped;
    {
      BackgroundProgram gpt(long_run(data, dir / "parts"), dir / "parts.log");
      REQUIRE(gpt.wait_for("step  100/1000"));
      gpt.send(SIGINT);
      stopped = gpt.wait();
    }
    INFO(stopped.output);
    CHECK(stopped.status == 130);
    CHECK(has(stopped.output, "gpt: SIGINT: stopping after the current step, to save the run"));
    const std::int64_t step = number_after(stopped.output, "stopped by SIGINT after step ");
    CHECK(step >= 100);
    CHECK(step < 1000);
    CHECK(has(stopped.output, (dir / "parts" / "last.safetensors").string() +
                                  " holds it: continue with the same flags and --resume"));
    CHECK(step_of(dir / "parts" / "last.safetensors") == step);

    const ProgramOutput resumed = run(arguments(long_run(data, dir / "parts", {"--resume"})));
    INFO(resumed.text);
    CHECK(resumed.status == 0);
    CHECK(has(resumed.text, "resumed at step " + std::to_string(step)));
    const ProgramOutput straight = run(arguments(long_run(data, dir / "straight")));
    REQUIRE(straight.status == 0);
    CHECK(same_tensors(dir / "parts" / "last.safetensors", dir / "straight" / "last.safetensors"));
    CHECK(same_tensors(dir / "parts" / "best.safetensors", dir / "straight" / "best.safetensors"));
  }

  TEST_CASE("SIGTERM stops a run the same way, with exit status 143") {
    const fs::path dir = folder("sigterm");
    BackgroundProgram gpt(long_run(corpus(dir), dir / "out"), dir / "out.log");
    REQUIRE(gpt.wait_for("step  100/1000"));
    gpt.send(SIGTERM);
    const Ended e = gpt.wait();
    INFO(e.output);
    CHECK(e.status == 143);
    CHECK(has(e.output, "stopped by SIGTERM after step "));
    CHECK(step_of(dir / "out" / "last.safetensors") >= 100);
  }

  TEST_CASE("a second signal ends the run at once, and leaves nothing half-written") {
    const fs::path dir = folder("second_signal");
    const fs::path data = corpus(dir);
    // Two kinds of signal, back to back (two of one kind may merge into one): the first delivered
    // asks the run to stop after its step, the second ends it, of that signal, before the step is
    // over.
    Ended e;
    {
      BackgroundProgram gpt(long_run(data, dir / "out"), dir / "out.log");
      REQUIRE(gpt.wait_for("step  100/1000"));
      gpt.send(SIGINT);
      gpt.send(SIGTERM);
      e = gpt.wait();
    }
    INFO(e.output);
    // Whichever the system delivered first was noted; the other ended the process.
    REQUIRE((e.signal == SIGINT || e.signal == SIGTERM));
    const std::string first = e.signal == SIGINT ? "SIGTERM" : "SIGINT";
    CHECK(has(e.output, "gpt: " + first + ": stopping after the current step"));
    CHECK_FALSE(has(e.output, "stopped by " + first + " after step"));
    // Whatever it left is whole: the checkpoint of an earlier validation, or none; a run resumed
    // from it finishes, and no temporary stays behind.
    if (fs::exists(dir / "out" / "last.safetensors"))
      CHECK_NOTHROW(tapegrad::io::load_safetensors((dir / "out" / "last.safetensors").string()));
    const ProgramOutput resumed =
        run(arguments(long_run(data, dir / "out", {"--resume", "--quiet"})));
    INFO(resumed.text);
    CHECK(resumed.status == 0);
    for (const std::string& name : entries(dir / "out")) {
      CAPTURE(name);
      CHECK(name.find(".tmp-") == std::string::npos);
    }
  }

  TEST_CASE(
      "a second run on the same --out is refused at once, naming the folder and the first "
      "run, whose best.safetensors stays its own") {
    const fs::path dir = folder("two_runs");
    const fs::path data = corpus(dir);
    BackgroundProgram first(long_run(data, dir / "out"), dir / "first.log");
    REQUIRE(first.wait_for("step 0: validation loss"));
    // A far worse run: two steps.
    const ProgramOutput second =
        run("--data " + quoted(data.string()) + kSmall + " --steps 2 --eval-every 1 --out " +
            quoted((dir / "out").string()));
    INFO(second.text);
    CHECK(second.status == 2);
    CHECK(has(second.text, "gpt: --out: the folder '" + (dir / "out").string() +
                               "' is in use by another run (process " +
                               std::to_string(first.pid()) + " holds its lock)"));
    CHECK_FALSE(has(second.text, "step 0: validation loss"));
    const Ended end = first.wait();
    INFO(end.output);
    CHECK(end.status == 0);
    // best.safetensors holds the first run's best loss (its note, as the result line prints it).
    const std::size_t at = end.output.find("best_val_loss=");
    REQUIRE(at != std::string::npos);
    const auto best = tapegrad::io::load_safetensors((dir / "out" / "best.safetensors").string());
    std::ostringstream held;
    held << std::fixed << std::setprecision(4)
         << std::stod(best.metadata_value("progress.extra.best_val").value_or("nan"));
    CHECK(end.output.substr(at + 14, held.str().size()) == held.str());
  }

  TEST_CASE(
      "a second export into the same folder is refused at once, the folder stays empty "
      "until the first run renames its whole export into it, and a full folder is refused") {
    const fs::path dir = folder("two_exports");
    const fs::path data = corpus(dir);
    BackgroundProgram first(long_run(data, dir / "a", {"--export-hf", (dir / "hf").string()}),
                            dir / "first.log");
    REQUIRE(first.wait_for("step 0: validation loss"));
    const std::string second_args = "--data " + quoted(data.string()) + kSmall + " --out " +
                                    quoted((dir / "b").string()) + " --export-hf " +
                                    quoted((dir / "hf").string());
    const ProgramOutput second = run(second_args);
    INFO(second.text);
    CHECK(second.status == 2);
    CHECK(has(second.text, "gpt: --export-hf: the folder '" + (dir / "hf").string() +
                               "' is in use by another run (process " +
                               std::to_string(first.pid()) + " holds its lock)"));
    CHECK(entries(dir / "hf").empty());  // nothing under the final name before the end
    const Ended end = first.wait();
    INFO(end.output);
    CHECK(end.status == 0);
    CHECK(has(end.output, "exported the model after step 1000"));
    CHECK(entries(dir / "hf") == std::set<std::string>{"config.json", "model.safetensors"});
    // No staging folder left beside it, and no --out made by the refused run.
    CHECK(entries(dir) == std::set<std::string>{"a", "corpus.txt", "first.log", "hf"});
    const ProgramOutput third = run(second_args);
    CHECK(third.status == 2);
    CHECK(has(third.text, "gpt: --export-hf: '" + (dir / "hf").string() +
                              "' already holds model.safetensors, config.json; an export goes "
                              "into a new or empty folder"));
  }

  TEST_CASE(
      "a token file that shrinks under the run stops it with exit status 2 naming the "
      "file, after saving the last whole step, and resumed on the whole file the run ends "
      "with the bits of a run straight through") {
    const fs::path dir = folder("shrinking_tokens");
    std::string text;
    for (int i = 0; i < 4; ++i) text += tapegrad::testing::fortune_corpus(400, 7 + i);
    tapegrad::testing::write_file(dir / "corpus.txt", text);
    REQUIRE(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE,
                                           "--train-bpe 300 --text corpus.txt --out corpus.bpe",
                                           120, dir.string())
                .status == 0);
    REQUIRE(tapegrad::testing::run_program(TAPEGRAD_TOKENIZE,
                                           "--bpe corpus.bpe --text corpus.txt --out corpus.tokens",
                                           120, dir.string())
                .status == 0);
    const std::string whole = bytes_of(dir / "corpus.tokens");
    const auto run_on_tokens = [&](const std::string& out, std::vector<std::string> more) {
      std::vector<std::string> args = long_run("", dir / out, std::move(more));
      args.erase(args.begin() + 1, args.begin() + 3);  // no --data
      args.insert(args.begin() + 1, {"--tokens", (dir / "corpus.tokens").string(), "--tokenizer",
                                     "bpe-model:" + (dir / "corpus.bpe").string()});
      return args;
    };
    Ended stopped;
    {
      BackgroundProgram gpt(run_on_tokens("parts", {}), dir / "parts.log");
      REQUIRE(gpt.wait_for("step  100/1000"));
      fs::resize_file(dir / "corpus.tokens", 1000);  // the ids past byte 1000 are gone
      stopped = gpt.wait();
    }
    INFO(stopped.output);
    CHECK(stopped.status == 2);
    CHECK(has(stopped.output, (dir / "corpus.tokens").string()));
    const std::int64_t step =
        number_after(stopped.output, "stopped: the training data failed after step ");
    CHECK(step >= 100);
    CHECK(has(stopped.output,
              "holds it: continue with the same flags and --resume, once the "
              "data is whole again"));
    CHECK(step_of(dir / "parts" / "last.safetensors") == step);

    tapegrad::testing::write_file(dir / "corpus.tokens", whole);
    const ProgramOutput resumed = run(arguments(run_on_tokens("parts", {"--resume"})));
    INFO(resumed.text);
    CHECK(resumed.status == 0);
    CHECK(has(resumed.text, "resumed at step " + std::to_string(step)));
    const ProgramOutput straight = run(arguments(run_on_tokens("straight", {})));
    REQUIRE(straight.status == 0);
    CHECK(same_tensors(dir / "parts" / "last.safetensors", dir / "straight" / "last.safetensors"));
  }

  TEST_CASE(
      "a training step larger than the machine's memory is refused before anything is "
      "allocated, naming the estimate, the machine's memory and the flags that lower it") {
    const fs::path dir = folder("memory");
    const ProgramOutput out =
        run("--data " + quoted(corpus(dir).string()) +
            " --batch-size 65536 --block-size 512 --steps 1 --sample-tokens 0 --out " +
            quoted((dir / "out").string()));
    INFO(out.text);
    CHECK(out.status == 2);
    CHECK(has(out.text,
              "gpt: --batch-size, --block-size, --n-layer, --n-embd: a training step "
              "would hold about "));
    CHECK(has(out.text, " of memory this machine gives the process"));
    CHECK(has(out.text, tapegrad::memory_text(double(tapegrad::machine_memory_bytes()))));
    CHECK(has(out.text, "lower --batch-size (--grad-accum K"));
    CHECK_FALSE(has(out.text, "out of memory"));
    CHECK_FALSE(has(out.text, "step 0: validation loss"));
  }

  TEST_CASE("a run whose lines cannot be written to standard output ends with exit status 2") {
    const fs::path dir = folder("stdout_full");
    const std::string command = quoted(TAPEGRAD_GPT) + " --data " + quoted(corpus(dir).string()) +
                                kSmall + " --out " + quoted((dir / "out").string()) +
                                " </dev/null >/dev/full 2>" + quoted((dir / "err.txt").string()) +
                                "; echo $? >" + quoted((dir / "status.txt").string());
    REQUIRE(std::system(command.c_str()) == 0);
    const std::string err = bytes_of(dir / "err.txt");
    INFO(err);
    CHECK(std::atoi(bytes_of(dir / "status.txt").c_str()) == 2);
    CHECK(has(err,
              "gpt: cannot write to standard output: the run's lines and its result line "
              "are lost"));
    CHECK(step_of(dir / "out" / "last.safetensors") == 5);  // the run itself was saved
  }

  TEST_CASE(
      "an export the disk refuses names --export-hf, not its staging folder, and leaves "
      "nothing there") {
    const fs::path dir = folder("export_refused");
    // A 64 KiB file system for the export alone, in a mount namespace of its own (root may make
    // one; elsewhere the case is skipped). The model's 400 kB do not fit.
    const fs::path small = dir / "small";
    fs::create_directories(small);
    tapegrad::testing::write_file(
        dir / "run.sh",
        "mount --make-rprivate / && mount -t tmpfs -o size=64k tmpfs " + quoted(small.string()) +
            " || exit 99\n" + quoted(TAPEGRAD_GPT) + " --data " + quoted(corpus(dir).string()) +
            kSmall + " --n-embd 64 --n-layer 2 --out " + quoted((dir / "out").string()) +
            " --export-hf " + quoted((small / "e").string()) + " </dev/null >" +
            quoted((dir / "out.txt").string()) + " 2>&1\necho $? >" +
            quoted((dir / "status.txt").string()) + "\nls -A " + quoted(small.string()) + " >" +
            quoted((dir / "left.txt").string()) + "\n");
    const int status = std::system(
        ("unshare -m sh " + quoted((dir / "run.sh").string()) + " 2>/dev/null").c_str());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      MESSAGE("skipped: cannot mount a tmpfs in a mount namespace here (needs root)");
      return;
    }
    const std::string out = bytes_of(dir / "out.txt");
    INFO(out);
    CHECK(std::atoi(bytes_of(dir / "status.txt").c_str()) == 2);
    CHECK(has(out,
              "gpt: --export-hf: cannot write the model into '" + (small / "e").string() + "' ("));
    CHECK(has(out, "No space left on device"));
    CHECK(has(out, "nothing was exported. The trained model is in " + (dir / "out").string() +
                       ": the same flags with --resume export it again"));
    CHECK(bytes_of(dir / "left.txt").empty());  // no staging folder, no half an export
    CHECK(step_of(dir / "out" / "last.safetensors") == 5);
  }
}

#endif  // TAPEGRAD_GPT
