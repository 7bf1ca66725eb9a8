// include/tapegrad/core/atomic_file.hpp
//
// The one writer of every file tapegrad and its programs produce: checkpoints, exports, token
// files, tokenizer models, the pictures and their data. A file is replaced so that a crash at any
// moment leaves the old file or the new one, whole (POSIX): the bytes go to a temporary file in
// the same folder, which commit() fsyncs, renames over the target and makes durable by fsyncing
// the folder. Until commit() succeeds the target is untouched; a failed write or commit removes
// the temporary before it throws, and an AtomicFile destroyed without commit removes it too.
// Writes are streamed, so a 500 MB checkpoint never has to exist whole in memory.
//
//     AtomicFile out(path, "save_safetensors", &kSafetensors);
//     out.write(header);
//     for (...) out.write(tensor_bytes);
//     out.commit();
//
// What a save may touch:
//   * the target: a new file, or an existing REGULAR file, which the new one replaces with its
//     permission bits and (when the process may, e.g. as root) its owner and group. Anything
//     else that exists at the path (a folder, a device such as /dev/null or /dev/full, a FIFO, a
//     socket) is refused before anything is written. A symbolic link is followed to the regular
//     file it names, which is replaced, the link staying, only when that file is empty or of the
//     format being written (the FileFormat given, told by the file's first bytes); a link to any
//     other file is refused, nothing written. (Replacing by rename gives the path a new inode:
//     other hard links to the old file keep the old content, as with any atomic save.)
//   * its temporary ".NAME.tmp-PID-N" beside the target (NAME the target's file name, cut so
//     that the whole stays within the 255 bytes a file name may have; PID this process; N a
//     counter). It is created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW): whatever already has
//     that name (a file, a symbolic link, a FIFO) is never opened, written or followed, and the
//     next name is tried.
//   * the temporaries of the same target that earlier saves left when their process died (the
//     PID is no longer running: a kill -9, a power cut), which it removes first. Nothing else.
//
// Every failure is a CheckpointError (kind "IoError") naming `where`, the path and the reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tapegrad {

/// A kind of file a save through a symbolic link may replace (see above): its name for messages
/// ("a safetensors file") and how to tell one from its first bytes (up to 16) and its size.
struct FileFormat {
  const char* name;
  bool (*matches)(std::string_view first_bytes, std::uint64_t size);
};

class AtomicFile {
 public:
  /// Checks the target, removes stale temporaries of it and creates this save's temporary.
  /// `format`: what is written, or null (then a link leads only to an empty file that may be
  /// replaced). Throws ValueError for a path that names a folder ("dir/"), CheckpointError
  /// (IoError) for a target that is not a regular file, a link to a file of another format, and
  /// when the temporary cannot be created (the folder is missing or read-only: the reason is
  /// given).
  AtomicFile(const std::string& path, std::string_view where, const FileFormat* format = nullptr);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// Appends bytes to the temporary file.
  void write(std::string_view bytes);
  /// Overwrites bytes already written, at `offset` (a header's count, known only at the end).
  void write_at(std::uint64_t offset, std::string_view bytes);
  /// Flushes the temporary to disk and renames it over the target.
  void commit();

  /// The whole file in one call: construct, write, commit.
  static void write_whole(const std::string& path, std::string_view bytes, std::string_view where,
                          const FileFormat* format = nullptr);

  const std::string& path() const { return path_; }
  /// The temporary's path while it exists (for tests and messages).
  const std::string& temporary() const { return temp_; }

 private:
  /// Closes and removes the temporary, then throws the IoError. The temporary goes before the
  /// exception does, not in the destructor: a program that lets the exception escape main ends in
  /// std::terminate without unwinding, and would leave a file as large as the checkpoint.
  [[noreturn]] void fail(std::string_view what, int err);

  std::string where_;
  std::string path_;    // as given, for messages
  std::string target_;  // the file replaced: path_, or where a symbolic link at path_ leads
  std::string dir_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// The name of the temporaries of a target named `name` ("model.safetensors"), up to the PID:
/// ".model.safetensors.tmp-". A name over 200 bytes is cut to 180 and followed by a hash of the
/// whole, so that the temporary's name stays within NAME_MAX (255).
std::string atomic_temporary_prefix(const std::string& name);

}  // namespace tapegrad
