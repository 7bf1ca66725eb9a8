// include/tapegrad/autograd/checkpoint.hpp
//
// Activation recompute: torch.utils.checkpoint(fn, *inputs) with use_reentrant=False and
// preserve_rng_state=True. A training step keeps every activation its backward reads until that
// backward has run; checkpoint trades memory for time by keeping none of fn's:
//
//     Tensor y = autograd::checkpoint(
//         [&block](const std::vector<Tensor>& in) { return block->forward(in[0]); }, {x});
//
// Forward: fn runs once, recording as usual, and checkpoint follows fn's graph from y back to
// what fn read from outside: its inputs, the parameters it uses (captured, not passed: they get
// their gradients as module parameters do under PyTorch's checkpoint), any other tensor that
// requires grad. Then fn's graph is dropped, and ONE tape entry, "checkpoint", is recorded on y
// with those tensors as its inputs. Between forward and backward the step holds y and its inputs,
// not fn's activations (a Transformer block's dozen (B, T, C)-sized ones and its (B, T, 4C) ones).
//
// Backward: when backward() reaches the entry, its closure runs fn again on the same inputs,
// recording, with the same random streams, then backpropagates d(loss)/dy through that new graph
// as a backward of its own, run inside the first (src/autograd/engine.cpp: it stops at the
// tensors the first backward owns, so their gradients flow on there). The gradients are those of
// the plain run bit for bit: the same ops on the same values in the same order.
//
// Random streams. A Dropout inside fn must drop the same elements when fn runs again, and the
// layer must not count that second forward (the next step's masks would move). Every random op
// takes its stream through take_stream() below: during a checkpointed forward the streams taken
// are noted, and during the recompute each take returns the noted stream instead of drawing.
// nn::Dropout, ops::dropout with a Generator and the attention ops take theirs so. A draw fn
// makes from a Generator itself (randn in a forward) is not replayed: draw through a Dropout.
//
// Autocast: the recompute runs under autocast::bf16 when the forward did.
// Under NoGradGuard, or when nothing fn reads requires grad, checkpoint just runs fn (PyTorch's
// checkpoint then records nothing either; a backward from y is refused as usual).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::autograd {

/// What checkpoint runs: the inputs -> one tensor.
using CheckpointFunction = std::function<Tensor(const std::vector<Tensor>&)>;

/// y = fn(inputs), keeping for backward only the inputs and what fn reads from outside (its
/// parameters), not what fn computes; backward runs fn again (above). fn must compute the same
/// thing each time it runs (same ops, same shapes, same random ops): a recompute that differs is
/// refused with AutogradError naming the entry. ValueError for an empty fn, an undefined input,
/// or an undefined result; AutogradError when fn writes one of its inputs in place (the
/// recompute would read the changed values).
Tensor checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs);

/// The stream of one random op's forward: a Philox key and a call number (ops::DropoutStream).
struct RandomStream {
  std::uint64_t seed = 0;
  std::uint64_t call = 0;
};

/// How a random op takes its stream so that checkpoint's recompute sees the same one: returns
/// draw(), except inside the recompute of a checkpointed function, where it returns the stream the
/// same take returned in fn's forward without calling draw (so a layer's counter is not advanced
/// twice). AutogradError when the recompute takes more streams than the forward did.
RandomStream take_stream(const std::function<RandomStream()>& draw);

}  // namespace tapegrad::autograd
