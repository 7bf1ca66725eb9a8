// include/tapegrad/io/file_identity.hpp
//
// Which files are the same file. Names cannot tell: "m.bpe", "./m.bpe", "/tmp/run/m.bpe", a
// symbolic link to it and a hard link to it all name one file. The system can: a file is its
// device and inode, whatever path leads to it. A program uses this to make sure that no output
// it writes replaces one of its inputs (`tokenize --bpe m.bpe --text t.txt --out m.bpe` would
// otherwise replace the model with its own token file), with or without --force.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tapegrad::io {

/// A file's device and inode, after following symbolic links.
struct FileIdentity {
  std::uint64_t device = 0, inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

/// The identity of the file at `path`, or nullopt when nothing is there (or a link leads nowhere).
std::optional<FileIdentity> identity_of(const std::string& path);

/// Whether `a` and `b` are one file (both exist, same device and inode).
bool same_file(const std::string& a, const std::string& b);

/// A file a program reads or writes, and the flag that named it ("--bpe", "--out").
struct NamedFile {
  std::string flag, path;
};

/// ValueError when an output is one of the inputs, naming both flags and paths: an output never
/// replaces an input. Outputs that do not exist yet cannot be an input and pass.
void check_outputs_spare_inputs(const std::vector<NamedFile>& outputs,
                                const std::vector<NamedFile>& inputs);

}  // namespace tapegrad::io
