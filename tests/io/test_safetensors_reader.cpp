// tests/io/test_safetensors_reader.cpp: io::SafetensorsReader, a file read tensor by tensor: the
// header's checks as load_safetensors makes them, at construction; each tensor's values as
// to_float gives them, by pieces or whole, straight into the caller's memory; its checksum checked
// after the last piece.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/io.hpp>

#include "../helpers.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
using io::SafetensorsReader;

namespace {
std::string file_of(const std::string& name, const io::SafetensorsFile& f) {
  const auto dir = testing::fresh_folder("safetensors_reader", name);
  io::save_safetensors((dir / "f.safetensors").string(), f);
  return (dir / "f.safetensors").string();
}
}  // namespace

TEST_CASE("SafetensorsReader lists the tensors in data order and reads each as to_float does") {
  io::SafetensorsFile f;
  Array big = Array::from_shape({3, 700'000});  // more than one piece of 2^20 values
  for (std::size_t i = 0; i < big.size(); ++i) big.data()[i] = float(i % 1000) * 0.5f;
  f.add("big", Array(big));
  f.add("small", Array{{1.f, -2.f}, {3.5f, 4.f}});
  f.add("step", IndexArray{7});
  f.add_raw("half", io::Dtype::F16, {2}, {0x00, 0x3c, 0x00, 0xc0});  // 1.0, -2.0
  f.add_raw("brain", io::Dtype::BF16, {1}, {0x80, 0x3f});            // 1.0
  f.set_metadata("format", "pt");
  const std::string path = file_of("values", f);
  const SafetensorsReader r(path);
  CHECK(r.path() == path);
  CHECK(r.metadata_value("format") == "pt");
  CHECK_FALSE(r.metadata_value("absent"));
  std::vector<std::string> names;
  for (const auto& t : r.tensors()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"step", "big", "small", "brain", "half"});
  REQUIRE(r.find("big") != nullptr);
  CHECK(r.find("big")->shape == Shape{3, 700'000});
  CHECK(r.find("big")->numel() == 2'100'000);
  CHECK(r.find("nothing") == nullptr);

  Array whole = Array::from_shape({3, 700'000});
  r.read_float("big", std::span<float>(whole.data(), whole.size()));
  CHECK(testing::bit_equal(whole, big));
  std::size_t pieces = 0, seen = 0;
  r.read_float("big", [&](std::span<const float> piece, std::size_t first) {
    CHECK(first == seen);
    CHECK(piece.size() <= std::size_t(1) << 20);
    seen += piece.size();
    ++pieces;
  });
  CHECK(pieces == 3);
  CHECK(seen == big.size());
  std::vector<float> half(2), brain(1);
  r.read_float("half", std::span<float>(half));
  r.read_float("brain", std::span<float>(brain));
  CHECK(half == std::vector<float>{1.f, -2.f});
  CHECK(brain == std::vector<float>{1.f});

  std::vector<float> wrong(3);
  CHECK_THROWS_WITH_AS(
      r.read_float("small", std::span<float>(wrong)),
      doctest::Contains("expected room for the 4 elements of tensor 'small', got 3"), ValueError);
  CHECK_THROWS_WITH_AS(
      r.read_float("step", std::span<float>(wrong.data(), 1)),
      doctest::Contains("to hold floating-point values (F32, F64, F16 or BF16), got I64"),
      TypeError);
  CHECK_THROWS_WITH_AS(r.read_float("nothing", std::span<float>(wrong)),
                       doctest::Contains("has no tensor 'nothing'"), ValueError);
}

TEST_CASE(
    "SafetensorsReader refuses a damaged file at construction, and a damaged tensor on read") {
  io::SafetensorsFile f;
  f.add("a", Array{1.f, 2.f, 3.f});
  f.add("b", Array{4.f});
  const std::string path = file_of("damaged", f);
  const std::string bytes = testing::bytes_of(path);
  testing::write_file(path, bytes.substr(0, bytes.size() - 2));
  CHECK_THROWS_WITH_AS(SafetensorsReader{path}, doctest::Contains("MetadataIncompleteBuffer"),
                       CheckpointError);
  std::string flipped = bytes;
  flipped[flipped.size() - 1] ^= 0x01;  // the last byte of "b"
  testing::write_file(path, flipped);
  const SafetensorsReader r(path);  // the header is fine
  std::vector<float> a(3), b(1);
  r.read_float("a", std::span<float>(a));
  CHECK(a == std::vector<float>{1.f, 2.f, 3.f});
  CHECK_THROWS_WITH_AS(r.read_float("b", std::span<float>(b)),
                       doctest::Contains("ChecksumMismatch: expected the bytes of tensor 'b'"),
                       CheckpointError);
  CHECK_THROWS_WITH_AS(SafetensorsReader{path + ".missing"}, doctest::Contains("cannot open"),
                       CheckpointError);
}
