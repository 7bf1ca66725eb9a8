// tests/io/test_npy.cpp: .npy save and load: round trips, NumPy's layouts (float64, Fortran order,
// long headers, version 2.0), every refusal of a damaged file, and NumPy itself on both sides.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "scratch.hpp"

using namespace tapegrad;
using namespace tapegrad::io;
using tapegrad::testing::bit_equal;
using tapegrad::testing::read_bytes;
using tapegrad::testing::scratch_dir;
using tapegrad::testing::write_bytes;

namespace {
// A .npy file by hand, laid out as numpy/lib/format.py writes it: the header padded with spaces
// and a newline so that data start at a multiple of 64.
std::string npy_of(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t width = major == 1 ? 2 : 4;
  std::string header = dict;
  const std::size_t total = 8 + width + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  for (std::size_t k = 0; k < width; ++k)
    out += static_cast<char>((header.size() >> (8 * k)) & 0xFF);
  return out + header + data;
}

template <class T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

void check_refused(const std::string& bytes, const std::string& phrase) {
  try {
    parse_npy(bytes, "a.npy");
    FAIL("the file was accepted");
  } catch (const CheckpointError& e) {
    CHECK(e.kind == "InvalidNpy");
    const std::string what = e.what();
    CHECK_MESSAGE(what.find("load_npy: 'a.npy': ") == 0, what);
    CHECK_MESSAGE(what.find(phrase) != std::string::npos, what);
  }
}
}  // namespace

TEST_SUITE("io.npy") {
  TEST_CASE("save_npy and load_npy round trip values bit for bit, whatever the shape") {
    const auto dir = scratch_dir("npy_round_trip");
    const std::vector<Array> arrays = {
        Array{{1.5f, -2.f, 0.f},
              {std::numeric_limits<float>::infinity(), std::bit_cast<float>(0x7FC01234u), -0.f}},
        Array(3.25f), Array::from_shape({0, 4}), Array{1.f, 2.f, 3.f, 4.f, 5.f}};
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const std::string path = (dir / ("a" + std::to_string(i) + ".npy")).string();
      save_npy(path, Tensor(arrays[i]));
      const Array back = load_npy(path);
      CHECK(back.shape() == arrays[i].shape());
      CHECK(bit_equal(back, arrays[i]));
    }
  }

  TEST_CASE("save_npy writes NumPy's layout: magic, version 1.0, the dict, data aligned to 64") {
    const auto dir = scratch_dir("npy_layout");
    save_npy((dir / "a.npy").string(), Tensor(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}));
    const std::string bytes = read_bytes(dir / "a.npy");
    CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    const std::size_t header_len =
        static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    CHECK((10 + header_len) % 64 == 0);
    CHECK(bytes.substr(10).rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                 0) == 0);
    CHECK(bytes[10 + header_len - 1] == '\n');
    CHECK(bytes.substr(10 + header_len) == bytes_of<float>({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}));
  }

  TEST_CASE("float64 data are converted to float32, as NumPy's astype rounds") {
    const Array a = parse_npy(npy_of("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
                                     bytes_of<double>({0.1, -1e300, 2.5})));
    CHECK(a(0) == 0.1f);
    CHECK(a(1) == -std::numeric_limits<float>::infinity());
    CHECK(a(2) == 2.5f);
  }

  TEST_CASE("Fortran-order data are read back in C order") {
    // [[1, 2, 3], [4, 5, 6]] stored column by column.
    const Array a = parse_npy(npy_of("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                     bytes_of<float>({1, 4, 2, 5, 3, 6})));
    CHECK(a == Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
    // Rank 3: element (i, j, k) sits at i + 2 j + 4 k.
    std::string data;
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 2; ++i)
          data += bytes_of<float>({static_cast<float>(100 * i + 10 * j + k)});
    const Array b =
        parse_npy(npy_of("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }", data));
    CHECK(b == Array{{{0.f, 1.f}, {10.f, 11.f}}, {{100.f, 101.f}, {110.f, 111.f}}});
  }

  TEST_CASE("headers of 128 bytes and more, version 2.0, any key order and Python 2 longs load") {
    std::string shape = "(";
    for (int i = 0; i < 40; ++i) shape += "1, ";
    shape += ")";
    const Array a =
        parse_npy(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }",
                         bytes_of<float>({7.f})));
    CHECK(a.dimension() == 40);
    CHECK(a.data()[0] == 7.f);
    CHECK(parse_npy(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                           bytes_of<float>({8.f}), 2))(0) == 8.f);
    CHECK(parse_npy(npy_of("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<f4\"}",
                           bytes_of<float>({1, 2}))) == Array{1.f, 2.f});
    CHECK(parse_npy(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': ()}",
                           bytes_of<float>({9.f})))() == 9.f);
  }

  TEST_CASE("another dtype is a TypeError naming it, with the NumPy line that converts it") {
    for (const char* descr : {"<i8", ">f4", "<f2", "|u1", "<c8"})
      CHECK_THROWS_WITH_AS(
          parse_npy(npy_of(
              std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (0,), }",
              "")),
          doctest::Contains(
              (std::string("expected float32 ('<f4') or float64 ('<f8') data, got '") + descr +
               "'; convert it in NumPy first")
                  .c_str()),
          TypeError);
  }

  TEST_CASE("damaged files are refused before any data is read") {
    const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    const std::string two = bytes_of<float>({1.f, 2.f});
    check_refused("", "expected a .npy file starting with \\x93NUMPY, got a file of 0 bytes");
    check_refused("PK\x03\x04 not numpy at all", "got other bytes");
    std::string v4 = npy_of(ok_dict, two);
    v4[6] = 4;
    check_refused(v4, "expected format version 1.0, 2.0 or 3.0, got 4.0");
    check_refused(std::string("\x93NUMPY\x02\x00\x01", 9) + "x",
                  "expected the header length after the version");
    check_refused(std::string("\x93NUMPY\x01\x00\xff\x00", 10) + "{}",
                  "expected a 255-byte header, got a file of 12 bytes");
    check_refused(npy_of("{'descr': '<f4', 'shape': (2,), }", two), "expected a header {'descr'");
    check_refused(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two),
                  "expected a header");
    check_refused(
        npy_of("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", two),
        "expected a header");
    check_refused(npy_of("{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}", two),
                  "expected a header");
    check_refused(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", two),
                  "expected a header");
    check_refused(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", two),
                  "expected a header");
    check_refused(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}", two),
                  "expected a header");
    check_refused(
        npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", two),
        "expected a header");
    check_refused(npy_of("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}", two),
                  "expected a header");
    check_refused(npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", two),
                  "expected a header");
    check_refused(
        npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8)}", ""),
        "expected a shape whose size fits in 64 bits, got (4611686018427387904, 8)");
    // No element, so the byte count (0) fits, but xtensor's strides (products of the trailing
    // dimensions, signed 64-bit) would overflow: the case the fuzzer found.
    check_refused(
        npy_of(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776, 1099511627776)}",
            ""),
        "expected a shape whose non-zero dimensions multiply to less than 2^63, got (0, ");
    check_refused(
        npy_of("{'descr': '<f4', 'fortran_order': True, 'shape': (0, 4294967296, 4294967296)}", ""),
        "multiply to less than 2^63");
    check_refused(npy_of(ok_dict, bytes_of<float>({1.f})),
                  "expected 8 data bytes for shape (2,) of '<f4', got 4");
    check_refused(npy_of(ok_dict, two + "x"), "got 9");
  }

  TEST_CASE("each fuzzing seed is accepted, or refused as damaged or of another dtype") {
    // tests/fuzz/corpus/npy, from tests/fuzz/make_corpus.py.
    const std::set<std::string> accepted = {"f4", "f8", "fortran", "scalar", "rank25", "v2"};
    const auto dir =
        std::filesystem::path(TAPEGRAD_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "npy";
    const auto names = tapegrad::testing::folder_listing(dir);
    CHECK(names.size() >= 10);
    for (const std::string& name : names) {
      const std::string bytes = read_bytes(dir / name);
      if (accepted.contains(name))
        CHECK_NOTHROW(parse_npy(bytes, name));
      else if (name == "int_dtype")
        CHECK_THROWS_AS(parse_npy(bytes, name), TypeError);
      else
        CHECK_THROWS_AS(parse_npy(bytes, name), CheckpointError);
    }
  }

  TEST_CASE("load_npy names a missing file and save_npy a folder that does not exist") {
    const auto dir = scratch_dir("npy_errors");
    const std::string missing = (dir / "none.npy").string();
    CHECK_THROWS_WITH_AS(load_npy(missing),
                         doctest::Contains(("load_npy: '" + missing + "': cannot open").c_str()),
                         CheckpointError);
    const std::string bad = (dir / "no" / "a.npy").string();
    CHECK_THROWS_WITH_AS(save_npy(bad, Tensor(Array{1.f})),
                         doctest::Contains(("save_npy: '" + bad + "'").c_str()), CheckpointError);
  }

  TEST_CASE("NumPy loads what save_npy wrote, and load_npy reads what NumPy saved") {
    if (!tapegrad::testing::python_with_numpy()) {
      MESSAGE("skipped: /usr/bin/python3 with numpy is not available");
      return;
    }
    const auto dir = scratch_dir("npy_numpy");
    save_npy((dir / "from_tapegrad.npy").string(),
             Tensor(Array{{0.5f, -1.f, 3e38f}, {1e-8f, 0.f, 7.f}}));
    write_bytes(dir / "check.py", R"PY(
import os, sys
import numpy as np
d = sys.argv[1]
a = np.load(os.path.join(d, "from_tapegrad.npy"))
assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)
assert np.array_equal(a, np.array([[0.5, -1, 3e38], [1e-8, 0, 7]], dtype=np.float32)), a
np.save(os.path.join(d, "f4.npy"), np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
np.save(os.path.join(d, "f8.npy"), np.array([0.1, -2.5, 1e300]))
np.save(os.path.join(d, "fortran.npy"), np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)))
np.save(os.path.join(d, "rank25.npy"), np.full((1,) * 25, 3.0, dtype=np.float32))
np.save(os.path.join(d, "scalar.npy"), np.float32(-4.5))
print("ok")
)PY");
    const std::string cmd = "/usr/bin/python3 " + (dir / "check.py").string() + " " + dir.string() +
                            " > " + (dir / "out.txt").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    REQUIRE_MESSAGE(rc == 0, "python said: " << read_bytes(dir / "out.txt"));
    CHECK(load_npy((dir / "f4.npy").string()) == Array{{0.f, 0.25f, 0.5f}, {0.75f, 1.f, 1.25f}});
    const Array f8 = load_npy((dir / "f8.npy").string());
    CHECK(f8(0) == 0.1f);
    CHECK(f8(1) == -2.5f);
    CHECK(std::isinf(f8(2)));
    const Array fortran = load_npy((dir / "fortran.npy").string());
    REQUIRE(fortran.shape() == Shape{2, 3, 4});
    for (std::size_t i = 0; i < 24; ++i) CHECK(fortran.data()[i] == static_cast<float>(i));
    const Array rank25 = load_npy((dir / "rank25.npy").string());
    CHECK(rank25.dimension() == 25);
    CHECK(rank25.data()[0] == 3.f);
    CHECK(load_npy((dir / "scalar.npy").string())() == -4.5f);
  }

}  // TEST_SUITE
