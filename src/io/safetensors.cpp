// src/io/safetensors.cpp
//
// safetensors read and write (SPEC 2.13), the atomic file write, and dtype conversion. The only
// file that includes nlohmann/json. Three rules shape it:
//   * the writer reproduces the reference writer byte for byte (SPEC 2.13.2);
//   * the reader trusts nothing: it runs SPEC 2.13.3's checks 1-10 in order, each failure a
//     CheckpointError whose kind names the check, and reads tensor bytes only after all passed;
//   * a file on disk is replaced atomically (temporary file, fsync, rename, fsync of the folder).
// Data are little-endian on disk and in memory (static_assert below), so a tensor's bytes are
// copied as they are.
#include "tapegrad/io/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "json_text.hpp"
#include "shape_limits.hpp"

namespace tapegrad::io {

static_assert(std::endian::native == std::endian::little,
              "tapegrad's checkpoint code copies little-endian file data as is: a little-endian "
              "host (x86-64, AArch64) is required");
static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "shapes and offsets are 64-bit");

// ---- dtypes ------------------------------------------------------------------------------------

namespace {
struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};
// In the reference's order (safetensors/src/tensor.rs), which is also the enum's.
constexpr std::array<DtypeInfo, 15> kDtypes{{
    {Dtype::BOOL, "BOOL", 1}, {Dtype::U8, "U8", 1},   {Dtype::I8, "I8", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1}, {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::I16, "I16", 2},
    {Dtype::U16, "U16", 2},   {Dtype::F16, "F16", 2}, {Dtype::BF16, "BF16", 2},
    {Dtype::I32, "I32", 4},   {Dtype::U32, "U32", 4}, {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},   {Dtype::I64, "I64", 8}, {Dtype::U64, "U64", 8},
}};
const DtypeInfo& info(Dtype dtype) { return kDtypes.at(static_cast<std::size_t>(dtype)); }

// numel(shape) * element_size, or nullopt when it does not fit in 64 bits. Multiplies left to
// right as the reference does, so [2^62, 8, 0] overflows although it holds no element.
std::optional<std::uint64_t> byte_count(const Shape& shape, std::size_t element_size) {
  std::uint64_t n = 1;
  for (std::size_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) return std::nullopt;
  if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(element_size), &n)) return std::nullopt;
  return n;
}

// Strict UTF-8 (as Rust's str::from_utf8): no overlong forms, no surrogates, nothing above
// U+10FFFF. Returns the offset of the first bad byte, or npos.
std::size_t first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) { ++i; continue; }
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;                 // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }    // no overlong 3-byte forms
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) { len = 3; hi = 0x9F; }    // no UTF-16 surrogates
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }    // no overlong 4-byte forms
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }    // nothing above U+10FFFF
    else return i;
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

// IEEE binary16 -> binary32, exactly (every half is a float). Layout: 1 sign, 5 exponent
// (bias 15), 10 mantissa bits. NaN payloads are kept, shifted into the float's mantissa.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  std::uint32_t bits;
  if (exponent == 0x1F) {                          // Inf or NaN
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {                      // normal: rebias 15 -> 127
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {                      // signed zero
    bits = sign;
  } else {                                         // subnormal half: normal as a float
    std::uint32_t e = 113;                         // 2^-14 is float exponent 113 (127 - 14)
    while ((mantissa & 0x400u) == 0) {             // shift until the implicit 1 appears
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// bfloat16 is the top half of a float32.
float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

template <class T>
T load_le(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string hex_byte(char c) {
  static constexpr char digits[] = "0123456789ABCDEF";
  const auto b = static_cast<unsigned char>(c);
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}
}  // namespace

std::size_t dtype_size(Dtype dtype) { return info(dtype).size; }
std::string_view dtype_name(Dtype dtype) { return info(dtype).name; }
std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const DtypeInfo& d : kDtypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

// ---- SafetensorsFile ---------------------------------------------------------------------------

void SafetensorsFile::check_new_name(const std::string& name, const char* what) const {
  check<ValueError>(first_invalid_utf8(name) == std::string_view::npos,
                    "SafetensorsFile: expected a UTF-8 ", what, " name, got invalid bytes in ", in_quotes(name));
  check<ValueError>(name != "__metadata__", "SafetensorsFile: expected a ", what,
                    " name other than '__metadata__', which the format reserves for metadata");
  check<ValueError>(!tensor_index_.contains(name) && !alias_target_.contains(name),
                    "SafetensorsFile: expected a new ", what, " name, got ", in_quotes(name),
                    ", which is already ", tensor_index_.contains(name) ? "a tensor" : "an alias");
}

void SafetensorsFile::add_raw(std::string name, Dtype dtype, Shape shape, std::vector<std::uint8_t> bytes) {
  check_new_name(name, "tensor");
  const auto expected = byte_count(shape, dtype_size(dtype));
  check<ValueError>(expected.has_value() && *expected == bytes.size(), "SafetensorsFile: expected ",
                    expected ? std::to_string(*expected) : std::string("an impossible number of"),
                    " bytes for tensor ", in_quotes(name), " (", dtype_name(dtype), ", shape ", shape,
                    "), got ", bytes.size());
  check<ValueError>(strides_fit(shape), "SafetensorsFile: expected tensor ", in_quotes(name),
                    "'s non-zero dimensions to multiply to less than 2^63, got shape ", shape);
  tensor_index_.emplace(name, tensors_.size());
  tensors_.push_back(TensorRecord{std::move(name), dtype, std::move(shape), std::move(bytes)});
}

void SafetensorsFile::add(std::string name, const Array& values) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(values.data());
  add_raw(std::move(name), Dtype::F32, values.shape(),
          std::vector<std::uint8_t>(p, p + values.size() * sizeof(float)));
}

void SafetensorsFile::add(std::string name, const IndexArray& values) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(values.data());
  add_raw(std::move(name), Dtype::I64, Shape(values.shape().begin(), values.shape().end()),
          std::vector<std::uint8_t>(p, p + values.size() * sizeof(std::int64_t)));
}

void SafetensorsFile::add_alias(std::string alias, std::string target) {
  check_new_name(alias, "alias");
  check<ValueError>(tensor_index_.contains(target), "SafetensorsFile: expected the alias ", in_quotes(alias),
                    " to name a tensor of the file, got ", in_quotes(target),
                    alias_target_.contains(target) ? ", which is itself an alias" : ", which is not there");
  alias_target_.emplace(alias, target);
  aliases_.emplace_back(std::move(alias), std::move(target));
}

void SafetensorsFile::set_metadata(std::string key, std::string value) {
  check<ValueError>(first_invalid_utf8(key) == std::string_view::npos &&
                        first_invalid_utf8(value) == std::string_view::npos,
                    "SafetensorsFile: expected UTF-8 metadata, got invalid bytes in the entry ", in_quotes(key));
  if (const auto it = metadata_index_.find(key); it != metadata_index_.end()) {
    metadata_[it->second].second = std::move(value);
    return;
  }
  metadata_index_.emplace(key, metadata_.size());
  metadata_.emplace_back(std::move(key), std::move(value));
}

bool SafetensorsFile::contains(std::string_view name) const {
  const std::string key(name);
  return tensor_index_.contains(key) || alias_target_.contains(key);
}

bool SafetensorsFile::has_tensor(std::string_view name) const {
  return tensor_index_.contains(std::string(name));
}

const TensorRecord& SafetensorsFile::record(std::string_view name) const {
  std::string key(name);
  if (auto a = alias_target_.find(key); a != alias_target_.end()) key = a->second;
  const auto it = tensor_index_.find(key);
  check<ValueError>(it != tensor_index_.end(), "SafetensorsFile: expected a tensor named ", in_quotes(name),
                    ", got no such tensor or alias among ", tensors_.size(), " tensors and ",
                    aliases_.size(), " aliases");
  return tensors_[it->second];
}

Array SafetensorsFile::to_float(std::string_view name) const {
  const TensorRecord& r = record(name);
  Array out = Array::from_shape(r.shape);
  float* dst = out.data();
  const std::uint8_t* src = r.bytes.data();
  const std::size_t n = out.size();
  switch (r.dtype) {
    case Dtype::F32:
      if (n != 0) std::memcpy(dst, src, n * sizeof(float));
      break;
    case Dtype::F64:    // round to nearest; beyond float's range gives +-Inf (IEEE), as torch
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load_le<double>(src + 8 * i));
      break;
    case Dtype::F16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = half_to_float(load_le<std::uint16_t>(src + 2 * i));
      break;
    case Dtype::BF16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = bfloat16_to_float(load_le<std::uint16_t>(src + 2 * i));
      break;
    default:
      detail::raise<TypeError>("load_safetensors: expected tensor ", in_quotes(name),
                               " to be a float tensor (F32, F64, F16 or BF16), got dtype ",
                               dtype_name(r.dtype), "; tapegrad converts only floating-point data to float32");
  }
  return out;
}

IndexArray SafetensorsFile::to_int64(std::string_view name) const {
  const TensorRecord& r = record(name);
  check<TypeError>(r.dtype == Dtype::I64, "load_safetensors: expected tensor ", in_quotes(name),
                   " to be an integer tensor of dtype I64, got dtype ", dtype_name(r.dtype));
  IndexArray out = IndexArray::from_shape(r.shape);
  if (out.size() != 0) std::memcpy(out.data(), r.bytes.data(), out.size() * sizeof(std::int64_t));
  return out;
}

std::optional<std::string> SafetensorsFile::metadata_value(std::string_view key) const {
  const auto it = metadata_index_.find(std::string(key));
  if (it == metadata_index_.end()) return std::nullopt;
  return metadata_[it->second].second;
}

// ---- writer ------------------------------------------------------------------------------------
//
// 1. A tied group (a tensor and its aliases) is written once, under its smallest name; every
//    other name becomes a metadata entry "other": "kept" (safetensors' save_model convention).
// 2. Tensors sorted by dtype descending, then name bytewise; offsets assigned back to back.
// 3. Header: compact JSON, "__metadata__" first (keys sorted) when non-empty, then the tensors in
//    data order with keys dtype, shape, data_offsets; padded with spaces to a multiple of 8.
// The header is the concatenation of small ordered_json dumps: the same text as dumping one
// ordered_json object, without ordered_map's linear-time insertion per key.

namespace {
std::string serialize(const SafetensorsFile& file, const char* version) {
  using ordered_json = nlohmann::ordered_json;
  struct Written {
    std::string name;
    const TensorRecord* record;
  };
  std::map<std::string, std::vector<std::string>> group_of;   // target -> its aliases
  for (const auto& [alias, target] : file.aliases()) group_of[target].push_back(alias);

  std::vector<Written> written;
  std::map<std::string, std::string> metadata;                 // sorted by key, bytewise
  for (const TensorRecord& r : file.tensors()) {
    std::string kept = r.name;
    const auto g = group_of.find(r.name);
    if (g != group_of.end()) {
      for (const std::string& a : g->second) kept = std::min(kept, a);
      if (kept != r.name) metadata.emplace(r.name, kept);
      for (const std::string& a : g->second)
        if (a != kept) metadata.emplace(a, kept);
    }
    written.push_back({std::move(kept), &r});
  }
  // User metadata, then the version stamp, must not collide with a tied name nor look like one.
  const std::set<std::string> tied_names = [&] {
    std::set<std::string> names;
    for (const auto& entry : metadata) names.insert(entry.first);
    return names;
  }();
  std::set<std::string> written_names;
  for (const Written& w : written) written_names.insert(w.name);
  const auto add_entry = [&](const std::string& key, const std::string& value) {
    check<ValueError>(!tied_names.contains(key), "save_safetensors: expected metadata keys other "
                      "than the names of tied tensors, got ", in_quotes(key), "; rename the entry");
    check<ValueError>(written_names.contains(key) || !written_names.contains(value),
                      "save_safetensors: expected metadata that cannot be mistaken for a tied tensor, "
                      "got ", in_quotes(key), ": ", in_quotes(value), ", which would read back as an alias of "
                      "tensor ", in_quotes(value), "; use add_alias for tied tensors");
    metadata[key] = value;
  };
  for (const auto& [key, value] : file.metadata())
    if (version == nullptr || key != "tapegrad.version") add_entry(key, value);
  if (version != nullptr) add_entry("tapegrad.version", version);

  std::sort(written.begin(), written.end(), [](const Written& a, const Written& b) {
    if (a.record->dtype != b.record->dtype) return a.record->dtype > b.record->dtype;
    return a.name < b.name;
  });

  const auto json_string = [](const std::string& s) { return ordered_json(s).dump(); };
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [k, v] : metadata) {
      if (header.back() != '{') header += ',';
      header += json_string(k) + ':' + json_string(v);
    }
    header += '}';
  }
  std::uint64_t offset = 0;
  for (const Written& w : written) {
    const std::uint64_t end = offset + w.record->bytes.size();
    ordered_json entry = ordered_json::object();
    entry["dtype"] = std::string(dtype_name(w.record->dtype));
    entry["shape"] = ordered_json::array();
    for (std::size_t d : w.record->shape) entry["shape"].push_back(static_cast<std::uint64_t>(d));
    entry["data_offsets"] = {offset, end};
    if (header.size() > 1) header += ',';
    header += json_string(w.name) + ':' + entry.dump();
    offset = end;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + header.size() + offset);
  const std::uint64_t n = header.size();
  out.append(reinterpret_cast<const char*>(&n), 8);
  out += header;
  for (const Written& w : written)
    out.append(reinterpret_cast<const char*>(w.record->bytes.data()), w.record->bytes.size());
  return out;
}
}  // namespace

std::string serialize_safetensors(const SafetensorsFile& file) { return serialize(file, nullptr); }

// ---- reader ------------------------------------------------------------------------------------

namespace {
constexpr std::uint64_t kMaxHeaderSize = 100'000'000;

// Builds "load_safetensors: 'file': Kind: message[; zip hint]" and throws it.
class Reader {
 public:
  Reader(std::string_view bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  template <class... Parts>
  [[noreturn]] void fail(const char* kind, const Parts&... parts) const {
    std::ostringstream os;
    os.precision(10);
    os << "load_safetensors: " << in_quotes(source_) << ": " << kind << ": ";
    (detail::append(os, parts), ...);
    if (bytes_.substr(0, 2) == "PK")
      os << "; this looks like a torch.save archive (a zip file); tapegrad reads safetensors only";
    throw CheckpointError(os.str(), kind);
  }

 private:
  std::string_view bytes_, source_;
};

// A JSON value in a message: short, on one line.
std::string excerpt(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// A valid header nests three deep: the object, a tensor entry, its shape or offsets array.
struct TooDeep {};

// What the parser callback learns while nlohmann builds the DOM (which keeps only the last of
// two equal keys, silently): the first duplicate key, and in which object.
struct DuplicateKey {
  std::string key, object;   // object: "" for the top level, else the entry's name
};

struct Entry {
  std::string name;
  Dtype dtype;
  Shape shape;
  std::uint64_t begin, end;
};

bool is_offset_pair(const nlohmann::json& j) {
  return j.is_array() && j.size() == 2 && j[0].is_number_unsigned() && j[1].is_number_unsigned();
}
}  // namespace

SafetensorsFile parse_safetensors(std::string_view bytes, std::string_view source) {
  using json = nlohmann::json;
  const Reader reader(bytes, source);

  // 1-3: the length prefix and the header's extent.
  if (bytes.size() < 8)
    reader.fail("HeaderTooSmall", "expected at least 8 bytes (the header length), got ", bytes.size());
  const auto n = load_le<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()));
  if (n > kMaxHeaderSize)
    reader.fail("HeaderTooLarge", "expected a header length of at most ", kMaxHeaderSize,
                " bytes, got ", n);
  if (n > bytes.size() - 8)
    reader.fail("InvalidHeaderLength", "expected the ", n, "-byte header to fit in the file after "
                "its 8-byte length, got a file of ", bytes.size(), " bytes");
  const std::string_view header = bytes.substr(8, n);

  // 4: UTF-8.
  if (const std::size_t bad = first_invalid_utf8(header); bad != std::string_view::npos)
    reader.fail("InvalidHeader", "expected a UTF-8 header, got the invalid byte ",
                hex_byte(header[bad]), " at header byte ", bad);

  // 5-6: JSON, its structure, and no key twice in any object.
  if (header.substr(0, 3) == "\xEF\xBB\xBF")      // nlohmann skips a byte-order mark; JSON forbids it
    reader.fail("InvalidHeaderDeserialization", "expected a JSON object, got a byte-order mark first");
  std::vector<std::set<std::string>> open_keys;      // one set per object being parsed
  std::vector<std::string> object_names;             // its entry name ("" for the top level)
  std::string last_key;
  std::optional<DuplicateKey> duplicate;
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
        if (!open_keys.back().insert(last_key).second && !duplicate)
          duplicate = DuplicateKey{last_key, object_names.back()};
        break;
      case json::parse_event_t::object_end:
        open_keys.pop_back();
        object_names.pop_back();
        break;
      default:
        break;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(header.begin(), header.end(), watch);
  } catch (const TooDeep&) {
    reader.fail("InvalidHeaderDeserialization", "expected a header nested at most 3 deep "
                "(object, tensor entry, shape array), got deeper nesting");
  } catch (const json::exception& e) {
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    reader.fail("InvalidHeaderDeserialization", "expected a JSON object, got text that is not JSON (", why, ")");
  }
  if (!root.is_object())
    reader.fail("InvalidHeaderDeserialization", "expected a JSON object, got a ", root.type_name());

  SafetensorsFile file;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<Entry> entries;
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      if (!value.is_object())
        reader.fail("InvalidHeaderDeserialization", "expected __metadata__ to map strings to "
                    "strings, got a ", value.type_name());
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          reader.fail("InvalidHeaderDeserialization", "expected __metadata__ to map strings to "
                      "strings, got a ", v.type_name(), " for key ", in_quotes(k), ": ", excerpt(v));
        metadata.emplace_back(k, v.get<std::string>());
      }
      continue;
    }
    if (!value.is_object())
      reader.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name), " to be an "
                  "object with dtype, shape and data_offsets, got a ", value.type_name());
    const auto dtype = value.find("dtype"), shape = value.find("shape"),
               offsets = value.find("data_offsets");
    if (dtype == value.end() || !dtype->is_string())
      reader.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name),
                  " to have a string dtype, got ", dtype == value.end() ? "none" : excerpt(*dtype));
    const auto known = dtype_from_name(dtype->get_ref<const std::string&>());
    if (!known)
      reader.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name), " to have a "
                  "dtype tapegrad knows (BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32 F32 F64 "
                  "I64 U64), got unknown dtype ", excerpt(*dtype));
    if (shape == value.end() || !shape->is_array() ||
        !std::all_of(shape->begin(), shape->end(), [](const json& d) { return d.is_number_unsigned(); }))
      reader.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name), " to have a "
                  "shape of non-negative integers, got ", shape == value.end() ? "none" : excerpt(*shape));
    if (offsets == value.end() || !is_offset_pair(*offsets))
      reader.fail("InvalidHeaderDeserialization", "expected tensor ", in_quotes(name), " to have "
                  "data_offsets of two non-negative integers, got ",
                  offsets == value.end() ? "none" : excerpt(*offsets));
    Shape dims;
    for (const json& d : *shape) dims.push_back(d.get<std::uint64_t>());
    entries.push_back(Entry{name, *known, std::move(dims), (*offsets)[0].get<std::uint64_t>(),
                            (*offsets)[1].get<std::uint64_t>()});
  }
  if (duplicate) {
    if (duplicate->object.empty())
      reader.fail("InvalidHeaderDeserialization", "expected each tensor name once, got ",
                  in_quotes(duplicate->key), " twice");
    reader.fail("InvalidHeaderDeserialization", "expected each key once in ",
                duplicate->object == "__metadata__" ? std::string("__metadata__") : "tensor " + in_quotes(duplicate->object),
                ", got ", in_quotes(duplicate->key), " twice");
  }

  // 7-9, tensor by tensor in offset order (as the reference does): the data are packed back to
  // back from 0, nothing overflows, and each range holds exactly numel * dtype size bytes.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t expected_begin = 0;
  for (const Entry& e : entries) {
    if (e.begin != expected_begin)
      reader.fail("InvalidOffset", "expected tensor ", in_quotes(e.name), " to start at byte ",
                  expected_begin, ", got ", e.begin);
    if (e.end < e.begin)
      reader.fail("InvalidOffset", "expected tensor ", in_quotes(e.name), " to end at or after its "
                  "start ", e.begin, ", got ", e.end);
    expected_begin = e.end;
    const auto size = byte_count(e.shape, dtype_size(e.dtype));
    if (!size)
      reader.fail("ValidationOverflow", "expected tensor ", in_quotes(e.name), "'s size in bytes to fit "
                  "in 64 bits, got shape ", e.shape, " of ", dtype_name(e.dtype));
    if (!strides_fit(e.shape))   // the reference accepts (0, 2^62, 2); xtensor cannot lay it out
      reader.fail("ValidationOverflow", "expected tensor ", in_quotes(e.name), "'s non-zero dimensions "
                  "to multiply to less than 2^63, got shape ", e.shape);
    if (e.end - e.begin != *size)
      reader.fail("TensorInvalidInfo", "expected tensor ", in_quotes(e.name), " (", dtype_name(e.dtype),
                  ", shape ", e.shape, ") to span ", *size, " bytes, got data_offsets [", e.begin,
                  ", ", e.end, "] (", e.end - e.begin, " bytes)");
  }

  // 10: the data buffer ends exactly where the last tensor does. Compared by subtraction:
  // 8 + N + END could wrap around for a hostile END near 2^64.
  const std::uint64_t data_size = bytes.size() - 8 - n;
  if (expected_begin != data_size)
    reader.fail("MetadataIncompleteBuffer", "expected ", expected_begin, " bytes of tensor data "
                "after the header (the last tensor's end), got ", data_size);

  // Every check passed: every range lies inside the buffer. Copy the tensors out.
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data()) + 8 + n;
  for (Entry& e : entries)
    file.add_raw(std::move(e.name), e.dtype, std::move(e.shape),
                 std::vector<std::uint8_t>(data + e.begin, data + e.end));

  // SPEC 2.13.2 item 6: an entry whose key is not a tensor and whose value is names a tied copy.
  // ("__metadata__" cannot name a tensor, so such an entry stays metadata.)
  for (auto& [key, value] : metadata) {
    if (!file.has_tensor(key) && file.has_tensor(value) && key != "__metadata__")
      file.add_alias(std::move(key), std::move(value));
    else
      file.set_metadata(std::move(key), std::move(value));
  }
  return file;
}

// ---- files -------------------------------------------------------------------------------------

namespace {
[[noreturn]] void io_fail(std::string_view where, std::string_view path, std::string_view what, int err) {
  std::ostringstream os;
  os << where << ": " << in_quotes(path) << ": " << what;
  if (err != 0) os << ": " << std::strerror(err);
  throw CheckpointError(os.str(), "IoError");
}

// The temporary file of one write: closed and removed unless commit() renamed it into place.
class TemporaryFile {
 public:
  TemporaryFile(std::string_view where, const std::string& target) : where_(where), target_(target) {
    static std::atomic<unsigned> counter{0};
    const std::filesystem::path t(target);
    check<ValueError>(t.has_filename(), where, ": expected a file path, got ", in_quotes(target),
                      ", which names a folder");
    dir_ = t.has_parent_path() ? t.parent_path().string() : std::string(".");
    for (int attempt = 0; fd_ < 0; ++attempt) {
      // Hidden, and short enough for NAME_MAX whatever the target's name.
      path_ = (std::filesystem::path(dir_) / ("." + t.filename().string().substr(0, 200) + ".tmp-" +
               std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && (errno != EEXIST || attempt > 100))
        io_fail(where_, target_, "cannot create a temporary file in its folder", errno);
    }
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  void write_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t w = ::write(fd_, bytes.data(), bytes.size());
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) io_fail(where_, target_, "cannot write", errno);
      bytes.remove_prefix(static_cast<std::size_t>(w));
    }
  }

  // fsync, close, rename over the target, fsync the folder so the rename itself is durable.
  void commit() {
    if (::fsync(fd_) != 0) io_fail(where_, target_, "cannot flush to disk", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) io_fail(where_, target_, "cannot close the temporary file", errno);
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      io_fail(where_, target_, "cannot replace the file", errno);
    committed_ = true;
    const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) io_fail(where_, target_, "written, but cannot open its folder to sync it", errno);
    const int synced = ::fsync(dir_fd), err = errno;
    ::close(dir_fd);
    if (synced != 0 && err != EINVAL)             // EINVAL: the file system cannot sync folders
      io_fail(where_, target_, "written, but cannot sync its folder", err);
  }

 private:
  std::string where_, target_, dir_, path_;
  int fd_ = -1;
  bool committed_ = false;
};
}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes, std::string_view where) {
  TemporaryFile temp(where, path);
  temp.write_all(bytes);
  temp.commit();
}

std::string read_file(const std::string& path, std::string_view where) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) io_fail(where, path, "cannot open", errno);
  struct stat st {};
  std::string out;
  int err = 0;
  const char* what = "cannot read";
  if (::fstat(fd, &st) != 0) {
    err = errno;
  } else if (!S_ISREG(st.st_mode)) {
    what = S_ISDIR(st.st_mode) ? "expected a file, got a folder" : "expected a regular file, got a "
                                                                    "device, pipe or socket";
  } else {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    for (;;) {                                    // until end of file: the size is only a hint
      if (got == out.size()) out.resize(std::max<std::size_t>(2 * out.size(), 4096));
      const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) { err = errno; break; }
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
  }
  ::close(fd);
  if (err != 0 || !S_ISREG(st.st_mode)) io_fail(where, path, what, err);
  return out;
}

void save_safetensors(const std::string& path, const SafetensorsFile& file) {
  write_file_atomic(path, serialize(file, TAPEGRAD_VERSION), "save_safetensors");
}

SafetensorsFile load_safetensors(const std::string& path) {
  return parse_safetensors(read_file(path, "load_safetensors"), path);
}

// ---- the JSON texts of optimizer and scheduler checkpoints (src/io/json_text.hpp) ---------------
//
// Kept here so that nlohmann/json stays in one file. The readers get text from a hostile file:
// nesting is bounded (nlohmann's parser recurses) and every value's type is checked before use.

namespace json_text {
namespace {
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// JSON has no NaN or infinities; nlohmann would write them as null, which reads back as nothing.
ordered_json number_to_json(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  return x;                                        // shortest text that reads back as x
}

std::optional<double> number_from_json(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

template <class... Parts>
[[noreturn]] void invalid(const std::string& where, const Parts&... parts) {
  std::ostringstream os;
  os.precision(10);
  os << where << ": InvalidCheckpoint: ";
  (detail::append(os, parts), ...);
  throw CheckpointError(os.str(), "InvalidCheckpoint");
}

// Parses `text`, refusing nesting deeper than `max_depth` containers.
json parse_bounded(std::string_view text, int max_depth, const std::string& where, const char* what) {
  const json::parser_callback_t bound = [max_depth](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth)
      throw TooDeep{};
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), bound);
  } catch (const TooDeep&) {
    invalid(where, "expected ", what, " nested at most ", max_depth, " deep, got deeper nesting");
  } catch (const json::exception& e) {
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    invalid(where, "expected ", what, " as JSON text, got text that is not JSON (", why, ")");
  }
}
}  // namespace

std::string param_groups_to_json(const std::vector<optim::ParamGroupState>& groups) {
  ordered_json out = ordered_json::array();
  for (const optim::ParamGroupState& g : groups) {
    ordered_json entry = ordered_json::object();
    for (const auto& [key, value] : g.options) {
      if (const auto* x = std::get_if<double>(&value)) {
        entry[key] = number_to_json(*x);
      } else if (const auto* flag = std::get_if<bool>(&value)) {
        entry[key] = *flag;
      } else {
        ordered_json list = ordered_json::array();
        for (double item : std::get<std::vector<double>>(value)) list.push_back(number_to_json(item));
        entry[key] = std::move(list);
      }
    }
    entry["params"] = ordered_json::array();
    for (std::size_t id : g.params) entry["params"].push_back(static_cast<std::uint64_t>(id));
    out.push_back(std::move(entry));
  }
  return out.dump();
}

std::vector<optim::ParamGroupState> param_groups_from_json(std::string_view text, const std::string& where) {
  // [ {key: number | bool | [numbers], ..., "params": [ids]} ]: a list, objects, lists inside.
  const json root = parse_bounded(text, 3, where, "param_groups");
  if (!root.is_array())
    invalid(where, "expected param_groups to be a JSON list of groups, got a ", root.type_name());
  std::vector<optim::ParamGroupState> groups;
  for (std::size_t g = 0; g < root.size(); ++g) {
    const json& entry = root[g];
    if (!entry.is_object())
      invalid(where, "expected param_groups[", g, "] to be a JSON object, got a ", entry.type_name());
    optim::ParamGroupState group;
    bool has_params = false;
    for (const auto& [key, value] : entry.items()) {
      if (key == "params") {
        if (!value.is_array() ||
            !std::all_of(value.begin(), value.end(), [](const json& id) { return id.is_number_unsigned(); }))
          invalid(where, "expected param_groups[", g, "].params to be a list of parameter ids (integers >= 0), got ",
                  excerpt(value));
        for (const json& id : value) group.params.push_back(id.get<std::uint64_t>());
        has_params = true;
      } else if (value.is_boolean()) {
        group.options[key] = value.get<bool>();
      } else if (const auto x = number_from_json(value)) {
        group.options[key] = *x;
      } else if (value.is_array()) {
        std::vector<double> list;
        for (const json& item : value) {
          const auto y = number_from_json(item);
          if (!y)
            invalid(where, "expected param_groups[", g, "].", key, " to be a list of numbers, got ", excerpt(value));
          list.push_back(*y);
        }
        group.options[key] = std::move(list);
      } else {
        invalid(where, "expected param_groups[", g, "].", key, " to be a number, true/false or a list of numbers, got ",
                excerpt(value));
      }
    }
    if (!has_params) invalid(where, "expected param_groups[", g, "] to have \"params\", got none");
    groups.push_back(std::move(group));
  }
  return groups;
}

std::string lambda_lr_to_json(const optim::LambdaLRState& state) {
  ordered_json out = ordered_json::object();
  out["base_lrs"] = ordered_json::array();
  for (double x : state.base_lrs) out["base_lrs"].push_back(number_to_json(x));
  out["last_epoch"] = state.last_epoch;
  return out.dump();
}

optim::LambdaLRState lambda_lr_from_json(std::string_view text, const std::string& where) {
  // {"base_lrs": [numbers], "last_epoch": integer}; other keys (PyTorch's "_step_count",
  // "_last_lr", ...) are not state tapegrad needs, and are ignored.
  const json root = parse_bounded(text, 3, where, "lr_scheduler");
  if (!root.is_object())
    invalid(where, "expected lr_scheduler to be a JSON object, got a ", root.type_name());
  const auto epoch = root.find("last_epoch"), base = root.find("base_lrs");
  if (epoch == root.end() || !epoch->is_number_integer() ||
      (epoch->is_number_unsigned() && epoch->get<std::uint64_t>() > std::uint64_t(INT64_MAX)))
    invalid(where, "expected lr_scheduler.last_epoch to be a 64-bit integer, got ",
            epoch == root.end() ? std::string("none") : excerpt(*epoch));
  if (base == root.end() || !base->is_array())
    invalid(where, "expected lr_scheduler.base_lrs to be a list of numbers, got ",
            base == root.end() ? std::string("none") : excerpt(*base));
  optim::LambdaLRState state;
  state.last_epoch = epoch->get<std::int64_t>();
  for (const json& item : *base) {
    const auto x = number_from_json(item);
    if (!x) invalid(where, "expected lr_scheduler.base_lrs to be a list of numbers, got ", excerpt(*base));
    state.base_lrs.push_back(*x);
  }
  return state;
}

}  // namespace json_text

}  // namespace tapegrad::io
