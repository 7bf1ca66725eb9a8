// include/tapegrad/ops/dropout.hpp
//
// Inverted dropout: in training, each element is kept with probability 1 - p and scaled by
// 1 / (1 - p), so E[y] = x and evaluation needs no rescaling. Backward multiplies by the same
// mask: dx = dy * mask.
//
// The mask comes from a counter-based stream, Philox4x32-10 (Salmon et al., SC'11), so it is a
// pure function of (seed, call, element): element e of the mask of stream {seed, call} takes word
// e % 4 of the Philox block with key (seed low 32 bits, seed high) and counter (e / 4 low, e / 4
// high, call low, call high); with that word x, u = (x >> 8) * 2^-24 and the element is kept iff
// u >= p. Nothing has to be stored: backward computes the mask again, any thread can compute any
// element (results never depend on the thread count), and a layer's whole random state is its
// seed and how many masks it has used (nn::Dropout keeps both; a checkpoint saves them).
#pragma once

#include <cstdint>

#include <xtensor/xarray.hpp>

#include "tapegrad/core/random.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// Which mask: the Philox key (a 64-bit seed, taken from a Generator) and the call (nn::Dropout
/// numbers its training forwards 0, 1, 2, ...).
struct DropoutStream {
  std::uint64_t seed = 0;
  std::uint64_t call = 0;
  bool operator==(const DropoutStream&) const = default;
};

/// Checks 0 <= p <= 1 (and not NaN): "dropout probability has to be between 0 and 1, but got ...".
void check_dropout_probability(double p);

/// The keep mask (1 = kept) of `stream` for an array of `shape`: element e is kept iff
/// u(e) >= p (see above). What dropout() applies; p = 1 keeps nothing.
xt::xarray<std::uint8_t> dropout_mask(const Shape& shape, double p, DropoutStream stream);

/// y = x * m with m = keep ? 1.0f / float(1 - p) : 0, keep from dropout_mask(x.shape(), p, stream).
/// x unchanged (the same tensor, nothing recorded) when !training, p == 0 or x is empty. inplace
/// overwrites x's storage (one version bump) and returns x itself, or, when the op is recorded, a
/// new handle on the same storage that carries the dropout in the graph: keep using the returned
/// tensor. In place on a leaf that requires grad, with grad mode on, is an AutogradError. Throws
/// ValueError for a bad p. Backward computes the mask again; nothing is saved.
Tensor dropout(const Tensor& x, double p, bool training, DropoutStream stream,
               bool inplace = false);

/// The functional form with a generator, like torch.nn.functional.dropout: a call that drops
/// (training, p > 0, x not empty) draws one 64-bit seed from `gen` and uses the stream {seed, 0}
/// (draw_stream). So reseeding `gen` replays the same masks, and each call gets a new one.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen, bool inplace = false);

/// A new stream {gen.next_u64(), 0} (the default generator's when `gen` is null), taken through
/// autograd::take_stream: in the recompute of autograd::checkpoint, the stream the forward took.
DropoutStream draw_stream(Generator* gen);

/// dropout(x + rows) in one pass, for x (B, L, D) and a table whose first L rows (rows of D
/// floats, leading dimensions flattened: (L, D), (1, max_len, D), ...) are added to each of x's B
/// slices: what PositionalEncoding does with its table. The same mask, values and gradient as
/// ops::dropout(x + rows, p, training, stream) bit for bit; one tape entry, "add_rows_dropout" (or
/// "add_rows" when dropout is the identity: eval, p = 0, empty x). The table is a constant and
/// receives no gradient. Throws ValueError for a bad p, ShapeError for x not of rank 3 or a table
/// that does not fit.
Tensor add_rows_dropout(const Tensor& x, const Array& rows, double p, bool training,
                        DropoutStream stream);

}  // namespace tapegrad::ops
