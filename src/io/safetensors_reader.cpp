// src/io/safetensors_reader.cpp: reading a safetensors file that may be hostile. The reader runs
// the reference's checks in order, each a function below, and touches tensor data only after all
// of them passed; each failure is a CheckpointError whose kind names the check:
//    1 the file is shorter than the 8-byte header length          HeaderTooSmall
//    2 the header length N is above 100,000,000                   HeaderTooLarge
//    3 8 + N is beyond the end of the file                        InvalidHeaderLength
//    4 the header is not UTF-8                                    InvalidHeader
//    5 not a JSON object of tensor entries {dtype, shape, data_offsets} and a string-to-string
//      "__metadata__"                                             InvalidHeaderDeserialization
//    6 a key appears twice in an object                           InvalidHeaderDeserialization
//    7 in offset order, the tensors are not packed back to back   InvalidOffset
//    8 a tensor's byte count overflows 64 bits                     ValidationOverflow
//    9 a tensor's byte range does not fit its dtype and shape      TensorInvalidInfo
//   10 the data buffer does not end where the last tensor does    MetadataIncompleteBuffer
// and tapegrad's own, for the checksums its writer stores in "__metadata__" (checksums.hpp):
//   5b a checksum entry names no tensor (a metadata checksum: no   InvalidHeaderDeserialization
//      entry), or is not 8 lowercase hex digits
//   6b a metadata entry's value does not have the CRC-32C stored  ChecksumMismatch
//      for it, or has none in a file that has metadata checksums
//   6c a tensor has no checksum entry in a file whose other        ChecksumMismatch
//      tensors have one
//   11 a tensor's bytes do not have the CRC-32C its entry gives   ChecksumMismatch
// Message shape:
//    load_safetensors: 'model.safetensors': InvalidOffset: expected tensor 'b' to start at byte 24, got 28
// From a file, the reader reads the 8-byte length, then the header, and only when every check
// passed, each tensor straight into the array it is returned in (F32 into an Array, I64 into an
// IndexArray): a damaged 2 GiB file costs 8 + N bytes to refuse, and a good one its own size.
#include "tapegrad/io/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "tapegrad/io/crc32c.hpp"

#include "checkpoint_errors.hpp"
#include "checksums.hpp"
#include "dtypes.hpp"
#include "input_file.hpp"
#include "json_util.hpp"
#include "tapegrad/core/sizes.hpp"
#include "../core/utf8.hpp"

namespace tapegrad::io {

namespace {
using json = nlohmann::json;

constexpr std::uint64_t kMaxHeaderSize = 100'000'000;

// Where the bytes come from: a file read by parts, or a buffer in memory.
class Source {
 public:
  virtual ~Source() = default;
  virtual std::uint64_t size() const = 0;
  /// Exactly n bytes at offset (the checks keep every read within size()).
  virtual void read(std::uint64_t offset, void* dst, std::size_t n) const = 0;
};

class MemorySource final : public Source {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  void read(std::uint64_t offset, void* dst, std::size_t n) const override {
    if (n != 0) std::memcpy(dst, bytes_.data() + offset, n);
  }

 private:
  std::string_view bytes_;
};

class FileSource final : public Source {
 public:
  FileSource(const std::string& path, std::string_view where) : file_(path, where) {}
  std::uint64_t size() const override { return file_.size(); }
  void read(std::uint64_t offset, void* dst, std::size_t n) const override {
    file_.read(offset, dst, n);
  }

 private:
  InputFile file_;
};

// Builds "load_safetensors: 'file': Kind: message[; zip hint]" and throws it.
class Refusal {
 public:
  Refusal(std::string_view source, bool looks_like_zip) : source_(source), zip_(looks_like_zip) {}

  template <class... Parts>
  [[noreturn]] void fail(const char* kind, const Parts&... parts) const {
    std::ostringstream os;
    os.precision(10);
    os << "load_safetensors: " << in_quotes(source_) << ": " << kind << ": ";
    (detail::append(os, parts), ...);
    if (zip_)
      os << "; this looks like a torch.save archive (a zip file); tapegrad reads safetensors only";
    throw CheckpointError(os.str(), kind);
  }

 private:
  std::string_view source_;
  bool zip_;
};

std::string hex_byte(char c) {
  static constexpr char digits[] = "0123456789ABCDEF";
  const auto b = static_cast<unsigned char>(c);
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// One tensor entry of the header.
struct Entry {
  std::string name;
  Dtype dtype;
  Shape shape;
  std::uint64_t begin, end;
};

// What the parser callback learns while nlohmann builds the DOM (which keeps only the last of
// two equal keys, silently): the first duplicate key, and in which object.
struct DuplicateKey {
  std::string key, object;  // object: "" for the top level, else the entry's name
};

struct ParsedHeader {
  json root;
  std::optional<DuplicateKey> duplicate;
};

// The header's tensor entries and metadata, as the file gives them.
struct Header {
  std::vector<Entry> entries;
  std::vector<std::pair<std::string, std::string>> metadata;
};

// ---- the checks, in order ----------------------------------------------------------------------

// 1-3: the 8-byte length prefix, and that the header it announces fits in the file.
std::uint64_t check_header_length(const Source& src, const Refusal& refuse) {
  if (src.size() < 8)
    refuse.fail("HeaderTooSmall", "expected at least 8 bytes (the header length), got ",
                src.size());
  std::uint8_t prefix[8];
  src.read(0, prefix, 8);
  const auto n = load_le<std::uint64_t>(prefix);
  if (n > kMaxHeaderSize)
    refuse.fail("HeaderTooLarge", "expected a header length of at most ", kMaxHeaderSize,
                " bytes, got ", n);
  if (n > src.size() - 8)
    refuse.fail("InvalidHeaderLength", "expected the ", n,
                "-byte header to fit in the file after its 8-byte length, got a file of ",
                src.size(), " bytes");
  return n;
}

// 4: UTF-8.
void check_utf8(std::string_view header, const Refusal& refuse) {
  if (const std::size_t bad = tapegrad::detail::first_invalid_utf8(header);
      bad != std::string_view::npos)
    refuse.fail("InvalidHeader", "expected a UTF-8 header, got the invalid byte ",
                hex_byte(header[bad]), " at header byte ", bad);
}

// 5 (the syntax, and a JSON object), noting on the way the first key that appears twice (6). A
// valid header nests three deep: the object, a tensor entry, its shape or offsets array.
ParsedHeader parse_json(std::string_view header, const Refusal& refuse) {
  if (header.substr(0, 3) == "\xEF\xBB\xBF")  // nlohmann skips a byte-order mark; JSON forbids it
    refuse.fail("InvalidHeaderDeserialization",
                "expected a JSON object, got a byte-order mark first");
  ParsedHeader out;
  std::vector<std::set<std::string>> open_keys;  // one set per object being parsed
  std::vector<std::string> object_names;         // its entry name ("" for the top level)
  std::string last_key;
  const json::parser_callback_t watch = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= 3) throw TooDeep{};
        if (event == json::parse_event_t::object_start) {
          open_keys.emplace_back();
          object_names.push_back(depth == 0 ? std::string() : last_key);
        }
        break;
      case json::parse_event_t::key:
        last_key = parsed.get<std::string>();
        if (!open_keys.back().insert(last_key).second && !out.duplicate)
          out.duplicate = DuplicateKey{last_key, object_names.back()};
        break;
      case json::parse_event_t::object_end:
        open_keys.pop_back();
        object_names.pop_back();
        break;
      default: break;
    }
    return true;
  };
  try {
    out.root = json::parse(header.begin(), header.end(), watch);
  } catch (const TooDeep&) {
    refuse.fail("InvalidHeaderDeserialization",
                "expected a header nested at most 3 deep (object, tensor entry, shape array), got "
                "deeper nesting");
  } catch (const json::exception& e) {
    refuse.fail("InvalidHeaderDeserialization",
                "expected a JSON object, got text that is not JSON (", reason(e), ")");
  }
  if (!out.root.is_object())
    refuse.fail("InvalidHeaderDeserialization", "expected a JSON object, got a ",
                out.root.type_name());
  return out;
}

bool is_offset_pair(const json& j) {
  return j.is_array() && j.size() == 2 && j[0].is_number_unsigned() && j[1].is_number_unsigned();
}

// 5: "__metadata__" maps strings to strings; every other entry is a tensor of a known dtype, a
// shape of non-negative integers and two non-negative offsets. Integers must be unsigned in
// nlohmann's terms: negative ones are signed, fractions and huge ones floating point.
Header read_entries(const json& root, const Refusal& refuse) {
  Header out;
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      if (!value.is_object())
        refuse.fail("InvalidHeaderDeserialization",
                    "expected __metadata__ to map strings to strings, got a ", value.type_name());
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          refuse.fail("InvalidHeaderDeserialization",
                      "expected __metadata__ to map strings to strings, got a ", v.type_name(),
                      " for key ", in_quotes(k), ": ", excerpt(v));
        out.metadata.emplace_back(k, v.get<std::string>());
      }
      continue;
    }
    if (!value.is_object())
      refuse.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name),
                  " to be an object with dtype, shape and data_offsets, got a ", value.type_name());
    const auto dtype = value.find("dtype"), shape = value.find("shape"),
               offsets = value.find("data_offsets");
    if (dtype == value.end() || !dtype->is_string())
      refuse.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name),
                  " to have a string dtype, got ", dtype == value.end() ? "none" : excerpt(*dtype));
    const auto known = dtype_from_name(dtype->get_ref<const std::string&>());
    if (!known)
      refuse.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name),
                  " to have a dtype tapegrad knows (BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 "
                  "I32 U32 F32 F64 I64 U64), got unknown dtype ",
                  excerpt(*dtype));
    if (shape == value.end() || !shape->is_array() ||
        !std::all_of(shape->begin(), shape->end(),
                     [](const json& d) { return d.is_number_unsigned(); }))
      refuse.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name),
                  " to have a shape of non-negative integers, got ",
                  shape == value.end() ? "none" : excerpt(*shape));
    if (offsets == value.end() || !is_offset_pair(*offsets))
      refuse.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name),
                  " to have data_offsets of two non-negative integers, got ",
                  offsets == value.end() ? "none" : excerpt(*offsets));
    Shape dims;
    for (const json& d : *shape) dims.push_back(d.get<std::uint64_t>());
    out.entries.push_back(Entry{name, *known, std::move(dims), (*offsets)[0].get<std::uint64_t>(),
                                (*offsets)[1].get<std::uint64_t>()});
  }
  return out;
}

// The checksums the header stores: of tensors by name, of metadata entries by key.
struct Checksums {
  std::map<std::string, std::uint32_t> tensors, metadata;
};

// 5b: each checksum entry names what it covers (a tensor of the header; a metadata entry that is
// not a checksum) and holds 8 lowercase hex digits.
Checksums check_checksum_entries(const Header& header, const Refusal& refuse) {
  std::set<std::string_view> names, keys;
  for (const Entry& e : header.entries) names.insert(e.name);
  for (const auto& [key, value] : header.metadata)
    if (!is_any_checksum_key(key)) keys.insert(key);
  Checksums out;
  for (const auto& [key, value] : header.metadata) {
    const bool of_tensor = is_checksum_key(key);
    if (!of_tensor && !is_metadata_checksum_key(key)) continue;
    const std::string covered =
        key.substr((of_tensor ? kChecksumPrefix : kMetadataChecksumPrefix).size());
    if (of_tensor && !names.contains(covered))
      refuse.fail("InvalidHeaderDeserialization", "expected the checksum entry ", in_quotes(key),
                  " to name a tensor of the file, got no tensor ", in_quotes(covered));
    if (!of_tensor && !keys.contains(covered))
      refuse.fail("InvalidHeaderDeserialization", "expected the metadata checksum entry ",
                  in_quotes(key), " to name a metadata entry of the file, got no entry ",
                  in_quotes(covered));
    const auto crc = parse_checksum(value);
    if (!crc)
      refuse.fail("InvalidHeaderDeserialization", "expected the checksum entry ", in_quotes(key),
                  " to be a CRC-32C as 8 lowercase hex digits, got ",
                  in_quotes(value.substr(0, 40)));
    (of_tensor ? out.tensors : out.metadata)[covered] = *crc;
  }
  return out;
}

// 6: no key twice, in any object.
void check_no_duplicate(const std::optional<DuplicateKey>& duplicate, const Refusal& refuse) {
  if (!duplicate) return;
  if (duplicate->object.empty())
    refuse.fail("InvalidHeaderDeserialization", "expected each tensor name once, got ",
                in_quotes(duplicate->key), " twice");
  refuse.fail("InvalidHeaderDeserialization", "expected each key once in ",
              duplicate->object == "__metadata__" ? std::string("__metadata__")
                                                  : "tensor " + in_quotes(duplicate->object),
              ", got ", in_quotes(duplicate->key), " twice");
}

// 6b: in a file with metadata checksums (every tapegrad save since they exist), every entry that
// is not a checksum has one, and its value has that CRC-32C: an entry edited, added or renamed
// after the save is refused, by name.
void check_metadata_checksums(const Header& header,
                              const std::map<std::string, std::uint32_t>& crcs,
                              const Refusal& refuse) {
  if (crcs.empty()) return;  // PyTorch's, or an older tapegrad's: nothing to check
  for (const auto& [key, value] : header.metadata) {
    if (is_any_checksum_key(key)) continue;
    const auto expected = crcs.find(key);
    if (expected == crcs.end())
      refuse.fail("ChecksumMismatch", "expected a checksum for __metadata__ entry ", in_quotes(key),
                  ", as for the file's other entries, got none: the entry was "
                  "added after the file was written");
    if (const std::uint32_t actual = crc32c(value); actual != expected->second)
      refuse.fail("ChecksumMismatch", "expected the value of __metadata__ entry ", in_quotes(key),
                  " to have the CRC-32C ", checksum_text(expected->second), " stored for it, got ",
                  checksum_text(actual), ": the entry was changed after the file was written");
  }
}

// 6c: in a file with tensor checksums (every tapegrad save), every tensor has one: a tensor whose
// entry was removed, perhaps to pass off a changed tensor, is refused by name.
void check_every_tensor_checksummed(const Header& header,
                                    const std::map<std::string, std::uint32_t>& crcs,
                                    const Refusal& refuse) {
  if (crcs.empty()) return;  // PyTorch's, or a safetensors library's: nothing to check
  for (const Entry& e : header.entries)
    if (!crcs.contains(e.name))
      refuse.fail("ChecksumMismatch", "expected a checksum entry ",
                  in_quotes(checksum_key(e.name)), " for tensor ", in_quotes(e.name),
                  ", as the file's other tensors have, got none: the entry was removed after the "
                  "file was written");
}

// 7: a tensor starts where the previous one (in offset order) ended, and does not end before it
// starts. Returns where the next one must start.
std::uint64_t check_offsets(const Entry& e, std::uint64_t expected_begin, const Refusal& refuse) {
  if (e.begin != expected_begin)
    refuse.fail("InvalidOffset", "expected tensor ", in_quotes(e.name), " to start at byte ",
                expected_begin, ", got ", e.begin);
  if (e.end < e.begin)
    refuse.fail("InvalidOffset", "expected tensor ", in_quotes(e.name),
                " to end at or after its start ", e.begin, ", got ", e.end);
  return e.end;
}

// 8: its byte count fits in 64 bits, and xtensor can lay it out (the reference accepts shape
// (0, 2^62, 2), whose strides overflow). Returns the byte count.
std::uint64_t check_no_overflow(const Entry& e, const Refusal& refuse) {
  const auto size = byte_count(e.shape, dtype_size(e.dtype));
  if (!size)
    refuse.fail("ValidationOverflow", "expected the size in bytes of tensor ", in_quotes(e.name),
                " to fit in 64 bits, got shape ", e.shape, " of ", dtype_name(e.dtype));
  if (!fits_in_strides(e.shape))
    refuse.fail("ValidationOverflow", "expected the non-zero dimensions of tensor ",
                in_quotes(e.name), " to multiply to less than 2^63, got shape ", e.shape);
  return *size;
}

// 9: its byte range holds exactly numel * dtype size bytes.
void check_size(const Entry& e, std::uint64_t size, const Refusal& refuse) {
  if (e.end - e.begin != size)
    refuse.fail("TensorInvalidInfo", "expected tensor ", in_quotes(e.name), " (",
                dtype_name(e.dtype), ", shape ", e.shape, ") to span ", size,
                " bytes, got data_offsets [", e.begin, ", ", e.end, "] (", e.end - e.begin,
                " bytes)");
}

// 7-9, tensor by tensor in offset order, as the reference does. Sorts the entries by offset.
// Returns the end of the last tensor.
std::uint64_t check_tensor_ranges(std::vector<Entry>& entries, const Refusal& refuse) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t end = 0;
  for (const Entry& e : entries) {
    end = check_offsets(e, end, refuse);
    check_size(e, check_no_overflow(e, refuse), refuse);
  }
  return end;
}

// 10: the data buffer ends exactly where the last tensor does.
void check_buffer_end(std::uint64_t data_size, std::uint64_t last_end, const Refusal& refuse) {
  if (last_end != data_size)
    refuse.fail("MetadataIncompleteBuffer", "expected ", last_end,
                " bytes of tensor data after the header (the last tensor's end), got ", data_size);
}

// 11: the tensor's bytes have the checksum the header gives, if it gives one.
void check_checksum(const Entry& e, std::uint32_t actual,
                    const std::map<std::string, std::uint32_t>& checksums, const Refusal& refuse) {
  const auto expected = checksums.find(e.name);
  if (expected != checksums.end() && expected->second != actual)
    refuse.fail("ChecksumMismatch", "expected the bytes of tensor ", in_quotes(e.name),
                " to have the CRC-32C ", checksum_text(expected->second),
                " stored for it in __metadata__, got ", checksum_text(actual),
                ": the file was damaged after it was written");
}

// ---- after the checks ----------------------------------------------------------------------------

// Reads a tensor's bytes into `dst` by pieces, computing their CRC-32C on the way while each piece
// is still in cache (unless `crc` is false: a file without checksums, PyTorch's, has none to check).
std::uint32_t read_bytes(const Source& src, std::uint64_t offset, void* dst, std::size_t n,
                         bool crc = true) {
  constexpr std::size_t kPiece = std::size_t{4} << 20;
  auto* p = static_cast<std::uint8_t*>(dst);
  std::uint32_t sum = 0;
  for (std::size_t done = 0; done < n;) {
    const std::size_t piece = std::min(kPiece, n - done);
    src.read(offset + done, p + done, piece);
    if (crc) sum = crc32c(p + done, piece, sum);
    done += piece;
  }
  return sum;
}

// Reads each tensor (in file order) into the array it is kept in, and checks its checksum (11).
void read_tensors(const Source& src, std::uint64_t data_start, std::vector<Entry>& entries,
                  const std::map<std::string, std::uint32_t>& checksums, SafetensorsFile& file,
                  const Refusal& refuse) {
  for (Entry& e : entries) {
    const std::uint64_t at = data_start + e.begin;
    const std::size_t n = e.end - e.begin;
    if (e.dtype == Dtype::F32) {
      Array values = Array::from_shape(e.shape);
      check_checksum(e, read_bytes(src, at, values.data(), n, checksums.contains(e.name)),
                     checksums, refuse);
      file.add(std::move(e.name), std::move(values));
    } else if (e.dtype == Dtype::I64) {
      IndexArray values = IndexArray::from_shape(e.shape);
      check_checksum(e, read_bytes(src, at, values.data(), n, checksums.contains(e.name)),
                     checksums, refuse);
      file.add(std::move(e.name), std::move(values));
    } else {
      std::vector<std::uint8_t> bytes(n);
      check_checksum(e, read_bytes(src, at, bytes.data(), n, checksums.contains(e.name)),
                     checksums, refuse);
      file.add_raw(std::move(e.name), e.dtype, std::move(e.shape), std::move(bytes));
    }
  }
}

// An entry whose key is not a tensor and whose value is names a tied copy (safetensors'
// save_model convention); a checksum entry (of a tensor or of an entry) never does. ("__metadata__" cannot name a tensor, so
// such an entry stays metadata.) Checksum entries stay in the metadata, so that writing the file
// again with serialize_safetensors gives its bytes.
void add_metadata_and_aliases(SafetensorsFile& file,
                              std::vector<std::pair<std::string, std::string>> metadata) {
  for (auto& [key, value] : metadata) {
    if (!file.has_tensor(key) && file.has_tensor(value) && key != "__metadata__" &&
        !is_any_checksum_key(key))
      file.add_alias(std::move(key), std::move(value));
    else
      file.set_metadata(std::move(key), std::move(value));
  }
}

// The header of a file that passed checks 1-10: its tensors in data order, where their data
// starts, its metadata and the checksums it stores.
struct CheckedHeader {
  Header header;
  Checksums checksums;
  std::uint64_t data_start = 0;
};

Refusal refusal_for(const Source& src, std::string_view source) {
  char magic[2] = {0, 0};
  if (src.size() >= 2) src.read(0, magic, 2);
  return Refusal(source, magic[0] == 'P' && magic[1] == 'K');
}

// The checks in order, up to the data.
CheckedHeader check_header(const Source& src, const Refusal& refuse) {
  const std::uint64_t n = check_header_length(src, refuse);  // 1-3
  std::string header_text(n, '\0');
  src.read(8, header_text.data(), n);
  check_utf8(header_text, refuse);                              // 4
  const ParsedHeader parsed = parse_json(header_text, refuse);  // 5
  CheckedHeader out;
  out.header = read_entries(parsed.root, refuse);                                  // 5
  out.checksums = check_checksum_entries(out.header, refuse);                      // 5b
  check_no_duplicate(parsed.duplicate, refuse);                                    // 6
  check_metadata_checksums(out.header, out.checksums.metadata, refuse);            // 6b
  check_every_tensor_checksummed(out.header, out.checksums.tensors, refuse);       // 6c
  const std::uint64_t last_end = check_tensor_ranges(out.header.entries, refuse);  // 7-9
  check_buffer_end(src.size() - 8 - n, last_end, refuse);                          // 10
  out.data_start = 8 + n;
  return out;
}

// The checks in order, then the data.
SafetensorsFile read_safetensors(const Source& src, std::string_view source) {
  const Refusal refuse = refusal_for(src, source);
  CheckedHeader checked = check_header(src, refuse);
  // Every check passed: every range lies inside the data, and the data is the file's size.
  SafetensorsFile file;
  read_tensors(src, checked.data_start, checked.header.entries, checked.checksums.tensors, file,
               refuse);  // 11
  add_metadata_and_aliases(file, std::move(checked.header.metadata));
  return file;
}
}  // namespace

SafetensorsFile parse_safetensors(std::string_view bytes, std::string_view source) {
  return read_safetensors(MemorySource(bytes), source);
}

SafetensorsFile load_safetensors(const std::string& path) {
  return read_safetensors(FileSource(path, "load_safetensors"), path);
}

// ---- SafetensorsReader: the same checks, then one tensor at a time ----------------------------

struct SafetensorsReader::File {
  explicit File(const std::string& p)
      : path(p), source(path, "load_safetensors"), refuse(refusal_for(source, path)) {}
  std::string path;  // (the Refusal keeps a view of it)
  FileSource source;
  Refusal refuse;
  CheckedHeader checked;                                  // entries in data order
  std::map<std::string, std::size_t, std::less<>> index;  // name -> position in the entries
};

std::size_t SafetensorsReader::Info::numel() const {
  std::size_t n = 1;
  for (const std::size_t d : shape) n *= d;  // (the header's checks bound it)
  return n;
}

SafetensorsReader::SafetensorsReader(const std::string& path)
    : file_(std::make_unique<File>(path)), path_(path) {
  file_->checked = check_header(file_->source, file_->refuse);  // 1-10
  const Header& h = file_->checked.header;
  for (std::size_t i = 0; i < h.entries.size(); ++i) {
    const Entry& e = h.entries[i];
    tensors_.push_back(Info{e.name, e.dtype, e.shape});
    file_->index.emplace(e.name, i);
  }
  metadata_ = h.metadata;
  std::sort(metadata_.begin(), metadata_.end());
}

SafetensorsReader::SafetensorsReader(SafetensorsReader&&) noexcept = default;
SafetensorsReader::~SafetensorsReader() = default;

const SafetensorsReader::Info* SafetensorsReader::find(std::string_view name) const {
  const auto it = file_->index.find(name);
  return it == file_->index.end() ? nullptr : &tensors_[it->second];
}

std::optional<std::string> SafetensorsReader::metadata_value(std::string_view key) const {
  for (const auto& [k, v] : metadata_)
    if (k == key) return v;
  return std::nullopt;
}

void SafetensorsReader::read_float(
    std::string_view name,
    const std::function<void(std::span<const float>, std::size_t)>& visit) const {
  const auto it = file_->index.find(name);
  check<ValueError>(it != file_->index.end(), "SafetensorsReader: '", path_, "' has no tensor ",
                    in_quotes(name));
  const Entry& e = file_->checked.header.entries[it->second];
  const Dtype d = e.dtype;
  check<TypeError>(d == Dtype::F32 || d == Dtype::F64 || d == Dtype::F16 || d == Dtype::BF16,
                   "SafetensorsReader: '", path_, "': expected tensor ", in_quotes(name),
                   " to hold floating-point values (F32, F64, F16 or BF16), got ", dtype_name(d));
  const std::size_t width = dtype_size(d);
  const std::size_t total = (e.end - e.begin) / width;
  constexpr std::size_t kPiece = std::size_t{1} << 20;  // elements per read
  std::vector<std::uint8_t> raw(d == Dtype::F32 ? 0 : std::min(total, kPiece) * width);
  std::vector<float> values(std::min(total, kPiece));
  const bool has_crc = file_->checked.checksums.tensors.contains(e.name);
  std::uint32_t crc = 0;
  for (std::size_t first = 0; first < total; first += kPiece) {
    const std::size_t n = std::min(kPiece, total - first);
    const std::uint64_t at = file_->checked.data_start + e.begin + first * width;
    if (d == Dtype::F32) {
      file_->source.read(at, values.data(), n * width);
      if (has_crc) crc = crc32c(values.data(), n * width, crc);
    } else {
      file_->source.read(at, raw.data(), n * width);
      if (has_crc) crc = crc32c(raw.data(), n * width, crc);
      for (std::size_t k = 0; k < n; ++k) {
        const std::uint8_t* p = raw.data() + k * width;
        values[k] = d == Dtype::F64   ? static_cast<float>(load_le<double>(p))
                    : d == Dtype::F16 ? half_to_float(load_le<std::uint16_t>(p))
                                      : bfloat16_to_float(load_le<std::uint16_t>(p));
      }
    }
    visit(std::span<const float>(values.data(), n), first);
  }
  check_checksum(e, crc, file_->checked.checksums.tensors, file_->refuse);  // 11
}

void SafetensorsReader::read_float(std::string_view name, std::span<float> dst) const {
  const Info* info = find(name);
  check<ValueError>(info != nullptr, "SafetensorsReader: '", path_, "' has no tensor ",
                    in_quotes(name));
  check<ValueError>(dst.size() == info->numel(), "SafetensorsReader: '", path_,
                    "': expected room for the ", info->numel(), " elements of tensor ",
                    in_quotes(name), ", got ", dst.size());
  if (info->dtype == Dtype::F32) {  // the file's bytes are the values: read them in place
    const Entry& e = file_->checked.header.entries[file_->index.find(name)->second];
    const bool has_crc = file_->checked.checksums.tensors.contains(e.name);
    const std::uint32_t crc = read_bytes(file_->source, file_->checked.data_start + e.begin,
                                         dst.data(), e.end - e.begin, has_crc);
    if (has_crc) check_checksum(e, crc, file_->checked.checksums.tensors, file_->refuse);  // 11
    return;
  }
  read_float(name, [&](std::span<const float> piece, std::size_t first) {
    std::copy(piece.begin(), piece.end(), dst.begin() + static_cast<std::ptrdiff_t>(first));
  });
}

}  // namespace tapegrad::io
