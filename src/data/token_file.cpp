// src/data/token_file.cpp: token files (data/token_file.hpp): the writer, which builds the file in
// the atomic writer's temporary and renames it into place, the reader, which checks the header and
// the size and reads windows with pread(), checking the file did not change under it, and the
// check of a file against the tokenizer a run means to read it with.
#include "tapegrad/data/token_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_save.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/data/tokenizer.hpp"

namespace tapegrad::data {

namespace {

constexpr std::string_view kMagic("tapegrad-tokens\n");
static_assert(kMagic.size() == 16);
// Where the header's fields start (the table in data/token_file.hpp).
constexpr std::size_t kVersionAt = 16, kWidthAt = 20, kVocabAt = 24, kCountAt = 32, kNameAt = 40,
                      kFingerprintAt = 56;
constexpr std::size_t kNameFieldV1 = 24, kNameFieldV2 = 16;
static_assert(kNameAt + kNameFieldV1 == TokenFile::kHeaderBytes);
static_assert(kNameAt + kNameFieldV2 == kFingerprintAt &&
              kFingerprintAt + 8 == TokenFile::kHeaderBytes);
constexpr std::uint64_t kMaxVocabSize = std::uint64_t(1) << 32;  // ids are at most uint32
/// The writer hands the kernel 1 MiB at a time: few system calls, constant memory.
constexpr std::size_t kBufferBytes = std::size_t(1) << 20;

// A save through a symbolic link replaces only a token file (or an empty file) there.
bool is_token_file_start(std::string_view first_bytes, std::uint64_t) {
  return first_bytes.starts_with(kMagic);
}
constexpr FileFormat kTokenFileFormat{"a token file (\"tapegrad-tokens\")", is_token_file_start};

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

/// The index of the first of n ids at p that is >= vocab_size, or n.
template <class T>
std::size_t first_outside(const unsigned char* p, std::size_t n, std::uint64_t vocab_size) {
  for (std::size_t i = 0; i < n; ++i)
    if (load_le<T>(p + i * sizeof(T)) >= vocab_size) return i;
  return n;
}

/// Why `name` cannot be a tokenizer name of a field holding `max_bytes`, or nullptr if it can.
const char* name_problem(std::string_view name, std::size_t max_bytes) {
  if (name.empty()) return "is empty";
  if (name.size() > max_bytes)
    return max_bytes == TokenFile::kMaxTokenizerName
               ? "is longer than the 15 bytes the header holds"
               : "is longer than the 23 bytes the header holds";
  for (const char c : name)
    if (c < 0x20 || c > 0x7e) return "holds a byte that is not printable ASCII";
  return nullptr;
}

std::string errno_text() { return std::strerror(errno); }

/// 16 hex digits, as messages show a fingerprint.
std::string hex(std::uint64_t v) {
  char digits[17];
  for (int i = 15; i >= 0; --i, v >>= 4) digits[i] = "0123456789abcdef"[v & 15];
  digits[16] = '\0';
  return digits;
}

}  // namespace

// ---- the writer ---------------------------------------------------------------------------------

TokenFileWriter::TokenFileWriter(const std::string& path, const Tokenizer& tokenizer)
    : TokenFileWriter(path, std::uint64_t(tokenizer.vocab_size()), tokenizer.name(),
                      tokenizer.fingerprint()) {}

TokenFileWriter::TokenFileWriter(const std::string& path, std::uint64_t vocab_size,
                                 const std::string& tokenizer_name, std::uint64_t fingerprint)
    : path_(path), vocab_size_(vocab_size), bytes_per_id_(vocab_size <= 65536 ? 2 : 4) {
  check<ValueError>(vocab_size >= 1 && vocab_size <= kMaxVocabSize,
                    "TokenFileWriter: expected vocab_size in [1, ", kMaxVocabSize, "], got ",
                    vocab_size, "; ids are stored as at most uint32");
  if (const char* why = name_problem(tokenizer_name, TokenFile::kMaxTokenizerName))
    fail<ValueError>("TokenFileWriter: the tokenizer name \"", tokenizer_name.substr(0, 40), "\" ",
                     why);
  detail::as_data_error([&] { out_.emplace(path, "TokenFileWriter", &kTokenFileFormat); });
  // The header goes first with count 0 (the count is written last, in close()), so a temporary
  // left by a crash is refused by open().
  buffer_.reserve(kBufferBytes + 4);
  buffer_.resize(TokenFile::kHeaderBytes, 0);
  std::memcpy(buffer_.data(), kMagic.data(), kMagic.size());
  store_le(&buffer_[kVersionAt], TokenFile::kVersion, 4);
  store_le(&buffer_[kWidthAt], bytes_per_id_, 4);
  store_le(&buffer_[kVocabAt], vocab_size_, 8);
  std::memcpy(&buffer_[kNameAt], tokenizer_name.data(), tokenizer_name.size());
  store_le(&buffer_[kFingerprintAt], fingerprint, 8);
}

// The optional's AtomicFile removes its temporary when it goes without commit().
TokenFileWriter::~TokenFileWriter() = default;

void TokenFileWriter::flush_buffer() {
  try {
    detail::as_data_error([&] {
      out_->write(std::string_view(reinterpret_cast<const char*>(buffer_.data()), buffer_.size()));
    });
  } catch (...) {
    out_.reset();  // some ids may be missing: the file cannot be finished (its temporary is gone)
    throw;
  }
  buffer_.clear();
}

void TokenFileWriter::append(const std::uint32_t* ids, std::size_t n) {
  check<ValueError>(out_.has_value(), "TokenFileWriter::append: ", path_,
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
  check<ValueError>(out_.has_value(), "TokenFileWriter::close: ", path_,
                    " is already closed, or a write to it failed");
  flush_buffer();
  unsigned char count[8];
  store_le(count, count_, 8);
  try {
    // The bytes reach the disk before the rename publishes them (commit): after a crash, `path_`
    // holds either its old file or the whole new one.
    detail::as_data_error([&] {
      out_->write_at(kCountAt, std::string_view(reinterpret_cast<const char*>(count), 8));
      out_->commit();
    });
  } catch (...) {
    out_.reset();
    throw;
  }
  out_.reset();
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
  TokenFile f;  // owns the descriptor from here: a refused header closes it
  f.path_ = path;
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f.fd_ < 0) fail<DataError>(kWho, "cannot read ", path, ": ", errno_text());
  if (::fstat(f.fd_, &st) != 0 || !S_ISREG(st.st_mode))
    fail<DataError>(kWho, path, " is not a regular file (a folder, a FIFO or a device)");
  const auto size = std::uint64_t(st.st_size);
  f.file_bytes_ = size;
  f.mtime_sec_ = std::int64_t(st.st_mtim.tv_sec);
  f.mtime_nsec_ = std::int64_t(st.st_mtim.tv_nsec);
  if (size < kHeaderBytes)
    fail<DataError>(kWho, path, ": expected at least the ", kHeaderBytes,
                    " bytes of the header, got ", size, " bytes");
  ::posix_fadvise(f.fd_, 0, 0, POSIX_FADV_RANDOM);  // training reads windows at random starts

  unsigned char h[kHeaderBytes];
  f.read_at(0, kHeaderBytes, h);
  if (std::memcmp(h, kMagic.data(), kMagic.size()) != 0)
    fail<DataError>(kWho, path, ": expected the magic \"tapegrad-tokens\\n\" in the first 16 ",
                    "bytes; this is not a token file, or a damaged one");
  const std::uint32_t version = load_le<std::uint32_t>(h + kVersionAt);
  if (version != 1 && version != 2)
    fail<DataError>(kWho, path, ": expected version 1 or 2, got ", version,
                    "; this build reads versions 1 and 2");
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
  if (count > std::numeric_limits<std::size_t>::max())
    fail<DataError>(kWho, path, ": ", count, " ids do not fit this machine's address space");

  const std::size_t name_field = version == 1 ? kNameFieldV1 : kNameFieldV2;
  const char* field = reinterpret_cast<const char*>(h + kNameAt);
  const std::string_view name(field, ::strnlen(field, name_field));
  if (const char* why = name_problem(name, name_field - 1))
    fail<DataError>(kWho, path, ": the tokenizer name in the header ", why);
  for (std::size_t k = name.size(); k < name_field; ++k)
    if (field[k] != '\0')
      fail<DataError>(kWho, path, ": the tokenizer name field is not padded with NUL bytes");

  f.tokenizer_ = std::string(name);
  f.vocab_size_ = vocab_size;
  f.count_ = std::size_t(count);
  f.bytes_per_id_ = bytes_per_id;
  f.version_ = version;
  if (version >= 2) f.fingerprint_ = load_le<std::uint64_t>(h + kFingerprintAt);
  return f;
}

TokenFile::~TokenFile() {
  if (fd_ >= 0) ::close(fd_);
}

TokenFile::TokenFile(TokenFile&& other) noexcept { *this = std::move(other); }

TokenFile& TokenFile::operator=(TokenFile&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) ::close(fd_);
  path_ = std::move(other.path_);
  tokenizer_ = std::move(other.tokenizer_);
  fd_ = std::exchange(other.fd_, -1);
  file_bytes_ = std::exchange(other.file_bytes_, 0);
  mtime_sec_ = std::exchange(other.mtime_sec_, 0);
  mtime_nsec_ = std::exchange(other.mtime_nsec_, 0);
  vocab_size_ = std::exchange(other.vocab_size_, 0);
  count_ = std::exchange(other.count_, 0);
  bytes_per_id_ = std::exchange(other.bytes_per_id_, 0);
  version_ = std::exchange(other.version_, 0);
  fingerprint_ = std::exchange(other.fingerprint_, std::nullopt);
  return *this;
}

void TokenFile::read_at(std::uint64_t offset, std::size_t bytes, unsigned char* to) const {
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd_, to + done, bytes - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail<DataError>("TokenFile: cannot read '", path_, "': ", errno_text());
    if (n == 0) {  // the end of the file, before the end the header promised
      struct stat st {};
      const std::string now =
          ::fstat(fd_, &st) == 0 ? std::to_string(st.st_size) : std::string("fewer");
      fail<DataError>("TokenFile: '", path_, "' shrank from ", file_bytes_, " to ", now,
                      " bytes while training read it (truncated in place); its ids from byte ",
                      offset + done,
                      " are gone: write the file anew (tokenize --out replaces "
                      "a file whole, which a run reading it survives)");
    }
    done += std::size_t(n);
  }
}

void TokenFile::check_unchanged() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    fail<DataError>("TokenFile: cannot read '", path_, "': ", errno_text());
  const auto size = std::uint64_t(st.st_size);
  if (size < file_bytes_)
    fail<DataError>("TokenFile: '", path_, "' shrank from ", file_bytes_, " to ", size,
                    " bytes while training read it (truncated in place): write the file anew "
                    "(tokenize --out replaces a file whole, which a run reading it survives)");
  if (size != file_bytes_ || std::int64_t(st.st_mtim.tv_sec) != mtime_sec_ ||
      std::int64_t(st.st_mtim.tv_nsec) != mtime_nsec_)
    fail<DataError>("TokenFile: '", path_, "' was changed while training read it (",
                    size != file_bytes_
                        ? "it grew from " + std::to_string(file_bytes_) + " to " +
                              std::to_string(size) + " bytes"
                        : std::string("written to in place: its modification time changed"),
                    "): the ids read may not be the ones checked; write the file anew (tokenize "
                    "--out replaces a file whole, which a run reading it survives)");
}

std::uint32_t TokenFile::operator[](std::size_t i) const {
  check<IndexError>(i < count_, "TokenFile: ", path_, ": expected an index in [0, ", count_,
                    "), got ", i);
  std::int64_t id = 0;
  window(i, 1, &id);
  return std::uint32_t(id);
}

void TokenFile::window(std::size_t start, std::size_t length, std::int64_t* out) const {
  check<IndexError>(start <= count_ && length <= count_ - start, "TokenFile::window: ", path_,
                    ": expected a window inside the ", count_, " ids, got ", length,
                    " ids from index ", start);
  if (length == 0) return;
  // One pread of the window's bytes, then one fstat: a window read while the file changed is
  // refused, never trained on. (Two system calls per window: a step of B windows of T + 1 ids
  // costs microseconds beside its milliseconds of arithmetic.)
  std::vector<unsigned char> bytes(length * bytes_per_id_);
  read_at(kHeaderBytes + std::uint64_t(start) * bytes_per_id_, bytes.size(), bytes.data());
  check_unchanged();
  const unsigned char* p = bytes.data();
  // Two loops rather than one with a branch per id: each compiles to a plain widening copy.
  if (bytes_per_id_ == 2)
    for (std::size_t k = 0; k < length; ++k) out[k] = load_le<std::uint16_t>(p + 2 * k);
  else
    for (std::size_t k = 0; k < length; ++k) out[k] = load_le<std::uint32_t>(p + 4 * k);
  // check_ids() saw every id below vocab_size; one that is not was written since, by someone else.
  for (std::size_t k = 0; k < length; ++k)
    if (std::uint64_t(out[k]) >= vocab_size_)
      fail<DataError>("TokenFile: '", path_, "': expected ids in [0, ", vocab_size_,
                      ") (the header's vocab_size), got ", out[k], " at index ", start + k,
                      "; the file was changed while training read it, or never checked "
                      "(TokenFile::check_ids)");
}

void TokenFile::check_ids() const {
  // When the id width cannot hold an id outside the vocabulary, there is nothing to read.
  if (vocab_size_ >= (std::uint64_t(1) << (8 * bytes_per_id_))) return;
  // The file is read in stretches of 16 MiB: checking a corpus of gigabytes costs 16 MiB of
  // memory. Each stretch holds whole ids (16 MiB is a multiple of 4).
  constexpr std::size_t kStretch = std::size_t(16) << 20;
  const std::uint64_t end = kHeaderBytes + std::uint64_t(count_) * bytes_per_id_;
  std::vector<unsigned char> buffer(std::size_t(std::min<std::uint64_t>(kStretch, end)));
  for (std::uint64_t at = kHeaderBytes; at < end; at += kStretch) {
    const auto n_bytes = std::size_t(std::min<std::uint64_t>(kStretch, end - at));
    read_at(at, n_bytes, buffer.data());
    const std::size_t first = std::size_t((at - kHeaderBytes) / bytes_per_id_),
                      n = n_bytes / bytes_per_id_;
    const std::size_t i = bytes_per_id_ == 2
                              ? first_outside<std::uint16_t>(buffer.data(), n, vocab_size_)
                              : first_outside<std::uint32_t>(buffer.data(), n, vocab_size_);
    if (i < n)
      fail<DataError>("TokenFile::check_ids: ", path_, ": expected ids in [0, ", vocab_size_,
                      ") (the header's vocab_size), got ",
                      bytes_per_id_ == 2 ? load_le<std::uint16_t>(buffer.data() + 2 * i)
                                         : load_le<std::uint32_t>(buffer.data() + 4 * i),
                      " at index ", first + i,
                      "; ids out of the vocabulary: refused before "
                      "training");
  }
  check_unchanged();
}

// ---- which tokenizer wrote it -------------------------------------------------------------------

std::string check_token_file_tokenizer(const TokenFile& file, const Tokenizer& tokenizer,
                                       const std::string& tokenizer_flag) {
  const std::uint64_t ours = tokenizer.fingerprint();
  const auto describe = [](const std::string& name, std::uint64_t size,
                           std::optional<std::uint64_t> fingerprint) {
    std::ostringstream os;
    os << name << " (" << size << " tokens, fingerprint "
       << (fingerprint ? hex(*fingerprint) : std::string("unknown: a version 1 file")) << ")";
    return os.str();
  };
  const bool same_kind = file.tokenizer() == tokenizer.name() &&
                         file.vocab_size() == std::uint64_t(tokenizer.vocab_size());
  if (!same_kind || (file.fingerprint() && *file.fingerprint() != ours))
    fail<DataError>("'", file.path(), "' holds ids of the tokenizer ",
                    describe(file.tokenizer(), file.vocab_size(), file.fingerprint()), ", not of ",
                    tokenizer_flag, ", ",
                    describe(tokenizer.name(), std::uint64_t(tokenizer.vocab_size()), ours),
                    same_kind ? " (the same kind and size: other characters, merges, pretokenizer "
                                "or special tokens)"
                              : "",
                    "; give the tokenizer that wrote the file, or write the file again with this "
                    "one (tokenize --out)");
  if (file.fingerprint()) return "";
  return "'" + file.path() + "' is a version 1 token file, written before token files held " +
         "their tokenizer's fingerprint: only its kind (" + file.tokenizer() + ") and size (" +
         std::to_string(file.vocab_size()) + " tokens) could be checked against " + tokenizer_flag +
         "; write it again with tokenize --out to have it checked whole";
}

}  // namespace tapegrad::data
