// src/transformer/greedy_decode.cpp: greedy decoding, one token per step, every row of the batch at once.
#include "tapegrad/transformer/greedy_decode.hpp"

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/attention.hpp"
#include "tapegrad/ops/reduce.hpp"
#include "tapegrad/ops/shape.hpp"

namespace tapegrad::nn::transformer {

IndexArray greedy_decode(EncoderDecoder& model, const IndexArray& src,
                         const std::optional<Mask>& src_mask, std::int64_t max_len,
                         std::int64_t start_symbol) {
  check<ShapeError>(src.dimension() == 2, "greedy_decode: expected src of shape (B, T), got ",
                    src.shape());
  check<ValueError>(max_len >= 1, "greedy_decode: expected max_len >= 1, got ", max_len);
  autograd::NoGradGuard no_grad;
  const std::size_t B = src.shape()[0], L = static_cast<std::size_t>(max_len);
  const Tensor memory = model.encode(src, src_mask);
  IndexArray ys = IndexArray::from_shape({B, 1});
  std::fill(ys.begin(), ys.end(), start_symbol);
  for (std::size_t t = 1; t < L; ++t) {
    const Tensor out =
        model.decode(memory, src_mask, ys, ops::subsequent_mask(static_cast<std::int64_t>(t)));
    const auto T = static_cast<std::int64_t>(t);
    const Tensor last = ops::reshape(ops::slice(out, 1, T - 1, T),
                                     {static_cast<std::int64_t>(B), -1});    // out[:, -1]
    const IndexArray next = ops::argmax(model.generator->forward(last), 1);  // (B,)
    IndexArray grown = IndexArray::from_shape({B, t + 1});
    for (std::size_t b = 0; b < B; ++b) {
      std::copy_n(ys.data() + b * t, t, grown.data() + b * (t + 1));
      grown(b, t) = next(b);
    }
    ys = std::move(grown);
  }
  return ys;
}

}  // namespace tapegrad::nn::transformer
