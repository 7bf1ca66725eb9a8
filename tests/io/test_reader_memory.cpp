// tests/io/test_reader_memory.cpp: the reader looks at a file's 8-byte length and header before
// any of its data (a 2 GiB file with a bad header costs its header, not 2 GiB), reads each tensor
// straight into the array it is returned in, and take_float hands that array on without a copy.
// (The figures for a 200 MB checkpoint come from bench/checkpoint_memory, a program.)
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "scratch.hpp"

using namespace tapegrad;
using namespace tapegrad::io;
using tapegrad::testing::scratch_dir;

namespace {
// A sparse file of `size` bytes (no disk space) that starts with `head`.
void sparse_file(const std::string& path, const std::string& head, std::uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
  ::close(fd);
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

double status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1));
  return -1;
}

// Runs load_safetensors(path) in a child process and returns how much its peak resident memory
// rose (in MB), or -1 when the kernel's peak cannot be reset here; fails unless it was refused
// with `kind`.
double peak_growth_mb(const std::string& path, const std::string& kind) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    double growth = -1;
    const int fd = ::open("/proc/self/clear_refs", O_WRONLY);
    const bool reset = fd >= 0 && ::write(fd, "5", 1) == 1;
    if (fd >= 0) ::close(fd);
    const double before = status_kb("VmRSS");
    std::string got;
    try {
      load_safetensors(path);
    } catch (const CheckpointError& e) {
      got = e.kind;
    }
    if (reset) growth = (status_kb("VmHWM") - before) / 1024.0;
    const std::string report = got + " " + std::to_string(growth);
    (void)!::write(pipe_fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char buffer[256] = {};
  (void)!::read(pipe_fds[0], buffer, sizeof buffer - 1);
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  std::istringstream in(buffer);
  std::string got;
  double growth = -1;
  in >> got >> growth;
  CHECK(got == kind);
  return growth;
}
}  // namespace

TEST_SUITE("io.reader_memory") {
  TEST_CASE("a 2 GiB file with a bad header or layout is refused having read only its header") {
    const auto dir = scratch_dir("reader_memory");
    const std::uint64_t size = std::uint64_t{1} << 31;
    const std::string too_large = (dir / "too_large.safetensors").string();
    sparse_file(too_large, le64(size - 8), size);  // a 2 GiB header: over the 100 MB limit
    const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    const std::string incomplete = (dir / "incomplete.safetensors").string();
    sparse_file(incomplete, le64(header.size()) + header,
                size);  // 8 bytes of data promised, 2 GiB there
    for (const auto& [path, kind] :
         {std::pair<std::string, std::string>{too_large, "HeaderTooLarge"},
          {incomplete, "MetadataIncompleteBuffer"}}) {
      CAPTURE(kind);
      const double growth = peak_growth_mb(path, kind);
      if (growth < 0) {
        MESSAGE("skipped the memory figure: /proc/self/clear_refs cannot reset the peak here");
        continue;
      }
      MESSAGE(kind << ": peak resident memory rose by " << growth << " MB for a 2048 MB file");
      CHECK(growth < 64);
    }
  }

  TEST_CASE(
      "tensors are read into the arrays they are returned in, and take_float moves them out") {
    const auto dir = scratch_dir("reader_take");
    SafetensorsFile f;
    f.add("w", Array{{1.f, 2.f}, {3.f, 4.f}});
    f.add("step", IndexArray(std::int64_t{3}));
    f.add_raw("h", Dtype::F16, {2}, {0x00, 0x3C, 0x00, 0xC0});  // 1, -2
    f.add("tied", Array{5.f});
    f.add_alias("tied_too", "tied");
    save_safetensors((dir / "f.safetensors").string(), f);
    SafetensorsFile g = load_safetensors((dir / "f.safetensors").string());
    const void* stored = g.record("w").bytes().data();
    const Array w = g.take_float("w");
    CHECK(static_cast<const void*>(w.data()) == stored);  // the same buffer: no copy
    CHECK(w == Array{{1.f, 2.f}, {3.f, 4.f}});
    CHECK_THROWS_WITH_AS(
        g.to_float("w"),
        doctest::Contains("expected tensor 'w' to hold data, got none: take_float moved "
                          "its values out"),
        ValueError);
    CHECK_THROWS_AS(g.record("w").bytes(), ValueError);
    CHECK_THROWS_AS(serialize_safetensors(g), ValueError);
    CHECK(g.take_float("h") == Array{1.f, -2.f});  // converted, then freed
    CHECK_THROWS_AS(g.take_float("h"), ValueError);
    CHECK_THROWS_WITH_AS(g.take_float("step"), doctest::Contains("to be a float tensor"),
                         TypeError);
    CHECK(g.to_int64("step")() == 3);               // untouched by the refusal
    CHECK(g.take_float("tied_too") == Array{5.f});  // through an alias: the tensor
    CHECK_THROWS_AS(g.to_float("tied"), ValueError);
  }

}  // TEST_SUITE
