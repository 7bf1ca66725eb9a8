// src/core/parameter.cpp: Parameter and Buffer, and the FNV-1a fingerprint that proves a buffer unchanged.
#include "tapegrad/core/parameter.hpp"

#include <cstring>

#include "tensor_impl.hpp"

namespace tapegrad {

Parameter::Parameter(Array data, bool requires_grad) : Tensor(std::move(data), requires_grad) {}

Parameter::Parameter(const Tensor& t, bool requires_grad) {
  check<ValueError>(t.defined(), "Parameter: expected a defined tensor, got an empty handle");
  check<ValueError>(!t.is_edge(), "Parameter: expected a tensor with its data, got an edge() of ",
                    t.describe(), ", which never reads data");
  adopt(share_storage(TensorAccess::impl(t)));  // shares data and version, like detach()
  impl_->requires_grad = requires_grad;
}

Buffer::Buffer(Array data) : Tensor(std::move(data), false) { impl_->is_buffer = true; }

std::uint64_t fingerprint(const Array& a) {
  // FNV-1a 64: h = (h xor byte) * prime, over the bytes in little-endian order.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto eat = [&h](const unsigned char* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  };
  auto eat_u64 = [&eat](std::uint64_t v) {
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(v >> (8 * i));
    eat(bytes, 8);
  };
  eat_u64(a.dimension());
  for (std::size_t d : a.shape()) eat_u64(d);
  for (float v : a) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    const unsigned char bytes[4] = {
        static_cast<unsigned char>(bits), static_cast<unsigned char>(bits >> 8),
        static_cast<unsigned char>(bits >> 16), static_cast<unsigned char>(bits >> 24)};
    eat(bytes, 4);
  }
  return h;
}

std::uint64_t Buffer::fingerprint() const { return tapegrad::fingerprint(data()); }

void Buffer::expect_unchanged(std::uint64_t expected) const {
  const std::uint64_t now = fingerprint();
  if (now != expected)
    fail<InvariantError>("Buffer ", describe(), ": expected fingerprint 0x", std::hex, expected,
                         ", got 0x", now, "; the buffer was modified");
}

}  // namespace tapegrad
