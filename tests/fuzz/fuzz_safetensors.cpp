// tests/fuzz/fuzz_safetensors.cpp: libFuzzer target for the safetensors reader (scripts/fuzz.sh).
//
// Any bytes go in. The reader may only refuse them with CheckpointError; anything else that
// escapes (another exception, a crash, a leak, a sanitizer report) is a bug. A file it accepts
// must also behave: every tensor converts to float32 or int64 or is refused with TypeError, and
// writing the file out and reading it back gives the same tensors, aliases and metadata, and
// the same bytes when written again. The writer may refuse (ValueError) an accepted file only
// when its metadata would not read back the same (see serialize_safetensors).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <tapegrad/io/safetensors.hpp>

using namespace tapegrad;
using namespace tapegrad::io;

namespace {
void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_safetensors: invariant broken: %s\n", what);
    std::abort();
  }
}

std::size_t numel(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

bool same(const TensorRecord& a, const TensorRecord& b) {
  return a.dtype == b.dtype && a.shape == b.shape && std::ranges::equal(a.bytes(), b.bytes());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  SafetensorsFile file;
  try {
    file = parse_safetensors(bytes, "fuzz.safetensors");
  } catch (const CheckpointError& e) {
    expect(!e.kind.empty() &&
               std::string_view(e.what()).starts_with("load_safetensors: 'fuzz.safetensors': "),
           "a refusal names the file and its kind");
    return 0;
  }

  for (const TensorRecord& r : file.tensors()) {
    expect(r.bytes().size() == numel(r.shape) * dtype_size(r.dtype),
           "a record holds numel * size bytes");
    try {
      expect(file.to_float(r.name).size() == numel(r.shape), "to_float keeps the element count");
    } catch (const TypeError&) {
      expect(r.dtype != Dtype::F32 && r.dtype != Dtype::F64 && r.dtype != Dtype::F16 &&
                 r.dtype != Dtype::BF16,
             "float dtypes convert");
    }
    try {
      expect(file.to_int64(r.name).size() == numel(r.shape), "to_int64 keeps the element count");
    } catch (const TypeError&) {
      expect(r.dtype != Dtype::I64, "I64 reads as int64");
    }
  }
  for (const auto& [alias, target] : file.aliases())
    expect(!file.has_tensor(alias) && file.has_tensor(target),
           "an alias names a tensor and is not one");

  std::string written;
  try {
    written = serialize_safetensors(file);
  } catch (const ValueError&) {
    return 0;
  }
  SafetensorsFile back;
  try {
    back = parse_safetensors(written, "round trip");
  } catch (const CheckpointError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    expect(false, "the reader accepts what the writer wrote");
  }
  expect(back.tensors().size() == file.tensors().size(),
         "the round trip keeps the number of tensors");
  expect(back.aliases().size() == file.aliases().size(),
         "the round trip keeps the number of aliases");
  for (const TensorRecord& r : file.tensors())
    expect(back.contains(r.name) && same(back.record(r.name), r),
           "the round trip keeps every tensor");
  for (const auto& [alias, target] : file.aliases())
    expect(back.contains(alias) && &back.record(alias) == &back.record(target),
           "the round trip keeps every tie");
  for (const auto& [key, value] : file.metadata())
    expect(back.metadata_value(key) == value, "the round trip keeps the metadata");
  expect(back.metadata().size() == file.metadata().size(), "the round trip adds no metadata");
  expect(serialize_safetensors(back) == written, "writing is deterministic");
  return 0;
}
