// src/ops/dropout_kernels.hpp (private to src/ops)
//
// Dropout's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference in
// dropout_reference.cpp, the fast ones compiled from dropout_fast.cpp. The op (dropout.cpp)
// checks, allocates, calls kernels::dropout_kernels().apply and records a backward that calls
// .apply of the same table on the incoming gradient, in place; add_rows_dropout does the same with
// .add_rows_apply, or .add_rows when nothing is dropped.
// The mask of the stream (seed, call) with probability p: element e's multiplier is
// m[e] = keep(e) ? 1.0f / float(1 - p) : 0, keep(e) from the Philox stream (dropout_mask.hpp,
// include/tapegrad/ops/dropout.hpp). Every set gives the same mask: it is integer arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct DropoutKernels {
  /// y[e] = x[e] * m[e] for e < n; x == y (in place) is allowed.
  void (*apply)(std::uint64_t seed, std::uint64_t call, double p, const float* x, float* y,
                std::size_t n);
  /// y[e] = (x[e] + rows[e % n]) * m[e] for e < B * n: dropout(x + rows) with the sum rounded
  /// to float first.
  void (*add_rows_apply)(std::uint64_t seed, std::uint64_t call, double p, const float* x,
                         const float* rows, float* y, std::size_t B, std::size_t n);
  /// y[e] = x[e] + rows[e % n] for e < B * n: add_rows_apply without a mask (evaluation, p = 0).
  void (*add_rows)(const float* x, const float* rows, float* y, std::size_t B, std::size_t n);
  /// keep[e] = (m[e] != 0) for e < n: the mask as bytes.
  void (*mask)(std::uint64_t seed, std::uint64_t call, double p, std::uint8_t* keep, std::size_t n);
};

TAPEGRAD_KERNEL_TABLES(DropoutKernels, dropout)

}  // namespace tapegrad::kernels
