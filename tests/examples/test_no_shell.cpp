// tests/examples/test_no_shell.cpp: no program of the project builds a shell command line. A path
// or a text that a user gives, pasted into a command for /bin/sh, becomes shell syntax
// (`--out "x'; touch INJECTED; '"` once ran touch); programs start other programs with an
// argument vector (src/train/child_process.cpp). This reads every source file of the
// library and the examples and names each line that calls the shell, or could.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The ways to reach a shell from C and C++: std::system and system(), popen(), wordexp() (which
// runs command substitutions), and a shell named outright.
const std::regex kShell(R"((^|[^A-Za-z0-9_])(system|popen|wordexp)\s*\(|sh -c|/bin/sh|"sh")");

// "path:line: text" for every line of the sources under `dirs` that matches kShell.
std::vector<std::string> shell_calls(const fs::path& root, const std::vector<std::string>& dirs) {
  std::vector<std::string> found;
  for (const std::string& dir : dirs)
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() ||
          (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".c" && ext != ".cc"))
        continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        if (std::regex_search(line, kShell))
          found.push_back(fs::relative(entry.path(), root).string() + ":" + std::to_string(n) +
                          ": " + line);
    }
  return found;
}

}  // namespace

TEST_SUITE("examples.sources") {
  TEST_CASE("no source of the library or the examples calls the shell") {
    const std::vector<std::string> found =
        shell_calls(TAPEGRAD_SOURCE_DIR, {"src", "include", "examples"});
    for (const std::string& line : found) FAIL_CHECK("a shell command: ", line);
    CHECK(found.empty());
  }

  TEST_CASE("the check finds each way to the shell") {
    const fs::path dir = fs::path(TAPEGRAD_BINARY_DIR) / "test_output" / "no_shell" / "src";
    fs::remove_all(dir.parent_path());
    fs::create_directories(dir);
    std::ofstream(dir / "bad.cpp") << "int a = std::system(cmd.c_str());\n"
                                      "FILE* p = popen(cmd, \"r\");\n"
                                      "int ok = filesystem(1) + subsystem (2);\n"
                                      "execl(\"/bin/sh\", \"sh\", \"-c\", cmd, nullptr);\n"
                                      "const char* c = \"cd x && sh -c y\";\n"
                                      "wordexp (text, &words, 0);\n";
    const std::vector<std::string> found = shell_calls(dir.parent_path(), {"src"});
    CHECK(found == std::vector<std::string>{
                       "src/bad.cpp:1: int a = std::system(cmd.c_str());",
                       "src/bad.cpp:2: FILE* p = popen(cmd, \"r\");",
                       "src/bad.cpp:4: execl(\"/bin/sh\", \"sh\", \"-c\", cmd, nullptr);",
                       "src/bad.cpp:5: const char* c = \"cd x && sh -c y\";",
                       "src/bad.cpp:6: wordexp (text, &words, 0);"});
  }
}
