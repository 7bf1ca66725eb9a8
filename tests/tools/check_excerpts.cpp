// tests/tools/check_excerpts.cpp: every C++ excerpt in the documentation is the source's, line for
// line, so that none can drift from the code it shows. Run by CTest (test
// "docs.excerpts_match_the_source") as
//   check_excerpts ROOT FILE.md...
// A ```cpp block's first line names the file it comes from, as a comment: `// src/ops/layer_norm.cpp`
// (words after the path are free). Its other lines must stand in that file, each equal to the
// file's line once the white space is folded: a line `// ...` stands for lines left out, and the
// lines between two of them are consecutive lines of the file, in the same order (blank lines are
// passed over). A block that is not taken from a file is a
// whole program or test kept in the repository under tests/docs/ or examples/, and names that file.
// It prints one line per block and exits 1 when one does not match, naming its first line that
// does not, and 2 when it cannot read a file.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string fold(const std::string& line) {  // white space folded to single spaces, trimmed
  std::string out;
  bool space = false;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Block {
  std::size_t line;                // the ```cpp line, 1-based
  std::vector<std::string> lines;  // the code, without the fences
};

std::vector<Block> cpp_blocks(const std::vector<std::string>& md) {
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < md.size(); ++i) {
    if (fold(md[i]) != "```cpp") continue;
    Block b{i + 1, {}};
    for (++i; i < md.size() && fold(md[i]) != "```"; ++i) b.lines.push_back(md[i]);
    blocks.push_back(std::move(b));
  }
  return blocks;
}

// The block's lines after the first, cut at its `// ...` lines into runs; blank lines dropped.
std::vector<std::vector<std::string>> runs_of(const Block& b) {
  std::vector<std::vector<std::string>> runs(1);
  for (std::size_t i = 1; i < b.lines.size(); ++i) {
    const std::string line = fold(b.lines[i]);
    if (line.rfind("// ...", 0) == 0) {
      if (!runs.back().empty()) runs.emplace_back();
    } else if (!line.empty()) {
      runs.back().push_back(line);
    }
  }
  if (runs.back().empty()) runs.pop_back();
  return runs;
}

// "" when each run of the block stands in source as consecutive lines (blank lines of the source
// passed over), the runs in the block's order; else the first line of a run that does not follow
// the lines before it in any place of the source where they stand. A run must be contiguous so
// that an excerpt cannot leave lines out without saying so with `// ...`.
std::string first_mismatch(const Block& b, const std::vector<std::string>& source) {
  std::vector<std::string> code;  // the source's non-blank lines, folded
  for (const std::string& line : source)
    if (!fold(line).empty()) code.push_back(fold(line));
  std::size_t at = 0;  // the first source line the next run may start at
  for (const std::vector<std::string>& run : runs_of(b)) {
    std::size_t best = 0;  // the longest prefix of the run found consecutively
    bool found = false;
    for (std::size_t start = at; start < code.size() && !found; ++start) {
      std::size_t n = 0;
      while (n < run.size() && start + n < code.size() && code[start + n] == run[n]) ++n;
      best = std::max(best, n);
      if (n == run.size()) {
        found = true;
        at = start + n;
      }
    }
    if (!found) return run[best];
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: check_excerpts ROOT FILE.md...\n";
    return 2;
  }
  const std::string root = argv[1];
  int bad = 0, checked = 0;
  try {
    for (int a = 2; a < argc; ++a) {
      const std::string md_path = argv[a];
      for (const Block& b : cpp_blocks(read_lines(root + "/" + md_path))) {
        ++checked;
        const std::string where = md_path + ":" + std::to_string(b.line);
        std::istringstream first(b.lines.empty() ? "" : fold(b.lines[0]));
        std::string slashes, path;
        first >> slashes >> path;
        while (!path.empty() && (path.back() == ':' || path.back() == ',')) path.pop_back();
        if (slashes != "//" || path.empty()) {
          std::cout << where << ": the block's first line must name its file (// src/...), got '"
                    << (b.lines.empty() ? "" : b.lines[0]) << "'\n";
          ++bad;
          continue;
        }
        std::vector<std::string> source;
        try {
          source = read_lines(root + "/" + path);
        } catch (const std::exception&) {
          std::cout << where << ": names " << path << ", which is not in the repository\n";
          ++bad;
          continue;
        }
        const std::string miss = first_mismatch(b, source);
        if (miss.empty()) {
          std::cout << where << ": ok, " << b.lines.size() << " lines of " << path << "\n";
        } else {
          std::cout << where << ": not in " << path
                    << " (in order, and consecutive between // ... lines): '" << fold(miss)
                    << "'\n";
          ++bad;
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "check_excerpts: " << e.what() << "\n";
    return 2;
  }
  std::cout << checked << " excerpts checked, " << bad << " drifted from their source\n";
  return bad == 0 ? 0 : 1;
}
