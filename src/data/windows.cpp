// src/data/windows.cpp: batches of windows of token ids (data/windows.hpp).
#include "tapegrad/data/windows.hpp"

#include "tapegrad/core/errors.hpp"

namespace tapegrad::data {

Batch windows(const std::vector<std::int64_t>& ids, const std::vector<std::size_t>& starts,
              std::size_t T) {
  const std::size_t B = starts.size();
  for (std::size_t r = 0; r < B; ++r)
    check<IndexError>(starts[r] < ids.size() && ids.size() - starts[r] > T, "windows: expected ",
                      "starts in [0, ", ids.size() > T ? ids.size() - T : 0, ") for windows of ",
                      T + 1, " ids of a stream of ", ids.size(), ", got ", starts[r], " in row ",
                      r);
  Batch b{IndexArray::from_shape({B, T}), IndexArray::from_shape({B, T})};
  for (std::size_t r = 0; r < B; ++r)
    for (std::size_t t = 0; t < T; ++t) {
      b.x(r, t) = ids[starts[r] + t];
      b.y(r, t) = ids[starts[r] + t + 1];
    }
  return b;
}

Batch windows(const TokenFile& file, std::size_t begin, std::size_t size,
              const std::vector<std::size_t>& starts, std::size_t T) {
  check<IndexError>(begin <= file.size() && size <= file.size() - begin, "windows: the ids [",
                    begin, ", ", begin + size, ") are not all in ", file.path(), " (", file.size(),
                    " ids)");
  const std::size_t B = starts.size();
  for (std::size_t r = 0; r < B; ++r)
    check<IndexError>(starts[r] < size && size - starts[r] > T, "windows: expected starts in [0, ",
                      size > T ? size - T : 0, ") for windows of ", T + 1, " ids of a stream of ",
                      size, ", got ", starts[r], " in row ", r);
  Batch b{IndexArray::from_shape({B, T}), IndexArray::from_shape({B, T})};
  std::vector<std::int64_t> row(T + 1);
  for (std::size_t r = 0; r < B; ++r) {
    file.window(begin + starts[r], T + 1, row.data());
    for (std::size_t t = 0; t < T; ++t) {
      b.x(r, t) = row[t];
      b.y(r, t) = row[t + 1];
    }
  }
  return b;
}

std::vector<std::size_t> random_starts(std::size_t n, std::size_t T, std::size_t count,
                                       Generator& gen) {
  check<ValueError>(n > T, "random_starts: a stream of ", n, " ids has no window of ", T + 1,
                    "; use a shorter window or more text");
  std::vector<std::size_t> starts(count);
  for (std::size_t& s : starts) s = std::size_t(gen.randint(0, std::int64_t(n - T)));
  return starts;
}

}  // namespace tapegrad::data
