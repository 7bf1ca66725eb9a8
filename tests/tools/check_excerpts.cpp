// tests/tools/check_excerpts.cpp: every C++ excerpt in the documentation is the source's, line for
// line, so that none can drift from the code it shows. Run by CTest (test
// "docs.excerpts_match_the_source") as
//   check_excerpts ROOT FILE.md...
// A ```cpp block's first line names the file it comes from, as a comment: `// src/ops/layer_norm.cpp`
// (words after the path are free). Its other lines must stand in that file in the same order,
// each equal to one of the file's lines once the white space is folded; blank lines are passed
// over, and a line `// ...` stands for lines left out. A block that is not taken from a file is a
// whole program or test kept in the repository under tests/docs/ or examples/, and names that file.
// It prints one line per block and exits 1 when one does not match, naming its first line that
// does not, and 2 when it cannot read a file.
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

// "" when every line of the block after the first stands in source in order; else the first
// line that does not.
std::string first_mismatch(const Block& b, const std::vector<std::string>& source) {
  std::size_t at = 0;  // the next source line that may match
  for (std::size_t i = 1; i < b.lines.size(); ++i) {
    const std::string want = fold(b.lines[i]);
    if (want.empty() || want.rfind("// ...", 0) == 0) continue;
    while (at < source.size() && fold(source[at]) != want) ++at;
    if (at == source.size()) return b.lines[i];
    ++at;
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
          std::cout << where << ": not in " << path << " (in this order): '" << fold(miss) << "'\n";
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
