// src/core/bf16_saved.cpp: a product's input kept in bfloat16 for backward (bf16_saved.hpp).
#include "bf16_saved.hpp"

#include <cstddef>

#include "parallel.hpp"
#include "tensor_impl.hpp"
#include "tapegrad/core/autocast.hpp"

namespace tapegrad::detail {

namespace {
// Elements worth a thread in a rounding or widening pass (each well under a nanosecond).
constexpr std::size_t kGrain = std::size_t{1} << 16;

struct LastSaved {
  // The tensor it was made from, weakly: it keeps neither its data nor its graph alive, and a
  // tensor that has died can never match (lock() gives null), even if a new one takes its place.
  std::weak_ptr<TensorImpl> x;
  std::uint64_t version = 0;
  std::shared_ptr<const Bf16Saved> copy;
};
thread_local LastSaved last;
}  // namespace

Array Bf16Saved::widen() const {
  Array out = Array::from_shape(shape);
  float* dst = out.data();
  const std::uint16_t* src = bits.data();
  parallel_for(bits.size(), kGrain, [&](std::size_t first, std::size_t end) {
    for (std::size_t i = first; i < end; ++i) dst[i] = autocast::from_bf16(src[i]);
  });
  return out;
}

std::shared_ptr<const Bf16Saved> saved_in_bf16(const Tensor& x) {
  if (last.copy && last.x.lock() == TensorAccess::handle(x) && last.version == x.version())
    return last.copy;
  auto copy = std::make_shared<Bf16Saved>();
  copy->shape = x.shape();
  copy->bits.resize(x.numel());
  const float* src = x.data().data();
  std::uint16_t* dst = copy->bits.data();
  parallel_for(copy->bits.size(), kGrain, [&](std::size_t first, std::size_t end) {
    for (std::size_t i = first; i < end; ++i) dst[i] = autocast::to_bf16(src[i]);
  });
  last = LastSaved{TensorAccess::handle(x), x.version(), copy};
  return copy;
}

void drop_saved_in_bf16() { last = LastSaved{}; }

SavedInput SavedInput::of(const Tensor& x, bool read) {
  if (!read) return {x.edge(), nullptr};
  if (autocast::bf16_enabled()) return {x.edge(), saved_in_bf16(x)};
  return {x, nullptr};
}

const float* SavedInput::values(Array& widened) const {
  if (bf16 == nullptr) return tensor.data().data();
  widened = bf16->widen();
  return widened.data();
}

SavedInput::Operand SavedInput::operand(Array& widened) const {
  if (bf16 != nullptr && autocast::bf16_enabled()) return {nullptr, bf16->bits.data()};
  return {values(widened), nullptr};
}

}  // namespace tapegrad::detail
