// src/ops/dropout_kernels.hpp (private)
//
// Dropout's kernels, declared once: the references are defined in dropout.cpp, their fast
// versions in src/kernels/dropout.cpp (src/core/dispatch.hpp). The op checks, allocates, calls
// dropout_apply and records a backward that calls the same set's dropout_apply on the incoming
// gradient, in place; add_rows_dropout does the same with dropout_add_rows_apply, or
// dropout_add_rows when nothing is dropped.
// The mask of the stream (seed, call) with probability p: element e's multiplier is
// m[e] = keep(e) ? 1.0f / float(1 - p) : 0, keep(e) from the Philox stream (dropout_mask.hpp,
// include/tapegrad/ops/dropout.hpp). Every set gives the same mask: it is integer arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// y[e] = x[e] * m[e] for e < n; x == y (in place) is allowed.
void dropout_apply(std::uint64_t seed, std::uint64_t call, double p, const float* x, float* y,
                   std::size_t n);
/// y[e] = (x[e] + rows[e % n]) * m[e] for e < B * n: dropout(x + rows) with the sum rounded
/// to float first.
void dropout_add_rows_apply(std::uint64_t seed, std::uint64_t call, double p, const float* x,
                            const float* rows, float* y, std::size_t B, std::size_t n);
/// y[e] = x[e] + rows[e % n] for e < B * n: add_rows_apply without a mask (evaluation, p = 0).
void dropout_add_rows(const float* x, const float* rows, float* y, std::size_t B, std::size_t n);
/// keep[e] = (m[e] != 0) for e < n: the mask as bytes.
void dropout_keep(std::uint64_t seed, std::uint64_t call, double p, std::uint8_t* keep,
                  std::size_t n);

}  // namespace tapegrad::ops
