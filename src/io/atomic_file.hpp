// src/io/atomic_file.hpp (private to the library)
//
// AtomicFile replaces a file so that a crash at any moment leaves the old file or the new one,
// whole (POSIX): the bytes go to a temporary file in the same folder, which commit() fsyncs,
// renames over the target and makes durable by fsyncing the folder. Until commit() succeeds the
// target is untouched; an AtomicFile destroyed without commit (an exception) removes its
// temporary. Writes are streamed, so a checkpoint never has to exist whole in memory.
//
//     AtomicFile out(path, "save_safetensors");
//     out.write(header);
//     for (...) out.write(tensor_bytes);
//     out.commit();
//
// Every failure is a CheckpointError (kind "IoError") naming `where`, the path and the reason.
#pragma once

#include <string>
#include <string_view>

namespace tapegrad::io {

class AtomicFile {
 public:
  /// Creates the temporary file next to `path`. Throws ValueError for a path that names a
  /// folder ("dir/"), CheckpointError (IoError) when the temporary cannot be created.
  AtomicFile(const std::string& path, std::string_view where);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// Appends bytes to the temporary file.
  void write(std::string_view bytes);
  /// Flushes the temporary to disk and renames it over the target.
  void commit();

 private:
  std::string where_, target_, dir_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace tapegrad::io
