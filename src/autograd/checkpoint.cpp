// src/autograd/checkpoint.cpp: autograd::checkpoint, activation recompute on the tape
// (checkpoint.hpp says what it promises; docs/engine.md#recompute draws it).
//
// Forward: fn runs and records as usual; its graph, followed from its output back to the tensors
// it read from outside (made before fn started: numbered below `first`), tells which tensors the
// result depends on. That graph is then dropped, and one entry, "checkpoint", recorded on the
// result with those tensors as inputs, keeps only them.
//
// Backward: the engine reaches the entry and calls its closure, like any op's. The closure runs
// fn again (recording: backward closures run under NoGradGuard, so it turns grad mode back on),
// which records new entries numbered after everything of the running backward, and hands d(y) to
// detail::backward_inside on the new output: a backward of those entries only, which leaves the
// gradients of the outside tensors pending on them for the running backward (engine.cpp).
//
// Random streams: the streams fn takes in its forward are noted in order (a StreamFrame of kind
// note), and the recompute takes them back in that order (a StreamFrame of kind replay).
// Checkpoints nest, and so do the frames: a stream taken inside a recompute comes from the
// innermost recompute and is noted by every checkpointed forward running inside it.
#include "tapegrad/autograd/checkpoint.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/autocast.hpp"

namespace tapegrad::autograd {

namespace {

// ---- the random streams a checkpointed forward took, and its recompute takes again -------------

struct StreamFrame;
thread_local StreamFrame* innermost_frame = nullptr;

struct StreamFrame {
  enum class Kind { note, replay };
  StreamFrame(Kind how, std::vector<RandomStream>& taken, std::uint64_t entry = 0)
      : kind(how), streams(taken), seq(entry), enclosing(innermost_frame) {
    innermost_frame = this;
  }
  ~StreamFrame() { innermost_frame = enclosing; }
  StreamFrame(const StreamFrame&) = delete;
  StreamFrame& operator=(const StreamFrame&) = delete;

  Kind kind;
  std::vector<RandomStream>& streams;  // note: appended to; replay: read from `next` on
  std::uint64_t seq;                   // replay: the checkpoint entry's number, for messages
  std::size_t next = 0;
  StreamFrame* enclosing;
};

// ---- what fn read from outside ----------------------------------------------------------------

// The tensors that require grad which fn's graph reaches from `out` without passing through an
// entry numbered before `first`: leaves (its inputs, the parameters it uses) and the outputs of
// older entries (inputs computed before fn ran). Each once, in the order found.
std::vector<Tensor> outside_reads(const Tensor& out, std::uint64_t first) {
  std::vector<Tensor> reads;
  std::unordered_set<const TensorImpl*> found;
  std::unordered_set<const detail::EntryBase*> seen;
  std::vector<const detail::EntryBase*> stack;
  const auto visit = [&](const Tensor& t) {
    const TensorImpl& impl = TensorAccess::impl(t);
    if (!impl.requires_grad) return;
    if (impl.is_leaf() || impl.grad_fn->seq < first) {
      // a handle that keeps the data (an entry's inputs are edges): the recompute reads it
      if (found.insert(&impl).second) reads.push_back(TensorAccess::wrap(TensorAccess::handle(t)));
    } else if (seen.insert(impl.grad_fn.get()).second) {
      stack.push_back(impl.grad_fn.get());
    }
  };
  visit(out);
  while (!stack.empty()) {
    const detail::EntryBase* e = stack.back();
    stack.pop_back();
    for (std::size_t i = 0; i < e->inputs.size(); ++i) visit(e->inputs[i]);
  }
  return reads;
}

std::vector<const TensorImpl*> identities(const std::vector<Tensor>& tensors) {
  std::vector<const TensorImpl*> ids;
  for (const Tensor& t : tensors) ids.push_back(&TensorAccess::impl(t));
  std::sort(ids.begin(), ids.end());
  return ids;
}

const char* const kDifferentRecompute =
    "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata "
    "than during the forward pass. | checkpoint (entry #";

// ---- the entry's state: what the recompute needs ------------------------------------------------

struct Checkpointed {
  CheckpointFunction fn;
  std::vector<Tensor> inputs;
  std::vector<RandomStream> streams;     // taken by fn's forward, in order
  std::vector<const TensorImpl*> reads;  // outside_reads of the forward (the entry holds them)
  Shape shape;                           // fn's result's
  bool bf16 = false;                     // the forward ran under autocast::bf16
  std::uint64_t seq = 0;                 // the entry's number

  // The entry's closure: fn again, then backward through what it recorded.
  void backward(Array dy) {
    check<AutogradError>(bf16 || !autocast::bf16_enabled(), "checkpoint (entry #", seq,
                         "): expected the recompute to run as the forward did, in float32, got a "
                         "backward under autocast::bf16, which would round fn's products; open "
                         "the scope around the forward too, or close it before backward()");
    const std::uint64_t first = detail::peek_next_seq();
    Tensor out;
    {
      EnableGradGuard recording;  // a backward's closures run under NoGradGuard
      std::optional<autocast::bf16> mixed;
      if (bf16 && !autocast::bf16_enabled()) mixed.emplace();
      if (detail::active_profile != nullptr) detail::profile_mark();  // fn's ops begin now
      StreamFrame replay(StreamFrame::Kind::replay, streams, seq);
      out = fn(inputs);
      check<AutogradError>(replay.next == streams.size(), kDifferentRecompute, seq,
                           "): the recompute of fn took ", replay.next,
                           " random streams, its "
                           "forward ",
                           streams.size(),
                           "; fn must run the same random ops each "
                           "time it runs (a Dropout switched to eval() before backward()?)");
    }
    check<AutogradError>(out.defined() && out.shape() == shape, kDifferentRecompute, seq,
                         "): the recompute of fn returned ",
                         out.defined() ? str(out.shape()) : std::string("an empty handle"),
                         ", its forward ", shape, "; fn must compute the same thing each time");
    check<AutogradError>(identities(outside_reads(out, first)) == reads, kDifferentRecompute, seq,
                         "): the recompute of fn depends on other tensors that require grad than "
                         "its forward did; fn must compute the same thing each time (was a "
                         "parameter frozen or unfrozen before backward()?)");
    detail::backward_inside(out, std::move(dy), first);
  }
};

}  // namespace

RandomStream take_stream(const std::function<RandomStream()>& draw) {
  StreamFrame* replay = innermost_frame;
  while (replay != nullptr && replay->kind != StreamFrame::Kind::replay) replay = replay->enclosing;
  RandomStream s;
  if (replay == nullptr) {
    s = draw();
  } else {
    check<AutogradError>(replay->next < replay->streams.size(), kDifferentRecompute, replay->seq,
                         "): the recompute of fn took more random streams than its forward (",
                         replay->streams.size(),
                         "); fn must run the same random ops each time it runs (a Dropout "
                         "switched to train() before backward()?)");
    s = replay->streams[replay->next++];
  }
  for (StreamFrame* f = innermost_frame; f != replay; f = f->enclosing) f->streams.push_back(s);
  return s;
}

Tensor checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs) {
  check<ValueError>(static_cast<bool>(fn), "checkpoint: expected a function, got an empty one");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    check<ValueError>(inputs[i].defined(),
                      "checkpoint: expected defined tensors, got an empty "
                      "handle at input ",
                      i);
  const auto defined = [](Tensor y) {
    check<ValueError>(y.defined(),
                      "checkpoint: expected fn to return a tensor, got an empty "
                      "handle");
    return y;
  };
  if (!grad_enabled()) return defined(fn(inputs));  // nothing is kept: nothing to recompute

  // 1. fn, recording as usual, its random streams noted.
  auto state = std::make_shared<Checkpointed>();
  state->fn = fn;
  state->inputs = inputs;
  state->bf16 = autocast::bf16_enabled();
  std::vector<std::uint64_t> versions;
  for (const Tensor& x : inputs) versions.push_back(x.version());
  const std::uint64_t first = detail::peek_next_seq();
  Tensor out;
  {
    StreamFrame noting(StreamFrame::Kind::note, state->streams);
    out = defined(fn(inputs));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    check<AutogradError>(inputs[i].version() == versions[i], "checkpoint: fn wrote input ", i, ", ",
                         inputs[i].describe(), ", in place (version ", versions[i], " -> ",
                         inputs[i].version(),
                         "); its recompute in backward would read the "
                         "changed values: make that op out of place");
  // A result that depends on nothing that requires grad has no backward: it is returned as is,
  // recording nothing, as PyTorch's checkpoint does (a backward from it is refused as usual).
  if (!out.requires_grad()) return out;

  // 2. What fn read from outside; fn's own graph goes with `out`, and one entry replaces it.
  const std::vector<Tensor> reads = outside_reads(out, first);
  state->reads = identities(reads);
  state->shape = out.shape();
  std::vector<Tensor> saved = reads;  // checked at backward: the recompute must read the same
  saved.insert(saved.end(), inputs.begin(), inputs.end());
  Tensor y = out.detach();
  record("checkpoint", y, reads, saved, [state](Array dy) { state->backward(std::move(dy)); });
  state->seq = TensorAccess::impl(y).grad_fn->seq;
  return y;
}

}  // namespace tapegrad::autograd
