// include/tapegrad/autograd/record.hpp: what a tape entry holds, and how an op records one.
//
// Read it first, then src/autograd/record.cpp (how an entry is filled in) and
// src/autograd/engine.cpp (how backward() replays entries); docs/engine.md walks all three.
//
// Every differentiable op computes its output, then calls autograd::record with its inputs, the
// tensors its backward reads and its backward closure. When grad mode is on and an input requires
// grad, that makes ONE entry, owned by the output. An entry holds its inputs and never its output,
// so an entry lives exactly as long as its output: `loss` owns entry #1, which holds `y`, which
// owns entry #0, which holds the leaf `w`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tapegrad/autograd/detail/closure.hpp"
#include "tapegrad/autograd/detail/listing.hpp"
#include "tapegrad/autograd/detail/small_vector.hpp"
#include "tapegrad/autograd/grad_mode.hpp"
#include "tapegrad/core/detail/object_cache.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad::autograd {
namespace detail {

/// A tensor backward will read, with its version when saved (checked before backward runs).
struct SavedTensor {
  Tensor tensor;  ///< the op's own output is saved as output.detach(): its data, no graph
  std::uint64_t version = 0;
  bool is_output = false;
};

/// One tape entry: what the engine sees of it. Entry<F> below adds the closure.
/// (CachedObject: entries are allocated from a per-thread cache; object_cache.hpp.)
struct EntryBase : tapegrad::detail::CachedObject {
  const char* op = "";                  ///< "mul", "embedding": outlives the entry
  const std::string* module = nullptr;  ///< the module path when recorded, or null
  std::uint64_t seq = 0;                ///< the recording number: a producer's is smaller
  Shape output_shape;
  SmallVector<Tensor, 3> inputs;      ///< every input, in the op's order: the graph's edges
  SmallVector<SavedTensor, 3> saved;  ///< the tensors backward reads
  Tensor kept_output;      ///< output.detach() under autograd::KeepOutputs (for BackwardTrace)
  bool consumed = false;   ///< ran in a backward without retain_graph
  std::uint64_t walk = 0;  ///< the last backward that reached it
  Listing listing;         ///< its place in autograd::tape()'s list

  EntryBase() = default;
  EntryBase(const EntryBase&) = delete;
  EntryBase& operator=(const EntryBase&) = delete;
  virtual ~EntryBase();
  /// Calls the closure with d(loss)/d(output), moved in: the closure may reuse its buffer.
  virtual void run(Array&& doutput) = 0;
  /// Frees the closure and what it captured.
  virtual void release_closure() = 0;
};

template <class F>
struct Entry final : EntryBase {
  static_assert(alignof(F) <= alignof(std::max_align_t), "autograd::record: over-aligned capture");
  explicit Entry(F&& f) : closure(std::move(f)) {}
  void run(Array&& doutput) override { (*closure)(std::move(doutput)); }
  void release_closure() override { closure.reset(); }
  std::optional<F> closure;
};

void check_anomaly(const char* op, const Tensor& output);  // anomaly.cpp
/// Fills in the entry and hands it to `output`, which owns it from then on (record.cpp).
void attach(EntryBase* entry, const char* op, const Tensor& output, const Tensor* inputs,
            std::size_t n_inputs, const Tensor* saved, std::size_t n_saved);

template <class F>
void record(const char* op, const Tensor& output, const Tensor* inputs, std::size_t n_inputs,
            const Tensor* saved, std::size_t n_saved, F&& backward) {
  using Fn = std::decay_t<F>;
  static_assert(is_backward_closure<Fn>(),
                "autograd::record: a backward closure takes d(loss)/d(output) BY VALUE and returns "
                "nothing: [captures](Array dy) { ... }. It may reuse dy's buffer (std::move(dy)).");
  if (anomaly_enabled()) check_anomaly(op, output);
  if (!grad_enabled()) return;
  bool any = false;
  for (std::size_t i = 0; i < n_inputs; ++i) any = any || inputs[i].requires_grad();
  if (!any) return;
  attach(new Entry<Fn>(Fn(std::forward<F>(backward))), op, output, inputs, n_inputs, saved,
         n_saved);
}
}  // namespace detail

/// Records `output` = op(`inputs`) iff grad mode is on and an input requires grad. Then `output`
/// requires grad and owns the new entry, and `backward` runs during a backward() that reaches it,
/// with d(loss)/d(output) BY VALUE:
///
///     autograd::record("mul", y, {a, b}, /*saved=*/{a, b}, [a, b](Array dy) { ... });
///
/// The closure adds into its inputs' gradients (Tensor::accumulate_grad) and may reuse dy's
/// buffer for one of them. It captures what backward needs, never the output itself (the output
/// owns the entry: a cycle); capture `y.detach()` instead. `saved` lists the tensors backward
/// reads: their versions are checked before it runs. `op` outlives the entry (a literal). Call
/// it last, after the forward has succeeded: an op that throws records nothing.
template <class F>
void record(const char* op, const Tensor& output, std::initializer_list<Tensor> inputs,
            std::initializer_list<Tensor> saved, F&& backward) {
  detail::record(op, output, inputs.begin(), inputs.size(), saved.begin(), saved.size(),
                 std::forward<F>(backward));
}

}  // namespace tapegrad::autograd
