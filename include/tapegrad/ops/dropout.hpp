// include/tapegrad/ops/dropout.hpp
//
// Inverted dropout (SPEC 2.7): in training, each element is kept with probability 1 - p and
// scaled by 1 / (1 - p), so E[y] = x and evaluation needs no rescaling. The mask is drawn once
// from the generator and reused by backward: dx = dy * mask.
#pragma once

#include <cstdint>
#include <memory>

#include <xtensor/xarray.hpp>

#include "tapegrad/random.hpp"
#include "tapegrad/tensor.hpp"

namespace tapegrad::ops {

/// Checks 0 <= p <= 1 (and not NaN): "dropout probability has to be between 0 and 1, but got ...".
void check_dropout_probability(double p);

/// x unchanged (the same tensor, no draw) when !training, p == 0 or x is empty. Otherwise one
/// u24 draw per element in row-major order, keep iff u >= p. `mask_out`, when given, receives
/// the 0/1 keep mask (it is left untouched when nothing is drawn). inplace overwrites x's storage
/// (one version bump) and returns x itself, or, when the op is recorded, a new handle on the same
/// storage that carries the dropout in the graph: keep using the returned tensor. In place on a
/// leaf that requires grad, with grad mode on, is an AutogradError. Throws ValueError for a bad p.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen, bool inplace = false,
               xt::xarray<std::uint8_t>* mask_out = nullptr);

/// A dropout keep mask shared between the tape entry that needs it in backward and whoever shows it.
using SharedMask = std::shared_ptr<const xt::xarray<std::uint8_t>>;

/// dropout(x + rows) in one pass, for x (B, L, D) and a table whose first L rows (rows of D
/// floats, leading dimensions flattened: (L, D), (1, max_len, D), ...) are added to each of x's B
/// slices: what PositionalEncoding does with its table. The same draws, mask, values and gradient
/// as ops::dropout(x + rows) bit for bit; one tape entry, "add_rows_dropout" (or "add_rows" when
/// dropout is the identity: eval, p = 0, empty x). The table is a constant and receives no
/// gradient. `mask_out`, when given, receives the mask when one is drawn (shared, not copied).
/// Throws ValueError for a bad p, ShapeError for x not of rank 3 or a table that does not fit.
Tensor add_rows_dropout(const Tensor& x, const Array& rows, double p, bool training, Generator& gen,
                        SharedMask* mask_out = nullptr);

}  // namespace tapegrad::ops
