// include/tapegrad/autograd/backward_trace.hpp
//
// What a backward did, entry by entry, in the engine's order: for each entry it reached, the
// output the forward computed, the gradient d(loss)/d(output) the entry received, and every
// gradient its closure added into a tensor (what it added, and that tensor's gradient after).
// The teaching view of the replay that docs/engine.md describes; examples/tape_explorer.cpp draws
// it as a web page.
//
//     autograd::BackwardTrace trace;     // this thread's backwards are recorded from here
//     loss.backward();
//     for (const auto& step : trace.steps())  // newest entry first, as the engine ran them
//       std::cout << "#" << step.seq << " " << step.op << " added into " << step.added.size()
//                 << " gradients\n";
//
// It copies every tensor it reports, so it is meant for small models. Off (no trace alive on the
// thread), it costs the engine one branch per entry and accumulate_grad one branch per call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::autograd {

namespace detail {
struct TraceData;  // src/autograd/backward_trace.cpp
}  // namespace detail

/// While one lives on a thread, every entry recorded there keeps its output's values, so that a
/// BackwardTrace of a later backward can report them all. Without it the tape keeps only what
/// backwards read: an output that only an edge refers to (the output of a Linear fed to an add)
/// is freed with its last handle, and its Step::output is empty.
///
///     autograd::KeepOutputs keep;                  // before the forward
///     Tensor loss = model.forward(x) ...;
class KeepOutputs {
 public:
  KeepOutputs();
  ~KeepOutputs();
  KeepOutputs(const KeepOutputs&) = delete;
  KeepOutputs& operator=(const KeepOutputs&) = delete;

 private:
  bool enclosing_;
};

class BackwardTrace {
 public:
  /// One accumulate_grad call made by an entry's closure.
  struct Added {
    std::uintptr_t id = 0;  ///< the tensor it added into: TapeEntry's Input::id / output_id
    std::string name;       ///< its parameter's path ("embed.lut.weight"), "" for others
    Array grad;             ///< what was added (a row-sparse gradient is shown dense)
    Array total;            ///< that tensor's gradient once it was added
  };
  /// One entry the backward reached, in the order the engine took them (descending seq).
  struct Step {
    std::uint64_t seq = 0;  ///< the entry's number: TapeEntry::seq
    std::string op;
    std::string module;
    bool ran = false;         ///< its output received a gradient, so its closure ran
    Array output;             ///< the entry's output, as the forward computed it (if kept)
    bool output_kept = true;  ///< false when no handle kept it: the tape keeps only what a
                              ///< backward reads (see KeepOutputs); output is then empty
    Array grad_output;        ///< d(loss)/d(output) handed to the closure (empty if it did not run)
    std::vector<Added> added;  ///< in the order the closure called accumulate_grad
  };

  /// Starts recording the backwards run on this thread. Throws AutogradError if a trace is
  /// already recording on this thread.
  BackwardTrace();
  ~BackwardTrace();
  BackwardTrace(const BackwardTrace&) = delete;
  BackwardTrace& operator=(const BackwardTrace&) = delete;

  /// Stops recording; later calls do nothing.
  void stop();
  /// Every entry the backwards reached so far, backward after backward, each in engine order.
  const std::vector<Step>& steps() const;

 private:
  std::unique_ptr<detail::TraceData> data_;
};

}  // namespace tapegrad::autograd
