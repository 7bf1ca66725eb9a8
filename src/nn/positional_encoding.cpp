// src/nn/positional_encoding.cpp
//
// pe[pos, 2i]   = sin(pos / 10000^(2i / d_model))
// pe[pos, 2i+1] = cos(pos / 10000^(2i / d_model))
// computed, as the tutorials' div_term, as angle = pos * exp(2i * -(ln 10000 / d_model)).
// The table is fixed, not learned: a BUFFER, saved with the model, never given to an optimizer,
// never given a gradient. It is computed in double and stored as float32, which is more accurate
// than the tutorials' float32 table (one of tapegrad's deliberate differences from PyTorch,
// docs/semantics.md); an odd d_model simply ends with a sine column.
//
// forward:  y = dropout(x + pe[:, :L])      x (B, L, d_model)
//           dx = dropout's backward of dy   (pe is a constant and receives nothing)
#include "tapegrad/nn/positional_encoding.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/sizes.hpp"

namespace tapegrad::nn {

namespace {
void check_sizes(const char* where, std::int64_t d_model, std::int64_t max_len) {
  check<ValueError>(d_model > 0, where, ": expected d_model > 0, got ", d_model);
  check<ValueError>(max_len > 0, where, ": expected max_len > 0, got ", max_len);
}

std::string bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  std::ostringstream os;
  os << "0x" << std::hex << std::uppercase << u;
  return os.str();
}
}  // namespace

Array sinusoid_table(std::int64_t max_len, std::int64_t d_model) {
  check_sizes("sinusoid_table", d_model, max_len);
  const auto n_pos = static_cast<std::size_t>(max_len), D = static_cast<std::size_t>(d_model);
  // div_term[j] = exp(i * -(ln 10000 / d_model)), i = j - j % 2: one value per column pair.
  const double k = -(std::log(10000.0) / static_cast<double>(d_model));
  std::vector<double> div_term(D);
  for (std::size_t j = 0; j < D; ++j) div_term[j] = std::exp(static_cast<double>(j - j % 2) * k);
  Array pe = new_array({1, n_pos, D}, "PositionalEncoding: pe");
  float* p = pe.data();
  for (std::size_t pos = 0; pos < n_pos; ++pos)
    for (std::size_t j = 0; j < D; ++j) {
      const double angle = static_cast<double>(pos) * div_term[j];
      p[pos * D + j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  return pe;
}

PositionalEncoding::PositionalEncoding(std::int64_t d_model, double dropout_p, std::int64_t max_len,
                                       std::shared_ptr<Generator> generator)
    : PositionalEncoding(PositionalEncodingOptions(d_model, dropout_p).max_len(max_len),
                         std::move(generator)) {}

PositionalEncoding::PositionalEncoding(PositionalEncodingOptions options,
                                       std::shared_ptr<Generator> generator)
    : options_(options) {
  check_sizes("PositionalEncoding", options_.d_model(), options_.max_len());
  // The tutorials' order: the dropout child first, then the buffer.
  dropout = register_module("dropout",
                            std::make_shared<Dropout>(options_.dropout(), std::move(generator)));
  pe = register_buffer("pe", Buffer(sinusoid_table(options_.max_len(), options_.d_model())),
                       options_.persistent());
}

Tensor PositionalEncoding::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  const auto D = static_cast<std::size_t>(options_.d_model());
  if (x.dim() != 3 || x.shape()[2] != D)
    fail<ShapeError>(context(), ": expected x of shape (B, L, ", D, "), got ", x.shape());
  const std::size_t L = x.shape()[1], max_len = static_cast<std::size_t>(options_.max_len());
  if (L > max_len)
    fail<ShapeError>("The size of tensor a (", L, ") must match the size of tensor b (", max_len,
                     ") at non-singleton dimension 1 | ", context(),
                     ": expected sequence length <= max_len ", max_len, ", got ", L,
                     "; raise max_len");
  // dropout(x + pe[:, :L]) in one pass (Dropout::forward_added): the table's rows are read in
  // place instead of being sliced and broadcast, and the sum is never stored.
  return dropout->forward_added(x, pe.data());
}

void PositionalEncoding::verify() const {
  const Array expected = sinusoid_table(options_.max_len(), options_.d_model());
  const Array& actual = pe.data();
  if (actual.shape() != expected.shape())
    fail<InvariantError>(context(), ": expected pe of shape ", expected.shape(), ", got ",
                         actual.shape());
  const auto D = static_cast<std::size_t>(options_.d_model());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float want = expected.data()[i], got = actual.data()[i];
    if (std::memcmp(&want, &got, sizeof(float)) == 0) continue;
    fail<InvariantError>(context(), ": pe differs from the sinusoid table at (pos, j) = (", i / D,
                         ", ", i % D, "): expected ", want, " (", bits(want), "), got ", got, " (",
                         bits(got),
                         "); pe was modified, or loaded from a table computed another way "
                         "(PyTorch's tutorial code computes it in float32)");
  }
}

}  // namespace tapegrad::nn
