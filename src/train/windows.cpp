// src/train/windows.cpp: a language model's batches (train/windows.hpp).
#include "tapegrad/train/windows.hpp"

#include "tapegrad/core/errors.hpp"

namespace tapegrad::train {

data::Batch TokenStream::windows(const std::vector<std::size_t>& starts, std::size_t T) const {
  return file ? data::windows(*file, begin, count, starts, T) : data::windows(ids, starts, T);
}

RandomWindows::RandomWindows(TokenStream tokens, std::size_t T, std::size_t B,
                             std::shared_ptr<Generator> generator, int rank, int world,
                             std::string name)
    : tokens_(std::move(tokens)),
      T_(T),
      B_(B),
      generator_(std::move(generator)),
      rank_(rank),
      world_(world),
      name_(std::move(name)) {
  check<ValueError>(T_ >= 1 && B_ >= 1, "RandomWindows: expected T >= 1 and B >= 1, got T = ", T_,
                    " and B = ", B_);
  check<ValueError>(tokens_.size() > T_, "RandomWindows: expected more than T = ", T_,
                    " ids for one window of T + 1, got ", tokens_.size());
  check<ValueError>(generator_ != nullptr, "RandomWindows: the generator is null");
  check<ValueError>(world_ >= 1 && rank_ >= 0 && rank_ < world_,
                    "RandomWindows: expected rank in [0, ", world_, "), got ", rank_);
}

data::Batch RandomWindows::next() {
  const std::vector<std::size_t> starts =
      data::random_starts(tokens_.size(), T_, B_ * std::size_t(world_), *generator_);
  const std::vector<std::size_t> mine(starts.begin() + std::ptrdiff_t(std::size_t(rank_) * B_),
                                      starts.begin() + std::ptrdiff_t(std::size_t(rank_ + 1) * B_));
  return tokens_.windows(mine, T_);
}

Validation fixed_windows(const TokenStream& tokens, std::size_t T, std::size_t count, std::size_t B,
                         std::uint64_t seed) {
  check<ValueError>(tokens.size() > T, "fixed_windows: expected more than T = ", T,
                    " ids for one window of T + 1, got ", tokens.size());
  Generator generator(seed);
  const std::vector<std::size_t> starts = data::random_starts(tokens.size(), T, count, generator);
  Validation v;
  for (std::size_t i = 0; i < starts.size(); i += B) {
    const std::vector<std::size_t> chunk(
        starts.begin() + std::ptrdiff_t(i),
        starts.begin() + std::ptrdiff_t(std::min(i + B, starts.size())));
    v.batches.push_back(tokens.windows(chunk, T));
  }
  return v;
}

}  // namespace tapegrad::train
