// tests/io/test_save_targets.cpp: what a save may touch. A path that exists and is not a regular
// file (a FIFO, a socket, a folder, a device such as /dev/full) is refused with IoError and left
// as it was, nothing written; a write error (a full disk, a file-size limit) is reported, never
// "saved", and leaves no temporary even when the exception ends the program; a replaced file
// keeps its permission bits and, as root, its owner and group; a symbolic link is followed to
// the file it names when that is empty or of the format written, which is replaced, the link
// staying, and refused otherwise;
// a save removes the temporaries earlier saves of the same path left when their process died,
// and nothing else.
#include <doctest/doctest.h>

#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <tapegrad/io/crc32c.hpp>
#include <tapegrad/tapegrad.hpp>

#include "scratch.hpp"

using namespace tapegrad;
using namespace tapegrad::io;
using tapegrad::testing::folder_listing;
using tapegrad::testing::read_bytes;
using tapegrad::testing::scratch_dir;
using tapegrad::testing::write_bytes;

namespace fs = std::filesystem;

namespace {
struct stat status_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st;
}

// The same inode, type, device number and permissions: the path was left as it was.
bool unchanged(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_mode == b.st_mode &&
         a.st_rdev == b.st_rdev;
}

// The IoError a save to `path` throws (the test fails when it succeeds).
CheckpointError save_refusal(const std::string& path) {
  nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
  try {
    save(model, path);
  } catch (const CheckpointError& e) {
    return e;
  }
  FAIL("saved to " << path);
  return CheckpointError("", "");
}

// Whether any temporary of a save to `name` is in `dir`.
bool has_temporary(const fs::path& dir, const std::string& name) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("." + name + ".tmp-", 0) == 0) return true;
  return false;
}
// A process id that is no longer running: a child that exited and was reaped. (The system could
// give it to a new process at once; callers check with is_running before relying on it.)
pid_t dead_pid() {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return child;
}

bool is_running(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// Saves a 160 KB model to `path` in a child process, on a thread of its own so that no handler
// anywhere catches the exception: as in a program whose main does not catch, the failed save ends
// in std::terminate, which does not unwind the stack (no destructor runs). Returns the child's
// wait status. `limit`: a file-size limit in bytes for the child, or 0 for none.
int save_without_catching(const std::string& path, rlim_t limit) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // no test framework's report from the child
    ::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead of killing the process
    if (limit != 0) {
      rlimit small{};
      ::getrlimit(RLIMIT_FSIZE, &small);
      small.rlim_cur = limit;
      if (::setrlimit(RLIMIT_FSIZE, &small) != 0) ::_exit(3);
    }
    nn::Linear big(nn::LinearOptions(200, 200), std::make_shared<Generator>(1));
    std::thread([&] { save(big, path); }).join();
    ::_exit(0);  // saved
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return status;
}

std::string temp_name(const std::string& target, pid_t pid, int n) {
  return "." + target + ".tmp-" + std::to_string(pid) + "-" + std::to_string(n);
}
}  // namespace

TEST_SUITE("io.save_targets") {
  TEST_CASE(
      "a FIFO, a socket and a folder are refused with IoError, left as they were, nothing "
      "written") {
    const auto dir = scratch_dir("targets_special");
    const std::string fifo = (dir / "fifo").string(), sock = (dir / "sock").string(),
                      folder = (dir / "folder").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(sock.size() < sizeof addr.sun_path);
    std::strcpy(addr.sun_path, sock.c_str());
    REQUIRE(::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    fs::create_directory(folder);
    write_bytes(fs::path(folder) / "inside", "kept");
    struct Case {
      std::string path, phrase;
    };
    for (const Case& c :
         {Case{fifo, "cannot replace the file: it is a FIFO (named pipe), not a regular file"},
          Case{sock, "cannot replace the file: it is a socket, not a regular file"},
          Case{folder, "cannot replace the file: Is a directory"}}) {
      CAPTURE(c.path);
      const struct stat before = status_of(c.path);
      const CheckpointError e = save_refusal(c.path);
      CHECK(e.kind == "IoError");
      const std::string what = e.what();
      CHECK_MESSAGE(what.find("save_safetensors: '" + c.path + "': " + c.phrase) == 0, what);
      CHECK_MESSAGE(
          what.find("a save replaces regular files only, and wrote nothing") != std::string::npos,
          what);
      CHECK(unchanged(before, status_of(c.path)));
      CHECK_THROWS_AS(write_file_atomic(c.path, "x"), CheckpointError);
      CHECK_THROWS_AS(save_npy(c.path, Tensor(Array{1.f})), CheckpointError);
      CHECK(unchanged(before, status_of(c.path)));
    }
    CHECK(read_bytes(fs::path(folder) / "inside") == "kept");
    CHECK(folder_listing(dir) == std::vector<std::string>{"fifo", "folder", "sock"});
    ::close(s);
  }

  TEST_CASE("/dev/full is refused and left a device, and nothing is written in /dev") {
    // The same check as for the FIFO above; if that one failed, do not try a real device.
    const auto dir = scratch_dir("targets_dev_guard");
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    REQUIRE(save_refusal((dir / "fifo").string()).kind == "IoError");
    struct stat st {};
    if (::lstat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) {
      MESSAGE("skipped: this system has no /dev/full");
      return;
    }
    const CheckpointError e = save_refusal("/dev/full");
    CHECK(e.kind == "IoError");
    CHECK_MESSAGE(
        std::string(e.what()).find(
            "'/dev/full': cannot replace the file: it is a character device") != std::string::npos,
        e.what());
    CHECK(unchanged(st, status_of("/dev/full")));
    CHECK_FALSE(has_temporary("/dev", "full"));
    // Through a symbolic link to it: the same refusal, and the link stays.
    fs::create_symlink("/dev/full", dir / "link");
    const CheckpointError via = save_refusal((dir / "link").string());
    CHECK_MESSAGE(
        std::string(via.what())
                .find("it is a symbolic link to '/dev/full', which is a character device, not a "
                      "regular file") != std::string::npos,
        via.what());
    CHECK(fs::is_symlink(dir / "link"));
    CHECK(unchanged(st, status_of("/dev/full")));
  }

  TEST_CASE("a write error is reported, never saved: a full file system, a file-size limit") {
    const auto dir = scratch_dir("targets_write_error");
    // A 64 KiB file system of its own, in a mount namespace of a child process (so the mount goes
    // away with it), when the system allows it (root with CAP_SYS_ADMIN); the file-size limit below
    // is tried everywhere.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("tapegrad-test", dir.c_str(), "tmpfs", 0, "size=64k") != 0)
        ::_exit(77);
      const std::string path = (dir / "model.safetensors").string();
      write_bytes(path, "the old checkpoint");
      nn::Linear big(nn::LinearOptions(200, 200), std::make_shared<Generator>(1));  // 160 KB
      try {
        save(big, path);
        ::_exit(1);  // "saved" on a full disk
      } catch (const CheckpointError& e) {
        const bool ok =
            e.kind == "IoError" &&
            std::string(e.what()).find("No space left on device") != std::string::npos &&
            read_bytes(path) == "the old checkpoint" && folder_listing(dir).size() == 1;
        ::_exit(ok ? 0 : 2);
      }
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
      MESSAGE("skipped the full file system: cannot mount a tmpfs here (needs CAP_SYS_ADMIN)");
    else
      CHECK_MESSAGE(WEXITSTATUS(status) == 0,
                    "a save onto a full tmpfs: status "
                        << WEXITSTATUS(status)
                        << " (1: reported saved, 2: wrong error or files changed)");

    // A file-size limit makes write() fail with EFBIG after 4 KiB, midway through the tensors.
    const std::string path = (dir / "model.safetensors").string();
    write_bytes(path, "the old checkpoint");
    nn::Linear big(nn::LinearOptions(200, 200), std::make_shared<Generator>(1));
    rlimit old_limit{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    rlimit small = old_limit;
    small.rlim_cur = 4096;
    const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::string error;
    try {
      save(big, path);
    } catch (const CheckpointError& e) {
      error = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    ::signal(SIGXFSZ, old_handler);
    CHECK_MESSAGE(error.find("save_safetensors: '" + path + "': cannot write: File too large") == 0,
                  error);
    CHECK(read_bytes(path) == "the old checkpoint");
    CHECK(folder_listing(dir) == std::vector<std::string>{"model.safetensors"});
  }

  TEST_CASE(
      "a failed save removes its temporary before it throws: none is left even when the "
      "exception ends the program") {
    const auto dir = scratch_dir("targets_uncaught");
    const std::string path = (dir / "model.safetensors").string();
    write_bytes(path, "the old checkpoint");
    const int status = save_without_catching(path, 4096);
    REQUIRE_MESSAGE(WIFSIGNALED(status), "the save did not fail: status " << status);
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK(read_bytes(path) == "the old checkpoint");
    CHECK(folder_listing(dir) == std::vector<std::string>{"model.safetensors"});

    // The same on a full file system (a 64 KiB tmpfs in a mount namespace, where root may make one).
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("tapegrad-test", dir.c_str(), "tmpfs", 0, "size=64k") != 0)
        ::_exit(77);
      write_bytes(path, "the old checkpoint");
      const int s = save_without_catching(path, 0);
      ::_exit(WIFSIGNALED(s) && WTERMSIG(s) == SIGABRT &&
                      read_bytes(path) == "the old checkpoint" &&
                      folder_listing(dir) == std::vector<std::string>{"model.safetensors"}
                  ? 0
                  : 2);
    }
    int full = 0;
    REQUIRE(::waitpid(child, &full, 0) == child);
    REQUIRE(WIFEXITED(full));
    if (WEXITSTATUS(full) == 77)
      MESSAGE("skipped the full file system: cannot mount a tmpfs here (needs CAP_SYS_ADMIN)");
    else
      CHECK_MESSAGE(WEXITSTATUS(full) == 0,
                    "an uncaught save onto a full tmpfs left a temporary or changed the old file");
  }

  TEST_CASE("a replaced file keeps its permission bits, and as root its owner and group") {
    const auto dir = scratch_dir("targets_mode");
    const std::string path = (dir / "model.safetensors").string();
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
    for (const mode_t mode : {0600, 0640, 0604, 0444, 0755}) {
      CAPTURE(mode);
      write_bytes(path, "old");
      REQUIRE(::chmod(path.c_str(), mode) == 0);
      save(model, path);
      CHECK((status_of(path).st_mode & 07777) == mode);
      CHECK(read_bytes(path) != "old");
    }
    // A new file gets 0666 less the umask, as any file the process creates.
    fs::remove(path);
    const mode_t old_umask = ::umask(027);
    save(model, path);
    ::umask(old_umask);
    CHECK((status_of(path).st_mode & 07777) == 0640);

    if (::geteuid() != 0) {
      MESSAGE("skipped the owner and group: only root may give a file to another user");
      return;
    }
    REQUIRE(::chown(path.c_str(), 4321, 8765) == 0);
    REQUIRE(::chmod(path.c_str(), 0600) == 0);
    save(model, path);
    const struct stat st = status_of(path);
    CHECK(st.st_uid == 4321u);
    CHECK(st.st_gid == 8765u);
    CHECK((st.st_mode & 07777) == 0600);
  }

  TEST_CASE(
      "a symbolic link is followed to the checkpoint it names, which is replaced, the link "
      "staying") {
    const auto dir = scratch_dir("targets_symlink");
    fs::create_directories(dir / "real");
    const std::string target = (dir / "real" / "model.safetensors").string();
    save(nn::Linear(nn::LinearOptions(3, 2), std::make_shared<Generator>(7)), target);
    REQUIRE(::chmod(target.c_str(), 0600) == 0);
    fs::create_symlink("real/model.safetensors", dir / "link");  // relative, as people make them
    fs::create_symlink(dir / "link", dir / "link_to_link");
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1)),
        other(nn::LinearOptions(3, 2));
    save(model, (dir / "link_to_link").string());
    CHECK(fs::is_symlink(dir / "link"));
    CHECK(fs::is_symlink(dir / "link_to_link"));
    CHECK(fs::read_symlink(dir / "link") == "real/model.safetensors");
    CHECK((status_of(target).st_mode & 07777) == 0600);
    load(other, (dir / "link").string());
    CHECK(nn::diff_state_dicts(model.state_dict(), other.state_dict()).identical());
    CHECK(folder_listing(dir) == std::vector<std::string>{"link", "link_to_link", "real"});
    CHECK(folder_listing(dir / "real") == std::vector<std::string>{"model.safetensors"});

    // A link to nothing is refused, and nothing is created where it points.
    fs::create_symlink("real/missing.safetensors", dir / "dangling");
    const CheckpointError e = save_refusal((dir / "dangling").string());
    CHECK_MESSAGE(
        std::string(e.what()).find("it is a symbolic link to nothing") != std::string::npos,
        e.what());
    CHECK_FALSE(fs::exists(dir / "real" / "missing.safetensors"));
    CHECK(fs::is_symlink(dir / "dangling"));
    // A link to a folder is refused too.
    fs::create_directory_symlink("real", dir / "to_folder");
    CHECK_MESSAGE(
        std::string(save_refusal((dir / "to_folder").string()).what()).find("which is a folder") !=
            std::string::npos,
        "");
    CHECK(folder_listing(dir / "real") == std::vector<std::string>{"model.safetensors"});
  }

  TEST_CASE(
      "through a symbolic link, a save replaces only an empty file or one of its own format, and "
      "refuses any other, writing nothing") {
    const auto dir = scratch_dir("targets_symlink_kind");
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
    write_bytes(dir / "real.txt", "something else");
    fs::create_symlink("real.txt", dir / "last.safetensors");
    const CheckpointError e = save_refusal((dir / "last.safetensors").string());
    CHECK(e.kind == "IoError");
    CHECK_MESSAGE(
        std::string(e.what()).find(
            "cannot replace the file: it is a symbolic link to '" + (dir / "real.txt").string() +
            "', which is not a safetensors file; a save through a link replaces only a "
            "safetensors file or an empty file there, and wrote nothing") != std::string::npos,
        e.what());
    CHECK(read_bytes(dir / "real.txt") == "something else");
    CHECK(fs::is_symlink(dir / "last.safetensors"));
    CHECK(folder_listing(dir) == std::vector<std::string>{"last.safetensors", "real.txt"});
    // A .npy file is not a checkpoint, nor a checkpoint a .npy file.
    save_npy((dir / "pe.npy").string(), Tensor(Array{1.f, 2.f}));
    fs::create_symlink("pe.npy", dir / "to_npy");
    CHECK(
        std::string(save_refusal((dir / "to_npy").string()).what()).find("is not a safetensors") !=
        std::string::npos);
    fs::create_symlink("model.safetensors", dir / "to_model.npy");
    save(model, (dir / "model.safetensors").string());
    CHECK_THROWS_WITH_AS(save_npy((dir / "to_model.npy").string(), Tensor(Array{1.f})),
                         doctest::Contains("which is not a .npy file"), CheckpointError);
    // Bytes of no known format replace only an empty file.
    CHECK_THROWS_WITH_AS(write_file_atomic((dir / "last.safetensors").string(), "notes"),
                         doctest::Contains("which is not empty"), CheckpointError);
    CHECK(read_bytes(dir / "real.txt") == "something else");
    // Allowed: a file of the same format (what an earlier save through the link wrote), and an
    // empty file (nothing to lose).
    save_npy((dir / "to_npy").string(), Tensor(Array{3.f}));
    CHECK(load_npy((dir / "pe.npy").string()) == Array{3.f});
    write_bytes(dir / "empty", "");
    fs::create_symlink("empty", dir / "to_empty");
    save(model, (dir / "to_empty").string());
    save(model, (dir / "to_empty").string());  // now a checkpoint: replaced again
    CHECK(fs::is_symlink(dir / "to_empty"));
    CHECK(load_safetensors((dir / "empty").string()).has_tensor("weight"));
  }

  TEST_CASE(
      "a save removes the temporaries of the same path left by dead processes, and keeps live "
      "ones") {
    const auto dir = scratch_dir("targets_stale");
    const std::string target = "model.safetensors", path = (dir / target).string();
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
    save(model, path);
    // A process killed in the middle of its saves leaves its temporary, as large as the file.
    const pid_t writer = ::fork();
    REQUIRE(writer >= 0);
    if (writer == 0) {
      SafetensorsFile big;
      big.add("w", Array(xt::zeros<float>({std::size_t{1} << 20})));
      for (;;) save_safetensors(path, big);
    }
    for (int i = 0; i < 200 && !has_temporary(dir, target); ++i) ::usleep(5000);
    ::kill(writer, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(writer, &status, 0) == writer);
    const pid_t dead = dead_pid();
    write_bytes(dir / temp_name(target, dead, 0), "left by a dead save");
    write_bytes(dir / temp_name(target, dead, 17), "another");
    // Live processes: this one, and a child kept alive until the end.
    const pid_t sleeper = ::fork();
    REQUIRE(sleeper >= 0);
    if (sleeper == 0) {
      ::pause();
      ::_exit(0);
    }
    const std::string mine = temp_name(target, ::getpid(), 999),
                      sleepers = temp_name(target, sleeper, 0);
    write_bytes(dir / mine, "a save of this process in progress");
    write_bytes(dir / sleepers, "a save of a live process in progress");
    if (is_running(writer) || is_running(dead)) {
      MESSAGE("skipped: the system gave a dead child's PID to a new process at once");
    } else {
      save(model, path);
      CHECK(folder_listing(dir) == std::vector<std::string>{mine, sleepers, target});
    }
    ::kill(sleeper, SIGKILL);
    REQUIRE(::waitpid(sleeper, &status, 0) == sleeper);
    if (!is_running(sleeper)) {  // now dead: the next save removes its temporary
      save(model, path);
      CHECK(folder_listing(dir) == std::vector<std::string>{mine, target});
    }
  }

  TEST_CASE("files that merely look like stale temporaries are never touched") {
    const auto dir = scratch_dir("targets_lookalikes");
    const std::string target = "model.safetensors";
    const pid_t dead = dead_pid();
    const std::string d = std::to_string(dead);
    const std::vector<std::string> others = {
        temp_name("other.safetensors", dead, 0),  // another target's
        temp_name("model.safetensors.bak", dead, 0),
        temp_name("model", dead, 0),
        "model.safetensors.tmp-" + d + "-0",  // not hidden
        ".model.safetensors.tmp-" + d,        // no counter
        ".model.safetensors.tmp-" + d + "-",
        ".model.safetensors.tmp-" + d + "-0x",
        ".model.safetensors.tmp-" + d + "-0.bak",
        ".model.safetensors.tmp-+" + d + "-0",
        ".model.safetensors.tmp-0" + d + "-0",  // a leading zero: not the writer's form
        ".model.safetensors.tmp--1-0",
        ".model.safetensors.tmp-0-0",
        ".model.safetensors.tmp-99999999999999999999-0",
        ".model.safetensors.tmp-" + d + "-1-2",
        ".Model.safetensors.tmp-" + d + "-0",
    };
    for (const std::string& name : others) write_bytes(dir / name, "keep me");
    // Named exactly like a stale temporary, but a folder and a symbolic link: not the writer's files.
    fs::create_directory(dir / temp_name(target, dead, 1));
    write_bytes(dir / "linked", "keep me too");
    fs::create_symlink("linked", dir / temp_name(target, dead, 2));
    if (is_running(dead)) {
      MESSAGE("skipped: the system gave a dead child's PID to a new process at once");
      return;
    }
    const auto before = folder_listing(dir);
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
    save(model, (dir / target).string());
    auto expected = before;
    expected.push_back(target);
    std::sort(expected.begin(), expected.end());
    CHECK(folder_listing(dir) == expected);
    for (const std::string& name : others) CHECK(read_bytes(dir / name) == "keep me");
    CHECK(read_bytes(dir / "linked") == "keep me too");
  }

  TEST_CASE(
      "the temporaries of a long file name are told apart from those of another with the same "
      "start") {
    const auto dir = scratch_dir("targets_long_names");
    const std::string a = std::string(220, 'a') + ".safetensors",
                      b = std::string(220, 'a') + "_other.safetensors";
    const auto prefix = [](const std::string& name) {  // the writer's rule for names over 200 bytes
      const std::string p = atomic_temporary_prefix(name);
      CHECK(p.starts_with("." + name.substr(0, 180) + "~"));
      return p;
    };
    CHECK(prefix(a) != prefix(b));
    const pid_t dead = dead_pid();
    const std::string stale_a = prefix(a) + std::to_string(dead) + "-0",
                      stale_b = prefix(b) + std::to_string(dead) + "-0";
    REQUIRE(stale_a.size() < 255);
    write_bytes(dir / stale_a, "a's");
    write_bytes(dir / stale_b, "b's");
    if (is_running(dead)) {
      MESSAGE("skipped: the system gave a dead child's PID to a new process at once");
      return;
    }
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
    save(model, (dir / a).string());
    auto expected = std::vector<std::string>{a, stale_b};
    std::sort(expected.begin(), expected.end());
    CHECK(folder_listing(dir) == expected);
  }

}  // TEST_SUITE
