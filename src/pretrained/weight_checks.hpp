// src/pretrained/weight_checks.hpp (private): what GPT-2's and the Llama's loaders share when they
// read a checkpoint's tensors into a model: which dtypes are weights, how a shape is printed,
// whether values are finite, and mapping a fresh parameter's pages before it is written.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>

#include <sys/mman.h>

#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::pretrained::detail {

/// The floating-point dtypes a checkpoint's weights may be stored in (widened to float32).
inline bool is_float(io::Dtype d) {
  return d == io::Dtype::F32 || d == io::Dtype::F16 || d == io::Dtype::BF16 || d == io::Dtype::F64;
}

/// Whether every value is finite: no exponent of all ones (inf, NaN), counted on the bits so that
/// the loop vectorizes.
inline bool all_finite(std::span<const float> values) {
  const float* v = values.data();
  std::size_t not_finite = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    not_finite += (std::bit_cast<std::uint32_t>(v[i]) & 0x7f800000u) == 0x7f800000u;
  return not_finite == 0;
}

/// Maps the pages of `n` floats at `p` in one call (MADV_POPULATE_WRITE, Linux 5.14): a fresh
/// parameter's first touch otherwise traps once per 4 KiB page, a third of a 124M model's load
/// time in a virtual machine. Only an optimisation: on an older kernel the call fails and nothing
/// changes.
inline void prefault(float* p, std::size_t n) {
#ifdef MADV_POPULATE_WRITE
  constexpr std::uintptr_t kPage = 4096;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(p + n) & ~(kPage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p, (void)n;
#endif
}

}  // namespace tapegrad::pretrained::detail
