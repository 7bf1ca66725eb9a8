// src/io/atomic_file.hpp (private to the library)
//
// AtomicFile replaces a file so that a crash at any moment leaves the old file or the new one,
// whole (POSIX): the bytes go to a temporary file in the same folder, which commit() fsyncs,
// renames over the target and makes durable by fsyncing the folder. Until commit() succeeds the
// target is untouched; a failed write or commit removes the temporary before it throws, and an
// AtomicFile destroyed without commit removes it too. Writes are streamed, so a checkpoint never has to exist whole in memory.
//
//     AtomicFile out(path, "save_safetensors");
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
//     format being written (safetensors or .npy, told by the first bytes of each); a link to any
//     other file is refused, nothing written. (Replacing by rename gives the path a new inode:
//     other hard links to the old file keep the old content, as with any atomic save.)
//   * its temporary ".NAME.tmp-PID-N" beside the target (NAME the target's file name, PID this
//     process, N a counter), and the temporaries of the same target that earlier saves left when
//     their process died (the PID is no longer running), which it removes first. Nothing else.
//
// Every failure is a CheckpointError (kind "IoError") naming `where`, the path and the reason.
#pragma once

#include <string>
#include <string_view>

namespace tapegrad::io {

class AtomicFile {
 public:
  /// Checks the target, removes stale temporaries of it and creates this save's temporary.
  /// `first_bytes`: the start of what will be written (at least 16 bytes when there are), which
  /// tells its format for a target behind a symbolic link. Throws ValueError for a path that names
  /// a folder ("dir/"), CheckpointError (IoError) for a target that is not a regular file, for a
  /// link to a file of another format, and when the temporary cannot be created.
  AtomicFile(const std::string& path, std::string_view where, std::string_view first_bytes);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// Appends bytes to the temporary file.
  void write(std::string_view bytes);
  /// Flushes the temporary to disk and renames it over the target.
  void commit();

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

}  // namespace tapegrad::io
