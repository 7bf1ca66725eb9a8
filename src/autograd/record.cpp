// src/autograd/record.cpp: how an op's entry is filled in and handed to the tensor it produced.
//
// autograd::record (record.hpp) has made the entry around the op's closure; attach numbers it,
// copies in what backward needs, and makes the output its owner. Backward is in engine.cpp.
#include <atomic>
#include <memory>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"
#include "tapegrad/autograd/record.hpp"

namespace tapegrad::autograd::detail {

namespace {
std::atomic<std::uint64_t> next_seq{0};  // the process-wide recording order
}  // namespace

std::uint64_t peek_next_seq() { return next_seq.load(); }

void attach(EntryBase* entry, const char* op, const Tensor& output, const Tensor* inputs,
            std::size_t n_inputs, const Tensor* saved, std::size_t n_saved) {
  std::unique_ptr<EntryBase, TensorImpl::EntryDeleter> owned(entry);  // freed if a check throws
  check_can_record(op, output, inputs, n_inputs);  // on a new tensor that is not an input
  TensorImpl& out = TensorAccess::impl(output);
  entry->op = op;
  entry->module = module_stack_top();
  entry->output_shape = output.shape();
  for (std::size_t i = 0; i < n_inputs; ++i)
    if (inputs[i].defined()) entry->inputs.push_back(inputs[i].edge());  // absent if optional
  for (std::size_t i = 0; i < n_saved; ++i) {
    const bool is_output = saved[i].is_same(output);  // kept without its graph: no cycle
    entry->saved.push_back({is_output ? output.detach() : saved[i], saved[i].version(), is_output});
  }
  if (keep_outputs) entry->kept_output = output.detach();  // the data only: no cycle
  entry->seq = next_seq.fetch_add(1, std::memory_order_relaxed);
  list_entry(entry);               // for autograd::tape() (listing.cpp)
  out.requires_grad = true;        // the output now depends on something trainable
  out.grad_fn = std::move(owned);  // ... and owns the entry that says how
  if (active_profile != nullptr) profile_forward(*entry);  // autograd::Profiler (profiler.cpp)
}

EntryBase::~EntryBase() { unlist_entry(this); }

}  // namespace tapegrad::autograd::detail

namespace tapegrad {
const char* TensorImpl::producer() const { return grad_fn ? grad_fn->op : ""; }
}  // namespace tapegrad
