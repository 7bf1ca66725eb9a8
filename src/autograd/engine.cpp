// src/autograd/engine.cpp: backward(), the replay, newest first, of the tape a loss can reach.
//
// An op can only use tensors that already exist, so an entry's producers have smaller numbers
// than it has: running the reached entries by descending number runs each one after everything
// that adds into its output's gradient. That is why a sort by number is all the ordering needed.
//
//   1. collect: from the loss's entry, follow each entry's inputs to the entries that produced
//      them. An entry an earlier backward consumed stops everything before anything runs.
//   2. run: seed d(loss) and run the entries by descending number. An entry runs iff its output
//      received a gradient; its closure adds into its inputs' gradients: a leaf's .grad, or an
//      intermediate's pending gradient, which lives on that tensor until its own entry has run.
//   3. consume (unless retain_graph): an entry that ran frees its closure, saved tensors and
//      inputs, and keeps its name and number so that a later backward can say what is gone.
// Leaves' post-accumulate hooks and queued callbacks (data-parallel training) are in hooks.cpp;
// the profiler and BackwardTrace watch the run from profiler.cpp and backward_trace.cpp.
//
// A closure may run a backward of its own: autograd::checkpoint's recomputes fn, which records
// new entries, numbered after every entry of the running backward, then calls backward_inside on
// fn's new output. That walk takes only the new entries (numbers from `first` on); a tensor
// older than that is the running backward's, so the inner walk stops at it and its gradient is
// left pending on it, where the running backward, which reached it, finds it when its turn comes.
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"

namespace tapegrad::autograd::detail {

namespace {
using Impl = std::shared_ptr<TensorImpl>;
std::atomic<std::uint64_t> walks{0};

// Step 1: each reached entry's output, once; `consumed` is the newest consumed entry reached.
// Entries numbered below `first` are an enclosing backward's (backward_inside) and are not taken;
// `hooks` is null there, the enclosing backward firing them.
std::vector<Impl> collect(const Impl& root, std::uint64_t walk, std::uint64_t first,
                          const EntryBase*& consumed, LeafHooks* hooks) {
  std::vector<Impl> reached, stack{root};
  root->grad_fn->walk = walk;
  while (!stack.empty()) {
    Impl t = std::move(stack.back());
    stack.pop_back();
    const EntryBase& e = *t->grad_fn;
    reached.push_back(std::move(t));
    if (e.consumed) {  // its inputs are gone: the branch ends here
      if (consumed == nullptr || e.seq > consumed->seq) consumed = &e;
      continue;
    }
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
      const Impl& in = TensorAccess::handle(e.inputs[i]);
      if (!in->requires_grad) continue;
      if (in->is_leaf()) {
        if (hooks != nullptr && !in->hooks.empty()) hooks->note(in, e.seq);
      } else if (in->grad_fn->seq >= first && in->grad_fn->walk != walk) {
        in->grad_fn->walk = walk;
        stack.push_back(in);
      }
    }
  }
  return reached;
}

// Step 3: what ran is used up. Its name, number and shape stay for step 1's error.
void consume(EntryBase& e) {
  e.release_closure();
  e.saved.clear();
  e.inputs.clear();
  e.consumed = true;
}

// Step 2 (and 3) on the reached entries, their root's gradient seeded.
void run(std::vector<Impl>& tape, bool retain_graph, LeafHooks* hooks) {
  std::sort(tape.begin(), tape.end(),
            [](const Impl& a, const Impl& b) { return a->grad_fn->seq > b->grad_fn->seq; });
  std::size_t k = 0;
  try {
    for (; k < tape.size(); ++k) {
      TensorImpl& out = *tape[k];
      EntryBase& e = *out.grad_fn;
      const bool ran = take_pending_dense(out);  // else: not on a path to the loss
      if (active_trace != nullptr) trace_entry(e, out, ran);
      if (ran) {
        check_saved_versions(e);  // nothing it reads was written in place since
        if (active_profile == nullptr)
          e.run(std::move(*out.grad));  // adds (+=) into the inputs' gradients
        else
          profile_backward(e, std::move(*out.grad));  // the same, timed (profiler.cpp)
        out.grad.reset();
        if (anomaly_enabled()) check_input_gradients(e);
      }
      if (hooks != nullptr && !hooks->empty()) hooks->after(e, ran);
      if (ran && !retain_graph) consume(e);
      tape[k].reset();  // frees what nothing else needs any more
    }
  } catch (...) {
    for (; k < tape.size(); ++k) drop_pending(*tape[k]);  // the gradients still in flight
    throw;
  }
}

}  // namespace

void backward(const Tensor& root, Array seed, bool retain_graph) {
  check_can_backward(root);  // the loss must depend on something that requires grad
  NoGradGuard no_grad;       // backward closures never record
  CallbackScope callbacks;
  const Impl& root_impl = TensorAccess::handle(root);
  if (root_impl->is_leaf()) {  // a leaf is its own loss
    root.accumulate_grad(std::move(seed), "backward");
    LeafHooks::fire(root);
    return callbacks.run();
  }

  const std::uint64_t walk = ++walks;
  const EntryBase* consumed = nullptr;
  LeafHooks hooks;
  std::vector<Impl> tape = collect(root_impl, walk, 0, consumed, &hooks);
  if (consumed != nullptr) fail_second_backward(*consumed);  // PyTorch's "a second time"

  WalkScope running(walk);
  root_impl->grad = std::move(seed);  // d loss / d loss
  run(tape, retain_graph, &hooks);
  if (active_profile != nullptr) profile_mark();
  callbacks.run();
}

void backward_inside(const Tensor& root, Array seed, std::uint64_t first) {
  check_can_backward(root);
  NoGradGuard no_grad;
  const Impl& root_impl = TensorAccess::handle(root);
  if (root_impl->is_leaf() || root_impl->grad_fn->seq < first)  // fn returned what it was given
    return root.accumulate_grad(std::move(seed), "checkpoint");

  const std::uint64_t walk = ++walks;
  const EntryBase* consumed = nullptr;
  std::vector<Impl> tape = collect(root_impl, walk, first, consumed, nullptr);
  if (consumed != nullptr) fail_second_backward(*consumed);

  WalkScope running(walk);
  root_impl->grad = std::move(seed);
  run(tape, /*retain_graph=*/false, nullptr);
  if (active_profile != nullptr) profile_mark();
}

}  // namespace tapegrad::autograd::detail
