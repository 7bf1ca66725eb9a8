// src/distributed/sampler.cpp
//
// DistributedSampler, PyTorch's rules (torch/utils/data/distributed.py):
//   num_samples = ceil((size - N) / N) if drop_last and size % N != 0, else ceil(size / N)
//   total_size  = num_samples * N
//   order       = a permutation of 0 .. size-1 drawn from seed + epoch (or 0 .. size-1 unshuffled),
//                 padded by repeating itself from the start up to total_size, or cut to it
//   rank r      = order[r], order[r + N], order[r + 2N], ...
#include "tapegrad/distributed/sampler.hpp"

#include <utility>

#include "tapegrad/distributed/process_group.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::distributed {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  check<ValueError>(dataset_size >= 0, "DistributedSampler: expected a dataset size >= 0, got ",
                    dataset_size);
  num_replicas_ = options.num_replicas() ? *options.num_replicas() : world_size();
  rank_ = options.rank() ? *options.rank() : distributed::rank();
  check<ValueError>(num_replicas_ >= 1, "DistributedSampler: expected num_replicas >= 1, got ",
                    num_replicas_);
  check<ValueError>(0 <= rank_ && rank_ < num_replicas_, "Invalid rank ", rank_,
                    ", rank should be in the interval [0, ", num_replicas_ - 1,
                    "] | DistributedSampler: expected a rank in [0, ", num_replicas_, "), got ",
                    rank_);
  const std::int64_t n = num_replicas_;
  if (options.drop_last() && dataset_size % n != 0)
    num_samples_ = (dataset_size - n + n - 1) / n;  // ceil((size - N) / N): the tail is dropped
  else
    num_samples_ = (dataset_size + n - 1) / n;  // ceil(size / N): padded
  if (num_samples_ < 0) num_samples_ = 0;
}

std::vector<std::int64_t> DistributedSampler::global_order() const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_size_));
  for (std::int64_t i = 0; i < dataset_size_; ++i) order[static_cast<std::size_t>(i)] = i;
  if (options_.shuffle()) {
    // Fisher-Yates from the back, one draw per position, from a generator every rank seeds alike.
    Generator g(options_.seed() + static_cast<std::uint64_t>(epoch_));
    for (std::int64_t i = dataset_size_ - 1; i > 0; --i)
      std::swap(order[static_cast<std::size_t>(i)],
                order[static_cast<std::size_t>(g.randint(0, i + 1))]);
  }
  const std::size_t total = static_cast<std::size_t>(total_size());
  if (order.size() > total) {
    order.resize(total);  // drop_last: cut the tail
  } else if (!order.empty()) {
    for (std::size_t i = 0, n = order.size(); order.size() < total; ++i)
      order.push_back(order[i % n]);  // pad
  }
  return order;
}

std::vector<std::int64_t> DistributedSampler::indices() const { return indices(0); }

std::vector<std::int64_t> DistributedSampler::indices(std::int64_t global_position) const {
  check<ValueError>(global_position >= 0,
                    "DistributedSampler::indices: expected a position >= 0, got ", global_position);
  const std::vector<std::int64_t> order = global_order();
  std::vector<std::int64_t> mine;
  for (std::size_t i = static_cast<std::size_t>(global_position) + static_cast<std::size_t>(rank_);
       i < order.size(); i += static_cast<std::size_t>(num_replicas_))
    mine.push_back(order[i]);
  return mine;
}

std::int64_t local_batch_size(std::int64_t global_batch_size, int world_size, bool exact) {
  const char* where = "distributed::local_batch_size";
  check<ValueError>(world_size >= 1, where, ": expected a world size >= 1, got ", world_size);
  check<ValueError>(global_batch_size >= world_size, where,
                    ": expected a global batch of at least one example per rank (", world_size,
                    " ranks), got ", global_batch_size);
  const std::int64_t local = global_batch_size / world_size;
  if (exact && global_batch_size % world_size != 0)
    fail<ValueError>(where, ": expected a global batch that divides by the world size ", world_size,
                     ", got ", global_batch_size, " (", local, " per rank, ",
                     global_batch_size % world_size, " left over); use ", local * world_size,
                     " or ", (local + 1) * world_size, ", or give each rank its batch instead");
  return local;
}

}  // namespace tapegrad::distributed
