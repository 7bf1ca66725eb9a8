// include/tapegrad/data/token_file.hpp: token files for corpora too large to hold in memory: the
// ids a tokenizer gave, written once by TokenFileWriter and read by TokenFile a window at a time
// (pread), so training reads windows of a multi-GB corpus in constant memory.
//
// The layout (version 2): a 64-byte header, then the ids. All numbers are little-endian.
//
//     offset  size  field
//          0    16  magic "tapegrad-tokens\n"
//         16     4  uint32 version, 2
//         20     4  uint32 bytes_per_id, 2 (uint16 ids) or 4 (uint32 ids)
//         24     8  uint64 vocab_size: every id is below it
//         32     8  uint64 count: the number of ids
//         40    16  the tokenizer's name ("gpt2", "bpe", "char"): 1 to 15 printable ASCII bytes,
//                   padded with NUL
//         56     8  uint64 the tokenizer's fingerprint (Tokenizer::fingerprint)
//         64        count ids of bytes_per_id bytes each; the file ends there
//
// Version 1, which earlier builds wrote and TokenFile still reads, has no fingerprint: its name
// field is the 24 bytes from offset 40 (1 to 23 bytes, NUL-padded).
//
// After its 64 bytes the file is exactly nanoGPT's train.bin (np.memmap(path, dtype=np.uint16,
// mode="r", offset=64) reads it), or its uint32 counterpart when the vocabulary needs more than
// 16 bits. The header says what the bare ids cannot: which tokenizer made them (its kind, its
// size and, from version 2, a hash of its merges and vocabulary, so that a BPE of the same size
// trained on other text is told apart), the id width, and how many ids a whole file holds, so a
// truncated file is refused rather than trained on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/core/atomic_file.hpp"
#include "tapegrad/data/tokenizer.hpp"

namespace tapegrad::data {

/// Writes a token file through the library's atomic writer (tapegrad/core/atomic_file.hpp): the
/// ids go to a temporary beside the target, created exclusively (a FIFO, a file or a symbolic link
/// already at its name is never opened), and close() renames it onto the target, so a crash never
/// leaves a half-written file under the final name. A target that is a symbolic link is replaced
/// through the link only when it leads to a token file or an empty file. Every failure to write
/// is a DataError naming the file and the reason.
class TokenFileWriter {
 public:
  /// The ids of `tokenizer`: its name(), vocab_size() and fingerprint() go into the header.
  TokenFileWriter(const std::string& path, const Tokenizer& tokenizer);
  /// The same from the three fields, for a program that holds a BytePairEncoding or a
  /// GPT2Tokenizer itself (tokenizer_fingerprint() gives their fingerprint). Ids are written as
  /// uint16 when vocab_size <= 65536, else as uint32. ValueError for vocab_size 0 or above 2^32,
  /// or a tokenizer name that is empty, over 15 bytes or not printable ASCII; DataError naming the
  /// file when its temporary cannot be created (a missing or read-only folder: the reason is
  /// given) or the target may not be replaced (a folder, a FIFO, a device; a link to another kind
  /// of file).
  TokenFileWriter(const std::string& path, std::uint64_t vocab_size,
                  const std::string& tokenizer_name, std::uint64_t fingerprint);
  /// Without close(), removes the temporary: `path` is left as it was. Never throws.
  ~TokenFileWriter();
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  /// Appends n ids. ValueError naming the first id >= vocab_size and its position in the file;
  /// a refused call writes none of its ids. DataError when the disk refuses the bytes (the
  /// temporary is then removed, and the writer closed).
  void append(const std::uint32_t* ids, std::size_t n);
  void append(const std::vector<std::uint32_t>& ids) { append(ids.data(), ids.size()); }

  /// Writes the count into the header, flushes, fsyncs and renames the temporary onto `path`.
  /// DataError naming the file when any step fails (the temporary is then removed); ValueError
  /// when called twice.
  void close();

  std::uint64_t count() const { return count_; }  ///< ids appended so far
  unsigned bytes_per_id() const { return bytes_per_id_; }

 private:
  void flush_buffer();

  std::string path_;
  std::uint64_t vocab_size_, count_ = 0;
  unsigned bytes_per_id_;
  std::optional<AtomicFile> out_;      ///< the temporary; empty once closed or failed
  std::vector<unsigned char> buffer_;  ///< bytes not yet written
};

/// A token file open for reading. open() reads the header and checks the size but does not scan
/// the ids, so opening a 4 GB file is instant: the trainer calls check_ids() once before training.
///
/// The ids are read with pread(), a window at a time, never through a memory map: a file that
/// shrinks under a map kills the process (SIGBUS) at the first lost page, while a short read is an
/// error that can name the file. Each read is followed by an fstat() of the open file: a size or
/// modification time other than open() saw means the file was truncated or rewritten in place
/// while training read it, a DataError naming the file and what happened; an id outside the
/// vocabulary is blamed on the file the same way. A file replaced by rename (what TokenFileWriter
/// and tokenize do) is not an error: the open file is the old one, read whole and unchanged.
class TokenFile {
 public:
  static constexpr std::size_t kHeaderBytes = 64;
  static constexpr std::uint32_t kVersion = 2;          ///< what TokenFileWriter writes
  static constexpr std::size_t kMaxTokenizerName = 15;  ///< bytes; version 1 allowed 23

  /// Opens `path`. DataError naming the file unless it is a regular file (a FIFO, a device or a
  /// folder is refused without blocking) whose header has the magic, version 1 or 2, bytes_per_id
  /// 2 or 4, a vocab_size of 1 to 2^32, a NUL-padded printable ASCII name, and whose size is
  /// exactly 64 + count * bytes_per_id (a truncated or overlong file is refused naming both sizes).
  static TokenFile open(const std::string& path);
  ~TokenFile();
  TokenFile(TokenFile&& other) noexcept;
  TokenFile& operator=(TokenFile&& other) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  std::size_t size() const { return count_; }  ///< the number of ids
  std::uint64_t vocab_size() const { return vocab_size_; }
  unsigned bytes_per_id() const { return bytes_per_id_; }
  const std::string& tokenizer() const { return tokenizer_; }
  /// The tokenizer's fingerprint (Tokenizer::fingerprint); none in a version 1 file.
  std::optional<std::uint64_t> fingerprint() const { return fingerprint_; }
  std::uint32_t version() const { return version_; }
  const std::string& path() const { return path_; }

  /// Id i. IndexError unless i < size(); DataError as window().
  std::uint32_t operator[](std::size_t i) const;
  /// Ids [start, start + length) into out[0, length), as the int64 a GPT's batches hold.
  /// IndexError when the window runs past the end. DataError naming the file when it shrank or
  /// was written to since open(), or holds an id outside its vocabulary there.
  void window(std::size_t start, std::size_t length, std::int64_t* out) const;
  /// Reads every id: DataError naming the first id >= vocab_size() and its index. The ids are not
  /// checked by open(), so call this once before training on a file.
  void check_ids() const;

 private:
  TokenFile() = default;
  /// Reads `bytes` bytes at `offset` into `to`: DataError naming the file when it has shrunk.
  void read_at(std::uint64_t offset, std::size_t bytes, unsigned char* to) const;
  /// DataError naming the file when its size or modification time differ from open()'s.
  void check_unchanged() const;

  std::string path_, tokenizer_;
  int fd_ = -1;
  std::uint64_t file_bytes_ = 0;                 ///< the size open() saw
  std::int64_t mtime_sec_ = 0, mtime_nsec_ = 0;  ///< the modification time open() saw
  std::uint64_t vocab_size_ = 0;
  std::size_t count_ = 0;
  unsigned bytes_per_id_ = 0;
  std::uint32_t version_ = 0;
  std::optional<std::uint64_t> fingerprint_;
};

/// Checks that `file` holds ids of `tokenizer` (described in messages as `tokenizer_flag`, e.g.
/// "--tokenizer bpe-model:m.bpe"): DataError naming the file and both tokenizers (kind, size and
/// fingerprint in hex) unless the kinds, the sizes and, for a version 2 file, the fingerprints are
/// equal. A version 1 file, which predates fingerprints, can be checked by kind and size only: the
/// result is then a one-line warning that says so (to print), else "".
std::string check_token_file_tokenizer(const TokenFile& file, const Tokenizer& tokenizer,
                                       const std::string& tokenizer_flag);

}  // namespace tapegrad::data
