// tests/fuzz/fuzz_npy.cpp: libFuzzer target for the .npy reader (scripts/fuzz.sh).
//
// Any bytes go in. The reader may only refuse them with CheckpointError (a damaged file) or
// TypeError (a dtype other than '<f4' / '<f8'); anything else escaping, a crash, a leak or a
// sanitizer report is a bug. An accepted array written back with xt::dump_npy must read back
// bit for bit.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <xtensor/xnpy.hpp>

#include <tapegrad/io/npy.hpp>

using namespace tapegrad;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Array a;
  try {
    a = io::parse_npy(bytes, "fuzz.npy");
  } catch (const CheckpointError&) {
    return 0;
  } catch (const TypeError&) {
    return 0;
  }
  const Array back = io::parse_npy(xt::dump_npy(a), "round trip");
  if (back.shape() != a.shape() ||
      (a.size() != 0 && std::memcmp(back.data(), a.data(), a.size() * sizeof(float)) != 0)) {
    std::fprintf(
        stderr,
        "fuzz_npy: invariant broken: an accepted array does not survive dump_npy and parse_npy\n");
    std::abort();
  }
  return 0;
}
