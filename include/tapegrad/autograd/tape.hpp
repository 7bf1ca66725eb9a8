// include/tapegrad/autograd/tape.hpp
//
// The tape: tapegrad's central idea. Each thread has one tape, a list of entries. Every
// differentiable op, run while grad mode is on with an input that requires grad, appends ONE
// entry: its name, its inputs and output, the tensors its backward reads (with their versions)
// and the backward function itself, a closure written right under the op's forward.
//
//     Tensor w(xt::ones<float>({3}), true);       // a leaf that requires grad
//     Tensor y = ops::mul(w, w);                   // tape: #0 mul    (3) x (3) -> (3)
//     Tensor loss = ops::sum(y);                   // tape: #1 sum    (3) -> ()
//     std::cout << autograd::tape();               // prints the two entries
//     loss.backward();                             // runs #1, then #0; w.grad() == [2, 2, 2]
//                                                  // the tape is empty again
//
// An op can only consume tensors that already exist, so the tape is in topological order by
// construction: walking it newest-first, each tensor has received all of its gradient before the
// entry that produced it runs. backward() never needs to sort. (SPEC 2.3)
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include "tapegrad/autograd/backward_fn.hpp"
#include "tapegrad/tensor.hpp"

namespace tapegrad::autograd {

// An entry's BackwardFn (backward_fn.hpp) adds d(loss)/d(output) into the inputs' gradients (with
// Tensor::accumulate_grad). `doutput` is the output's pending gradient, which the tape drops as
// soon as the function returns, so a backward may reuse its buffer: scale it in place and move it
// into an input's gradient, saving an allocation the size of the output. Most ops simply read it
// (a `const Array&` parameter). The loss's own entry is given the caller's seed: as it is when
// its closure takes `const Array&`, as a copy when it may rewrite it, so the seed never changes.

/// A tensor that backward will read, and its version when it was saved.
struct SavedTensor {
  Tensor tensor;
  std::uint64_t version;
};

struct TapeEntry {
  std::string op;                   ///< "mul", "embedding", ...
  std::string module;               ///< the module path active when recorded ("" outside modules)
  Tensor output;
  std::vector<Tensor> inputs;
  std::vector<SavedTensor> saved;
  BackwardFn backward;
};

class Tape {
 public:
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<TapeEntry>& entries() const { return entries_; }
  void clear() { entries_.clear(); }
  void push(TapeEntry entry) { entries_.push_back(std::move(entry)); }

  /// Seeds d(loss) = seed and replays the entries newest-first (SPEC 2.3.2). A seed whose shape
  /// is not the loss's is refused (ShapeError) before anything runs: the tape is kept.
  void backward(const Tensor& loss, const Array& seed, bool retain_graph);

  /// Graphviz text of the recorded graph (`dot -Tsvg`).
  std::string to_dot() const;

 private:
  std::vector<TapeEntry> entries_;
};

/// This thread's tape.
Tape& tape();
/// The tape as a table: index, op, module, input shapes (* = requires grad), output shape, saved.
std::ostream& operator<<(std::ostream& os, const Tape& tape);

// ---- grad mode ---------------------------------------------------------------------------------

/// Whether ops on this thread record (true unless a NoGradGuard is alive).
bool grad_enabled();
/// Stops recording on this thread while alive (RAII, nestable), like torch.no_grad().
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;
 private:
  bool previous_;
};

/// While alive, every op checks its output (and backward every gradient) for NaN and Inf and
/// throws AutogradError naming the first op that produced one (torch.autograd.detect_anomaly).
class AnomalyGuard {
 public:
  AnomalyGuard();
  ~AnomalyGuard();
  AnomalyGuard(const AnomalyGuard&) = delete;
  AnomalyGuard& operator=(const AnomalyGuard&) = delete;
 private:
  bool previous_;
};
bool anomaly_enabled();

/// Marks the module whose forward is running (Module::forward implementations open one), so
/// tape entries and error messages can name it. `where` reads like "Embedding 'embed.lut'".
class ModuleScope {
 public:
  ModuleScope(std::string type_name, std::string path);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;
};
/// The innermost module's path ("" outside any module).
const std::string& current_module_path();
/// "Embedding 'embed.lut'" inside a module's forward, else `op`: the `where` of error messages.
std::string where(const std::string& op);

// ---- recording: the extension kit for new ops ----------------------------------------------------

/// True iff an op with these inputs must be recorded: grad mode is on and one requires grad.
bool should_record(std::initializer_list<Tensor> inputs);
bool should_record(const std::vector<Tensor>& inputs);

namespace detail {
void push_entry(std::string op, const Tensor& output, std::vector<Tensor> inputs,
                std::vector<Tensor> saved, BackwardFn backward);
void check_anomaly(const std::string& op, const Tensor& output);
}  // namespace detail

/// The only place that decides whether an op is recorded: iff grad mode is on and an input
/// requires grad. Then the output becomes a non-leaf that requires grad, and `backward` runs
/// during Tensor::backward() with d(loss)/d(output). `saved` lists the tensors backward reads:
/// their versions are checked before it runs. Call it last, after the forward has succeeded.
template <class F>
void record(std::string op, const Tensor& output, std::initializer_list<Tensor> inputs,
            std::initializer_list<Tensor> saved, F&& backward) {
  if (anomaly_enabled()) detail::check_anomaly(op, output);
  if (!should_record(inputs)) return;
  detail::push_entry(std::move(op), output, std::vector<Tensor>(inputs),
                     std::vector<Tensor>(saved), BackwardFn(std::forward<F>(backward)));
}
/// The same, for ops with a variable number of inputs (cat).
template <class F>
void record(std::string op, const Tensor& output, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& saved, F&& backward) {
  if (anomaly_enabled()) detail::check_anomaly(op, output);
  if (!should_record(inputs)) return;
  detail::push_entry(std::move(op), output, inputs, saved, BackwardFn(std::forward<F>(backward)));
}

}  // namespace tapegrad::autograd
