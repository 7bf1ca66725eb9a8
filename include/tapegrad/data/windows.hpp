// include/tapegrad/data/windows.hpp: batches of windows of a stream of token ids, the way nanoGPT
// trains a language model: B windows of T + 1 consecutive ids, x = ids[s, s + T) and the next ids
// y = ids[s + 1, s + T + 1), with starts s drawn at random (training) or once (validation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tapegrad/core/random.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/data/token_file.hpp"

namespace tapegrad::data {

/// One batch: x (B, T) and the next ids y (B, T).
struct Batch {
  IndexArray x, y;
};

/// Rows of T + 1 consecutive ids starting at `starts`. IndexError when a window runs past the end.
Batch windows(const std::vector<std::int64_t>& ids, const std::vector<std::size_t>& starts,
              std::size_t T);

/// The same from the ids [begin, begin + size) of a token file, each window read from the file
/// (TokenFile::window): the starts count from `begin`. IndexError when a window runs past `size`
/// or the stretch past the file; DataError naming the file when it shrank or changed since it was
/// opened (TokenFile::window).
Batch windows(const TokenFile& file, std::size_t begin, std::size_t size,
              const std::vector<std::size_t>& starts, std::size_t T);

/// `count` window starts drawn uniformly from [0, n - T), in order (nanoGPT's
/// torch.randint(len(data) - T)). ValueError when a stream of n ids has no window of T + 1.
std::vector<std::size_t> random_starts(std::size_t n, std::size_t T, std::size_t count,
                                       Generator& gen);

}  // namespace tapegrad::data
