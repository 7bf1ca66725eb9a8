// include/tapegrad/nn/dropout.hpp
//
// Dropout as a module (SPEC 2.7): in training mode each element is zeroed with probability p and
// the survivors are scaled by 1 / (1 - p); in eval mode (after eval()) it is the identity. The
// random draws come from the module's Generator, so a seeded model drops the same elements on
// every run, and last_mask() shows which ones were kept. Grad mode does not matter: under
// NoGradGuard a training-mode Dropout still drops.
#pragma once

#include <cstdint>
#include <memory>

#include <xtensor/xarray.hpp>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/random.hpp"

namespace tapegrad::nn {

class DropoutOptions {
 public:
  DropoutOptions(double p = 0.5) : p_(p) {}    // implicit, as libtorch's: Dropout(DropoutOptions(0.1))
  /// Probability of zeroing an element, in [0, 1] (NaN is refused: SPEC section 3).
  DropoutOptions& p(double v) { p_ = v; return *this; }
  double p() const { return p_; }
  /// Overwrite the input instead of allocating the output (refused on a leaf that requires grad).
  DropoutOptions& inplace(bool v) { inplace_ = v; return *this; }
  bool inplace() const { return inplace_; }

 private:
  double p_;
  bool inplace_ = false;
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
  /// The keep mask (1 = kept) of the last forward that drew one; empty before the first.
  const xt::xarray<std::uint8_t>& last_mask() const { return *mask_; }
  const DropoutOptions& options() const { return options_; }

  std::string type_name() const override { return "Dropout"; }
  void extra_repr(std::ostream& os) const override;   ///< "p=0.1, inplace=False"

 private:
  DropoutOptions options_;
  std::shared_ptr<Generator> generator_;
  ops::SharedMask mask_;   // shared with the tape entry of the forward that drew it
};

}  // namespace tapegrad::nn
