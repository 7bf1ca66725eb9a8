// include/tapegrad/distributed/collectives.hpp
//
// The collective operations a training loop needs. Every rank calls the same collective, in the
// same order, with arrays of the same shape; each call returns when its result is there:
//
//     Array g = ...;                      // this rank's values
//     all_reduce(g, ReduceOp::average);   // now every rank holds the mean over ranks, the same bits
//     broadcast(weights, 0);              // every rank now holds rank 0's weights
//
// Shapes are checked across ranks first: arrays that differ are a ShapeError on every rank, not a
// crash or a silent truncation in MPI. A call with MPI not open is a DistributedError.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xarray.hpp>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::distributed {

enum class ReduceOp {
  sum,      ///< x_0 + x_1 + ... + x_{N-1}
  average,  ///< the sum, then divided by N (PyTorch's ReduceOp.AVG)
  max,
  min,
};

/// Replaces `a` by the reduction of every rank's `a`, elementwise. Every rank gets the same bits.
void all_reduce(xt::xarray<float>& a, ReduceOp op = ReduceOp::sum);
/// The same for one number (a loss to report, a count), reduced in double.
double all_reduce(double value, ReduceOp op = ReduceOp::sum);
/// Replaces `a` on every rank by rank `root`'s `a` (same shapes required).
void broadcast(xt::xarray<float>& a, int root = 0);
void broadcast(xt::xarray<std::int64_t>& a, int root = 0);
/// Every rank's `value`, in rank order.
std::vector<std::uint64_t> all_gather(std::uint64_t value);

}  // namespace tapegrad::distributed
