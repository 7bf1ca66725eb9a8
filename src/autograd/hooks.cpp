// src/autograd/hooks.cpp: what data-parallel training hangs on backward, kept out of the engine.
//
// A leaf's post-accumulate hooks (Tensor::register_post_accumulate_grad_hook, PyTorch's) run once
// per backward, as soon as the last entry that adds into that leaf has run: that is where
// DistributedDataParallel starts reducing a gradient while the rest of backward goes on.
// autograd::queue_callback runs a callback when the backward has finished (PyTorch's
// Variable._execution_engine.queue_callback), which DistributedDataParallel uses to wait for its
// last gradients. engine.cpp calls LeafHooks and CallbackScope at three places.
#include <algorithm>
#include <atomic>
#include <functional>
#include <vector>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {
TensorImpl& defined_impl(const Tensor& t) {  // the same check and text as src/core/tensor.cpp's
  check<ValueError>(
      t.defined(),
      "Tensor: expected a defined tensor, got an empty handle; construct it from an Array first");
  return TensorAccess::impl(t);
}

// The callbacks queued during the backward running on this thread; null when none runs.
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;
}  // namespace

std::size_t Tensor::register_post_accumulate_grad_hook(
    std::function<void(const Tensor&)> hook) const {
  TensorImpl& impl = defined_impl(*this);
  check<AutogradError>(impl.is_leaf(),
                       "post accumulate grad hooks cannot be registered on non-leaf tensors | "
                       "register_post_accumulate_grad_hook: expected a leaf, got the output of '",
                       impl.producer(), "'");
  check<ValueError>(static_cast<bool>(hook),
                    "register_post_accumulate_grad_hook: expected a callable, got an empty one");
  static std::atomic<std::size_t> next_id{1};
  const std::size_t id = next_id++;
  impl.hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_hook(std::size_t id) const {
  auto& hooks = defined_impl(*this).hooks;
  const auto it =
      std::find_if(hooks.begin(), hooks.end(), [id](const auto& h) { return h.first == id; });
  if (it == hooks.end()) fail<ValueError>("remove_hook: ", describe(), " has no hook with id ", id);
  hooks.erase(it);
}

namespace autograd {

namespace detail {

void LeafHooks::note(const std::shared_ptr<TensorImpl>& leaf, std::uint64_t seq) {
  auto it =
      std::find_if(leaves_.begin(), leaves_.end(), [&](const Leaf& h) { return h.leaf == leaf; });
  if (it == leaves_.end())
    leaves_.push_back({leaf, seq});
  else
    it->last_seq = std::min(it->last_seq, seq);
}

void LeafHooks::after(const EntryBase& e, bool ran) {
  for (Leaf& h : leaves_) {
    if (ran)
      for (std::size_t i = 0; i < e.inputs.size(); ++i)
        if (TensorAccess::handle(e.inputs[i]) == h.leaf) h.fed = true;
    if (h.last_seq != e.seq || !h.fed) continue;
    fire(TensorAccess::wrap(h.leaf));
  }
}

void LeafHooks::fire(const Tensor& leaf) {
  const auto hooks = TensorAccess::impl(leaf).hooks;  // a hook may register or remove hooks
  for (const auto& [id, hook] : hooks) hook(leaf);
}

// queue_callback() appends to the innermost running backward's list. run() is the last thing a
// backward that succeeded does; a callback may queue another, which runs after it. A backward that
// throws drops what was queued.
CallbackScope::CallbackScope() : previous_(queued_callbacks) { queued_callbacks = &callbacks_; }
CallbackScope::~CallbackScope() { queued_callbacks = previous_; }
void CallbackScope::run() {
  for (std::size_t i = 0; i < callbacks_.size(); ++i) {
    const std::function<void()> callback = std::move(callbacks_[i]);  // the list may grow
    callback();
  }
}

}  // namespace detail

void queue_callback(std::function<void()> callback) {
  check<ValueError>(static_cast<bool>(callback),
                    "queue_callback: expected a callable, got an empty one");
  check<AutogradError>(
      queued_callbacks != nullptr,
      "Final callbacks can only be installed during backward pass. | queue_callback: no backward "
      "is running on this thread; call it from a post-accumulate hook or a backward closure");
  queued_callbacks->push_back(std::move(callback));
}

}  // namespace autograd
}  // namespace tapegrad
