// src/core/bf16_saved.hpp (private to the core layer and its ops)
//
// A product's input kept for backward in bfloat16, as PyTorch's autocast keeps the bf16 cast it
// multiplied rather than the float32 original. Inside an autocast::bf16 scope a product rounds
// its operands to bf16 anyway, so its backward reading the rounded copy computes the same bits,
// and the copy is half the size. (Backward must run inside a scope too, as docs/bf16.md says;
// outside one, the float32 product reads the rounded values.)
//
// One activation often feeds several products in a row (the q, k and v projections of one
// normalised input): the last copy made on this thread is handed out again while its tensor and
// version are unchanged, so the three keep one copy between them. It is forgotten when the
// outermost scope closes. (Like every version check, this trusts that a write goes through
// mutable_data() after the product, not through an Array& kept from an earlier call.)
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::detail {

struct Bf16Saved {
  std::vector<std::uint16_t> bits;  // x's values rounded to bfloat16, in x's order
  Shape shape;
  /// The values as float32 (exactly the rounded values): what a backward's product reads.
  Array widen() const;
};

/// x rounded to bfloat16, shared with the last product on this thread that saved the same x at
/// the same version.
std::shared_ptr<const Bf16Saved> saved_in_bf16(const Tensor& x);

/// Forgets this thread's last copy: the outermost autocast::bf16 scope's end calls it.
void drop_saved_in_bf16();

/// An op's input as its backward reads it: the tensor itself or, inside an autocast::bf16 scope,
/// its bf16 copy (then the op captures the tensor's edge and does not list it as saved: it reads
/// only the copy). Made by `of` only when backward reads it at all; otherwise the edge alone.
struct SavedInput {
  Tensor tensor;  // the input, or its edge when the copy is kept (or nothing is read)
  std::shared_ptr<const Bf16Saved> bf16;

  static SavedInput of(const Tensor& x, bool read);
  /// Whether the op lists the tensor itself among its saved tensors (it reads it, uncopied).
  bool keeps_tensor(bool read) const { return read && bf16 == nullptr; }
  /// The values, valid while `widened` (where a bf16 copy is widened to float32) lives.
  const float* values(Array& widened) const;
  /// The copy's bits (null without a copy): a product in the same scope reads them as its operand.
  const std::uint16_t* bits() const { return bf16 ? bf16->bits.data() : nullptr; }
  /// The input as a product reads it: inside an autocast::bf16 scope, the copy's bits as they are
  /// (the floats then null); otherwise the values, a copy widened into `widened`.
  struct Operand {
    const float* values;
    const std::uint16_t* bits;
  };
  Operand operand(Array& widened) const;
};

}  // namespace tapegrad::detail
