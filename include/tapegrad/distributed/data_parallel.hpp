// include/tapegrad/distributed/data_parallel.hpp
//
// DistributedDataParallel: data-parallel training as PyTorch's torch.nn.parallel.DistributedDataParallel
// does it. Every rank holds the whole model and trains it on its own slice of each batch; after
// backward() every gradient is the average over ranks, so the optimizer steps of all ranks are the
// same step and the models stay identical, bit for bit:
//
//     distributed::Environment mpi(argc, argv);
//     auto model = std::make_shared<MyModel>(...);
//     distributed::DistributedDataParallel ddp(*model);    // every rank now has rank 0's weights
//     optim::Adam adam(model->parameters(), ...);
//     for (...) {
//       Tensor loss = loss_of(model->forward(my_slice_of_the_batch));
//       loss.backward();      // gradients are averaged over ranks while backward runs
//       adam.step();
//       adam.zero_grad();
//     }
//
// How (docs/distributed.md tells it at more length, with the numbers):
//   * Construction: every rank describes its parameters and buffers (names, shapes); a rank whose
//     module differs is refused, on every rank, naming what differs. Then rank 0's values are
//     broadcast to all, so every rank starts from the same model.
//   * Buckets: the parameters that require grad are grouped, in the REVERSE order of
//     named_parameters() (roughly the order backward produces their gradients), into buckets of
//     about bucket_cap_mb MiB (25 by default; the first bucket 1 MiB, so communication starts early).
//   * Overlap: each parameter has a post-accumulate-grad hook. When backward has produced every
//     gradient of a bucket, the bucket is copied into one flat buffer (each gradient divided by the
//     world size on the way) and its all-reduce (MPI_Iallreduce, sum) starts at once, while backward
//     goes on with the layers below. A thread of this object drives the transfers meanwhile. Buckets
//     start in order, the same order on every rank.
//   * End of backward: a callback queued on the engine (autograd::queue_callback) starts the
//     buckets still waiting (gradients a rank did not produce count as zero), waits for all of them
//     (the "exposed" communication: what did not overlap with backward) and writes the averages
//     back into each parameter's .grad. When backward() returns, every rank holds the same gradients.
//   * A parameter no rank gave a gradient keeps none (the optimizer skips it), as in PyTorch with
//     find_unused_parameters=True; one some rank used gets the average over all ranks.
//   * Row-sparse gradients (Embedding with sparse = true) get a bucket each and are gathered
//     (MPI_Allgatherv of every rank's row ids and rows), never densified.
// What it does not do, unlike PyTorch: buffers are broadcast at construction only (no tapegrad
// module changes a buffer while training), and the model is not wrapped (call it as before).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/options.hpp"

namespace tapegrad::distributed {

/// With check_in_sync, every synchronised backward ends by comparing the fingerprints of every
/// parameter and buffer across ranks, and throws InvariantError naming the first that differs: one
/// pass over the weights and a small all-gather per step.
class DistributedDataParallelOptions {
 public:
  /// A gradient bucket's size in MiB, > 0 (PyTorch's bucket_cap_mb); default 25.
  TAPEGRAD_ARG(double, bucket_cap_mb) = 25.0;
  /// The first bucket's size in MiB, > 0: small, so communication starts early; default 1.
  TAPEGRAD_ARG(double, first_bucket_cap_mb) = 1.0;
  /// Debug: compare every tensor's fingerprint across ranks after each backward; default false.
  TAPEGRAD_ARG(bool, check_in_sync) = false;
};

/// One bucket, as built at construction: its parameters (in the order they are laid out) and size.
struct BucketInfo {
  std::vector<std::string> params;
  std::size_t numel = 0;  ///< gradient elements (float32)
  bool sparse = false;    ///< a row-sparse gradient, gathered rather than all-reduced
};

/// What one synchronised backward cost in communication (and the sums over every step so far).
struct SyncStats {
  std::size_t steps = 0;    ///< synchronised backward passes counted here
  std::size_t buckets = 0;  ///< buckets reduced (a row-sparse one is gathered)
  std::size_t buckets_started_in_backward =
      0;  ///< of those, started by a hook, while backward still ran
  std::size_t bytes =
      0;  ///< gradient bytes reduced (a ring all-reduce sends 2(N-1)/N of this per rank)
  double exposed_seconds = 0;  ///< backward waiting at its end for communication (did not overlap)
  double communication_seconds = 0;  ///< from the first bucket's start to the last one's completion
};

class DistributedDataParallel {
 public:
  /// Checks that every rank's module has the same parameters and buffers (DistributedError
  /// naming the first difference, on every rank), broadcasts rank 0's values, builds the buckets
  /// and registers the hooks. `module` must outlive this object, and is wrapped by one
  /// DistributedDataParallel at a time (DistributedError otherwise). Needs MPI (Environment).
  explicit DistributedDataParallel(nn::Module& module, DistributedDataParallelOptions options = {});
  ~DistributedDataParallel();  ///< removes the hooks
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  nn::Module& module() const { return module_; }
  const DistributedDataParallelOptions& options() const { return options_; }
  /// The buckets, in the order they are reduced.
  const std::vector<BucketInfo>& buckets() const;

  /// While alive, backward() does not synchronise: gradients only accumulate on each rank, and
  /// the first backward after it averages the accumulated sum (PyTorch's no_sync(), for gradient
  /// accumulation over several micro-batches).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  /// The last synchronised backward's figures, and their sums since construction.
  const SyncStats& last_step() const;
  const SyncStats& total() const;

  struct State;  ///< (src/distributed/data_parallel.cpp)

 private:
  nn::Module& module_;
  DistributedDataParallelOptions options_;
  std::unique_ptr<State> state_;
};

/// FNV-1a fingerprint of every parameter, then every buffer, of `module` (Buffer::fingerprint's
/// rule, combined in named_parameters() / named_buffers() order).
std::uint64_t fingerprint(const nn::Module& module);
/// Compares, across ranks, the fingerprint of each parameter and buffer of `module`; throws
/// InvariantError on every rank, naming `where`, the first tensor that differs and the ranks that
/// differ from rank 0, unless every rank holds the same bits. A collective: every rank calls it.
void expect_in_sync(const nn::Module& module, const std::string& where = "expect_in_sync");

}  // namespace tapegrad::distributed
