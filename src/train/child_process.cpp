// src/train/child_process.cpp: starting a program without a shell (child_process.hpp).
#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace tapegrad::train::detail {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  const std::string folders = path ? path : "";
  for (std::size_t begin = 0; begin <= folders.size();) {
    std::size_t end = folders.find(':', begin);
    if (end == std::string::npos) end = folders.size();
    const std::filesystem::path candidate =
        std::filesystem::path(folders.substr(begin, end - begin)) / name;
    if (end > begin && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    begin = end + 1;
  }
  return "";
}

namespace {

/// A file descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

[[noreturn]] void fail_to_start(const std::string& program, const std::string& what, int err) {
  throw std::runtime_error("cannot run " + program + ": " + what + ": " + std::strerror(err));
}

/// `bytes` in a file in memory, its offset at 0: a standard input that ends.
int memory_file(const std::string& program, std::string_view bytes) {
  const int fd = ::memfd_create("standard input", MFD_CLOEXEC);
  if (fd < 0) fail_to_start(program, "memfd_create", errno);
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail_to_start(program, "writing its input", err);
    }
    done += std::size_t(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

}  // namespace

ProgramRun run_program(const std::vector<std::string>& argv, const std::string& cwd,
                       std::string_view input,
                       const std::function<void(std::string_view)>& output) {
  const std::string& program = argv.at(0);
  Fd in(memory_file(program, input));
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) fail_to_start(program, "pipe", errno);
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) fail_to_start(program, "pipe", errno);
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

  // In the child: the three standard streams (dup2 clears close-on-exec on the copies), the
  // folder; every other descriptor of ours is close-on-exec and does not reach the program.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_write.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.fd, STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // The program starts with the default signal actions: our Ctrl-C handler is not its own.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> words = argv;  // posix_spawn takes char* const[]
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int started =
      ::posix_spawn(&pid, program.c_str(), &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (started != 0) fail_to_start(program, "posix_spawn in '" + cwd + "'", started);
  in.reset();
  out_write.reset();  // the child holds the writing ends now: EOF comes when it ends
  err_write.reset();

  ProgramRun run;
  const auto wait_for_child = [&] {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) run.exit_status = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  };
  try {
    char buffer[65536];
    pollfd fds[2] = {{out_read.fd, POLLIN, 0}, {err_read.fd, POLLIN, 0}};
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;  // a signal (Ctrl-C) was handled: go on reading
        throw std::runtime_error(program + ": poll: " + std::strerror(errno));
      }
      for (pollfd& p : fds) {
        if (p.fd < 0 || p.revents == 0) continue;
        const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          p.fd = -1;  // end of the stream (poll ignores a negative descriptor)
          continue;
        }
        if (p.fd == out_read.fd)
          output(std::string_view(buffer, std::size_t(n)));
        else if (run.errors.size() < 65536)
          run.errors.append(buffer, std::size_t(n));
      }
    }
  } catch (...) {
    ::kill(pid, SIGKILL);
    wait_for_child();
    throw;
  }
  wait_for_child();
  return run;
}

}  // namespace tapegrad::train::detail
