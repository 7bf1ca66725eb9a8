// tests/io/test_safetensors.cpp: the safetensors writer (golden bytes of the reference writer),
// the reader's ten checks (a hand-made file for each failure), dtype conversion, tied aliases,
// the atomic file write, a fixture in the reference layout, and NumPy reading tapegrad's files.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "scratch.hpp"

using namespace tapegrad;
using namespace tapegrad::io;
using tapegrad::testing::bit_equal;
using tapegrad::testing::folder_listing;
using tapegrad::testing::read_bytes;
using tapegrad::testing::scratch_dir;
using tapegrad::testing::write_bytes;

namespace {
std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

// A file by hand: the length prefix, the header exactly as given, then the data.
std::string file_of(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

template <class T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

std::vector<std::uint8_t> raw(const std::string& s) { return {s.begin(), s.end()}; }

// The CheckpointError a parse throws (the test fails if it throws nothing).
CheckpointError rejection(const std::string& bytes) {
  try {
    parse_safetensors(bytes, "model.safetensors");
  } catch (const CheckpointError& e) {
    return e;
  }
  FAIL("the file was accepted");
  return CheckpointError("", "");
}

// Checks the kind and a phrase of the message (printed when the phrase is missing).
void check_rejected(const std::string& bytes, const std::string& kind, const std::string& phrase) {
  const CheckpointError e = rejection(bytes);
  CHECK(e.kind == kind);
  const std::string what = e.what();
  CHECK_MESSAGE(what.find(phrase) != std::string::npos, "message: " << what);
  CHECK_MESSAGE(what.find("load_safetensors: 'model.safetensors': " + kind + ": ") == 0,
                "message: " << what);
}

const std::string kOneTensor = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
}  // namespace

TEST_SUITE("io.safetensors") {
  // ---- writer: the reference's golden bytes (safetensors/src/tensor.rs tests) ------------------

  TEST_CASE("the writer reproduces the reference's bytes for one F32 tensor of shape (1, 2, 3)") {
    SafetensorsFile f;
    f.add("attn.0", Array{{{0.f, 1.f, 2.f}, {3.f, 4.f, 5.f}}});
    const std::string header =
        R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
    REQUIRE(header.size() == 64);
    const std::string data(
        "\x00\x00\x00\x00\x00\x00\x80\x3F\x00\x00\x00\x40\x00\x00\x40\x40"
        "\x00\x00\x80\x40\x00\x00\xA0\x40",
        24);
    const std::string expected = std::string("\x40\x00\x00\x00\x00\x00\x00\x00", 8) + header + data;
    CHECK(serialize_safetensors(f) == expected);
  }

  TEST_CASE(
      "the writer pads the header with spaces to a multiple of 8 (attn0, shape (1, 1, 2, 3))") {
    SafetensorsFile f;
    f.add("attn0", Array{{{{0.f, 1.f, 2.f}, {3.f, 4.f, 5.f}}}});
    const std::string header =
        R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
    REQUIRE(header.size() == 65);
    const std::string out = serialize_safetensors(f);
    CHECK(out.substr(0, 8) == le64(72));
    CHECK(out.substr(8, 72) == header + "       ");
    CHECK(out.size() == 8 + 72 + 24);
  }

  TEST_CASE("an empty file is {} and six spaces, and with metadata it is __metadata__ alone") {
    CHECK(serialize_safetensors(SafetensorsFile()) == le64(8) + "{}      ");
    SafetensorsFile f;
    f.set_metadata("framework", "pt");
    const std::string header = R"({"__metadata__":{"framework":"pt"}})";
    REQUIRE(header.size() == 35);
    CHECK(serialize_safetensors(f) == le64(40) + header + "     ");
  }

  TEST_CASE("tensors are ordered I64 first, then by name bytewise, and metadata keys are sorted") {
    SafetensorsFile f;
    f.add("b", Array{1.f});
    f.add("a.b", Array{2.f});
    f.add("B", Array{3.f});
    f.add("state.0.step", IndexArray(std::int64_t{5}));
    f.set_metadata("zeta", "1");
    f.set_metadata("alpha", "2");
    const std::string out = serialize_safetensors(f);
    const std::string expected_header =
        R"({"__metadata__":{"alpha":"2","zeta":"1"},)"
        R"("state.0.step":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
        R"("B":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
        R"("a.b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},)"
        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[16,20]}})";
    const std::uint64_t n = (expected_header.size() + 7) / 8 * 8;
    CHECK(out.substr(0, 8) == le64(n));
    CHECK(out.substr(8, expected_header.size()) == expected_header);
    CHECK(out.substr(8 + n) == bytes_of<std::int64_t>({5}) + bytes_of<float>({3.f, 2.f, 1.f}));
  }

  TEST_CASE("names and metadata keep UTF-8 as is and escape control characters like serde_json") {
    SafetensorsFile f;
    f.add("emb\xC3\xA9\n\"q\"", Array{1.f});
    const std::string out = serialize_safetensors(f);
    CHECK(out.find("\"emb\xC3\xA9\\n\\\"q\\\"\":") != std::string::npos);
    CHECK(parse_safetensors(out).has_tensor("emb\xC3\xA9\n\"q\""));
  }

  TEST_CASE(
      "a round trip gives the same records, and re-writing a parsed file gives the same bytes") {
    SafetensorsFile f;
    f.add("w", Array{{1.5f, -2.f, 0.f}, {3.f, 4.f, 5.f}});
    f.add("scalar", Array(7.f));
    f.add("none", Array::from_shape({0, 4}));
    f.add("step", IndexArray{3, -1});
    f.add_raw("mask", Dtype::U8, {3}, {1, 0, 1});
    const std::string bytes = serialize_safetensors(f);
    const SafetensorsFile g = parse_safetensors(bytes);
    CHECK(g.tensors().size() == 5);
    CHECK(bit_equal(g.to_float("w"), f.to_float("w")));
    CHECK(g.to_float("scalar").dimension() == 0);
    CHECK(g.to_float("scalar")() == 7.f);
    CHECK(g.to_float("none").shape() == Shape{0, 4});
    CHECK(g.to_int64("step") == IndexArray{3, -1});
    CHECK(std::ranges::equal(g.record("mask").bytes(), std::vector<std::uint8_t>{1, 0, 1}));
    CHECK(serialize_safetensors(g) == bytes);
  }

  TEST_CASE(
      "the writer refuses duplicate, reserved and non-UTF-8 names and data of the wrong size") {
    SafetensorsFile f;
    f.add("w", Array{1.f});
    CHECK_THROWS_WITH_AS(f.add("w", Array{2.f}),
                         doctest::Contains("got 'w', which is already a tensor"), ValueError);
    CHECK_THROWS_WITH_AS(f.add("__metadata__", Array{2.f}), doctest::Contains("reserves"),
                         ValueError);
    CHECK_THROWS_WITH_AS(f.add("bad\xFF", Array{2.f}),
                         doctest::Contains("expected a UTF-8 tensor name"), ValueError);
    CHECK_THROWS_WITH_AS(
        f.add_raw("r", Dtype::F16, {3}, {1, 2, 3}),
        doctest::Contains("expected 6 bytes for tensor 'r' (F16, shape (3,)), got 3"), ValueError);
    CHECK_THROWS_WITH_AS(f.set_metadata("k", "\xC0\xAF"),
                         doctest::Contains("expected UTF-8 metadata"), ValueError);
    CHECK_THROWS_WITH_AS(f.record("nope"), doctest::Contains("expected a tensor named 'nope'"),
                         ValueError);
  }

  // ---- reader: checks 1-10, one hand-made file each -----------------------------------------------

  TEST_CASE("check 1: a file shorter than 8 bytes is HeaderTooSmall") {
    check_rejected("", "HeaderTooSmall", "expected at least 8 bytes (the header length), got 0");
    check_rejected(std::string("\x02\x00\x00\x00\x00\x00\x00", 7), "HeaderTooSmall", "got 7");
  }

  TEST_CASE("check 2: a header length above 100,000,000 is HeaderTooLarge") {
    check_rejected(le64(100'000'001) + "{}", "HeaderTooLarge",
                   "at most 100000000 bytes, got 100000001");
    check_rejected(le64(~std::uint64_t{0}), "HeaderTooLarge", "got 18446744073709551615");
  }

  TEST_CASE("check 3: a header running past the end of the file is InvalidHeaderLength") {
    check_rejected(le64(100) + "{}", "InvalidHeaderLength",
                   "expected the 100-byte header to fit in the file after its 8-byte length, got a "
                   "file of 10 bytes");
    check_rejected(le64(100'000'000), "InvalidHeaderLength", "got a file of 8 bytes");
  }

  TEST_CASE("check 4: a header that is not UTF-8 is InvalidHeader") {
    check_rejected(file_of("{\"\xFF\":1}"), "InvalidHeader", "invalid byte 0xFF at header byte 2");
    check_rejected(file_of("{\"\xC0\xAF\":1}"), "InvalidHeader", "0xC0");          // overlong '/'
    check_rejected(file_of("{\"\xED\xA0\x80\":1}"), "InvalidHeader", "0xED");      // a surrogate
    check_rejected(file_of("{\"\xF4\x90\x80\x80\":1}"), "InvalidHeader", "0xF4");  // above U+10FFFF
    check_rejected(file_of("{\"\xE2\x82\":1}"), "InvalidHeader", "0xE2");          // truncated
  }

  TEST_CASE(
      "check 5: text that is not JSON, or not a JSON object, is InvalidHeaderDeserialization") {
    const std::string kind = "InvalidHeaderDeserialization";
    check_rejected(file_of("{"), kind, "got text that is not JSON");
    check_rejected(file_of("{\"w\":}"), kind, "not JSON");
    check_rejected(file_of("{} x"), kind, "not JSON");        // trailing text
    check_rejected(file_of("{/* c */}"), kind, "not JSON");   // no comments
    check_rejected(file_of("{\"a\":1,}"), kind, "not JSON");  // no trailing comma
    check_rejected(file_of("\xEF\xBB\xBF{}"), kind, "byte-order mark");
    check_rejected(file_of(""), kind, "not JSON");
    check_rejected(file_of("[]"), kind, "expected a JSON object, got a array");
    check_rejected(file_of("3"), kind, "got a number");
    check_rejected(file_of("null"), kind, "got a null");
    check_rejected(file_of("{\"w\":{\"x\":[[1]]}}"), kind, "nested at most 3 deep");
    check_rejected(file_of(std::string(5000, '[') + std::string(5000, ']')), kind,
                   "nested at most 3 deep");
  }

  TEST_CASE(
      "check 5: an entry without a known dtype, a valid shape or two offsets is refused, naming "
      "it") {
    const std::string kind = "InvalidHeaderDeserialization";
    check_rejected(
        file_of(R"({"w":3})"), kind,
        "expected tensor 'w' to be an object with dtype, shape and data_offsets, got a number");
    check_rejected(file_of(R"({"w":{"shape":[],"data_offsets":[0,4]}})"), kind,
                   "tensor 'w' to have a string dtype, got none");
    check_rejected(file_of(R"({"w":{"dtype":5,"shape":[],"data_offsets":[0,4]}})"), kind,
                   "string dtype, got 5");
    check_rejected(file_of(R"({"w":{"dtype":"F4","shape":[],"data_offsets":[0,4]}})"), kind,
                   "got unknown dtype \"F4\"");
    check_rejected(file_of(R"({"w":{"dtype":"C64","shape":[],"data_offsets":[0,8]}})"), kind,
                   "unknown dtype \"C64\"");
    check_rejected(file_of(R"({"w":{"dtype":"f32","shape":[],"data_offsets":[0,4]}})"), kind,
                   "unknown dtype \"f32\"");
    check_rejected(file_of(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})"), kind,
                   "shape of non-negative integers, got none");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})"), kind,
                   "non-negative integers, got [-1]");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[-0],"data_offsets":[0,4]}})"), kind,
                   "got [0]");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})"), kind,
                   "got [1.0]");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,4]}})"), kind,
                   "got [2.5]");
    check_rejected(
        file_of(R"({"w":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})"),
        kind, "non-negative integers");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,4]}})"), kind,
                   "got \"2\"");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0]}})"), kind,
                   "data_offsets of two non-negative integers, got [0]");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,4,8]}})"), kind,
                   "got [0,4,8]");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[-4,0]}})"), kind,
                   "got [-4,0]");
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[]}})"), kind,
                   "data_offsets of two non-negative integers, got none");
  }

  TEST_CASE("check 5: __metadata__ must map strings to strings") {
    const std::string kind = "InvalidHeaderDeserialization";
    check_rejected(file_of(R"({"__metadata__":"pt"})"), kind,
                   "expected __metadata__ to map strings to strings, got a string");
    check_rejected(file_of(R"({"__metadata__":null})"), kind, "got a null");
    check_rejected(file_of(R"({"__metadata__":{"epoch":3}})"), kind,
                   "got a number for key 'epoch': 3");
    check_rejected(file_of(R"({"__metadata__":{"a":["x"]}})"), kind, "got a array for key 'a'");
    check_rejected(file_of(R"({"__metadata__":{"a":null}})"), kind, "got a null for key 'a'");
  }

  TEST_CASE("check 6: a name twice, which JSON parsers keep silently, is refused") {
    const std::string kind = "InvalidHeaderDeserialization";
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                           bytes_of<float>({1.f})),
                   kind, "expected each tensor name once, got 'w' twice");
    check_rejected(
        file_of(R"({"w":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})", "abcd"),
        kind, "expected each key once in tensor 'w', got 'dtype' twice");
    check_rejected(file_of(R"({"__metadata__":{"k":"a","k":"b"}})"), kind,
                   "once in __metadata__, got 'k' twice");
    check_rejected(file_of(R"({"__metadata__":{},"__metadata__":{}})"), kind,
                   "got '__metadata__' twice");
  }

  TEST_CASE(
      "check 7: tensors must be packed back to back from byte 0, each ending after it starts") {
    // The documented message, exactly.
    const std::string gap = file_of(R"({"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]},)"
                                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[28,32]}})",
                                    std::string(32, '\0'));
    CHECK(std::string(rejection(gap).what()) ==
          "load_safetensors: 'model.safetensors': InvalidOffset: expected tensor 'b' to start at "
          "byte 24, got 28");
    check_rejected(
        file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')),
        "InvalidOffset", "expected tensor 'w' to start at byte 0, got 4");
    check_rejected(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                           std::string(8, '\0')),
                   "InvalidOffset",
                   "expected tensor 'b' to start at byte 4, got 0");  // overlapping data
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                           R"("v":{"dtype":"F32","shape":[0],"data_offsets":[4,2]}})",
                           std::string(4, '\0')),
                   "InvalidOffset", "expected tensor 'v' to start at byte 0, got 4");
  }

  TEST_CASE("check 7: a range ending before it starts is InvalidOffset") {
    // Sorted by (begin, end), so the backwards range is reached only once the others fit: a at
    // [0, 4] and b at [4, 2].
    check_rejected(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})",
                           std::string(4, '\0')),
                   "InvalidOffset", "expected tensor 'b' to end at or after its start 4, got 2");
  }

  TEST_CASE("check 8: a size in bytes beyond 64 bits is ValidationOverflow") {
    check_rejected(
        file_of(R"({"w":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,0]}})"),
        "ValidationOverflow",
        "expected the size in bytes of tensor 'w' to fit in 64 bits, got shape "
        "(4611686018427387904, 8) "
        "of F32");
    check_rejected(
        file_of(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})"),
        "ValidationOverflow", "(4611686018427387904,) of F32");  // 2^62 elements * 4 bytes
    // Multiplied left to right like the reference: the 0 comes too late.
    check_rejected(
        file_of(R"({"w":{"dtype":"U8","shape":[4611686018427387904,8,0],"data_offsets":[0,0]}})"),
        "ValidationOverflow", "64 bits");
  }

  TEST_CASE(
      "a shape whose non-zero dimensions multiply past 2^63 is refused although it holds nothing") {
    // The reference accepts [0, 2^62, 2] (0 bytes); xtensor's signed strides would overflow on it.
    check_rejected(
        file_of(R"({"w":{"dtype":"F32","shape":[0,4611686018427387904,2],"data_offsets":[0,0]}})"),
        "ValidationOverflow",
        "expected the non-zero dimensions of tensor 'w' to multiply to less than 2^63, got shape "
        "(0, "
        "4611686018427387904, 2)");
    SafetensorsFile f;
    CHECK_THROWS_WITH_AS(f.add_raw("w", Dtype::U8, {0, std::size_t{1} << 62, 2}, {}),
                         doctest::Contains("multiply to less than 2^63"), ValueError);
    CHECK_FALSE(f.contains("w"));
  }

  TEST_CASE("check 9: a range that does not hold numel * dtype size bytes is TensorInvalidInfo") {
    check_rejected(file_of(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})",
                           std::string(20, '\0')),
                   "TensorInvalidInfo",
                   "expected tensor 'w' (F32, shape (2, 3)) to span 24 bytes, got data_offsets [0, "
                   "20] (20 bytes)");
    check_rejected(
        file_of(R"({"w":{"dtype":"F64","shape":[],"data_offsets":[0,4]}})", std::string(4, '\0')),
        "TensorInvalidInfo", "to span 8 bytes");
  }

  TEST_CASE("check 10: data after the last tensor, or missing data, is MetadataIncompleteBuffer") {
    check_rejected(
        file_of(kOneTensor, std::string(9, '\0')), "MetadataIncompleteBuffer",
        "expected 8 bytes of tensor data after the header (the last tensor's end), got 9");
    check_rejected(file_of(kOneTensor, std::string(7, '\0')), "MetadataIncompleteBuffer", "got 7");
    check_rejected(file_of("{}", "x"), "MetadataIncompleteBuffer", "expected 0 bytes");
  }

  TEST_CASE("the checks run in the documented order: a file failing two reports the earlier one") {
    // Invalid UTF-8 (4) in a header that is also not JSON (5).
    CHECK(rejection(file_of("{\xFF")).kind == "InvalidHeader");
    // A bad shape (5) in a file whose data is also the wrong length (10).
    CHECK(rejection(file_of(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "x"))
              .kind == "InvalidHeaderDeserialization");
    // A duplicate (6) in a file with a gap (7).
    CHECK(rejection(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                            R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            std::string(8, '\0')))
              .kind == "InvalidHeaderDeserialization");
    // A wrong size (9) in a file with trailing data (10).
    CHECK(rejection(file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
                            std::string(9, '\0')))
              .kind == "TensorInvalidInfo");
  }

  TEST_CASE("a zip file (torch.save) gets a hint that tapegrad reads safetensors only") {
    const std::string zip = std::string("PK\x03\x04\x14\x00\x00\x00", 8) + std::string(40, 'z');
    check_rejected(
        zip, "HeaderTooLarge",
        "this looks like a torch.save archive (a zip file); tapegrad reads safetensors only");
    check_rejected("PK\x05\x06", "HeaderTooSmall", "torch.save archive");
    CHECK(std::string(rejection(file_of("[]")).what()).find("torch.save") == std::string::npos);
  }

  // ---- reader: what it accepts --------------------------------------------------------------------

  TEST_CASE(
      "accepted: zero-size and rank-0 tensors, NaN and Inf, {}, trailing spaces and any entry "
      "order") {
    const float nan = std::numeric_limits<float>::quiet_NaN(),
                inf = std::numeric_limits<float>::infinity();
    const std::string header =
        "{ \"z\" : {\"data_offsets\":[12,12],\"shape\":[0,3],\"dtype\":\"F32\"},\n"
        "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]},\"v\":{\"dtype\":\"F32\","
        "\"shape\":[2],\"data_offsets\":[0,8],\"extra\":{\"k\":1}}}   ";
    const SafetensorsFile f =
        parse_safetensors(file_of(header, bytes_of<float>({nan, -inf, 2.5f})));
    REQUIRE(f.tensors().size() == 3);
    CHECK(f.tensors()[0].name == "v");  // data order
    CHECK(f.to_float("z").shape() == Shape{0, 3});
    CHECK(f.to_float("s").dimension() == 0);
    CHECK(f.to_float("s")() == 2.5f);
    CHECK(std::isnan(f.to_float("v")(0)));
    CHECK(f.to_float("v")(1) == -inf);
    CHECK(parse_safetensors(file_of("{}")).tensors().empty());
    CHECK(parse_safetensors(file_of("  {}  \t\r\n")).tensors().empty());
  }

  TEST_CASE("NaN payloads and signed zeros survive a round trip bit for bit") {
    const Array values{std::bit_cast<float>(0x7FC01234u), std::bit_cast<float>(0xFF800001u), -0.f};
    SafetensorsFile f;
    f.add("w", values);
    CHECK(bit_equal(parse_safetensors(serialize_safetensors(f)).to_float("w"), values));
  }

  // ---- dtypes -------------------------------------------------------------------------------------

  TEST_CASE("F64 converts to float32 with rounding to nearest and Inf beyond float's range") {
    SafetensorsFile f;
    f.add_raw("d", Dtype::F64, {2, 2}, raw(bytes_of<double>({1.5, -2.25, 1e300, 0.1})));
    const Array a = f.to_float("d");
    CHECK(a.shape() == Shape{2, 2});
    CHECK(a(0, 0) == 1.5f);
    CHECK(a(0, 1) == -2.25f);
    CHECK(a(1, 0) == std::numeric_limits<float>::infinity());
    CHECK(a(1, 1) == 0.1f);
  }

  TEST_CASE("F16 converts exactly: normals, subnormals, zeros, Inf and NaN") {
    SafetensorsFile f;
    f.add_raw("h", Dtype::F16, {10},
              raw(bytes_of<std::uint16_t>({0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x8000, 0x7C00,
                                           0xFC00, 0x7E00, 0x3555})));
    const Array a = f.to_float("h");
    CHECK(a(0) == 1.f);
    CHECK(a(1) == -2.f);
    CHECK(a(2) == 65504.f);
    CHECK(a(3) == std::ldexp(1.f, -24));     // the smallest subnormal
    CHECK(a(4) == std::ldexp(1023.f, -24));  // the largest subnormal
    CHECK(std::bit_cast<std::uint32_t>(a(5)) == 0x80000000u);
    CHECK(a(6) == std::numeric_limits<float>::infinity());
    CHECK(a(7) == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(a(8)));
    CHECK(a(9) == 0.333251953125f);
  }

  TEST_CASE("F16 conversion agrees with the definition on all 65536 bit patterns") {
    std::vector<std::uint8_t> bytes(2 * 65536);
    for (std::uint32_t h = 0; h < 65536; ++h) {
      bytes[2 * h] = static_cast<std::uint8_t>(h & 0xFF);
      bytes[2 * h + 1] = static_cast<std::uint8_t>(h >> 8);
    }
    SafetensorsFile f;
    f.add_raw("h", Dtype::F16, {65536}, bytes);
    const Array a = f.to_float("h");
    std::size_t wrong = 0;
    for (std::uint32_t h = 0; h < 65536; ++h) {
      const int e = static_cast<int>((h >> 10) & 0x1F), m = static_cast<int>(h & 0x3FF);
      const double sign = (h & 0x8000) ? -1.0 : 1.0;
      const double expected = e == 0    ? sign * std::ldexp(m, -24)
                              : e == 31 ? (m == 0 ? sign * HUGE_VAL : std::nan(""))
                                        : sign * std::ldexp(1024 + m, e - 25);
      const bool ok = std::isnan(expected) ? std::isnan(a(h))
                                           : static_cast<double>(a(h)) == expected &&
                                                 std::signbit(a(h)) == std::signbit(expected);
      if (!ok && wrong++ < 5)
        MESSAGE("half 0x" << std::hex << h << " gave " << a(h) << ", expected " << expected);
    }
    CHECK(wrong == 0);
  }

  TEST_CASE("BF16 converts exactly (the top half of a float32)") {
    SafetensorsFile f;
    f.add_raw("b", Dtype::BF16, {4},
              raw(bytes_of<std::uint16_t>({0x3F80, 0xC0A0, 0x7F80, 0x4049})));
    const Array a = f.to_float("b");
    CHECK(a(0) == 1.f);
    CHECK(a(1) == -5.f);
    CHECK(a(2) == std::numeric_limits<float>::infinity());
    CHECK(a(3) == 3.140625f);
  }

  TEST_CASE(
      "a non-float dtype read as float, or a non-I64 read as integers, is a TypeError naming "
      "both") {
    SafetensorsFile f;
    f.add_raw("ids", Dtype::I32, {2}, raw(bytes_of<std::int32_t>({1, 2})));
    f.add("step", IndexArray(std::int64_t{3}));
    f.add("w", Array{1.f});
    CHECK_THROWS_WITH_AS(f.to_float("ids"),
                         doctest::Contains("expected tensor 'ids' to be a float tensor "
                                           "(F32, F64, F16 or BF16), got dtype I32"),
                         TypeError);
    CHECK_THROWS_WITH_AS(f.to_float("step"), doctest::Contains("got dtype I64"), TypeError);
    CHECK_THROWS_WITH_AS(f.to_int64("w"),
                         doctest::Contains("expected tensor 'w' to be an integer tensor "
                                           "of dtype I64, got dtype F32"),
                         TypeError);
    CHECK(f.to_int64("step")() == 3);
  }

  TEST_CASE("every known dtype name maps to its size and back") {
    const std::vector<std::pair<std::string, std::size_t>> known = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
        {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
    for (const auto& [name, size] : known) {
      const auto d = dtype_from_name(name);
      REQUIRE(d.has_value());
      CHECK(dtype_name(*d) == name);
      CHECK(dtype_size(*d) == size);
    }
    CHECK_FALSE(dtype_from_name("F8_E8M0").has_value());
    CHECK_FALSE(dtype_from_name("F6_E2M3").has_value());
  }

  // ---- tied tensors (safetensors' save_model convention) ------------------------------------------

  TEST_CASE(
      "a tied tensor is stored once, under its smallest name, the other name in __metadata__") {
    SafetensorsFile f;
    f.add("src_embed.lut.weight", Array{{1.f, 2.f}});
    f.add_alias("generator.proj.weight", "src_embed.lut.weight");
    f.add_alias("tgt_embed.lut.weight", "src_embed.lut.weight");
    const std::string bytes = serialize_safetensors(f);
    CHECK(bytes.find(R"("__metadata__":{"src_embed.lut.weight":"generator.proj.weight",)"
                     R"("tgt_embed.lut.weight":"generator.proj.weight"})") != std::string::npos);
    CHECK(bytes.find(
              R"("generator.proj.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]})") !=
          std::string::npos);
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    CHECK(bytes.size() == 8 + n + 8);  // the 8 data bytes, once
    const SafetensorsFile g = parse_safetensors(bytes);
    CHECK(g.tensors().size() == 1);
    CHECK(g.aliases().size() == 2);
    CHECK(g.metadata().empty());
    CHECK(&g.record("src_embed.lut.weight") == &g.record("generator.proj.weight"));
    CHECK(g.to_float("tgt_embed.lut.weight") == Array{{1.f, 2.f}});
    CHECK(serialize_safetensors(g) == bytes);
  }

  TEST_CASE(
      "the reader makes aliases only of entries whose key is not a tensor and whose value is") {
    SafetensorsFile f;
    f.add("w", Array{1.f});
    f.add("v", Array{2.f});
    f.set_metadata("w", "v");        // key is a tensor: plain metadata
    f.set_metadata("format", "pt");  // value is not a tensor: plain metadata
    const SafetensorsFile g = parse_safetensors(serialize_safetensors(f));
    CHECK(g.aliases().empty());
    CHECK(g.metadata_value("w") == "v");
    CHECK(g.metadata_value("format") == "pt");
    // A hand-made file: "b" -> "a" is an alias; "c" -> "b" is not (b is an alias, not a tensor).
    const SafetensorsFile h = parse_safetensors(file_of(
        R"({"__metadata__":{"b":"a","c":"b"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
        bytes_of<float>({4.f})));
    REQUIRE(h.aliases().size() == 1);
    CHECK(h.aliases()[0] == std::pair<std::string, std::string>{"b", "a"});
    CHECK(h.metadata_value("c") == "b");
  }

  TEST_CASE("aliases and metadata that would not read back the same are refused by the writer") {
    SafetensorsFile f;
    f.add("w", Array{1.f});
    CHECK_THROWS_WITH_AS(f.add_alias("v", "nope"),
                         doctest::Contains("got 'nope', which is not there"), ValueError);
    f.add_alias("v", "w");
    CHECK_THROWS_WITH_AS(f.add_alias("u", "v"), doctest::Contains("which is itself an alias"),
                         ValueError);
    CHECK_THROWS_WITH_AS(f.add_alias("v", "w"), doctest::Contains("which is already an alias"),
                         ValueError);
    CHECK_THROWS_WITH_AS(f.add("v", Array{1.f}), doctest::Contains("already an alias"), ValueError);
    SafetensorsFile g = f;
    g.set_metadata("best", "v");  // v is written as the kept name: reads back as an alias
    CHECK_THROWS_WITH_AS(serialize_safetensors(g),
                         doctest::Contains("would read back as an alias of tensor 'v'"),
                         ValueError);
    SafetensorsFile h = f;
    h.set_metadata("w", "x");  // w becomes the tied entry "w": "v"
    CHECK_THROWS_WITH_AS(serialize_safetensors(h),
                         doctest::Contains("other than the names of tied tensors, got 'w'"),
                         ValueError);
  }

  TEST_CASE(
      "an optimizer file in the optimizer layout round trips: I64 steps, F32 moments, JSON text") {
    SafetensorsFile f;
    f.add("state.0.step", IndexArray(std::int64_t{3}));
    f.add("state.0.exp_avg", Array{{0.1f, -0.2f}});
    f.add("state.0.exp_avg_sq", Array{{0.01f, 0.04f}});
    f.set_metadata("optimizer", "Adam");
    f.set_metadata("param_groups", R"([{"lr":0.001,"betas":[0.9,0.98],"params":[0]}])");
    const std::string bytes = serialize_safetensors(f);
    CHECK(bytes.find(R"("param_groups":"[{\"lr\":0.001,\"betas\":[0.9,0.98],\"params\":[0]}]")") !=
          std::string::npos);
    const SafetensorsFile g = parse_safetensors(bytes);
    CHECK(g.tensors()[0].name == "state.0.step");  // I64 data first
    CHECK(g.to_int64("state.0.step").dimension() == 0);
    CHECK(g.to_int64("state.0.step")() == 3);
    CHECK(g.to_float("state.0.exp_avg_sq") == Array{{0.01f, 0.04f}});
    CHECK(g.metadata_value("param_groups") == R"([{"lr":0.001,"betas":[0.9,0.98],"params":[0]}])");
    CHECK(g.metadata_value("optimizer") == "Adam");
  }

  // ---- files on disk ------------------------------------------------------------------------------

  TEST_CASE("save_safetensors stamps tapegrad.version and load_safetensors reads the file back") {
    const auto dir = scratch_dir("save_load");
    const std::string path = (dir / "model.safetensors").string();
    SafetensorsFile f;
    f.add("w", Array{{1.f, 2.f}, {3.f, 4.f}});
    f.set_metadata("tapegrad.version", "0.0.0");  // replaced by the real one
    save_safetensors(path, f);
    const SafetensorsFile g = load_safetensors(path);
    CHECK(g.metadata_value("tapegrad.version") == std::string(TAPEGRAD_VERSION));
    CHECK(g.to_float("w") == Array{{1.f, 2.f}, {3.f, 4.f}});
    CHECK(folder_listing(dir) == std::vector<std::string>{"model.safetensors"});
  }

  TEST_CASE("load_safetensors names the file in every error") {
    const auto dir = scratch_dir("load_errors");
    write_bytes(dir / "short.safetensors", "abc");
    const std::string path = (dir / "short.safetensors").string();
    CHECK_THROWS_WITH_AS(
        load_safetensors(path),
        doctest::Contains(("load_safetensors: '" + path + "': HeaderTooSmall").c_str()),
        CheckpointError);
    const std::string missing = (dir / "missing.safetensors").string();
    CHECK_THROWS_WITH_AS(load_safetensors(missing),
                         doctest::Contains(("load_safetensors: '" + missing +
                                            "': cannot open: No such file or directory")
                                               .c_str()),
                         CheckpointError);
  }

  TEST_CASE("read_file refuses a missing file, a folder and a pipe with kind IoError") {
    const auto dir = scratch_dir("read_file");
    try {
      read_file((dir / "none").string());
      FAIL("read a missing file");
    } catch (const CheckpointError& e) {
      CHECK(e.kind == "IoError");
    }
    CHECK_THROWS_WITH_AS(read_file(dir.string()),
                         doctest::Contains("expected a file, got a folder"), CheckpointError);
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(read_file((dir / "fifo").string()),
                         doctest::Contains("expected a regular file"), CheckpointError);
    write_bytes(dir / "f", std::string("a\0b", 3));
    CHECK(read_file((dir / "f").string()) == std::string("a\0b", 3));
    write_bytes(dir / "empty", "");
    CHECK(read_file((dir / "empty").string()).empty());
  }

  TEST_CASE("write_file_atomic replaces a file and leaves no temporary behind") {
    const auto dir = scratch_dir("atomic_replace");
    const std::string path = (dir / "ckpt.safetensors").string();
    write_file_atomic(path, "old");
    write_file_atomic(path, std::string(100000, 'n'));
    CHECK(read_bytes(path) == std::string(100000, 'n'));
    CHECK(folder_listing(dir) == std::vector<std::string>{"ckpt.safetensors"});
    // A relative path (the current folder) works too.
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir);
    write_file_atomic("relative.bin", "r");
    std::filesystem::current_path(cwd);
    CHECK(read_bytes(dir / "relative.bin") == "r");
  }

  TEST_CASE("a write that fails midway keeps the old file whole and removes its temporary") {
    const auto dir = scratch_dir("atomic_fail");
    const std::string path = (dir / "ckpt.safetensors").string();
    write_file_atomic(path, "the old checkpoint");
    // A file-size limit makes write() fail with EFBIG after 4 KiB, as a full disk would (and it
    // works for root, whom folder permissions do not stop).
    rlimit old_limit{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    rlimit small = old_limit;
    small.rlim_cur = 4096;
    const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::string error, kind;
    try {
      write_file_atomic(path, std::string(1 << 20, 'n'));
    } catch (const CheckpointError& e) {
      error = e.what();
      kind = e.kind;
    }
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    ::signal(SIGXFSZ, old_handler);
    CHECK(kind == "IoError");
    CHECK_MESSAGE(
        error.find("write_file_atomic: '" + path + "': cannot write: File too large") == 0, error);
    CHECK(read_bytes(path) == "the old checkpoint");
    CHECK(folder_listing(dir) == std::vector<std::string>{"ckpt.safetensors"});
  }

  TEST_CASE("a write whose temporary cannot be created names the path and the reason") {
    const auto dir = scratch_dir("atomic_nodir");
    const std::string path = (dir / "missing_folder" / "ckpt.safetensors").string();
    CHECK_THROWS_WITH_AS(
        write_file_atomic(path, "x"),
        doctest::Contains(("'" + path + "': cannot create a temporary file in its folder '" +
                           (dir / "missing_folder").string() + "'").c_str()),
        CheckpointError);
    CHECK_THROWS_WITH_AS(write_file_atomic(path, "x"), doctest::Contains(": No such file"),
                         CheckpointError);
    CHECK_THROWS_WITH_AS(write_file_atomic((dir / "").string(), "x"),
                         doctest::Contains("which names a folder"), ValueError);
  }

  TEST_CASE("a write onto a folder is refused and leaves the folder and no temporary") {
    const auto dir = scratch_dir("atomic_onto_folder");
    std::filesystem::create_directory(dir / "target");
    write_bytes(dir / "target" / "inside", "kept");
    CHECK_THROWS_WITH_AS(write_file_atomic((dir / "target").string(), "x"),
                         doctest::Contains("cannot replace the file: Is a directory"),
                         CheckpointError);
    CHECK(read_bytes(dir / "target" / "inside") == "kept");
    CHECK(folder_listing(dir) == std::vector<std::string>{"target"});
  }

  TEST_CASE("a read-only folder refuses the write and keeps the old file") {
    const auto dir = scratch_dir("atomic_readonly");
    const std::string path = (dir / "ckpt.safetensors").string();
    write_file_atomic(path, "old");
    std::filesystem::permissions(
        dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    if (::access(dir.c_str(), W_OK) == 0) {
      MESSAGE(
          "skipped: running as root, whom a read-only folder does not stop (the EFBIG case covers "
          "it)");
    } else {
      CHECK_THROWS_WITH_AS(write_file_atomic(path, "new"), doctest::Contains("Permission denied"),
                           CheckpointError);
      CHECK(read_bytes(path) == "old");
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    CHECK(folder_listing(dir) == std::vector<std::string>{"ckpt.safetensors"});
  }

  TEST_CASE("a writer killed at any moment leaves the old or the new file whole, never a mix") {
    const auto dir = scratch_dir("atomic_sigkill");
    const std::string path = (dir / "ckpt.safetensors").string();
    SafetensorsFile a, b;
    const auto filled = [](float v) {
      Array x = Array::from_shape({std::size_t{1} << 19});
      x.fill(v);
      return x;
    };
    a.add("w", filled(1.f));
    b.add("w", filled(2.f));
    const std::string bytes_a = serialize_safetensors(a), bytes_b = serialize_safetensors(b);
    write_file_atomic(path, bytes_a);
    int seen_a = 0, seen_b = 0;
    for (int round = 0; round < 8; ++round) {
      const pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {  // keeps replacing the file until killed
        try {
          for (unsigned i = 0;; ++i) write_file_atomic(path, i % 2 ? bytes_a : bytes_b);
        } catch (...) {
          ::_exit(3);
        }
      }
      ::usleep(static_cast<useconds_t>(3000 + 7000 * round));
      ::kill(child, SIGKILL);
      int status = 0;
      ::waitpid(child, &status, 0);
      CHECK(WIFSIGNALED(status));
      const std::string now = read_bytes(path);
      CHECK((now == bytes_a || now == bytes_b));
      seen_a += now == bytes_a;
      seen_b += now == bytes_b;
      CHECK(parse_safetensors(now).to_float("w").size() == std::size_t{1} << 19);
    }
    MESSAGE("after SIGKILL the file held the old/new content " << seen_a << "/" << seen_b
                                                               << " times");
    // A killed writer may leave its hidden temporary behind, never a damaged target.
    for (const std::string& name : folder_listing(dir))
      CHECK((name == "ckpt.safetensors" || name.rfind(".ckpt.safetensors.tmp-", 0) == 0));
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("each fuzzing seed is accepted or refused with the kind its name gives") {
    // tests/fuzz/corpus/safetensors, from tests/fuzz/make_corpus.py: "7_gap" fails check 7, etc.
    const std::map<std::string, std::string> kinds = {{"1", "HeaderTooSmall"},
                                                      {"2", "HeaderTooLarge"},
                                                      {"3", "InvalidHeaderLength"},
                                                      {"4", "InvalidHeader"},
                                                      {"5", "InvalidHeaderDeserialization"},
                                                      {"6", "InvalidHeaderDeserialization"},
                                                      {"6b", "ChecksumMismatch"},
                                                      {"6c", "ChecksumMismatch"},
                                                      {"7", "InvalidOffset"},
                                                      {"8", "ValidationOverflow"},
                                                      {"9", "TensorInvalidInfo"},
                                                      {"10", "MetadataIncompleteBuffer"},
                                                      {"11", "ChecksumMismatch"},
                                                      {"zip", "HeaderTooLarge"}};
    const auto dir =
        std::filesystem::path(TAPEGRAD_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "safetensors";
    int accepted = 0, refused = 0;
    for (const std::string& name : folder_listing(dir)) {
      const std::string bytes = read_bytes(dir / name);
      const auto kind = kinds.find(name.substr(0, name.find('_')));
      if (kind == kinds.end()) {
        CHECK_NOTHROW(parse_safetensors(bytes, name));
        ++accepted;
      } else {
        CHECK_MESSAGE(rejection(bytes).kind == kind->second, name);
        ++refused;
      }
    }
    CHECK(accepted >= 10);
    CHECK(refused >= 30);
  }

  // ---- interoperability ---------------------------------------------------------------------------

  TEST_CASE(
      "a file laid out by the reference Python writer loads, and re-writing it gives its bytes") {
    // tests/io/fixtures/reference.safetensors, from scripts/golden/safetensors_fixture.py (numpy 1.24).
    const std::string path =
        std::string(TAPEGRAD_SOURCE_DIR) + "/tests/io/fixtures/reference.safetensors";
    const std::string bytes = read_file(path);
    const SafetensorsFile f = parse_safetensors(bytes, path);
    CHECK(f.tensors().size() == 7);
    CHECK(f.metadata_value("format") == "pt");
    CHECK(f.aliases() ==
          std::vector<std::pair<std::string, std::string>>{{"lm_head.weight", "embed.weight"}});
    CHECK(f.to_float("lm_head.weight") == Array{{0.5f, -1.f}, {2.f, 3.25f}, {-0.f, 1e-3f}});
    CHECK(f.to_float("half") == Array{1.f, -2.f, 65504.f, std::ldexp(1.f, -24)});
    CHECK(f.to_float("bf") == Array{1.f, -5.f, 3.140625f});
    const Array dbl = f.to_float("dbl");
    CHECK(dbl(0, 0) == 1.5f);
    CHECK(dbl(0, 1) == -2.25f);
    CHECK(std::isinf(dbl(1, 0)));
    CHECK(std::isnan(dbl(1, 1)));
    CHECK(f.to_int64("state.0.step")() == 7);
    CHECK(f.to_float("empty").shape() == Shape{0, 3});
    CHECK_THROWS_WITH_AS(f.to_float("mask"), doctest::Contains("got dtype U8"), TypeError);
    CHECK(serialize_safetensors(f) == bytes);
  }

  TEST_CASE("NumPy reads a tapegrad-written file with struct, json and frombuffer") {
    if (!tapegrad::testing::python_with_numpy()) {
      MESSAGE("skipped: /usr/bin/python3 with numpy is not available");
      return;
    }
    const auto dir = scratch_dir("numpy_reads");
    SafetensorsFile f;
    f.add("emb.weight", Array{{0.5f, -1.f, 2.f}, {1e-8f, 3e38f, -0.f}});
    f.add("scalar", Array(4.25f));
    f.add("state.0.step", IndexArray(std::int64_t{12345678901}));
    f.add_alias("out.weight", "emb.weight");
    save_safetensors((dir / "t.safetensors").string(), f);
    write_bytes(dir / "check.py", R"PY(
import json, struct, sys
import numpy as np
data = open(sys.argv[1], "rb").read()
n, = struct.unpack("<Q", data[:8])
assert n % 8 == 0, n
header = json.loads(data[8:8 + n])
buf = data[8 + n:]
types = {"F32": "<f4", "I64": "<i8"}
def get(name):
    e = header[name]
    b, end = e["data_offsets"]
    return np.frombuffer(buf[b:end], dtype=types[e["dtype"]]).reshape(e["shape"])
assert list(header)[:2] == ["__metadata__", "state.0.step"], list(header)
meta = header["__metadata__"]
assert meta["out.weight"] == "emb.weight", meta
assert "tapegrad.version" in meta, meta
assert np.array_equal(get("emb.weight"), np.array([[0.5, -1, 2], [1e-8, 3e38, -0.0]], dtype="<f4"))
assert get("scalar").shape == () and get("scalar") == np.float32(4.25)
assert get("state.0.step") == 12345678901
assert header["state.0.step"]["data_offsets"][0] == 0
assert len(buf) == max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__")
print("ok")
)PY");
    const std::string cmd = "/usr/bin/python3 " + (dir / "check.py").string() + " " +
                            (dir / "t.safetensors").string() + " > " + (dir / "out.txt").string() +
                            " 2>&1";
    const int rc = std::system(cmd.c_str());
    CHECK_MESSAGE(rc == 0, "python said: " << read_bytes(dir / "out.txt"));
  }

}  // TEST_SUITE
