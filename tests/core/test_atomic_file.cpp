// tests/core/test_atomic_file.cpp: tapegrad::AtomicFile, the one writer of every output file, on
// what may already be in its folder: a FIFO at its temporary's name is never opened (a save
// cannot hang on it), a symbolic link there is never followed, the temporaries of dead processes
// are removed and a running process's kept, and a file name of 253 bytes (NAME_MAX allows 255)
// saves. write_at patches bytes already written (a header's count, known only at the end).
// The formats the writers above it give (safetensors, token files, BPE models) are tested beside
// those writers; this file needs tapegrad_core alone.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include <tapegrad/core/atomic_file.hpp>
#include <tapegrad/core/errors.hpp>

#include "../test_files.hpp"

using namespace tapegrad;

namespace {

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  return testing::fresh_folder("core.atomic_file", name);
}

// The counter the next temporary of this process will carry (a probe's shows the counter now).
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

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_SUITE("core.atomic_file") {
  TEST_CASE("write_at overwrites bytes already written, and write goes on at the end") {
    const fs::path dir = fresh_folder("write_at");
    const std::string path = (dir / "f").string();
    AtomicFile out(path, "test");
    out.write("abc");
    out.write_at(0, "X");
    out.write("def");
    out.write_at(4, "EF");
    CHECK_FALSE(fs::exists(path));  // nothing at the target before commit
    out.commit();
    CHECK(testing::bytes_of(path) == "XbcdEF");
    CHECK(listing(dir) == std::vector<std::string>{"f"});
  }

  TEST_CASE("a FIFO at the temporary's name, old or new, does not hang a save") {
    const fs::path dir = fresh_folder("fifo");
    const std::string target = "out.bin", path = (dir / target).string();
    const pid_t child = ::fork();  // its PID names the temporaries; an alarm guards against a hang
    REQUIRE(child >= 0);
    if (child == 0) {
      ::alarm(60);
      const unsigned n = next_counter(dir);
      for (const std::string& name :
           {temp_name(target, ::getpid()), temp_name(target, ::getpid(), n),
            temp_name(target, ::getpid(), n + 1)})
        if (::mkfifo((dir / name).c_str(), 0600) != 0) ::_exit(3);
      try {
        AtomicFile::write_whole(path, "saved", "test");
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK_MESSAGE(!WIFSIGNALED(status), "the save hung (killed by signal ", WTERMSIG(status), ")");
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(testing::bytes_of(path) == "saved");
    CHECK(is_named_pipe(dir / temp_name(target, child)));
    CHECK(listing(dir).size() == 4);  // the target and the three FIFOs, left as they were
  }

  TEST_CASE("a symbolic link at the temporary's name is not followed") {
    const fs::path dir = fresh_folder("link");
    const std::string target = "out.bin", path = (dir / target).string();
    testing::write_file(dir / "victim", "not yours");
    const unsigned n = next_counter(dir);
    fs::create_symlink("victim", dir / temp_name(target, ::getpid(), n));
    fs::create_symlink("victim", dir / temp_name(target, ::getpid()));
    AtomicFile::write_whole(path, "saved", "test");
    CHECK(testing::bytes_of(dir / "victim") == "not yours");
    CHECK(!fs::is_symlink(path));
    CHECK(testing::bytes_of(path) == "saved");
    CHECK(fs::is_symlink(dir / temp_name(target, ::getpid(), n)));
  }

  TEST_CASE("a save removes the temporaries a dead process left, and keeps a running one's") {
    const fs::path dir = fresh_folder("stale");
    const std::string target = "out.bin", path = (dir / target).string();
    const pid_t dead = dead_pid(), running = ::getppid();
    const std::string stale = temp_name(target, dead, 3), live = temp_name(target, running, 0);
    testing::write_file(dir / stale, "left by a killed save");
    testing::write_file(dir / live, "a save in progress");
    if (is_running(dead)) {
      MESSAGE("skipped: the system gave a dead child's PID to a new process at once");
      return;
    }
    AtomicFile::write_whole(path, "saved", "test");
    CHECK(listing(dir) == std::vector<std::string>{live, target});
  }

  TEST_CASE("a file name of 253 bytes saves, and leaves no temporary") {
    const fs::path dir = fresh_folder("long_name");
    const std::string target = std::string(249, 'n') + ".bin", path = (dir / target).string();
    REQUIRE(target.size() == 253);
    {
      AtomicFile out(path, "test");
      CHECK(fs::path(out.temporary()).filename().string().size() <= 255);
      out.write("saved");
      out.commit();
    }
    AtomicFile::write_whole(path, "again", "test");
    CHECK(testing::bytes_of(path) == "again");
    CHECK(listing(dir) == std::vector<std::string>{target});
  }
}  // TEST_SUITE
