// tests/data/test_save_targets.cpp: what saving a token file (TokenFileWriter) or a BPE model
// (BytePairEncoding::save) may touch, now that both go through the library's atomic writer: a
// FIFO at the name of the temporary (as earlier builds named it, ".NAME.tmp-PID", or as the
// writer names it, ".NAME.tmp-PID-N") is never opened, so the save cannot hang on it; a symbolic
// link there is never followed; the temporaries a killed save left are removed by the next save
// of the same file while a running process's are kept; and a file name of 253 bytes, which
// NAME_MAX allows, saves. Each case is run for both kinds of file.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <tapegrad/core/atomic_file.hpp>
#include <tapegrad/core/errors.hpp>
#include <tapegrad/data.hpp>

#include "../test_files.hpp"

using namespace tapegrad;

namespace {

namespace fs = std::filesystem;

// A kind of data file: how to save one to a path, and what the saved file must hold.
struct Kind {
  const char* name;
  std::function<void(const std::string&)> save;
  std::function<bool(const std::string&)> saved;
};

std::vector<Kind> kinds() {
  static const data::BytePairEncoding bpe = data::BytePairEncoding::train("aaabdaaabac", 259);
  return {
      {"token file",
       [](const std::string& path) {
         data::TokenFileWriter writer(path, 300, "bpe", 42);
         writer.append({7, 8, 299});
         writer.close();
       },
       [](const std::string& path) {
         const data::TokenFile f = data::TokenFile::open(path);
         return f.size() == 3 && f[2] == 299 && f.fingerprint() == 42u;
       }},
      {"BPE model", [](const std::string& path) { bpe.save(path); },
       [](const std::string& path) {
         return data::BytePairEncoding::load(path).merges() == bpe.merges();
       }},
  };
}

// The counter the next temporary of this process will carry: a probe's temporary shows the
// counter now (the writer counts up by one per temporary, process-wide).
unsigned next_counter(const fs::path& dir) {
  const AtomicFile probe((dir / "probe").string(), "probe");
  const std::string& t = probe.temporary();
  return unsigned(std::stoul(t.substr(t.rfind('-') + 1))) + 1;
}

std::string temp_name(const std::string& target, pid_t pid) {
  return "." + target + ".tmp-" + std::to_string(pid);
}
std::string temp_name(const std::string& target, pid_t pid, unsigned n) {
  return temp_name(target, pid) + "-" + std::to_string(n);
}

// A process id that is no longer running: a child that exited and was reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return child;
}

bool is_running(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

bool is_named_pipe(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

}  // namespace

TEST_SUITE("data.save_targets") {
  TEST_CASE("a FIFO at the temporary's name, old or new, does not hang a save") {
    for (const Kind& kind : kinds()) {
      CAPTURE(kind.name);
      const fs::path dir = testing::fresh_folder("data.save_targets", "fifo");
      const std::string target = "corpus.file", path = (dir / target).string();
      // In a child, whose PID names the temporaries, with an alarm as the hang guard: opening a
      // FIFO for writing waits for a reader that never comes.
      const pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        ::alarm(60);
        const unsigned n = next_counter(dir);
        for (const std::string& name :
             {temp_name(target, ::getpid()), temp_name(target, ::getpid(), n),
              temp_name(target, ::getpid(), n + 1)})
          if (::mkfifo((dir / name).c_str(), 0600) != 0) ::_exit(3);
        try {
          kind.save(path);
        } catch (...) {
          ::_exit(1);
        }
        ::_exit(0);
      }
      int status = 0;
      REQUIRE(::waitpid(child, &status, 0) == child);
      CHECK_MESSAGE(!WIFSIGNALED(status), "the save hung (killed by signal ", WTERMSIG(status),
                    ")");
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
      CHECK(kind.saved(path));
      // The FIFOs are left as they were (a running process's names), nothing else is there.
      CHECK(is_named_pipe(dir / temp_name(target, child)));
      std::size_t fifos = 0, files = 0;
      for (const auto& e : fs::directory_iterator(dir))
        (is_named_pipe(e.path()) ? fifos : files) += 1;
      CHECK(fifos == 3);
      CHECK(files == 1);
    }
  }

  TEST_CASE("a symbolic link at the temporary's name is not followed") {
    for (const Kind& kind : kinds()) {
      CAPTURE(kind.name);
      const fs::path dir = testing::fresh_folder("data.save_targets", "link");
      const std::string target = "corpus.file", path = (dir / target).string();
      testing::write_file(dir / "victim", "not yours");
      const unsigned n = next_counter(dir);
      for (const std::string& name :
           {temp_name(target, ::getpid()), temp_name(target, ::getpid(), n)})
        fs::create_symlink("victim", dir / name);
      kind.save(path);
      CHECK(testing::bytes_of(dir / "victim") == "not yours");
      CHECK(!fs::is_symlink(dir / target));
      CHECK(kind.saved(path));
      CHECK(fs::is_symlink(dir / temp_name(target, ::getpid(), n)));  // left as it was
    }
  }

  TEST_CASE("a save removes the temporaries a dead process left, and keeps a running one's") {
    for (const Kind& kind : kinds()) {
      CAPTURE(kind.name);
      const fs::path dir = testing::fresh_folder("data.save_targets", "stale");
      const std::string target = "corpus.file", path = (dir / target).string();
      const pid_t dead = dead_pid(), running = ::getppid();
      const std::string stale = temp_name(target, dead, 0), live = temp_name(target, running, 0);
      testing::write_file(dir / stale, "left by a killed save");
      testing::write_file(dir / live, "a save in progress");
      if (is_running(dead)) {
        MESSAGE("skipped: the system gave a dead child's PID to a new process at once");
        continue;
      }
      kind.save(path);
      CHECK(kind.saved(path));
      CHECK(!fs::exists(dir / stale));
      CHECK(testing::bytes_of(dir / live) == "a save in progress");
    }
  }

  TEST_CASE("a file name of 253 bytes saves, and leaves no temporary") {
    for (const Kind& kind : kinds()) {
      CAPTURE(kind.name);
      const fs::path dir = testing::fresh_folder("data.save_targets", "long_name");
      const std::string target = std::string(247, 'n') + ".model", path = (dir / target).string();
      REQUIRE(target.size() == 253);
      kind.save(path);
      CHECK(kind.saved(path));
      kind.save(path);  // and replaces itself
      CHECK(kind.saved(path));
      std::vector<std::string> names;
      for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
      CHECK(names == std::vector<std::string>{target});
    }
  }

  TEST_CASE("a save through a symbolic link replaces a file of its kind, never another") {
    for (const Kind& kind : kinds()) {
      CAPTURE(kind.name);
      const fs::path dir = testing::fresh_folder("data.save_targets", "target_link");
      kind.save((dir / "real").string());
      fs::create_symlink("real", dir / "link");
      kind.save((dir / "link").string());
      CHECK(fs::is_symlink(dir / "link"));
      CHECK(kind.saved((dir / "real").string()));
      testing::write_file(dir / "notes.txt", "my notes");
      fs::create_symlink("notes.txt", dir / "to_notes");
      CHECK_THROWS_WITH_AS(kind.save((dir / "to_notes").string()),
                           doctest::Contains("cannot replace the file: it is a symbolic link to"),
                           DataError);
      CHECK(testing::bytes_of(dir / "notes.txt") == "my notes");
    }
  }
}  // TEST_SUITE
