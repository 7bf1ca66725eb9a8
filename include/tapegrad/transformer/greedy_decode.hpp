// include/tapegrad/transformer/greedy_decode.hpp
//
// greedy_decode: The Annotated Transformer's decoding for the copy task. Encode the source once,
// then grow the output one token at a time, each time feeding everything decoded so far (under
// the causal mask) and appending the most probable next token:
//
//     ys = [start_symbol]
//     repeat max_len - 1 times:  ys += argmax(generator(decode(memory, src_mask, ys)[:, -1]))
//
// Runs under NoGradGuard and does not change the model's training mode: call model.eval() first,
// as the tutorial does, or dropout stays active.
#pragma once

#include <cstdint>
#include <optional>

#include "tapegrad/transformer/encoder_decoder.hpp"

namespace tapegrad::nn::transformer {

/// src (B, Ts) -> (B, max_len) token ids, each row starting with start_symbol (the tutorial
/// decodes one row; every row here is decoded independently, side by side). max_len >= 1.
IndexArray greedy_decode(EncoderDecoder& model, const IndexArray& src,
                         const std::optional<Mask>& src_mask, std::int64_t max_len,
                         std::int64_t start_symbol);

}  // namespace tapegrad::nn::transformer
