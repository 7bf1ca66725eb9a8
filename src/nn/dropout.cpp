// src/nn/dropout.cpp: the Dropout module, a thin shell around ops::dropout that supplies the
// training flag, the generator and a place to keep the last mask.
#include "tapegrad/nn/dropout.hpp"

#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/dropout.hpp"

namespace tapegrad::nn {

Dropout::Dropout(DropoutOptions options, std::shared_ptr<Generator> generator)
    : options_(options),
      generator_(generator ? std::move(generator) : default_generator()),
      mask_(std::make_shared<const xt::xarray<std::uint8_t>>(xt::xarray<std::uint8_t>::from_shape({0}))) {
  ops::check_dropout_probability(options_.p());
}

Dropout::Dropout(double p, std::shared_ptr<Generator> generator)
    : Dropout(DropoutOptions(p), std::move(generator)) {}

Tensor Dropout::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  xt::xarray<std::uint8_t> drawn = xt::xarray<std::uint8_t>::from_shape({0});   // left empty if no draw
  Tensor y = ops::dropout(x, options_.p(), is_training(), *generator_, options_.inplace(), &drawn);
  if (drawn.size() != 0) mask_ = std::make_shared<const xt::xarray<std::uint8_t>>(std::move(drawn));
  return y;
}

Tensor Dropout::forward_added(const Tensor& x, const Array& rows) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::add_rows_dropout(x, rows, options_.p(), is_training(), *generator_, &mask_);
}

void Dropout::extra_repr(std::ostream& os) const {
  os << "p=" << py_float(options_.p()) << ", inplace=" << (options_.inplace() ? "True" : "False");
}

}  // namespace tapegrad::nn
