// src/autograd/checks.cpp: what recording and backward refuse, each with PyTorch's message where
// PyTorch has one. record.cpp and engine.cpp call these by name; a learner can skip the texts.
#include "../core/tensor_impl.hpp"
#include "engine.hpp"

namespace tapegrad::autograd::detail {

namespace {
// The backwards running on this thread, innermost first; null when none runs.
thread_local const WalkScope* running = nullptr;
}  // namespace

void check_can_record(const char* op, const Tensor& output, const Tensor* inputs,
                      std::size_t n_inputs) {
  const TensorImpl& out = TensorAccess::impl(output);
  if (!out.is_leaf() || out.requires_grad || out.is_buffer)
    fail<AutogradError>("autograd::record: '", op,
                        "' must record on the new tensor it computed, got ", output.describe(),
                        " (already a leaf that requires grad, a buffer, or another op's output)");
  for (std::size_t i = 0; i < n_inputs; ++i)
    check<AutogradError>(
        !inputs[i].is_same(output), "autograd::record: '", op, "' lists its output as input ", i,
        "; an in-place op returns a new handle on the same data (x.detach()) and records on it");
}

void check_can_backward(const Tensor& root) {
  check<AutogradError>(root.requires_grad(),
                       "element 0 of tensors does not require grad and does not have a grad_fn | "
                       "backward: the loss depends on no tensor that requires grad (computed under "
                       "NoGradGuard, or all parameters frozen?)");
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

void fail_second_backward(const EntryBase& consumed) {
  fail<AutogradError>(
      "Trying to backward through the graph a second time (or directly access saved tensors after "
      "they have already been freed). Saved intermediate values of the graph are freed when you "
      "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
      "through the graph a second time or if you need to access saved tensors after calling "
      "backward. | backward: '",
      consumed.op, "' (entry #", consumed.seq, ") was freed by an earlier backward()");
}

void expect_reached(const TensorImpl& t, const char* op) {
  for (const WalkScope* w = running; w != nullptr; w = w->enclosing())
    if (t.grad_fn->walk == w->walk()) return;
  fail<AutogradError>(op, ": added a gradient into the output of '", t.grad_fn->op, "' (entry #",
                      t.grad_fn->seq,
                      "), which is not one of the inputs its entry recorded; list every tensor a "
                      "backward closure adds into among the op's inputs in autograd::record");
}

WalkScope::WalkScope(std::uint64_t walk) : walk_(walk), enclosing_(running) { running = this; }
WalkScope::~WalkScope() { running = enclosing_; }
bool backward_running() { return running != nullptr; }

}  // namespace tapegrad::autograd::detail
