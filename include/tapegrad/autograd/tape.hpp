// include/tapegrad/autograd/tape.hpp
//
// The tape: tapegrad's central idea. Every differentiable op, run while grad mode is on with an
// input that requires grad, records ONE entry: its name, the module that ran it, its inputs, the
// tensors its backward reads (with their versions) and the backward function itself, a closure
// written right under the op's forward. Entries are numbered in recording order.
//
//     Tensor w(xt::ones<float>({3}), true);       // a leaf that requires grad
//     Tensor y = ops::mul(w, w);                   // tape: #0 mul    (3,)* x (3,)* -> (3,)
//     Tensor loss = ops::sum(y);                   // tape: #1 sum    (3,)* -> ()
//     std::cout << autograd::tape();               // prints the two entries
//     loss.backward();                             // runs #1, then #0; w.grad() == [2, 2, 2]
//
// The tensors own the tape. An entry belongs to the tensor it produced, and holds the tensors it
// consumed: `loss` holds entry #1, which holds `y`, which holds entry #0, which holds `w`. So the
// part of the tape a loss can reach is exactly what its backward replays, and an entry nobody can
// reach any more (its output was dropped, as in an evaluation loop) is freed at once.
//
// An op can only consume tensors that already exist, so a producer always has a smaller number
// than its consumers: replaying the reached entries by descending number is replaying the tape
// newest-first, and each tensor has received all of its gradient before the entry that produced
// it runs. backward() never needs more than a sort by number. A backward without retain_graph
// consumes the entries it ran (their closures and saved tensors are freed); a later backward that
// reaches one of them is refused, with PyTorch's message, before anything runs. The whole story,
// with pictures: docs/engine.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include "tapegrad/autograd/grad_mode.hpp"
#include "tapegrad/autograd/module_scope.hpp"
#include "tapegrad/autograd/record.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad::autograd {

// ---- the tape, as a learner sees it -----------------------------------------------------------

/// One entry, as the printer shows it: a copy taken when the view was made.
struct TapeEntry {
  struct Input {
    Shape shape;
    bool requires_grad = false;
    std::string name;            ///< a parameter's or buffer's path; "" for others
    std::uintptr_t id = 0;       ///< identifies the tensor in to_dot()
    std::int64_t producer = -1;  ///< the entry that produced it, or -1 for a leaf
    /// Its values are still in memory: false once no handle and no backward that reads them is
    /// left (the entry holds an input as an edge: its place in the graph, not its data).
    bool values_kept = true;
  };
  struct Saved {
    Shape shape;
    std::string name;
    std::uint64_t version = 0;  ///< the version backward expects
  };
  std::uint64_t seq = 0;  ///< recording number: "#seq"
  std::string op;         ///< "mul", "embedding", ...
  std::string module;     ///< the module path active when recorded ("" outside modules)
  std::vector<Input> inputs;
  Shape output;
  std::uintptr_t output_id = 0;
  std::vector<Saved> saved;
  bool consumed = false;  ///< already run by a backward without retain_graph
};

/// A printable list of entries (a snapshot: it owns no tensor and keeps nothing alive).
class Tape {
 public:
  enum class Order { recording, replay };
  Tape() = default;
  Tape(std::vector<TapeEntry> entries, Order order) : entries_(std::move(entries)), order_(order) {}
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<TapeEntry>& entries() const& { return entries_; }
  std::vector<TapeEntry> entries() && { return std::move(entries_); }
  Order order() const { return order_; }
  /// Graphviz text of these entries and the tensors between them (`dot -Tsvg`).
  std::string to_dot() const;

 private:
  std::vector<TapeEntry> entries_;
  Order order_ = Order::recording;
};

/// This thread's live entries that a backward could still run, newest first (the order in which
/// backward replays entries, as every printed tape lists them): what has been
/// recorded and not yet consumed, and whose output is still reachable.
Tape tape();
/// The entries a backward from `loss` would replay, in replay order (newest first). An entry that
/// an earlier backward consumed is listed, marked consumed, and ends its branch: a backward from
/// `loss` would refuse to run.
Tape tape_of(const Tensor& loss);
/// The table: #, op, module, input shapes (* = requires grad), output shape, saved tensors.
std::ostream& operator<<(std::ostream& os, const Tape& tape);

/// How many entries exist in the whole process (consumed ones included, until their output dies).
/// A loop whose outputs are dropped must leave this where it was: tests read it to prove that.
std::size_t live_entries();

/// Runs `callback` once the backward running on this thread has finished: every entry it reaches
/// has run and every post-accumulate hook has fired; then, in the order queued, the callbacks, and
/// only then does backward() return (PyTorch's Variable._execution_engine.queue_callback, which
/// DistributedDataParallel uses to wait for its last gradients). A callback may queue another.
/// Call it during a backward (from a hook or a closure); AutogradError otherwise. A backward that
/// throws drops its callbacks.
void queue_callback(std::function<void()> callback);

// ---- recording: the rest of the extension kit for new ops (record.hpp has the main form) -----

/// True iff an op with these inputs must be recorded: grad mode is on and one requires grad.
bool should_record(std::initializer_list<Tensor> inputs);
bool should_record(const std::vector<Tensor>& inputs);

namespace detail {
/// A name that lives as long as the program, for ops whose name is built at run time.
const char* intern(const std::string& name);
}  // namespace detail

/// autograd::record for ops with a variable number of inputs (cat).
template <class F>
void record(const char* op, const Tensor& output, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& saved, F&& backward) {
  detail::record(op, output, inputs.data(), inputs.size(), saved.data(), saved.size(),
                 std::forward<F>(backward));
}
/// autograd::record for an op name built at run time (it is kept for the life of the program).
template <class F>
void record(const std::string& op, const Tensor& output, std::initializer_list<Tensor> inputs,
            std::initializer_list<Tensor> saved, F&& backward) {
  record(detail::intern(op), output, inputs, saved, std::forward<F>(backward));
}

}  // namespace tapegrad::autograd
