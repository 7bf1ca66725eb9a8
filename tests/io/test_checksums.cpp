// tests/io/test_checksums.cpp: CRC-32C and the checksums tapegrad's writer stores in
// "__metadata__" ("tapegrad.crc32c.{name}" for each tensor, "tapegrad.metadata_crc32c.{key}" for
// each other entry): the standard check values, what the writer stores, a flipped byte anywhere
// in any tensor refused naming that tensor, an edited, added or renamed metadata entry refused
// naming the entry, files without checksums (PyTorch's, safetensors', older tapegrad's) loading
// as before, malformed checksum entries refused, and NumPy plus an independent CRC-32C in Python
// agreeing with the file.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <tapegrad/io/crc32c.hpp>
#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "scratch.hpp"

using namespace tapegrad;
using namespace tapegrad::io;
using tapegrad::testing::read_bytes;
using tapegrad::testing::scratch_dir;
using tapegrad::testing::write_bytes;

namespace {
// The bitwise definition, one bit at a time: the reference the table-driven code must match.
std::uint32_t crc32c_bitwise(const std::string& bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

std::string hex8(std::uint32_t v) {
  char s[9];
  std::snprintf(s, sizeof s, "%08x", v);
  return s;
}

// Three tensors (F32, I64, and an F32 with a tie), as save_safetensors writes them.
SafetensorsFile small_file() {
  SafetensorsFile f;
  f.add("emb.weight", Array{{0.5f, -1.f, 2.f}, {1e-8f, 3e38f, -0.f}});
  f.add("state.0.step", IndexArray(std::int64_t{12345678901}));
  f.add("bias", Array{1.f, 2.f, 3.f});
  f.add_alias("out.weight", "emb.weight");
  return f;
}

// Where each tensor's bytes lie in a file written by serialize/save (its header read back).
struct Span {
  std::string name;
  std::size_t begin, end;  // absolute file offsets
};
std::vector<Span> data_spans(const std::string& bytes) {
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const SafetensorsFile f = parse_safetensors(bytes);
  std::vector<Span> spans;
  std::size_t at = 8 + n;
  for (const TensorRecord& r : f.tensors()) {  // after reading: data order
    spans.push_back({r.name, at, at + r.bytes().size()});
    at += r.bytes().size();
  }
  return spans;
}

// `bytes` with the first occurrence of `from` replaced by `to`, of the same length (the header
// keeps its length, so only the checksums can tell).
std::string edited(std::string bytes, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  const std::size_t at = bytes.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return bytes.replace(at, from.size(), to);
}

CheckpointError refusal(const std::string& bytes) {
  try {
    parse_safetensors(bytes, "model.safetensors");
  } catch (const CheckpointError& e) {
    return e;
  }
  FAIL("the file was accepted");
  return CheckpointError("", "");
}
}  // namespace

TEST_SUITE("io.checksums") {
  TEST_CASE("crc32c gives the standard check value and the iSCSI test vectors") {
    CHECK(crc32c("123456789") == 0xE3069283u);
    CHECK(crc32c("") == 0u);
    CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);  // RFC 3720, B.4
    CHECK(crc32c(std::string(32, '\xFF')) == 0x62A8AB43u);
    std::string ascending(32, '\0');
    for (int i = 0; i < 32; ++i) ascending[std::size_t(i)] = char(i);
    CHECK(crc32c(ascending) == 0x46DD794Eu);
  }

  TEST_CASE("crc32c matches the bitwise definition for every length and alignment, and chains") {
    std::string bytes;
    for (int i = 0; i < 300; ++i) bytes += char((i * 131 + 7) & 0xFF);
    for (std::size_t start = 0; start < 9; ++start)
      for (std::size_t len = 0; start + len <= bytes.size(); len += 7) {
        const std::string piece = bytes.substr(start, len);
        REQUIRE_MESSAGE(crc32c(piece) == crc32c_bitwise(piece),
                        "start " << start << " length " << len);
      }
    for (std::size_t cut = 0; cut <= bytes.size(); cut += 13)
      CHECK(crc32c(bytes.substr(cut), crc32c(bytes.substr(0, cut))) == crc32c(bytes));
  }

  TEST_CASE("save_safetensors stores each tensor's CRC-32C, serialize_safetensors stores none") {
    const auto dir = scratch_dir("checksums_written");
    const std::string path = (dir / "f.safetensors").string();
    save_safetensors(path, small_file());
    const SafetensorsFile g = load_safetensors(path);
    for (const TensorRecord& r : g.tensors()) {
      const std::string bytes(reinterpret_cast<const char*>(r.bytes().data()), r.bytes().size());
      CHECK(g.metadata_value("tapegrad.crc32c." + r.name) == hex8(crc32c(bytes)));
    }
    CHECK(g.tensors().size() == 3);
    CHECK_FALSE(g.metadata_value("tapegrad.crc32c.out.weight"));  // an alias has no data of its own
    CHECK(g.aliases() ==
          std::vector<std::pair<std::string, std::string>>{{"out.weight", "emb.weight"}});
    // The low-level form writes the reference's bytes: no checksum, no version.
    const SafetensorsFile h = parse_safetensors(serialize_safetensors(small_file()));
    for (const auto& [key, value] : h.metadata()) CHECK(key.rfind("tapegrad.", 0) != 0);
    // Reading a checked file and writing it again with the low-level form gives its bytes.
    CHECK(serialize_safetensors(g) == read_bytes(path));
  }

  TEST_CASE("a flipped byte anywhere in any tensor's data is refused, naming that tensor") {
    const auto dir = scratch_dir("checksums_flipped");
    const std::string path = (dir / "f.safetensors").string();
    save_safetensors(path, small_file());
    const std::string good = read_bytes(path);
    const std::vector<Span> spans = data_spans(good);
    REQUIRE(spans.size() == 3);
    int refused = 0;
    for (const Span& s : spans)
      for (std::size_t at = s.begin; at < s.end; ++at)
        for (const unsigned char flip : {0x01, 0x80, 0xFF}) {
          std::string bad = good;
          bad[at] = char(static_cast<unsigned char>(bad[at]) ^ flip);
          const CheckpointError e = refusal(bad);
          CHECK(e.kind == "ChecksumMismatch");
          const std::string what = e.what();
          CHECK_MESSAGE(what.find("load_safetensors: 'model.safetensors': ChecksumMismatch: "
                                  "expected the bytes of tensor '" +
                                  s.name + "'") == 0,
                        what);
          ++refused;
        }
    CHECK(refused == 3 * (24 + 8 + 12));
    // Through io::load, a damaged model file leaves the model as it was.
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1)),
        other(nn::LinearOptions(3, 2));
    save(model, path);
    std::string bad = read_bytes(path);
    bad[bad.size() - 1] ^= 0x10;  // the last byte of the last tensor
    write_bytes(path, bad);
    const nn::StateDict before = other.state_dict();
    CHECK_THROWS_WITH_AS(
        load(other, path),
        doctest::Contains("ChecksumMismatch: expected the bytes of tensor 'weight'"),
        CheckpointError);
    CHECK(nn::diff_state_dicts(before, other.state_dict()).identical());
  }

  TEST_CASE("the mismatch message gives the stored and the actual checksum") {
    SafetensorsFile f;
    f.add("w", Array{1.f, 2.f});
    f.set_metadata("tapegrad.crc32c.w", "00000000");
    const std::string what = refusal(serialize_safetensors(f)).what();
    const std::string actual = hex8(crc32c(std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8)));
    CHECK_MESSAGE(
        what.find("expected the bytes of tensor 'w' to have the CRC-32C 00000000 stored for it in "
                  "__metadata__, got " +
                  actual + ": the file was damaged after it was written") != std::string::npos,
        what);
  }

  TEST_CASE("a file without checksums loads as before, and one with some checks those it has") {
    // The reference Python writer's fixture has none.
    const std::string fixture =
        std::string(TAPEGRAD_SOURCE_DIR) + "/tests/io/fixtures/reference.safetensors";
    CHECK(load_safetensors(fixture).tensors().size() == 7);
    // A model file as PyTorch's safetensors writes it: no tapegrad entries at all.
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1)),
        other(nn::LinearOptions(3, 2));
    SafetensorsFile plain;
    add_state_dict(plain, model.state_dict());
    plain.set_metadata("format", "pt");
    const auto dir = scratch_dir("checksums_foreign");
    write_bytes(dir / "plain.safetensors", serialize_safetensors(plain));
    load(other, (dir / "plain.safetensors").string());
    CHECK(nn::diff_state_dicts(model.state_dict(), other.state_dict()).identical());
    // A file where only "weight" has a checksum is refused whole, naming "bias": damage to an
    // unchecked tensor would otherwise go unnoticed.
    SafetensorsFile partial;
    add_state_dict(partial, model.state_dict());
    const std::string w = serialize_safetensors(partial);
    const std::vector<Span> spans = data_spans(w);
    const Span& wspan = spans[0].name == "weight" ? spans[0] : spans[1];
    const Span& bspan = spans[0].name == "bias" ? spans[0] : spans[1];
    partial.set_metadata("tapegrad.crc32c.weight",
                         hex8(crc32c(w.substr(wspan.begin, wspan.end - wspan.begin))));
    std::string checked = serialize_safetensors(partial);
    const std::size_t shift = checked.size() - w.size();  // the longer header moves the data
    std::string bias_damaged = checked, weight_damaged = checked;
    bias_damaged[bspan.begin + shift] ^= 1;
    weight_damaged[wspan.begin + shift] ^= 1;
    CHECK(std::string(refusal(checked).what()).find("expected a checksum entry "
                                                    "'tapegrad.crc32c.bias' for tensor 'bias'") !=
          std::string::npos);
    CHECK(refusal(bias_damaged).kind == "ChecksumMismatch");
    CHECK(refusal(weight_damaged).kind == "ChecksumMismatch");
  }

  TEST_CASE(
      "a checksum entry naming no tensor, or not 8 lowercase hex digits, is "
      "InvalidHeaderDeserialization") {
    const std::string one = std::string("\x00\x00\x80\x3f", 4);  // 1.0f
    const std::string good_crc = hex8(crc32c(one));
    // Tensor "w" = [1.0], alias "z" of it, and one more metadata entry, by hand.
    const auto file_with = [&](const std::string& key, const std::string& value) {
      std::string header = R"({"__metadata__":{"z":"w",")" + key + R"(":")" + value +
                           R"("},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
      std::string n(8, '\0');
      const std::uint64_t size = header.size();
      std::memcpy(n.data(), &size, 8);
      return n + header + one;
    };
    CHECK_NOTHROW(parse_safetensors(file_with("tapegrad.crc32c.w", good_crc)));
    struct Case {
      std::string key, value, phrase;
    };
    for (const Case& c :
         {Case{"tapegrad.crc32c.x", good_crc, "to name a tensor of the file, got no tensor 'x'"},
          Case{"tapegrad.crc32c.z", good_crc, "got no tensor 'z'"},  // an alias holds no data
          Case{"tapegrad.crc32c.", good_crc, "got no tensor ''"},
          Case{"tapegrad.crc32c.w", "ABCDEF01", "8 lowercase hex digits, got 'ABCDEF01'"},
          Case{"tapegrad.crc32c.w", "abcdef0", "got 'abcdef0'"},
          Case{"tapegrad.crc32c.w", "abcdef012", "got 'abcdef012'"},
          Case{"tapegrad.crc32c.w", "0x123456", "got '0x123456'"},
          Case{"tapegrad.crc32c.w", " 1234567", "got ' 1234567'"},
          Case{"tapegrad.crc32c.w", "", "got ''"}}) {
      CAPTURE(c.key);
      CAPTURE(c.value);
      const CheckpointError e = refusal(file_with(c.key, c.value));
      CHECK(e.kind == "InvalidHeaderDeserialization");
      CHECK_MESSAGE(std::string(e.what()).find(c.phrase) != std::string::npos, e.what());
      // The writer refuses to write what the reader would refuse.
      SafetensorsFile f;
      f.add("w", Array{1.f});
      f.add_alias("z", "w");  // stored under "w", the smaller name
      f.set_metadata(c.key, c.value);
      CHECK_THROWS_WITH_AS(serialize_safetensors(f),
                           doctest::Contains("expected a checksum entry to name a tensor"),
                           ValueError);
    }
  }

  TEST_CASE("a checksum entry is never taken for a tie, even when its value names a tensor") {
    // A tensor named like the checksum of another: "tapegrad.crc32c.w": "<crc>" must stay a
    // checksum, not become an alias "tapegrad.crc32c.w" of tensor "<crc>".
    SafetensorsFile f;
    f.add("w", Array{1.f});
    const std::string crc = hex8(crc32c(std::string("\x00\x00\x80\x3f", 4)));
    f.add(crc, Array{2.f});
    const auto dir = scratch_dir("checksums_not_ties");
    save_safetensors((dir / "f.safetensors").string(), f);
    const SafetensorsFile g = load_safetensors((dir / "f.safetensors").string());
    CHECK(g.aliases().empty());
    CHECK(g.metadata_value("tapegrad.crc32c.w") == crc);
    // A tied name that the reader would take for a checksum entry is refused by the writer. (As
    // the name the data is stored under, the smallest of its group, it would be harmless.)
    SafetensorsFile h;
    h.add("a", Array{1.f});
    h.add_alias("tapegrad.crc32c.z", "a");
    CHECK_THROWS_WITH_AS(serialize_safetensors(h),
                         doctest::Contains("expected tied tensor names that do not start with "
                                           "'tapegrad.crc32c.' or 'tapegrad.metadata_crc32c.', "
                                           "got 'tapegrad.crc32c.z'"),
                         ValueError);
  }

  TEST_CASE(
      "save_safetensors stores the CRC-32C of every metadata entry's value: the caller's, the "
      "version, the tied names") {
    const auto dir = scratch_dir("checksums_metadata_written");
    const std::string path = (dir / "f.safetensors").string();
    SafetensorsFile f = small_file();
    f.set_metadata("note", "hello");
    f.set_metadata("tapegrad.metadata_crc32c.note", "00000000");  // replaced by a fresh one
    save_safetensors(path, f);
    const SafetensorsFile g = load_safetensors(path);
    CHECK(g.metadata_value("tapegrad.metadata_crc32c.note") == hex8(crc32c("hello")));
    CHECK(g.metadata_value("tapegrad.metadata_crc32c.tapegrad.version") ==
          hex8(crc32c(*g.metadata_value("tapegrad.version"))));
    CHECK(g.metadata_value("tapegrad.metadata_crc32c.out.weight") == hex8(crc32c("emb.weight")));
    int covered = 0;
    for (const auto& [key, value] : g.metadata()) {
      if (key.rfind("tapegrad.crc32c.", 0) == 0 || key.rfind("tapegrad.metadata_crc32c.", 0) == 0)
        continue;
      CHECK_MESSAGE(g.metadata_value("tapegrad.metadata_crc32c." + key) == hex8(crc32c(value)),
                    key);
      ++covered;
    }
    CHECK(covered == 2);  // note, tapegrad.version (the alias is in aliases(), covered above)
    CHECK_FALSE(g.metadata_value("tapegrad.metadata_crc32c.tapegrad.crc32c.bias"));
    // serialize_safetensors adds none, and gives back the bytes of a file it read.
    const SafetensorsFile h = parse_safetensors(serialize_safetensors(small_file()));
    for (const auto& [key, value] : h.metadata()) CHECK(key.rfind("tapegrad.", 0) != 0);
    CHECK(serialize_safetensors(g) == read_bytes(path));
  }

  TEST_CASE(
      "a tensor whose checksum entry was removed, in a file whose other tensors keep theirs, is "
      "refused naming the tensor") {
    SafetensorsFile f;
    f.add("a", Array{1.f, 2.f});
    f.add("bias", Array{3.f, 4.f});
    const std::string path = (scratch_dir("checksums_tensor_entry_removed") / "f.safetensors").string();
    save_safetensors(path, f);
    const auto saved = load_safetensors(path);
    REQUIRE(saved.metadata_value("tapegrad.crc32c.bias"));
    // The same file with one value of bias changed and bias's checksum entry gone: every other
    // checksum (a's, and every metadata entry's) still holds.
    SafetensorsFile forged;
    forged.add("a", Array{1.f, 2.f});
    forged.add("bias", Array{3.f, 5.f});
    for (const auto& [key, value] : saved.metadata())
      if (key != "tapegrad.crc32c.bias") forged.set_metadata(key, value);
    const CheckpointError e = refusal(serialize_safetensors(forged));
    CHECK(e.kind == "ChecksumMismatch");
    CHECK_MESSAGE(std::string(e.what()).find(
                      "ChecksumMismatch: expected a checksum entry 'tapegrad.crc32c.bias' for "
                      "tensor 'bias', as the file's other tensors have, got none: the entry was "
                      "removed after the file was written") != std::string::npos,
                  e.what());
    // Without any tensor checksum (PyTorch's files) nothing is required.
    SafetensorsFile plain;
    plain.add("a", Array{1.f, 2.f});
    CHECK_NOTHROW(parse_safetensors(serialize_safetensors(plain)));
  }

  TEST_CASE(
      "an edited, added or renamed metadata entry is refused as ChecksumMismatch naming the "
      "entry") {
    const auto dir = scratch_dir("checksums_metadata_edited");
    const std::string path = (dir / "f.safetensors").string();
    SafetensorsFile f = small_file();
    f.set_metadata("note", "hello");
    save_safetensors(path, f);
    const std::string good = read_bytes(path);
    CHECK_NOTHROW(parse_safetensors(good));
    struct Case {
      std::string from, to, phrase;
    };
    for (const Case& c : {
             Case{"\"hello\"", "\"hellO\"",
                  "expected the value of __metadata__ entry 'note' to have the CRC-32C " +
                      hex8(crc32c("hello")) + " stored for it, got " + hex8(crc32c("hellO")) +
                      ": the entry was changed after the file was written"},
             Case{"\"tapegrad.version\":\"", "\"tapegrad.version\":\"9",
                  "expected the value of __metadata__ entry 'tapegrad.version'"},
             // A tie redirected to another tensor of the same name length.
             Case{"\"out.weight\":\"emb.weight\"", "\"out.weight\":\"emb.weighT\"",
                  "expected the value of __metadata__ entry 'out.weight'"},
         }) {
      CAPTURE(c.from);
      std::string bad = c.from.size() == c.to.size() ? edited(good, c.from, c.to) : good;
      if (c.from.size() != c.to.size()) {  // a longer value: rewrite through the API instead
        SafetensorsFile g = parse_safetensors(good);
        g.set_metadata("tapegrad.version", "9" + *g.metadata_value("tapegrad.version"));
        bad = serialize_safetensors(g);
      }
      const CheckpointError e = refusal(bad);
      CHECK(e.kind == "ChecksumMismatch");
      CHECK_MESSAGE(std::string(e.what()).find("load_safetensors: 'model.safetensors': "
                                               "ChecksumMismatch: " +
                                               c.phrase) == 0,
                    e.what());
    }
    // An entry added after the save, or one renamed (its checksum then names no entry).
    SafetensorsFile added = parse_safetensors(good);
    added.set_metadata("extra", "x");
    CHECK_MESSAGE(
        std::string(refusal(serialize_safetensors(added)).what())
                .find("ChecksumMismatch: expected a checksum for __metadata__ entry "
                      "'extra', as for the file's other entries, got none") != std::string::npos,
        "");
    const CheckpointError renamed = refusal(edited(good, "\"note\"", "\"nope\""));
    CHECK(renamed.kind == "InvalidHeaderDeserialization");
    CHECK_MESSAGE(std::string(renamed.what())
                          .find("expected the metadata checksum entry "
                                "'tapegrad.metadata_crc32c.note' to name a metadata entry of the "
                                "file, got no entry 'note'") != std::string::npos,
                  renamed.what());
    // save_safetensors writes fresh checksums: the edit is then the file's content.
    SafetensorsFile resaved = parse_safetensors(good);
    resaved.set_metadata("note", "edited on purpose");
    save_safetensors(path, resaved);
    CHECK(load_safetensors(path).metadata_value("note") == "edited on purpose");
  }

  TEST_CASE(
      "a training checkpoint with an edited setting, note or counter is refused, naming the "
      "entry") {
    const auto dir = scratch_dir("checksums_metadata_run");
    const std::string path = (dir / "run.safetensors").string();
    nn::Linear model(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
    optim::Adam opt(model.parameters(), optim::AdamOptions(0.1));
    TrainingCheckpoint ckpt(model, opt);
    ckpt.save(path, TrainingProgress(0, 0, {{"gpt.n_head", "2"}, {"gpt.gelu", "none"}}));
    const std::string good = read_bytes(path);
    for (const auto& [from, to, key] :
         {std::tuple<std::string, std::string, std::string>{
              "gpt.n_head\":\"2\"", "gpt.n_head\":\"4\"", "progress.extra.gpt.n_head"},
          {"gpt.gelu\":\"none\"", "gpt.gelu\":\"tanh\"", "progress.extra.gpt.gelu"},
          {"\"progress.data_position\":\"0\"", "\"progress.data_position\":\"7\"",
           "progress.data_position"},
          {R"(lr\":0.1)", R"(lr\":0.9)", "optim.0.param_groups"}}) {
      CAPTURE(key);
      write_bytes(path, edited(good, from, to));
      CHECK_THROWS_WITH_AS(ckpt.load(path),
                           doctest::Contains(("ChecksumMismatch: expected the value of "
                                              "__metadata__ entry '" +
                                              key + "'")
                                                 .c_str()),
                           CheckpointError);
    }
  }

  TEST_CASE(
      "a metadata checksum entry naming no entry, naming a checksum, or not 8 lowercase hex "
      "digits is InvalidHeaderDeserialization") {
    const std::string one = std::string("\x00\x00\x80\x3f", 4);  // 1.0f
    const auto file_with = [&](const std::string& key, const std::string& value) {
      std::string header = R"({"__metadata__":{"note":"hi","tapegrad.crc32c.w":")" +
                           hex8(crc32c(one)) + R"(",")" + key + R"(":")" + value +
                           R"("},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
      std::string n(8, '\0');
      const std::uint64_t size = header.size();
      std::memcpy(n.data(), &size, 8);
      return n + header + one;
    };
    CHECK_NOTHROW(
        parse_safetensors(file_with("tapegrad.metadata_crc32c.note", hex8(crc32c("hi")))));
    struct Case {
      std::string key, value, phrase;
    };
    for (const Case& c :
         {Case{"tapegrad.metadata_crc32c.x", hex8(crc32c("hi")), "got no entry 'x'"},
          Case{"tapegrad.metadata_crc32c.tapegrad.crc32c.w", "00000000",
               "got no entry 'tapegrad.crc32c.w'"},
          Case{"tapegrad.metadata_crc32c.w", "00000000", "got no entry 'w'"},
          Case{"tapegrad.metadata_crc32c.note", "ABCDEF01",
               "8 lowercase hex digits, got 'ABCDEF01'"},
          Case{"tapegrad.metadata_crc32c.note", "", "got ''"}}) {
      CAPTURE(c.key);
      CAPTURE(c.value);
      const CheckpointError e = refusal(file_with(c.key, c.value));
      CHECK(e.kind == "InvalidHeaderDeserialization");
      CHECK_MESSAGE(std::string(e.what()).find(c.phrase) != std::string::npos, e.what());
      // The writer refuses to write what the reader would refuse.
      SafetensorsFile f;
      f.add("w", Array{1.f});
      f.set_metadata("note", "hi");
      f.set_metadata(c.key, c.value);
      CHECK_THROWS_WITH_AS(serialize_safetensors(f), doctest::Contains("metadata checksum entry"),
                           ValueError);
    }
  }

  TEST_CASE(
      "a file with tensor checksums and no metadata checksums (an older tapegrad's) loads as "
      "before") {
    SafetensorsFile f;
    f.add("w", Array{1.f});
    f.set_metadata("note", "anything");
    f.set_metadata("tapegrad.version", "0.1.0");
    f.set_metadata("tapegrad.crc32c.w", hex8(crc32c(std::string("\x00\x00\x80\x3f", 4))));
    const SafetensorsFile g = parse_safetensors(serialize_safetensors(f));
    CHECK(g.metadata_value("note") == "anything");
  }

  TEST_CASE("Python with NumPy and its own CRC-32C reads the file and agrees with every checksum") {
    if (!tapegrad::testing::python_with_numpy()) {
      MESSAGE("skipped: /usr/bin/python3 with numpy is not available");
      return;
    }
    const auto dir = scratch_dir("checksums_python");
    nn::Linear model(nn::LinearOptions(4, 3), std::make_shared<Generator>(3));
    TrainingCheckpoint(model).save((dir / "run.safetensors").string(), {7});
    save_safetensors((dir / "small.safetensors").string(), small_file());
    write_bytes(dir / "check.py", R"PY(
import json, struct, sys
import numpy as np
def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF
assert crc32c(b"123456789") == 0xE3069283
types = {"F32": "<f4", "I64": "<i8"}
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    n, = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__")
    assert all(isinstance(v, str) for v in meta.values()), meta
    buf = data[8 + n:]
    for name, e in header.items():
        b, end = e["data_offsets"]
        np.frombuffer(buf[b:end], dtype=types[e["dtype"]]).reshape(e["shape"])   # plain safetensors data
        assert meta["tapegrad.crc32c." + name] == "%08x" % crc32c(buf[b:end]), name
    checked = [k for k in meta if k.startswith("tapegrad.crc32c.")]
    assert len(checked) == len(header), (checked, list(header))
    entries = [k for k in meta if not k.startswith(("tapegrad.crc32c.", "tapegrad.metadata_crc32c."))]
    for k in entries:
        assert meta["tapegrad.metadata_crc32c." + k] == "%08x" % crc32c(meta[k].encode()), k
    assert len(meta) == len(header) + 2 * len(entries), sorted(meta)
    print(path.split("/")[-1], len(header), "tensors checked")
)PY");
    const std::string cmd = "/usr/bin/python3 " + (dir / "check.py").string() + " " +
                            (dir / "small.safetensors").string() + " " +
                            (dir / "run.safetensors").string() + " > " +
                            (dir / "out.txt").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    const std::string said = read_bytes(dir / "out.txt");
    CHECK_MESSAGE(rc == 0, "python said: " << said);
    CHECK(said.find("small.safetensors 3 tensors checked") != std::string::npos);
    CHECK(said.find("run.safetensors 2 tensors checked") != std::string::npos);
  }

}  // TEST_SUITE
