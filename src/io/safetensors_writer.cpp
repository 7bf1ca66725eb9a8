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
// reference's bytes); save_safetensors() adds "tapegrad.version", for each tensor its CRC-32C as
// "tapegrad.crc32c.{name}" and for every other metadata entry (the version and the alias entries
// included) the CRC-32C of its value as "tapegrad.metadata_crc32c.{key}" (checksums.hpp),
// replacing any checksum entries of the file.
#include "tapegrad/io/safetensors.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "file_formats.hpp"
#include "tapegrad/core/atomic_file.hpp"
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

// A stored tensor and the name it is written under.
struct Written {
  std::string name;
  const TensorRecord* record;
};

// 1. Each tensor under the smallest name of its tied group; the group's other names become
// metadata entries "other": "kept", added to `metadata`.
std::vector<Written> written_names(const SafetensorsFile& file,
                                   std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::vector<std::string>> group_of;  // target -> its aliases
  for (const auto& [alias, target] : file.aliases()) group_of[target].push_back(alias);
  std::vector<Written> written;
  for (const TensorRecord& r : file.tensors()) {
    std::string kept = r.name;
    if (const auto g = group_of.find(r.name); g != group_of.end()) {
      for (const std::string& a : g->second) kept = std::min(kept, a);
      if (kept != r.name) metadata.emplace(r.name, kept);
      for (const std::string& a : g->second)
        if (a != kept) metadata.emplace(a, kept);
    }
    written.push_back({std::move(kept), &r});
  }
  for (const auto& [name, kept] : metadata)  // the reader takes such keys for checksums
    check<ValueError>(!is_any_checksum_key(name),
                      "save_safetensors: expected tied tensor names that do not start with ",
                      in_quotes(kChecksumPrefix), " or ", in_quotes(kMetadataChecksumPrefix),
                      ", got ", in_quotes(name), "; rename the tensor");
  return written;
}

// The header's "__metadata__", sorted by key, built entry by entry with the checks that make it
// read back as written: an entry is never mistaken for a tie nor collides with one, and a
// checksum entry names what it covers and holds what the reader accepts.
class MetadataBuilder {
 public:
  MetadataBuilder(std::map<std::string, std::string> alias_entries,
                  const std::vector<Written>& written)
      : entries_(std::move(alias_entries)) {
    for (const auto& entry : entries_) tied_.insert(entry.first);
    for (const Written& w : written) written_.insert(w.name);
  }

  // A caller's entry: plain metadata, or a checksum entry kept as the file holds it.
  void add(const std::string& key, const std::string& value) {
    if (is_checksum_key(key)) return add_checksum(key, value);
    if (is_metadata_checksum_key(key)) return add_metadata_checksum(key, value);
    check<ValueError>(
        !tied_.contains(key),
        "save_safetensors: expected metadata keys other than the names of tied tensors, got ",
        in_quotes(key), "; rename the entry");
    check<ValueError>(
        written_.contains(key) || !written_.contains(value),
        "save_safetensors: expected metadata that cannot be mistaken for a tied tensor, got ",
        in_quotes(key), ": ", in_quotes(value), ", which would read back as an alias of tensor ",
        in_quotes(value), "; use add_alias for tied tensors");
    entries_[key] = value;
  }

  // A tensor's checksum: it must name a written tensor and hold 8 lowercase hex digits, or the
  // reader would refuse the file.
  void add_checksum(const std::string& key, const std::string& value) {
    check<ValueError>(
        written_.contains(key.substr(kChecksumPrefix.size())) && parse_checksum(value),
        "save_safetensors: expected a checksum entry to name a tensor of the file and hold 8 "
        "lowercase hex digits, got ",
        in_quotes(key), ": ", in_quotes(value));
    entries_[key] = value;
  }

  // A metadata entry's checksum, kept as given; which entry it names is checked by finish().
  void add_metadata_checksum(const std::string& key, const std::string& value) {
    check<ValueError>(parse_checksum(value).has_value(),
                      "save_safetensors: expected a metadata checksum entry to hold 8 lowercase "
                      "hex digits, got ",
                      in_quotes(key), ": ", in_quotes(value));
    entries_[key] = value;
  }

  // A fresh checksum for every entry that is not a checksum itself (save_safetensors).
  void add_metadata_checksums() {
    std::vector<std::pair<std::string, std::string>> fresh;
    for (const auto& [key, value] : entries_)
      if (!is_any_checksum_key(key))
        fresh.emplace_back(metadata_checksum_key(key), checksum_text(crc32c(value)));
    for (auto& [key, value] : fresh) entries_[std::move(key)] = std::move(value);
  }

  // The entries, once every metadata checksum names an entry that is not a checksum.
  std::map<std::string, std::string> finish() && {
    for (const auto& [key, value] : entries_) {
      if (!is_metadata_checksum_key(key)) continue;
      const std::string covered = key.substr(kMetadataChecksumPrefix.size());
      check<ValueError>(entries_.contains(covered) && !is_any_checksum_key(covered),
                        "save_safetensors: expected a metadata checksum entry to name a metadata "
                        "entry of the file, got ",
                        in_quotes(key));
    }
    return std::move(entries_);
  }

 private:
  std::map<std::string, std::string> entries_;  // sorted by key, bytewise
  std::set<std::string> tied_, written_;
};

// 2. The metadata: the file's entries (without its checksums when fresh ones are written), then,
// with a version (save_safetensors), the version stamp and every checksum, fresh.
std::map<std::string, std::string> metadata_of(const SafetensorsFile& file,
                                               std::map<std::string, std::string> alias_entries,
                                               const std::vector<Written>& written,
                                               const char* version) {
  MetadataBuilder metadata(std::move(alias_entries), written);
  for (const auto& [key, value] : file.metadata())
    if (version == nullptr || (key != "tapegrad.version" && !is_any_checksum_key(key)))
      metadata.add(key, value);
  if (version != nullptr) {
    metadata.add("tapegrad.version", version);
    for (const Written& w : written)
      metadata.add_checksum(checksum_key(w.name), checksum_text(crc32c(w.record->bytes().data(),
                                                                       w.record->bytes().size())));
    metadata.add_metadata_checksums();
  }
  return std::move(metadata).finish();
}

// 3. The header: compact JSON, "__metadata__" first when non-empty, then the tensors in data
// order (dtype descending, then name) with offsets back to back; padded with spaces to a
// multiple of 8 bytes and preceded by its length. The concatenation of small ordered_json dumps
// is the text of dumping one ordered_json object, without ordered_map's linear-time insertion.
Layout header_and_order(std::vector<Written> written,
                        const std::map<std::string, std::string>& metadata) {
  using ordered_json = nlohmann::ordered_json;
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

// `version`: null for the reference's bytes, else tapegrad's version, written with a checksum
// for every tensor and every metadata entry.
Layout layout(const SafetensorsFile& file, const char* version) {
  std::map<std::string, std::string> alias_entries;
  std::vector<Written> written = written_names(file, alias_entries);
  const auto metadata = metadata_of(file, std::move(alias_entries), written, version);
  return header_and_order(std::move(written), metadata);
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
  AtomicFile out(path, "save_safetensors", &kSafetensorsFormat);
  out.write(l.head);
  for (const TensorRecord* r : l.data)
    out.write({reinterpret_cast<const char*>(r->bytes().data()), r->bytes().size()});
  out.commit();
}

void write_file_atomic(const std::string& path, std::string_view bytes, std::string_view where) {
  AtomicFile::write_whole(path, bytes, where, format_of_bytes(bytes));
}

}  // namespace tapegrad::io
