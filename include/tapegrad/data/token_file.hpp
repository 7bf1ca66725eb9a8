// include/tapegrad/data/token_file.hpp: token files for corpora too large to hold in memory: the
// ids a tokenizer gave, written once by TokenFileWriter and read by TokenFile through a read-only
// memory map, so training reads windows of a multi-GB corpus in constant memory.
//
// The layout: a 64-byte header, then the ids. All numbers are little-endian.
//
//     offset  size  field
//          0    16  magic "tapegrad-tokens\n"
//         16     4  uint32 version, 1
//         20     4  uint32 bytes_per_id, 2 (uint16 ids) or 4 (uint32 ids)
//         24     8  uint64 vocab_size: every id is below it
//         32     8  uint64 count: the number of ids
//         40    24  the tokenizer's name ("gpt2", "bpe", "char"): 1 to 23 printable ASCII bytes,
//                   padded with NUL
//         64        count ids of bytes_per_id bytes each; the file ends there
//
// After its 64 bytes the file is exactly nanoGPT's train.bin (np.memmap(path, dtype=np.uint16,
// mode="r", offset=64) reads it), or its uint32 counterpart when the vocabulary needs more than
// 16 bits. The header says what the bare ids cannot: which tokenizer made them, the id width, and
// how many ids a whole file holds, so a truncated file is refused rather than trained on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tapegrad::data {

/// Writes a token file to a temporary in the target's folder (".<name>.tmp-<pid>") and renames it
/// onto the target in close(), so a crash never leaves a half-written file under the final name.
class TokenFileWriter {
 public:
  /// Ids are written as uint16 when vocab_size <= 65536, else as uint32. ValueError for vocab_size
  /// 0 or above 2^32, or a tokenizer name that is empty, over 23 bytes or not printable ASCII;
  /// DataError naming the temporary when it cannot be created.
  TokenFileWriter(const std::string& path, std::uint64_t vocab_size,
                  const std::string& tokenizer_name);
  /// Without close(), removes the temporary: `path` is left as it was. Never throws.
  ~TokenFileWriter();
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  /// Appends n ids. ValueError naming the first id >= vocab_size and its position in the file;
  /// a refused call writes none of its ids. DataError when the disk refuses the bytes.
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
  /// Closes and removes the temporary. Never throws.
  void abandon() noexcept;

  std::string path_, temp_;
  std::uint64_t vocab_size_, count_ = 0;
  unsigned bytes_per_id_;
  int fd_ = -1;                        ///< the temporary's; -1 once closed or abandoned
  std::vector<unsigned char> buffer_;  ///< bytes not yet written
};

/// A token file mapped read-only. open() reads the header and checks the size but does not scan
/// the ids, so opening a 4 GB file is instant: the trainer calls check_ids() once before training.
/// TokenFileWriter replaces a file by renaming a new one onto it, which leaves an open map reading
/// the old file; a file truncated in place under a map would fault (SIGBUS) on the lost ids.
class TokenFile {
 public:
  static constexpr std::size_t kHeaderBytes = 64;
  static constexpr std::uint32_t kVersion = 1;
  static constexpr std::size_t kMaxTokenizerName = 23;  ///< bytes; the field holds a NUL after

  /// Maps `path`. DataError naming the file unless it is a regular file (a FIFO, a device or a
  /// folder is refused without blocking) whose header has the magic, version 1, bytes_per_id 2 or
  /// 4, a vocab_size of 1 to 2^32, a NUL-padded printable ASCII name, and whose size is exactly
  /// 64 + count * bytes_per_id (a truncated or overlong file is refused naming both sizes).
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
  const std::string& path() const { return path_; }

  /// Id i. IndexError unless i < size().
  std::uint32_t operator[](std::size_t i) const;
  /// Ids [start, start + length) into out[0, length), as the int64 a GPT's batches hold.
  /// IndexError when the window runs past the end.
  void window(std::size_t start, std::size_t length, std::int64_t* out) const;
  /// Reads every id: DataError naming the first id >= vocab_size() and its index. The ids are not
  /// checked by open() or window(), so call this once before training on a file.
  void check_ids() const;

 private:
  TokenFile() = default;

  std::string path_, tokenizer_;
  const unsigned char* map_ = nullptr;  ///< the whole file, header included
  std::size_t map_bytes_ = 0;
  std::uint64_t vocab_size_ = 0;
  std::size_t count_ = 0;
  unsigned bytes_per_id_ = 0;
};

}  // namespace tapegrad::data
