// src/io/file_identity.cpp: which files are the same file (io/file_identity.hpp).
#include "tapegrad/io/file_identity.hpp"

#include <sys/stat.h>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::io {

std::optional<FileIdentity> identity_of(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;  // follows links
  return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

bool same_file(const std::string& a, const std::string& b) {
  const std::optional<FileIdentity> x = identity_of(a), y = identity_of(b);
  return x && y && *x == *y;
}

void check_outputs_spare_inputs(const std::vector<NamedFile>& outputs,
                                const std::vector<NamedFile>& inputs) {
  for (const NamedFile& out : outputs) {
    const std::optional<FileIdentity> o = identity_of(out.path);
    if (!o) continue;
    for (const NamedFile& in : inputs)
      if (identity_of(in.path) == o)
        fail<ValueError>(out.flag, ": '", out.path, "' is the file ", in.flag, " reads ('", in.path,
                         "'); an output never replaces an input, not even with --force: ", "give ",
                         out.flag, " another name");
  }
}

}  // namespace tapegrad::io
