// include/tapegrad/core/autocast.hpp
//
// Mixed precision on the CPU, as PyTorch's torch.autocast("cpu", dtype=torch.bfloat16)
// (https://docs.pytorch.org/docs/stable/amp.html): within an autocast::bf16 scope, every matrix
// product (Linear, matmul, scaled_dot_product_attention's two products, and their backward
// products) rounds its two operands to bfloat16, multiplies them, and accumulates the sum in
// float32. causal_self_attention, whose small products are loops of its own, stays float32, and
// so does everything else (layer norm, softmax, the losses, the reductions, the optimizer), and the
// parameters, their gradients and every tensor a user sees: only the products' inputs are rounded.
// What backward keeps of a product's input (and of ops::swiglu's two) is its bf16 copy, as
// PyTorch's autocast keeps its casts (docs/bf16.md#what-is-kept-for-backward).
// No loss scaling is needed: bfloat16 has float32's 8 exponent bits, so a gradient that fits in a
// float fits in a bfloat16; it keeps 7 of float32's 23 mantissa bits (docs/bf16.md).
//
//     {
//       autocast::bf16 mixed;           // this thread, until the end of the scope
//       Tensor loss = model.loss(x, y);
//       loss.backward();                // backward's products in bf16 too: keep it in the scope
//     }
//     opt.step();                       // float32, as always
//
// Outside a scope nothing changes, bit for bit. The products run on oneDNN's bf16 kernels when
// tapegrad was built with oneDNN (AVX512-BF16 or AMX instructions where the CPU has them, emulated
// on plain AVX-512 otherwise, with one warning), and as float32 products of the rounded operands
// otherwise, or with TAPEGRAD_GEMM=reference (plain loops: the definition).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace tapegrad::autocast {

/// While alive, this thread's matrix products round their operands to bfloat16. Scopes nest.
class bf16 {
 public:
  bf16();
  ~bf16();
  bf16(const bf16&) = delete;
  bf16& operator=(const bf16&) = delete;
};

/// Whether an autocast::bf16 scope is open on this thread.
bool bf16_enabled();

/// How many of oneDNN's bf16 products are kept built, one per shape (0 without oneDNN): the most
/// recently used, at most 256, so a program whose shapes keep changing does not grow for ever.
std::size_t bf16_products_kept();

/// x's bfloat16: the upper 16 bits of the float after rounding to nearest, ties to even (NaN stays
/// a NaN, infinities stay infinite, a float beyond bfloat16's largest finite value rounds to
/// infinity as IEEE rounding says). Inline: a loop over an array of them vectorizes.
inline std::uint16_t to_bf16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then drop the 16 low bits. A carry
  // into the exponent is the right result (the next binade, or infinity past the largest float).
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x0040u;  // a NaN stays a NaN (never rounds to inf)
  return std::uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}
/// The float a bfloat16 stands for (exact).
inline float from_bf16(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }
/// from_bf16(to_bf16(x)): x rounded to bfloat16's precision, as a float.
inline float round_to_bf16(float x) { return from_bf16(to_bf16(x)); }

}  // namespace tapegrad::autocast
