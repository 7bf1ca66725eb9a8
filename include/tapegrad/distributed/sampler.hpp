// include/tapegrad/distributed/sampler.hpp
//
// DistributedSampler: which examples of a dataset this rank trains on, as PyTorch's
// torch.utils.data.distributed.DistributedSampler. Each epoch, the dataset's indices are shuffled
// with a generator seeded by seed + epoch (the same on every rank), made a multiple of the number
// of replicas N, and dealt out like cards: rank r gets positions r, r + N, r + 2N, ...
//
//     DistributedSampler sampler(dataset_size, DistributedSamplerOptions().seed(42));
//     for (std::int64_t epoch = 0; ...; ++epoch) {
//       sampler.set_epoch(epoch);                      // a new order each epoch: call it every epoch
//       const std::vector<std::int64_t> mine = sampler.indices();
//       for (std::size_t i = 0; i + B <= mine.size(); i += B) ... train on examples mine[i .. i+B) ...
//
// Batch k of B on every rank together is positions [k*B*N, (k+1)*B*N) of the epoch's order: the
// same global batch a single process would take with batch B*N, so N ranks with batch B train as
// one process with batch B*N (up to the order of the floating-point sums).
// Sizes (PyTorch's): with drop_last = false, the order is padded with its own first indices to
// ceil(size / N) * N, so some examples are seen twice; with drop_last = true, the tail is dropped
// to floor(size / N) * N. The shuffle is tapegrad's Generator (Fisher-Yates), not torch.randperm:
// the same rules, other orders.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tapegrad/core/options.hpp"
namespace tapegrad::distributed {

class DistributedSamplerOptions {
 public:
  /// The number of ranks sharing the dataset, >= 1; default world_size().
  TAPEGRAD_ARG(std::optional<int>, num_replicas) = std::nullopt;
  /// This rank, in [0, num_replicas); default rank().
  TAPEGRAD_ARG(std::optional<int>, rank) = std::nullopt;
  /// Shuffle every epoch (false deals out 0, 1, 2, ... in order); default true.
  TAPEGRAD_ARG(bool, shuffle) = true;
  /// The shuffle's seed, the same on every rank; default 0.
  TAPEGRAD_ARG(std::uint64_t, seed) = 0;
  /// Drop the tail that does not divide by num_replicas instead of padding; default false.
  TAPEGRAD_ARG(bool, drop_last) = false;
};

class DistributedSampler {
 public:
  /// A dataset of `dataset_size` examples (>= 0). ValueError for a bad size, num_replicas < 1 or a
  /// rank outside [0, num_replicas) (PyTorch's text); DistributedError when a default is needed
  /// and MPI is not open.
  explicit DistributedSampler(std::int64_t dataset_size, DistributedSamplerOptions options = {});

  /// Selects the epoch whose order indices() returns (PyTorch's set_epoch).
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::int64_t epoch() const { return epoch_; }

  /// This rank's indices for the current epoch: num_samples() of them.
  std::vector<std::int64_t> indices() const;
  /// The same, resuming inside the epoch after `global_position` examples have been consumed by
  /// all ranks together (a multiple of nothing in particular, so a run can resume on another
  /// world size): this rank's share of positions global_position, global_position + 1, ...
  std::vector<std::int64_t> indices(std::int64_t global_position) const;
  /// The epoch's whole order, padded or cut to total_size(): what the ranks deal out.
  std::vector<std::int64_t> global_order() const;

  std::int64_t num_samples() const { return num_samples_; }  ///< per rank
  std::int64_t total_size() const { return num_samples_ * num_replicas_; }
  std::int64_t dataset_size() const { return dataset_size_; }
  int num_replicas() const { return num_replicas_; }
  int rank() const { return rank_; }

 private:
  std::int64_t dataset_size_;
  int num_replicas_, rank_;
  DistributedSamplerOptions options_;
  std::int64_t num_samples_;
  std::int64_t epoch_ = 0;
};

/// The batch each of `world_size` ranks takes so that together they take `global_batch_size`:
/// global_batch_size / world_size. With exact (the default), a global batch that does not divide
/// by the world size is a ValueError naming both and the nearest sizes that would divide; without
/// exact, the quotient rounded down (the remainder is not trained). A global batch smaller than the
/// world size, or a size below 1, is a ValueError either way.
std::int64_t local_batch_size(std::int64_t global_batch_size, int world_size, bool exact = true);

}  // namespace tapegrad::distributed
