// src/autograd/engine.hpp (private): what the files of src/autograd offer each other and the
// Tensor. The record and replay path is record.cpp and engine.cpp; the other files hold what it
// needs but a learner can skip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/autograd/record.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad {
struct TensorImpl;
}

namespace tapegrad::autograd::detail {

// ---- engine.cpp ------------------------------------------------------------------------------
/// Backpropagates d(root) = seed through every entry `root` reaches.
void backward(const Tensor& root, Array seed, bool retain_graph);
/// A backward run by a closure of the backward running on this thread (checkpoint's recompute):
/// from `root` through the entries numbered `first` or later, which the closure has just
/// recorded. A tensor made before `first` belongs to the enclosing backward, which has reached
/// it: it receives its gradient here and its entry runs there. Leaves' hooks and queued callbacks
/// are the enclosing backward's too. Consumes what it runs.
void backward_inside(const Tensor& root, Array seed, std::uint64_t first);

// ---- checks.cpp: what the engine refuses, with PyTorch's messages ----------------------------
/// attach: `output` is a tensor the op just computed, and none of its inputs.
void check_can_record(const char* op, const Tensor& output, const Tensor* inputs,
                      std::size_t n_inputs);
/// backward: the loss requires grad.
void check_can_backward(const Tensor& root);
/// backward: every tensor `e` saved is at the version it was saved at.
void check_saved_versions(const EntryBase& e);
/// backward: refuses to run through `consumed`, which an earlier backward freed.
[[noreturn]] void fail_second_backward(const EntryBase& consumed);
/// Throws AutogradError unless the running backward (on this thread) has reached the entry that
/// produced `t`: a closure may add only into the inputs its op recorded.
void expect_reached(const TensorImpl& t, const char* op);
/// Whether a backward's entries are running on this thread (a WalkScope is alive).
bool backward_running();
/// Marks backward number `walk` as running on this thread while alive (for expect_reached). A
/// backward_inside runs within another: both are running.
class WalkScope {
 public:
  explicit WalkScope(std::uint64_t walk);
  ~WalkScope();
  WalkScope(const WalkScope&) = delete;
  WalkScope& operator=(const WalkScope&) = delete;
  std::uint64_t walk() const { return walk_; }
  const WalkScope* enclosing() const { return enclosing_; }

 private:
  std::uint64_t walk_;
  const WalkScope* enclosing_;
};

// ---- src/core/tensor.cpp: a tensor's pending gradient during a backward --------------------------
/// Whether `t` received a gradient in this backward; a row-sparse one (an intermediate used as an
/// embedding table) is made dense, since an entry's closure takes a dense gradient.
bool take_pending_dense(TensorImpl& t);
/// Drops what `t` received (a backward that failed).
void drop_pending(TensorImpl& t);

// ---- record.cpp ------------------------------------------------------------------------------
/// The number the next recorded entry will get (for messages).
std::uint64_t peek_next_seq();

// ---- free_entries.cpp ------------------------------------------------------------------------
/// Deletes an entry and, without recursion, every entry that only it kept alive.
void destroy_entry(EntryBase* entry);

// ---- listing.cpp: this thread's list of live entries, for autograd::tape() -------------------
void list_entry(EntryBase* entry);
void unlist_entry(EntryBase* entry);
/// Calls f(entry) for each entry of this thread's list, oldest first, under its lock.
void for_each_listed(const std::function<void(const EntryBase&)>& f);

// ---- names.cpp -------------------------------------------------------------------------------
/// The one copy of `s` that lives as long as the program.
const std::string* intern_name(const std::string& s);

// ---- module_scope.cpp ------------------------------------------------------------------------
/// The path of the module whose forward is running on this thread (interned), or null.
const std::string* module_stack_top();

// ---- anomaly.cpp -----------------------------------------------------------------------------
/// Under AnomalyGuard: throws AutogradError if backward of `e` left NaN/Inf in an input's grad.
void check_input_gradients(const EntryBase& e);

// ---- hooks.cpp: post-accumulate hooks and queue_callback (data-parallel training) -----------
/// The hooked leaves one backward reaches, and when each one's gradient is complete.
class LeafHooks {
 public:
  /// `leaf` (which has hooks) is an input of entry `seq`.
  void note(const std::shared_ptr<TensorImpl>& leaf, std::uint64_t seq);
  /// After entry `e` (ran: whether it ran): fires the hooks of the leaves it completed.
  void after(const EntryBase& e, bool ran);
  /// Fires the hooks of a leaf that is itself the loss.
  static void fire(const Tensor& leaf);
  bool empty() const { return leaves_.empty(); }

 private:
  struct Leaf {
    std::shared_ptr<TensorImpl> leaf;
    std::uint64_t last_seq;  // the smallest entry number that adds into it
    bool fed = false;
  };
  std::vector<Leaf> leaves_;
};
/// The callbacks queued (autograd::queue_callback) during the backward it spans, run by run().
class CallbackScope {
 public:
  CallbackScope();
  ~CallbackScope();
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  void run();

 private:
  std::vector<std::function<void()>> callbacks_;
  std::vector<std::function<void()>>* previous_;
};

// ---- profiler.cpp: autograd::Profiler's hooks; each call site costs one branch when it is off --
struct ProfileData;
inline thread_local ProfileData* active_profile = nullptr;  // this thread's Profiler's data
/// After attach: the op's forward ended now.
void profile_forward(const EntryBase& e);
/// Runs `e` with `doutput`, timed as its backward (less what it timed inside: a checkpoint's
/// recompute counts as the ops it ran).
void profile_backward(EntryBase& e, Array&& doutput);
/// Something that is no op's forward ended or began now (a backward, a module's forward).
void profile_mark();

// ---- backward_trace.cpp: autograd::BackwardTrace's hooks, one branch each when it is off ------
struct TraceData;
inline thread_local TraceData* active_trace = nullptr;  // this thread's BackwardTrace's data
inline thread_local bool keep_outputs = false;  // an autograd::KeepOutputs lives on this thread
/// Before entry `e`, reached by a backward, runs (or is passed over: `ran` false).
void trace_entry(const EntryBase& e, const TensorImpl& output, bool ran);
/// After accumulate_grad added `grad` into `target`'s gradient.
void trace_added(const TensorImpl& target, const Array& grad);
void trace_added(const TensorImpl& target, const RowSparseGrad& grad);

}  // namespace tapegrad::autograd::detail
