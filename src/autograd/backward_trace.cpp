// src/autograd/backward_trace.cpp: autograd::BackwardTrace (backward_trace.hpp). The engine calls
// trace_entry before each entry it reached (engine.cpp), and Tensor::accumulate_grad calls
// trace_added after each gradient it added (tensor_grad.cpp), each behind one branch on this
// thread's active_trace.
#include "tapegrad/autograd/backward_trace.hpp"

#include "../core/tensor_impl.hpp"
#include "engine.hpp"

namespace tapegrad::autograd {

namespace detail {

struct TraceData {
  std::vector<BackwardTrace::Step> steps;
  bool running = true;
};

namespace {
Array dense_grad(const TensorImpl& t) {
  if (t.sparse_grad) {
    Array dense = t.sparse_grad->to_dense();
    if (t.grad) dense += *t.grad;
    return dense;
  }
  return t.grad ? *t.grad : Array();
}
}  // namespace

void trace_entry(const EntryBase& e, const TensorImpl& output, bool ran) {
  BackwardTrace::Step step;
  step.seq = e.seq;
  step.op = e.op;
  step.module = e.module ? *e.module : "";
  step.ran = ran;
  if (e.kept_output.defined())
    step.output = e.kept_output.data();
  else if (output.storage)
    step.output = output.storage->data;
  else
    step.output_kept = false;
  if (ran) step.grad_output = *output.grad;
  active_trace->steps.push_back(std::move(step));
}

void trace_added(const TensorImpl& target, const Array& grad) {
  // Only what a closure adds: not a leaf that is its own loss, nor a gradient set by hand.
  if (!backward_running() || active_trace->steps.empty()) return;
  active_trace->steps.back().added.push_back(
      {reinterpret_cast<std::uintptr_t>(&target), target.name, grad, dense_grad(target)});
}

void trace_added(const TensorImpl& target, const RowSparseGrad& grad) {
  trace_added(target, grad.to_dense());
}

}  // namespace detail

KeepOutputs::KeepOutputs() : enclosing_(detail::keep_outputs) { detail::keep_outputs = true; }
KeepOutputs::~KeepOutputs() { detail::keep_outputs = enclosing_; }

BackwardTrace::BackwardTrace() : data_(std::make_unique<detail::TraceData>()) {
  check<AutogradError>(detail::active_trace == nullptr,
                       "autograd::BackwardTrace: a trace is already recording on this thread; stop "
                       "it (or let it go out of scope) before starting another");
  detail::active_trace = data_.get();
}

BackwardTrace::~BackwardTrace() { stop(); }

void BackwardTrace::stop() {
  if (!data_->running) return;
  data_->running = false;
  if (detail::active_trace == data_.get()) detail::active_trace = nullptr;
}

const std::vector<BackwardTrace::Step>& BackwardTrace::steps() const { return data_->steps; }

}  // namespace tapegrad::autograd
