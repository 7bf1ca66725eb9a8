// include/tapegrad/core/parameter.hpp
//
// Parameter and Buffer: the two kinds of state a Module owns
// (docs/semantics.md#tensors-parameters-and-buffers).
//   Parameter  a leaf the optimizer trains (Embedding's weight, Linear's weight and bias).
//   Buffer     state saved with the model but never trained (PositionalEncoding's `pe`).
// Both are Tensor handles with no extra data, so copying one shares it. They are distinct types
// so that optimizers, which take std::vector<Parameter>, cannot be handed a Buffer: training the
// positional-encoding table is a compile error, not a silent surprise.
#pragma once

#include <cstdint>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

class Buffer;

class Parameter : public Tensor {
 public:
  Parameter() = default;
  /// A new leaf owning `data`.
  explicit Parameter(Array data, bool requires_grad = true);
  /// Shares t's data and version counter (like detach()), as a new leaf.
  explicit Parameter(const Tensor& t, bool requires_grad = true);
  /// A buffer is never trained: `Parameter(pos.pe)` does not compile. To train a copy of a
  /// buffer's values, say so: `Parameter(Array(buffer.data()))`.
  Parameter(const Buffer&, bool = true) = delete;
};

class Buffer : public Tensor {
 public:
  Buffer() = default;
  explicit Buffer(Array data);

  /// FNV-1a 64 over the rank, each dimension (uint64 little-endian) and the float32 bytes, in
  /// row-major order: equal fingerprints mean the buffer is bit-for-bit unchanged.
  std::uint64_t fingerprint() const;
  /// Throws InvariantError, naming the buffer, when fingerprint() differs from `expected`.
  void expect_unchanged(std::uint64_t expected) const;
};

/// FNV-1a 64 fingerprint of an array (the rule of Buffer::fingerprint).
std::uint64_t fingerprint(const Array& a);

}  // namespace tapegrad
