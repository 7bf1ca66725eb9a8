// src/nn/dropout.cpp: the Dropout module, a thin shell around ops::dropout that supplies the
// training flag and the mask's stream: the seed taken from the generator and the forward's number.
#include "tapegrad/nn/dropout.hpp"

#include <ostream>

#include "tapegrad/autograd/checkpoint.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/dropout.hpp"

namespace tapegrad::nn {

Dropout::Dropout(DropoutOptions options, std::shared_ptr<Generator> generator)
    : options_(options), generator_(generator ? std::move(generator) : default_generator()) {
  ops::check_dropout_probability(options_.p());
}

Dropout::Dropout(double p, std::shared_ptr<Generator> generator)
    : Dropout(DropoutOptions(p), std::move(generator)) {}

// Taken through autograd::take_stream: in the recompute of a checkpoint (autograd/checkpoint.hpp)
// the layer gets back the stream its forward took, and counts nothing: its masks stay the same.
ops::DropoutStream Dropout::next_stream() { return take_stream(std::nullopt); }

ops::DropoutStream Dropout::next_stream_for(const Shape& shape) { return take_stream(shape); }

ops::DropoutStream Dropout::take_stream(const std::optional<Shape>& shape) {
  const autograd::RandomStream s = autograd::take_stream([&] {
    if (reseed_pending()) {  // the first mask, or the generator was reseeded
      seed_ = generator_->next_u64();
      calls_ = 0;
      stream_id_ = generator_->stream_id();
    }
    if (shape) {
      last_shape_ = *shape;
      last_mask_current_ = false;
    }
    return autograd::RandomStream{seed_, calls_++};
  });
  return {s.seed, s.call};
}

Tensor Dropout::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  const bool drops = is_training() && options_.p() != 0.0 && x.numel() != 0;
  if (!drops) return ops::dropout(x, options_.p(), false, ops::DropoutStream{}, options_.inplace());
  return ops::dropout(x, options_.p(), true, next_stream_for(x.shape()), options_.inplace());
}

Tensor Dropout::forward_added(const Tensor& x, const Array& rows) {
  autograd::ModuleScope scope(type_name(), path());
  const bool drops = is_training() && options_.p() != 0.0 && x.numel() != 0;
  if (!drops) return ops::add_rows_dropout(x, rows, options_.p(), false, ops::DropoutStream{});
  const std::uint64_t seed = seed_, calls = calls_, stream_id = stream_id_;
  const Shape last_shape = last_shape_;
  const bool current = last_mask_current_;
  try {
    return ops::add_rows_dropout(x, rows, options_.p(), true, next_stream_for(x.shape()));
  } catch (...) {  // shapes that do not fit: as if this forward never happened
    seed_ = seed;
    calls_ = calls;
    stream_id_ = stream_id;
    last_shape_ = last_shape;
    last_mask_current_ = current;
    throw;
  }
}

const xt::xarray<std::uint8_t>& Dropout::last_mask() const {
  if (!last_mask_current_) {
    last_mask_ = ops::dropout_mask(last_shape_, options_.p(), {seed_, calls_ - 1});
    last_mask_current_ = true;
  }
  return last_mask_;
}

void Dropout::set_stream_state(std::uint64_t seed, std::uint64_t calls, bool reseed_pending) {
  seed_ = seed;
  calls_ = calls;
  stream_id_ = reseed_pending ? 0 : generator_->stream_id();  // ids start at 1: 0 never matches
  last_mask_ = xt::xarray<std::uint8_t>::from_shape({0});
  last_mask_current_ = true;
}

void Dropout::extra_repr(std::ostream& os) const {
  os << "p=" << py_float(options_.p()) << ", inplace=" << (options_.inplace() ? "True" : "False");
}

}  // namespace tapegrad::nn
