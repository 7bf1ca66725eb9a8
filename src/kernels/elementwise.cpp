// src/kernels/elementwise.cpp
//
// The elementwise ops' fast kernels, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The maths is the reference kernels'
// (src/ops/elementwise.cpp); what differs is how it runs:
// - One loop per op, chosen before the loop (not a switch per element), so that each compiles to
//   8 or 16 elements at a time; exp and sigmoid use exp_f32, inline arithmetic that vectorises,
//   where the C library's expf is a call.
// - Threads: large arrays are split over the pool, each element computed by one thread in the
//   same way, so the result does not depend on the thread count.
#include <cmath>
#include <cstddef>

#include "exp_f32.hpp"
#include "../core/parallel.hpp"
#include "../ops/elementwise_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/elementwise.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// Elements worth a thread in these loops: each costs about a nanosecond or less, waking a thread
// several microseconds.
constexpr std::size_t kGrain = std::size_t{1} << 15;

// f(i) for every i in [0, n), split over the threads when n is large.
template <class F>
void for_each(std::size_t n, F f) {
  detail::parallel_for(n, kGrain, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) f(i);
  });
}

// The formulas: the reference kernels' (src/ops/elementwise.cpp).
void binary(BinaryOp op, const float* a, const float* b, float* y, std::size_t n) {
  switch (op) {
    case BinaryOp::add: return for_each(n, [=](std::size_t i) { y[i] = a[i] + b[i]; });
    case BinaryOp::sub: return for_each(n, [=](std::size_t i) { y[i] = a[i] - b[i]; });
    case BinaryOp::mul: return for_each(n, [=](std::size_t i) { y[i] = a[i] * b[i]; });
    case BinaryOp::div: return for_each(n, [=](std::size_t i) { y[i] = a[i] / b[i]; });
  }
}

// db first, then da: da may be dy.
void binary_backward(BinaryOp op, const float* dy, const float* a, const float* b, float* da,
                     float* db, std::size_t n) {
  if (db && op == BinaryOp::add) for_each(n, [=](std::size_t i) { db[i] = dy[i]; });
  if (db && op == BinaryOp::sub) for_each(n, [=](std::size_t i) { db[i] = -dy[i]; });
  if (db && op == BinaryOp::mul) for_each(n, [=](std::size_t i) { db[i] = dy[i] * a[i]; });
  if (db && op == BinaryOp::div)
    for_each(n, [=](std::size_t i) { db[i] = -dy[i] * a[i] / (b[i] * b[i]); });
  if (!da) return;
  if (da != dy && (op == BinaryOp::add || op == BinaryOp::sub))
    for_each(n, [=](std::size_t i) { da[i] = dy[i]; });
  if (op == BinaryOp::mul) for_each(n, [=](std::size_t i) { da[i] = dy[i] * b[i]; });
  if (op == BinaryOp::div) for_each(n, [=](std::size_t i) { da[i] = dy[i] / b[i]; });
}

void unary(UnaryOp op, const float* a, float c, float* y, std::size_t n) {
  auto map = [=](auto f) { for_each(n, [=](std::size_t i) { y[i] = f(a[i]); }); };
  switch (op) {
    case UnaryOp::add: return map([c](float x) { return x + c; });
    case UnaryOp::sub: return map([c](float x) { return x - c; });
    case UnaryOp::rsub: return map([c](float x) { return c - x; });
    case UnaryOp::mul: return map([c](float x) { return x * c; });
    case UnaryOp::div: return map([c](float x) { return x / c; });
    case UnaryOp::rdiv: return map([c](float x) { return c / x; });
    case UnaryOp::pow: return map([c](float x) { return torch_pow(x, c); });
    case UnaryOp::neg: return map([](float x) { return -x; });
    case UnaryOp::exp: return map([](float x) { return detail::exp_f32(x); });
    case UnaryOp::log: return map([](float x) { return std::log(x); });
    case UnaryOp::sqrt: return map([](float x) { return std::sqrt(x); });
    case UnaryOp::tanh: return map([](float x) { return std::tanh(x); });
    case UnaryOp::relu: return map([](float x) { return x <= 0.0f ? 0.0f : x; });
    case UnaryOp::sigmoid: return map([](float x) { return 1.0f / (1.0f + detail::exp_f32(-x)); });
  }
}

void unary_backward(UnaryOp op, const float* a, const float* y, float c, float* dy, std::size_t n) {
  auto chain = [=](auto f) { for_each(n, [=](std::size_t i) { dy[i] = f(dy[i], i); }); };
  switch (op) {
    case UnaryOp::add:
    case UnaryOp::sub: return;
    case UnaryOp::rsub:
    case UnaryOp::neg: return chain([](float g, std::size_t) { return g * -1.0f; });
    case UnaryOp::mul: return chain([c](float g, std::size_t) { return g * c; });
    case UnaryOp::div: return chain([c](float g, std::size_t) { return g / c; });
    case UnaryOp::rdiv:
      return chain([=](float g, std::size_t i) { return g * (-c / (a[i] * a[i])); });
    case UnaryOp::pow:
      return chain([=](float g, std::size_t i) {
        return c == 0.0f ? 0.0f : g * (c * torch_pow(a[i], c - 1.0f));
      });
    case UnaryOp::exp: return chain([=](float g, std::size_t i) { return g * y[i]; });
    case UnaryOp::log: return chain([=](float g, std::size_t i) { return g / a[i]; });
    case UnaryOp::sqrt: return chain([=](float g, std::size_t i) { return g / (2.0f * y[i]); });
    case UnaryOp::tanh:
      return chain([=](float g, std::size_t i) { return g * (1.0f - y[i] * y[i]); });
    case UnaryOp::relu:
      return chain([=](float g, std::size_t i) { return y[i] <= 0.0f ? 0.0f : g; });
    case UnaryOp::sigmoid:
      return chain([=](float g, std::size_t i) { return g * (y[i] * (1.0f - y[i])); });
  }
}

void masked_fill(const float* a, const bool* mask, float value, float* y, std::size_t n) {
  for_each(n, [=](std::size_t i) { y[i] = mask[i] ? value : a[i]; });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::elementwise_binary, binary);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::elementwise_binary_backward, binary_backward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::elementwise_unary, unary);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::elementwise_unary_backward, unary_backward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::elementwise_masked_fill, masked_fill);
