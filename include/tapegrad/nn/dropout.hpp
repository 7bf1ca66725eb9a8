// include/tapegrad/nn/dropout.hpp
//
// Dropout as a module: in training mode each element is zeroed with probability p and the
// survivors are scaled by 1 / (1 - p); in eval mode (after eval()) it is the identity. Grad mode
// does not matter: under NoGradGuard a training-mode Dropout still drops.
//
// Where the masks come from (ops/dropout.hpp): the layer takes one 64-bit seed from its Generator
// (one next_u64() draw) and numbers its training forwards 0, 1, 2, ...; forward number c uses the
// counter-based stream {seed, c}. So a seeded model drops the same elements on every run, no mask
// is stored (backward and last_mask() compute it again), and the layer's random state is two
// numbers, which a TrainingCheckpoint saves. The seed is taken at the first training forward, not
// at construction, so that building a model draws only its initial weights from a generator (the
// same weights as with no Dropout in between); and it is taken again at the first training
// forward after the generator was reseeded (manual_seed, set_state), which restarts the masks from
// call 0, as PyTorch's torch.manual_seed restarts its masks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <xtensor/xarray.hpp>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn {

class DropoutOptions {
 public:
  DropoutOptions(double p = 0.5) : p_(p) {}  // implicit, as libtorch's

  /// Probability of zeroing an element, in [0, 1] (NaN refused; PyTorch lets it through); 0.5.
  TAPEGRAD_ARG(double, p);
  /// Overwrite the input instead of a new output (refused on a leaf requiring grad); default false.
  TAPEGRAD_ARG(bool, inplace) = false;
};

class Dropout : public Module {
 public:
  /// ValueError("dropout probability has to be between 0 and 1, but got ...") for a bad p.
  /// A null generator means the default one.
  explicit Dropout(DropoutOptions options = {}, std::shared_ptr<Generator> generator = nullptr);
  explicit Dropout(double p, std::shared_ptr<Generator> generator = nullptr);

  /// x: any shape -> the same shape. The same tensor (no draw, nothing recorded) in eval mode,
  /// with p = 0, or for an empty x.
  Tensor forward(const Tensor& x);
  /// forward(x + rows) in one pass, for x (B, L, D) and a table whose first L rows (of D floats)
  /// are added to each of x's B slices, as PositionalEncoding adds its table: the same draws,
  /// values, gradient and last_mask() as forward(x + rows), bit for bit (ops::add_rows_dropout).
  /// The table receives no gradient; with inplace set, the sum is a temporary, so writing the
  /// result over it changes nothing a caller can see.
  Tensor forward_added(const Tensor& x, const Array& rows);
  /// The keep mask (1 = kept) of the last training forward, computed again from its stream;
  /// empty before the first.
  const xt::xarray<std::uint8_t>& last_mask() const;
  const DropoutOptions& options() const { return options_; }

  /// The stream of the next training forward, and counts it: takes a new seed first if the
  /// generator was reseeded since the last one was taken. For modules that apply this layer's p
  /// to something else (MultiHeadedAttention's weights): they use the mask of the stream returned.
  ops::DropoutStream next_stream();
  /// next_stream() for a training forward of this layer on an x of `shape` that the caller applies
  /// itself, fused with what comes before it (InputEmbedding): last_mask() then shows its mask.
  ops::DropoutStream next_stream_for(const Shape& shape);
  /// The seed in use and the number of training forwards made with it (the next call number).
  std::uint64_t seed() const { return seed_; }
  std::uint64_t calls() const { return calls_; }
  /// Restores seed() and calls() (a checkpoint's); `reseed_pending`: no seed was taken yet, or the
  /// generator had been reseeded since, so the next training forward takes a new one.
  void set_stream_state(std::uint64_t seed, std::uint64_t calls, bool reseed_pending = false);
  /// Whether the next training forward takes a new seed: none taken yet, or the generator was
  /// reseeded since (what a checkpoint saves with seed() and calls()).
  bool reseed_pending() const { return generator_->stream_id() != stream_id_; }

  std::string type_name() const override { return "Dropout"; }
  void extra_repr(std::ostream& os) const override;  ///< "p=0.1, inplace=False"

 private:
  ops::DropoutStream take_stream(const std::optional<Shape>& shape);  // shape: last_mask()'s

  DropoutOptions options_;
  std::shared_ptr<Generator> generator_;
  std::uint64_t seed_ = 0;       // the Philox key, taken from generator_
  std::uint64_t calls_ = 0;      // training forwards made with seed_
  std::uint64_t stream_id_ = 0;  // generator_->stream_id() when seed_ was taken (0: none yet)
  Shape last_shape_;             // x's shape at the last training forward
  mutable xt::xarray<std::uint8_t> last_mask_ = xt::xarray<std::uint8_t>::from_shape({0});
  mutable bool last_mask_current_ = true;  // last_mask_ is the mask of the last forward
};

}  // namespace tapegrad::nn
