// src/data/token_file.cpp: token files (data/token_file.hpp): the writer, which builds the file in
// a temporary and renames it into place, and the reader, which checks the header and the size and
// maps the ids read-only.
#include "tapegrad/data/token_file.hpp"

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::data {

namespace {

constexpr std::string_view kMagic("tapegrad-tokens\n");
static_assert(kMagic.size() == 16);
// Where the header's fields start (the table in data/token_file.hpp).
constexpr std::size_t kVersionAt = 16, kWidthAt = 20, kVocabAt = 24, kCountAt = 32, kNameAt = 40;
constexpr std::size_t kNameField = 24;
static_assert(kNameAt + kNameField == TokenFile::kHeaderBytes);
constexpr std::uint64_t kMaxVocabSize = std::uint64_t(1) << 32;  // ids are at most uint32
/// The writer hands the kernel 1 MiB at a time: few system calls, constant memory.
constexpr std::size_t kBufferBytes = std::size_t(1) << 20;

// Numbers are assembled byte by byte, so the file is little-endian whatever the machine's byte
// order (on a little-endian machine the compiler turns each loop into one load or store).
template <class T>
T load_le(const unsigned char* p) {
  T v = 0;
  for (std::size_t k = 0; k < sizeof(T); ++k) v = T(v | T(T(p[k]) << (8 * k)));
  return v;
}

void store_le(unsigned char* p, std::uint64_t v, std::size_t bytes) {
  for (std::size_t k = 0; k < bytes; ++k) p[k] = static_cast<unsigned char>(v >> (8 * k));
}

std::uint32_t id_at(const unsigned char* p, unsigned bytes_per_id) {
  return bytes_per_id == 2 ? load_le<std::uint16_t>(p) : load_le<std::uint32_t>(p);
}

/// The index of the first of n ids at p that is >= vocab_size, or n.
template <class T>
std::size_t first_outside(const unsigned char* p, std::size_t n, std::uint64_t vocab_size) {
  for (std::size_t i = 0; i < n; ++i)
    if (load_le<T>(p + i * sizeof(T)) >= vocab_size) return i;
  return n;
}

/// Why `name` cannot be a tokenizer name, or nullptr if it can.
const char* name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > TokenFile::kMaxTokenizerName)
    return "is longer than the 23 bytes the header holds";
  for (const char c : name)
    if (c < 0x20 || c > 0x7e) return "holds a byte that is not printable ASCII";
  return nullptr;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

// ---- the writer ---------------------------------------------------------------------------------

TokenFileWriter::TokenFileWriter(const std::string& path, std::uint64_t vocab_size,
                                 const std::string& tokenizer_name)
    : path_(path), vocab_size_(vocab_size), bytes_per_id_(vocab_size <= 65536 ? 2 : 4) {
  check<ValueError>(vocab_size >= 1 && vocab_size <= kMaxVocabSize,
                    "TokenFileWriter: expected vocab_size in [1, ", kMaxVocabSize, "], got ",
                    vocab_size, "; ids are stored as at most uint32");
  if (const char* why = name_problem(tokenizer_name))
    fail<ValueError>("TokenFileWriter: the tokenizer name \"", tokenizer_name.substr(0, 40), "\" ",
                     why);
  // In the target's folder, so rename() cannot cross file systems; named by the process, so two
  // processes writing one file do not share a temporary.
  const std::filesystem::path target(path);
  temp_ = (target.parent_path() /
           ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid())))
              .string();
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail<DataError>("TokenFileWriter: cannot write ", temp_, ": ", errno_text());
  // The header goes first with count 0, so a temporary left by a crash is refused by open().
  buffer_.reserve(kBufferBytes + 4);
  buffer_.resize(TokenFile::kHeaderBytes, 0);
  std::memcpy(buffer_.data(), kMagic.data(), kMagic.size());
  store_le(&buffer_[kVersionAt], TokenFile::kVersion, 4);
  store_le(&buffer_[kWidthAt], bytes_per_id_, 4);
  store_le(&buffer_[kVocabAt], vocab_size_, 8);
  std::memcpy(&buffer_[kNameAt], tokenizer_name.data(), tokenizer_name.size());
}

TokenFileWriter::~TokenFileWriter() { abandon(); }

void TokenFileWriter::abandon() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_.c_str());
  fd_ = -1;
}

void TokenFileWriter::flush_buffer() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      abandon();  // some ids may be missing: the file cannot be finished
      fail<DataError>("TokenFileWriter: cannot write ", temp_, ": ", why);
    }
    done += std::size_t(n);
  }
  buffer_.clear();
}

void TokenFileWriter::append(const std::uint32_t* ids, std::size_t n) {
  check<ValueError>(fd_ >= 0, "TokenFileWriter::append: ", path_,
                    " is closed, or a write to it failed");
  // Every id is checked before any is written, so a refused call leaves the file as it was.
  for (std::size_t i = 0; i < n; ++i)
    if (ids[i] >= vocab_size_)
      fail<ValueError>("TokenFileWriter::append: ", path_, ": expected ids in [0, ", vocab_size_,
                       "), got ", ids[i], " at position ", count_ + i, " of the file");
  for (std::size_t i = 0; i < n; ++i) {
    if (buffer_.size() >= kBufferBytes) flush_buffer();
    for (unsigned k = 0; k < bytes_per_id_; ++k)
      buffer_.push_back(static_cast<unsigned char>(ids[i] >> (8 * k)));
  }
  count_ += n;
}

void TokenFileWriter::close() {
  check<ValueError>(fd_ >= 0, "TokenFileWriter::close: ", path_,
                    " is already closed, or a write to it failed");
  flush_buffer();
  const auto refuse = [&](const char* what, const std::string& file) {
    const std::string why = errno_text();
    abandon();
    fail<DataError>("TokenFileWriter::close: cannot ", what, " ", file, ": ", why);
  };
  unsigned char count[8];
  store_le(count, count_, 8);
  if (::pwrite(fd_, count, 8, kCountAt) != 8) refuse("write", temp_);
  // The bytes reach the disk before the rename publishes them: after a crash, `path_` holds
  // either its old file or the whole new one.
  if (::fsync(fd_) != 0) refuse("write", temp_);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    ::unlink(temp_.c_str());
    fail<DataError>("TokenFileWriter::close: cannot write ", temp_, ": ", errno_text());
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(temp_.c_str());
    fail<DataError>("TokenFileWriter::close: cannot replace ", path_, ": ", why);
  }
  // The new name lives in the folder: sync it too, so the rename survives a power cut. Best
  // effort: a file system that cannot sync a folder still has the file.
  const std::string folder = std::filesystem::path(path_).parent_path().string();
  const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

// ---- the reader ---------------------------------------------------------------------------------

TokenFile TokenFile::open(const std::string& path) {
  constexpr const char* kWho = "TokenFile::open: ";
  // stat() first: opening a FIFO for reading would wait for a writer, a device may never end.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail<DataError>(kWho, "cannot read ", path, ": ", errno_text());
  if (!S_ISREG(st.st_mode))
    fail<DataError>(kWho, path, " is not a regular file (a folder, a FIFO or a device)");
  // O_NONBLOCK and a second fstat(): the path may have been replaced by a FIFO since stat().
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail<DataError>(kWho, "cannot read ", path, ": ", errno_text());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }  // the map keeps the file open on its own
  } closer{fd};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    fail<DataError>(kWho, path, " is not a regular file (a folder, a FIFO or a device)");
  const auto size = std::uint64_t(st.st_size);
  if (size < kHeaderBytes)
    fail<DataError>(kWho, path, ": expected at least the ", kHeaderBytes,
                    " bytes of the header, got ", size, " bytes");
  if (size > std::numeric_limits<std::size_t>::max())
    fail<DataError>(kWho, path, ": ", size, " bytes do not fit this machine's address space");

  void* map = ::mmap(nullptr, std::size_t(size), PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) fail<DataError>(kWho, "cannot map ", path, ": ", errno_text());
  ::madvise(map, std::size_t(size), MADV_RANDOM);  // training reads windows at random starts
  TokenFile f;  // owns the map from here: a refused header unmaps it
  f.path_ = path;
  f.map_ = static_cast<const unsigned char*>(map);
  f.map_bytes_ = std::size_t(size);

  const unsigned char* h = f.map_;
  if (std::memcmp(h, kMagic.data(), kMagic.size()) != 0)
    fail<DataError>(kWho, path, ": expected the magic \"tapegrad-tokens\\n\" in the first 16 ",
                    "bytes; this is not a token file, or a damaged one");
  const std::uint32_t version = load_le<std::uint32_t>(h + kVersionAt);
  if (version != kVersion)
    fail<DataError>(kWho, path, ": expected version ", kVersion, ", got ", version,
                    "; this build reads version 1 only");
  const std::uint32_t bytes_per_id = load_le<std::uint32_t>(h + kWidthAt);
  if (bytes_per_id != 2 && bytes_per_id != 4)
    fail<DataError>(kWho, path, ": expected bytes_per_id 2 or 4, got ", bytes_per_id);
  const std::uint64_t vocab_size = load_le<std::uint64_t>(h + kVocabAt);
  if (vocab_size < 1 || vocab_size > kMaxVocabSize)
    fail<DataError>(kWho, path, ": expected vocab_size in [1, ", kMaxVocabSize, "], got ",
                    vocab_size);
  const std::uint64_t count = load_le<std::uint64_t>(h + kCountAt);
  if (count > (std::numeric_limits<std::uint64_t>::max() - kHeaderBytes) / bytes_per_id)
    fail<DataError>(kWho, path, ": the header's count ", count, " is larger than any file");
  const std::uint64_t expected = kHeaderBytes + count * bytes_per_id;
  if (size != expected)
    fail<DataError>(kWho, path, ": expected ", expected, " bytes (64 + count ", count, " * ",
                    bytes_per_id, " bytes per id), got ", size, " bytes",
                    (size - kHeaderBytes) % bytes_per_id != 0
                        ? ", not a whole number of ids"
                        : "; the header's count disagrees with the size",
                    ": the file is truncated or damaged");

  const char* field = reinterpret_cast<const char*>(h + kNameAt);
  const std::string_view name(field, ::strnlen(field, kNameField));
  if (const char* why = name_problem(name))
    fail<DataError>(kWho, path, ": the tokenizer name in the header ", why);
  for (std::size_t k = name.size(); k < kNameField; ++k)
    if (field[k] != '\0')
      fail<DataError>(kWho, path, ": the tokenizer name field is not padded with NUL bytes");

  f.tokenizer_ = std::string(name);
  f.vocab_size_ = vocab_size;
  f.count_ = std::size_t(count);
  f.bytes_per_id_ = bytes_per_id;
  return f;
}

TokenFile::~TokenFile() {
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
}

TokenFile::TokenFile(TokenFile&& other) noexcept { *this = std::move(other); }

TokenFile& TokenFile::operator=(TokenFile&& other) noexcept {
  if (this == &other) return *this;
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
  path_ = std::move(other.path_);
  tokenizer_ = std::move(other.tokenizer_);
  map_ = std::exchange(other.map_, nullptr);
  map_bytes_ = std::exchange(other.map_bytes_, 0);
  vocab_size_ = std::exchange(other.vocab_size_, 0);
  count_ = std::exchange(other.count_, 0);
  bytes_per_id_ = std::exchange(other.bytes_per_id_, 0);
  return *this;
}

std::uint32_t TokenFile::operator[](std::size_t i) const {
  check<IndexError>(i < count_, "TokenFile: ", path_, ": expected an index in [0, ", count_,
                    "), got ", i);
  return id_at(map_ + kHeaderBytes + i * bytes_per_id_, bytes_per_id_);
}

void TokenFile::window(std::size_t start, std::size_t length, std::int64_t* out) const {
  check<IndexError>(start <= count_ && length <= count_ - start, "TokenFile::window: ", path_,
                    ": expected a window inside the ", count_, " ids, got ", length,
                    " ids from index ", start);
  const unsigned char* p = map_ + kHeaderBytes + start * bytes_per_id_;
  // Two loops rather than id_at() per id: each compiles to a plain widening copy.
  if (bytes_per_id_ == 2)
    for (std::size_t k = 0; k < length; ++k) out[k] = load_le<std::uint16_t>(p + 2 * k);
  else
    for (std::size_t k = 0; k < length; ++k) out[k] = load_le<std::uint32_t>(p + 4 * k);
}

void TokenFile::check_ids() const {
  // When the id width cannot hold an id outside the vocabulary, there is nothing to read.
  if (vocab_size_ >= (std::uint64_t(1) << (8 * bytes_per_id_))) return;
  // The file is read in stretches of 16 MiB, each given back to the kernel once read
  // (MADV_DONTNEED on a read-only file mapping drops the pages from this process, not the data):
  // checking a corpus of gigabytes must not leave it resident. The header and each stretch hold
  // whole ids (64 and 16 MiB are multiples of 4).
  constexpr std::size_t kStretch = std::size_t(16) << 20;
  const std::size_t end = kHeaderBytes + count_ * bytes_per_id_;
  for (std::size_t at = 0; at < end; at += kStretch) {
    const std::size_t from = std::max(at, kHeaderBytes), to = std::min(at + kStretch, end);
    const std::size_t first = (from - kHeaderBytes) / bytes_per_id_,
                      n = (to - from) / bytes_per_id_;
    const std::size_t i = bytes_per_id_ == 2
                              ? first_outside<std::uint16_t>(map_ + from, n, vocab_size_)
                              : first_outside<std::uint32_t>(map_ + from, n, vocab_size_);
    if (i < n)
      fail<DataError>("TokenFile::check_ids: ", path_, ": expected ids in [0, ", vocab_size_,
                      ") (the header's vocab_size), got ", (*this)[first + i], " at index ",
                      first + i, "; ids out of the vocabulary: refused before training");
    ::madvise(const_cast<unsigned char*>(map_) + at, to - at, MADV_DONTNEED);
  }
}

}  // namespace tapegrad::data
