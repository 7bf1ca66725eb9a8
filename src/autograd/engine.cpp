// src/autograd/engine.cpp
//
// backward(): replay, newest first, the part of the tape a loss can reach.
//
// Every entry took the next number of one process-wide counter when it was recorded, and an op
// can only use tensors that already exist, so a producer always has a smaller number than its
// consumers. Sorting the reached entries by descending number is therefore replaying the tape
// newest-first, and a tensor has received all of its gradient by the time the entry that
// produced it runs. That is why we never need more than a sort by number.
//
//   1. collect: from the loss's entry, follow each entry's inputs to the entries that produced
//      them. An entry an earlier backward consumed ends the walk before anything runs, with
//      PyTorch's "Trying to backward through the graph a second time" and the entry's name.
//   2. run: seed d(loss) and run the entries by descending number. An entry runs iff its output
//      received a gradient; its closure adds into its inputs' gradients: a leaf's .grad, or an
//      intermediate's pending gradient, which lives on that tensor only until its entry has run.
//   3. consume (unless retain_graph): an entry that ran frees its closure, its saved tensors and
//      its inputs, and keeps its name and number so that a later backward can say what is gone.
//      Entries this backward did not reach are untouched: other graphs stay usable.
//   4. finish: run the callbacks that hooks or closures queued during this backward
//      (autograd::queue_callback), in order, before backward() returns.
#include "engine.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "../tensor_impl.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::autograd::detail {

namespace {
std::atomic<std::uint64_t> walks{0};
thread_local std::uint64_t current_walk = 0;  // the walk running on this thread, 0 when none
// The callbacks queued during the backward running on this thread; null when none runs.
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;

constexpr const char* kSecondTime =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.";

using Impl = std::shared_ptr<TensorImpl>;
EntryBase& entry_of(const Impl& t) { return *t->grad_fn; }

// A leaf with post-accumulate hooks, and the smallest entry number that adds into it: once the
// walk has passed that entry, the leaf's gradient for this backward is complete.
struct HookedLeaf {
  Impl leaf;
  std::uint64_t last_seq;
  bool fed = false;
};

// Step 1: every reached entry's output, each once, and the newest consumed entry reached, if any.
std::vector<Impl> collect(const Impl& root, std::uint64_t walk, const EntryBase*& consumed,
                          std::vector<HookedLeaf>& hooked) {
  std::vector<Impl> reached, stack{root};
  entry_of(root).walk = walk;
  while (!stack.empty()) {
    Impl t = std::move(stack.back());
    stack.pop_back();
    const EntryBase& e = entry_of(t);
    reached.push_back(std::move(t));
    if (e.consumed) {  // its inputs are gone: the branch ends here
      if (consumed == nullptr || e.seq > consumed->seq) consumed = &e;
      continue;
    }
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
      const Tensor& in = e.inputs[i];
      if (!in.requires_grad()) continue;
      const Impl& impl = TensorAccess::handle(in);
      if (impl->is_leaf()) {
        if (impl->hooks.empty()) continue;
        auto it = std::find_if(hooked.begin(), hooked.end(),
                               [&](const HookedLeaf& h) { return h.leaf == impl; });
        if (it == hooked.end())
          hooked.push_back({impl, e.seq});
        else
          it->last_seq = std::min(it->last_seq, e.seq);
        continue;
      }
      EntryBase& producer = entry_of(impl);
      if (producer.walk == walk) continue;
      producer.walk = walk;
      stack.push_back(impl);
    }
  }
  return reached;
}

// Whether the output received a gradient in this walk; a row-sparse one (an intermediate used as
// an embedding table) is made dense first, since the entry's closure takes a dense gradient.
bool has_pending(TensorImpl& t) {
  if (t.sparse_grad) {
    Array dense = t.sparse_grad->to_dense();
    if (t.grad) dense += *t.grad;
    t.grad = std::move(dense);
    t.sparse_grad.reset();
  }
  return t.grad.has_value();
}
void drop_pending(TensorImpl& t) {
  t.grad.reset();
  t.sparse_grad.reset();
}

void check_saved_versions(const EntryBase& e) {
  for (std::size_t i = 0; i < e.saved.size(); ++i) {
    const SavedTensor& s = e.saved[i];
    if (s.tensor.version() != s.version)
      fail<AutogradError>(
          "one of the variables needed for gradient computation has been modified by an inplace "
          "operation | ",
          e.op, " (entry #", e.seq,
          "): ", s.is_output ? "its output " + str(s.tensor.shape()) : s.tensor.describe(),
          " is at version ", s.tensor.version(), "; expected version ", s.version,
          ". It was written in place (an optimizer step, a max_norm renorm, mutable_data()) after "
          "the forward pass used it; do that after backward()");
  }
}

void check_input_gradients(const EntryBase& e) {
  for (std::size_t i = 0; i < e.inputs.size(); ++i) {
    const TensorImpl& in = TensorAccess::impl(e.inputs[i]);
    if (!in.grad) continue;
    for (float v : *in.grad)
      if (!std::isfinite(v))
        fail<AutogradError>("anomaly: backward of '", e.op, "' (entry #", e.seq,
                            ") produced NaN/Inf in the gradient of its input ", i, ", ",
                            e.inputs[i].describe());
  }
}

// Step 3: what ran is used up. Its name, number and shape stay for the error of step 1.
void consume(EntryBase& e) {
  e.release_closure();
  e.saved.clear();
  e.inputs.clear();
  e.consumed = true;
}

void fire_hooks(std::vector<HookedLeaf>& hooked, const EntryBase& e, bool ran) {
  for (HookedLeaf& h : hooked) {
    if (ran)
      for (std::size_t i = 0; i < e.inputs.size(); ++i)
        if (TensorAccess::handle(e.inputs[i]) == h.leaf) h.fed = true;
    if (h.last_seq != e.seq || !h.fed) continue;
    const Tensor leaf = TensorAccess::wrap(h.leaf);
    const auto hooks = h.leaf->hooks;  // a hook may register or remove hooks
    for (const auto& [id, hook] : hooks) hook(leaf);
  }
}

// The callbacks of one backward: queue_callback() appends to the innermost running backward's list.
// run() is the last thing a backward that succeeded does; a callback may queue another, which runs
// after it. A backward that throws drops what was queued.
struct CallbackScope {
  std::vector<std::function<void()>> callbacks;
  std::vector<std::function<void()>>* previous;
  CallbackScope() : previous(queued_callbacks) { queued_callbacks = &callbacks; }
  ~CallbackScope() { queued_callbacks = previous; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  void run() {
    for (std::size_t i = 0; i < callbacks.size(); ++i) {
      const std::function<void()> callback =
          std::move(callbacks[i]);  // the list may grow meanwhile
      callback();
    }
  }
};

// Restores "no walk running" however the walk ends.
struct WalkScope {
  std::uint64_t previous;
  explicit WalkScope(std::uint64_t walk) : previous(current_walk) { current_walk = walk; }
  ~WalkScope() { current_walk = previous; }
};
}  // namespace

void expect_reached(const TensorImpl& t, const char* op) {
  if (current_walk != 0 && t.grad_fn->walk == current_walk) return;
  fail<AutogradError>(op, ": added a gradient into the output of '", t.grad_fn->op, "' (entry #",
                      t.grad_fn->seq,
                      "), which is not one of the inputs its entry recorded; list every tensor a "
                      "backward closure adds into among the op's inputs in autograd::record");
}

void backward(const Tensor& root, Array seed, bool retain_graph) {
  check<AutogradError>(root.requires_grad(),
                       "element 0 of tensors does not require grad and does not have a grad_fn | "
                       "backward: the loss depends on no tensor that requires grad (computed under "
                       "NoGradGuard, or all parameters frozen?)");
  if (seed.shape() != root.shape())
    fail<ShapeError>("backward: expected a seed of the loss's shape ", root.shape(), " for ",
                     root.describe(), ", got ", seed.shape());
  NoGradGuard no_grad;  // backward closures never record
  CallbackScope callbacks;
  const Impl& root_impl = TensorAccess::handle(root);
  if (root_impl->is_leaf()) {  // a leaf is its own loss
    root.accumulate_grad(std::move(seed), "backward");
    for (const auto& [id, hook] : std::vector(root_impl->hooks)) hook(root);
    callbacks.run();
    return;
  }

  const std::uint64_t walk = ++walks;
  const EntryBase* consumed = nullptr;
  std::vector<HookedLeaf> hooked;
  std::vector<Impl> tape = collect(root_impl, walk, consumed, hooked);
  if (consumed != nullptr)
    fail<AutogradError>(kSecondTime, " | backward: '", consumed->op, "' (entry #", consumed->seq,
                        ") was freed by an earlier backward()");
  std::sort(tape.begin(), tape.end(),
            [](const Impl& a, const Impl& b) { return a->grad_fn->seq > b->grad_fn->seq; });

  WalkScope running(walk);
  root_impl->grad = std::move(seed);  // d loss / d loss
  std::size_t k = 0;
  try {
    for (; k < tape.size(); ++k) {
      TensorImpl& out = *tape[k];
      EntryBase& e = *out.grad_fn;
      const bool ran = has_pending(out);  // else: not on a path to the loss
      if (ran) {
        check_saved_versions(e);
        e.run(std::move(*out.grad));  // adds (+=) into the inputs' gradients
        out.grad.reset();
        if (anomaly_enabled()) check_input_gradients(e);
      }
      if (!hooked.empty()) fire_hooks(hooked, e, ran);
      if (ran && !retain_graph) consume(e);
      tape[k].reset();  // frees what nothing else needs any more
    }
  } catch (...) {
    for (; k < tape.size(); ++k)  // drop the gradients still in flight
      if (tape[k]) drop_pending(*tape[k]);
    throw;
  }
  callbacks.run();
}

}  // namespace tapegrad::autograd::detail

namespace tapegrad::autograd {

void queue_callback(std::function<void()> callback) {
  check<ValueError>(static_cast<bool>(callback),
                    "queue_callback: expected a callable, got an empty one");
  check<AutogradError>(
      detail::queued_callbacks != nullptr,
      "Final callbacks can only be installed during backward pass. | queue_callback: no backward "
      "is running on this thread; call it from a post-accumulate hook or a backward closure");
  detail::queued_callbacks->push_back(std::move(callback));
}

}  // namespace tapegrad::autograd
