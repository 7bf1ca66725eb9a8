// include/tapegrad/io/safetensors.hpp
//
// Checkpoint files in the safetensors format (https://github.com/huggingface/safetensors), at the
// level of named arrays; the module and optimizer layers (checkpoint.hpp) build on it. A file is an 8-byte little-endian header length N,
// N bytes of JSON naming each tensor's dtype, shape and byte range, then the raw data:
//
//     io::SafetensorsFile f;
//     f.add("embed.lut.weight", weights);          // an Array: stored as F32
//     f.add("state.0.step", IndexArray(7));        // an IndexArray: stored as I64
//     io::save_safetensors("model.safetensors", f);
//     Array w = io::load_safetensors("model.safetensors").to_float("embed.lut.weight");
//
// The writer is byte-identical to the reference implementation; save_safetensors adds, in
// "__metadata__", tapegrad's version, each tensor's CRC-32C ("tapegrad.crc32c.{name}": 8 hex
// digits) and each other entry's ("tapegrad.metadata_crc32c.{key}", of its value), which any
// safetensors reader keeps as plain metadata and tapegrad's reader verifies.
// The reader treats every file as hostile and runs its checks (parse_safetensors) before it
// hands out any data. Files are written atomically: a crash at any moment leaves the old file or
// the new one, whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::io {

/// The element types of the format, in the reference's order: the writer sorts tensors by it,
/// descending (so I64 data comes before F32 data). Sizes: 1 1 1 1 1 2 2 2 2 4 4 4 8 8 8 bytes.
enum class Dtype {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64
};

std::size_t dtype_size(Dtype dtype);
std::string_view dtype_name(Dtype dtype);                     ///< "F32"
std::optional<Dtype> dtype_from_name(std::string_view name);  ///< nullopt for "C64", "F4", ...

/// One tensor as the file stores it: row-major, little-endian bytes, no strides. F32 data is kept
/// in an Array and I64 data in an IndexArray (other dtypes as bytes), so that a loader can hand
/// them on without a copy (SafetensorsFile::take_float).
struct TensorRecord {
  std::string name;
  Dtype dtype = Dtype::F32;
  Shape shape;  ///< {} for a rank-0 tensor (one element)
  /// Exactly numel(shape) * dtype_size(dtype) bytes. ValueError once take_float took the data.
  std::span<const std::uint8_t> bytes() const;

 private:
  friend class SafetensorsFile;
  std::variant<std::monostate, std::vector<std::uint8_t>, Array, IndexArray>
      data_;  // monostate: taken
};

/// The contents of one safetensors file: tensors in insertion order (after reading: data order),
/// tied-tensor aliases, and string metadata. Names are unique across tensors and aliases.
class SafetensorsFile {
 public:
  void add(std::string name, Array values);       ///< stored as F32 (pass an rvalue: no copy)
  void add(std::string name, IndexArray values);  ///< stored as I64
  /// Any dtype, given as the file's bytes; throws ValueError when their count does not fit shape.
  /// (To copy a record r of another file: add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(),
  /// r.bytes().end()}).)
  void add_raw(std::string name, Dtype dtype, Shape shape, std::vector<std::uint8_t> bytes);
  /// Records that `alias` is the same tensor as `target` (a tied parameter): the data is stored
  /// once. `target` must be a tensor already added; `alias` must be a new name.
  void add_alias(std::string alias, std::string target);
  /// Sets (or replaces) a metadata entry: a string key mapping to a string value.
  void set_metadata(std::string key, std::string value);

  bool contains(std::string_view name) const;    ///< a tensor or an alias
  bool has_tensor(std::string_view name) const;  ///< a tensor, not an alias
  /// The record for a tensor or an alias of one; throws ValueError naming the missing key.
  const TensorRecord& record(std::string_view name) const;
  /// The values as float32: F32 as stored, F64/F16/BF16 converted (as PyTorch's copy_ casts);
  /// any other dtype throws TypeError naming the key and the dtype.
  Array to_float(std::string_view name) const;
  /// The values of an I64 tensor; any other dtype throws TypeError naming the key and the dtype.
  IndexArray to_int64(std::string_view name) const;
  /// to_float, moving the values out of the file instead of copying them (F32: no copy at all):
  /// for loaders that hand a checkpoint's tensors on and need their memory once. Afterwards the
  /// tensor, and every alias of it, has no data: reading it throws ValueError.
  Array take_float(std::string_view name);
  std::optional<std::string> metadata_value(std::string_view key) const;

  const std::vector<TensorRecord>& tensors() const { return tensors_; }
  /// (alias, target) pairs, in the order they were added (after reading: sorted by alias).
  const std::vector<std::pair<std::string, std::string>>& aliases() const { return aliases_; }
  /// (key, value) pairs, in the order they were set (after reading: sorted by key). Alias entries
  /// of the file (an entry whose key is no tensor and whose value is one) are in aliases().
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

 private:
  void check_new_name(const std::string& name, const char* what) const;
  void store(TensorRecord record);
  TensorRecord& mutable_record(std::string_view name);
  std::vector<TensorRecord> tensors_;
  std::vector<std::pair<std::string, std::string>> aliases_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::unordered_map<std::string, std::size_t> tensor_index_;    // name -> position in tensors_
  std::unordered_map<std::string, std::string> alias_target_;    // alias -> target tensor name
  std::unordered_map<std::string, std::size_t> metadata_index_;  // key -> position in metadata_
};

/// The file's bytes, exactly as the reference writer produces them: tensors ordered
/// by dtype descending then name; a tied group is stored once, under its smallest name, the other
/// names becoming "__metadata__" entries "other": "kept". Adds nothing to the metadata (a file
/// read with checksums keeps them, and reads back only while its entries are unchanged). Throws
/// ValueError for a metadata entry that would read back as an alias (its key not a tensor, its
/// value one) or that collides with an alias, for a checksum entry the reader would refuse (see
/// below), and for a tied name starting with "tapegrad.crc32c." or "tapegrad.metadata_crc32c.".
std::string serialize_safetensors(const SafetensorsFile& file);

/// Parses and validates a whole file held in memory. Throws CheckpointError whose kind names the
/// failed check and whose message names `source`, checking in this order:
///   HeaderTooSmall (under 8 bytes), HeaderTooLarge (header length N > 100,000,000),
///   InvalidHeaderLength (8 + N beyond the file), InvalidHeader (not UTF-8),
///   InvalidHeaderDeserialization (not a JSON object of {dtype, shape, data_offsets} entries and
///   string metadata; a checksum entry naming no tensor, a metadata checksum naming no entry, or
///   either not 8 lowercase hex digits; a key twice), ChecksumMismatch (a metadata entry whose
///   value does not have the CRC-32C stored for it, or that has none in a file whose other entries
///   have one), InvalidOffset (tensors not packed back to back), ValidationOverflow (a byte count
///   over 64 bits), TensorInvalidInfo (a range that does not fit dtype and shape),
///   MetadataIncompleteBuffer (data not ending with the last tensor), ChecksumMismatch (a
///   tensor's bytes do not have the CRC-32C stored for it):
///   load_safetensors: 'model.safetensors': InvalidOffset: expected tensor 'b' to start at byte 24, got 28
/// Metadata entries whose key is not a tensor and whose value is become aliases (checksum entries
/// never do); checksum entries stay in metadata().
SafetensorsFile parse_safetensors(std::string_view bytes, std::string_view source = "<memory>");

/// A safetensors file opened to be read tensor by tensor: for a model too big to hold twice
/// (GPT-2's 500 MB), read straight into the parameters it fills. The constructor reads the
/// header and runs parse_safetensors's checks on it, through MetadataIncompleteBuffer, so a
/// damaged or truncated file is refused before any data is read; each read then checks the
/// tensor's CRC-32C when the file stores one (a tapegrad save). Nothing is kept in memory but
/// the header: the data is read with pread, piece by piece, and never mapped.
///
///     io::SafetensorsReader f("model.safetensors");
///     for (const auto& t : f.tensors()) std::cout << t.name << " " << t.shape << "\n";
///     f.read_float("wte.weight", {table.data(), table.size()});
class SafetensorsReader {
 public:
  /// A tensor as the header describes it.
  struct Info {
    std::string name;
    Dtype dtype = Dtype::F32;
    Shape shape;
    std::size_t numel() const;
  };
  /// Opens and checks `path`: CheckpointError as load_safetensors's (naming the file), except
  /// that the tensors' checksums are checked by the reads.
  explicit SafetensorsReader(const std::string& path);
  SafetensorsReader(SafetensorsReader&&) noexcept;
  ~SafetensorsReader();

  const std::string& path() const { return path_; }
  /// The tensors, in the order of their data in the file.
  const std::vector<Info>& tensors() const { return tensors_; }
  /// The tensor called `name`, or null.
  const Info* find(std::string_view name) const;
  /// The "__metadata__" entries, sorted by key (alias entries included, as the file has them).
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  std::optional<std::string> metadata_value(std::string_view key) const;

  /// Reads tensor `name` in row-major order as float32 (F32 as stored; F64, F16 and BF16
  /// converted as SafetensorsFile::to_float does), by pieces of at most 1 Mi elements: visit(piece,
  /// first) gets elements [first, first + piece.size()). After the last piece, CheckpointError
  /// (ChecksumMismatch) if the bytes do not have the CRC-32C the file stores for them, so a
  /// caller must not keep what it was given until read_float returns. ValueError for a name the
  /// file lacks; TypeError for an integer or boolean dtype.
  void read_float(
      std::string_view name,
      const std::function<void(std::span<const float> piece, std::size_t first)>& visit) const;
  /// The whole tensor into `dst`, which must hold exactly its numel() elements (ValueError).
  void read_float(std::string_view name, std::span<float> dst) const;

 private:
  struct File;
  std::unique_ptr<File> file_;  // the open file, where each tensor's bytes lie, the checksums
  std::string path_;
  std::vector<Info> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

/// serialize_safetensors plus "tapegrad.version", a fresh "tapegrad.crc32c.{name}" for every
/// stored tensor and a fresh "tapegrad.metadata_crc32c.{key}" for every other metadata entry
/// (the version and tied names included; the file's own checksum entries are replaced), streamed
/// to `path` and replacing it atomically (as write_file_atomic).
void save_safetensors(const std::string& path, const SafetensorsFile& file);
/// read_file then parse_safetensors.
SafetensorsFile load_safetensors(const std::string& path);

/// Replaces `path` with `bytes` through the one atomic writer (tapegrad/core/atomic_file.hpp), so
/// that a crash at any moment leaves the old file or the new one, whole: writes a temporary file
/// in the same folder, fsyncs it, renames it over `path`, fsyncs the folder. On failure the temporary is removed and CheckpointError (kind "IoError") names the
/// path and the system's reason. `path` must be new or a regular file: a folder, a device (such
/// as /dev/null), a FIFO or a socket there is refused before anything is written. A replaced
/// file keeps its permission bits and, when the process may (root), its owner and group. A
/// symbolic link is followed to the regular file it names, which is replaced (the link stays) when
/// it is empty or of the format of `bytes` (safetensors, .npy).
/// A writer killed midway may leave its hidden ".name.tmp-PID-N" next to the file, never a
/// damaged file; the next save to the same path removes it once process PID has ended.
void write_file_atomic(const std::string& path, std::string_view bytes,
                       std::string_view where = "write_file_atomic");
/// The whole content of a regular file; CheckpointError (kind "IoError") for a missing file, a
/// folder, a device or pipe, or a read error, naming the path.
/// A file over `max_bytes` (by its size, before a byte is read) is a CheckpointError (kind
/// "IoError") naming the path and both sizes.
std::string read_file(const std::string& path, std::string_view where = "read_file",
                      std::uint64_t max_bytes = UINT64_MAX);

}  // namespace tapegrad::io
