// src/io/safetensors_writer.cpp: a SafetensorsFile as the reference writer (huggingface/
// safetensors) lays it out, byte for byte:
//   1. a tied group (a tensor and its aliases) is written once, under its smallest name; every
//      other name becomes a metadata entry "other": "kept" (safetensors' save_model convention);
//   2. tensors sorted by dtype descending (the Dtype enum's order), then by name bytewise, their
//      offsets assigned back to back from 0;
//   3. the header: compact JSON, "__metadata__" first (keys sorted) when non-empty, then the
//      tensors in data order with keys dtype, shape, data_offsets; padded with spaces to a
//      multiple of 8 bytes, and preceded by its length as a little-endian uint64.
// serialize_safetensors() adds nothing to the metadata (the golden-byte tests need exactly the
// reference's bytes); save_safetensors() adds "tapegrad.version" and, for each tensor, its
// CRC-32C as "tapegrad.crc32c.{name}" (checksums.hpp), replacing any such entries of the file.
#include "tapegrad/io/safetensors.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "atomic_file.hpp"
#include "checkpoint_errors.hpp"
#include "checksums.hpp"
#include "tapegrad/io/crc32c.hpp"

namespace tapegrad::io {

namespace {
// What is written: the length prefix and header, then each record's bytes in this order.
struct Layout {
  std::string head;                       // 8-byte length N, then the N-byte header
  std::vector<const TensorRecord*> data;  // in file order
};

// The header is the concatenation of small ordered_json dumps: the same text as dumping one
// ordered_json object, without ordered_map's linear-time insertion per key. `version`: null for
// the reference's bytes, else tapegrad's version, written with a checksum for every tensor.
Layout layout(const SafetensorsFile& file, const char* version) {
  using ordered_json = nlohmann::ordered_json;
  struct Written {
    std::string name;
    const TensorRecord* record;
  };
  std::map<std::string, std::vector<std::string>> group_of;  // target -> its aliases
  for (const auto& [alias, target] : file.aliases()) group_of[target].push_back(alias);

  std::vector<Written> written;
  std::map<std::string, std::string> metadata;  // sorted by key, bytewise
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
  for (const auto& [name, kept] : metadata)  // the reader takes such keys for checksums
    check<ValueError>(!is_checksum_key(name),
                      "save_safetensors: expected tied tensor names that do not start with ",
                      in_quotes(kChecksumPrefix), ", got ", in_quotes(name), "; rename the tensor");
  // User metadata, then the version stamp, must not collide with a tied name nor look like one.
  const std::set<std::string> tied_names = [&] {
    std::set<std::string> names;
    for (const auto& entry : metadata) names.insert(entry.first);
    return names;
  }();
  std::set<std::string> written_names;
  for (const Written& w : written) written_names.insert(w.name);
  // A checksum entry must name a written tensor and hold 8 lowercase hex digits, or the reader
  // would refuse the file; it is never mistaken for a tie.
  const auto add_checksum = [&](const std::string& key, const std::string& value) {
    check<ValueError>(
        written_names.contains(key.substr(kChecksumPrefix.size())) && parse_checksum(value),
        "save_safetensors: expected a checksum entry to name a tensor of the file and hold 8 "
        "lowercase hex digits, got ",
        in_quotes(key), ": ", in_quotes(value));
    metadata[key] = value;
  };
  const auto add_entry = [&](const std::string& key, const std::string& value) {
    if (is_checksum_key(key)) return add_checksum(key, value);
    check<ValueError>(
        !tied_names.contains(key),
        "save_safetensors: expected metadata keys other than the names of tied tensors, got ",
        in_quotes(key), "; rename the entry");
    check<ValueError>(
        written_names.contains(key) || !written_names.contains(value),
        "save_safetensors: expected metadata that cannot be mistaken for a tied tensor, got ",
        in_quotes(key), ": ", in_quotes(value), ", which would read back as an alias of tensor ",
        in_quotes(value), "; use add_alias for tied tensors");
    metadata[key] = value;
  };
  for (const auto& [key, value] : file.metadata())
    if (version == nullptr || (key != "tapegrad.version" && !is_checksum_key(key)))
      add_entry(key, value);
  if (version != nullptr) {
    add_entry("tapegrad.version", version);
    for (const Written& w : written)
      add_checksum(checksum_key(w.name),
                   checksum_text(crc32c(w.record->bytes().data(), w.record->bytes().size())));
  }

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
  Layout out;
  std::uint64_t offset = 0;
  for (const Written& w : written) {
    const std::uint64_t end = offset + w.record->bytes().size();
    ordered_json entry = ordered_json::object();
    entry["dtype"] = std::string(dtype_name(w.record->dtype));
    entry["shape"] = ordered_json::array();
    for (std::size_t d : w.record->shape) entry["shape"].push_back(static_cast<std::uint64_t>(d));
    entry["data_offsets"] = {offset, end};
    if (header.size() > 1) header += ',';
    header += json_string(w.name) + ':' + entry.dump();
    offset = end;
    out.data.push_back(w.record);
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');

  const std::uint64_t n = header.size();
  out.head.assign(reinterpret_cast<const char*>(&n), 8);
  out.head += header;
  return out;
}
}  // namespace

std::string serialize_safetensors(const SafetensorsFile& file) {
  const Layout l = layout(file, nullptr);
  std::size_t size = l.head.size();
  for (const TensorRecord* r : l.data) size += r->bytes().size();
  std::string out;
  out.reserve(size);
  out += l.head;
  for (const TensorRecord* r : l.data)
    out.append(reinterpret_cast<const char*>(r->bytes().data()), r->bytes().size());
  return out;
}

void save_safetensors(const std::string& path, const SafetensorsFile& file) {
  const Layout l = layout(file, TAPEGRAD_VERSION);
  AtomicFile out(path, "save_safetensors", l.head);
  out.write(l.head);
  for (const TensorRecord* r : l.data)
    out.write({reinterpret_cast<const char*>(r->bytes().data()), r->bytes().size()});
  out.commit();
}

}  // namespace tapegrad::io
