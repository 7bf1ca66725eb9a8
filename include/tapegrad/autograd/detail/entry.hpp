// include/tapegrad/autograd/detail/entry.hpp (implementation detail of autograd::record)
//
// One tape entry: what an op leaves behind for backward. It is public only because
// autograd::record is a template that must build one around the op's closure; op authors never
// name it. The engine (src/autograd/) reads and writes its fields.
//
// Ownership, the engine's central rule: the entry belongs to the tensor the op produced (its
// TensorImpl holds it), and it holds its INPUTS (strong handles), never its output. So an entry
// lives exactly as long as its output does, and the output lives as long as anyone can still use
// it: the user, or a later entry that consumed it. When neither is left, both are freed at once,
// with everything the closure captured.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapegrad/detail/object_cache.hpp"
#include "tapegrad/tensor.hpp"

namespace tapegrad::autograd::detail {

/// The first N elements in place, the rest on the heap: most ops have at most three inputs and
/// three saved tensors, so recording one allocates nothing for these lists.
template <class T, std::size_t N>
class SmallVector {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void push_back(T v) {
    if (size_ < N)
      inline_[size_] = std::move(v);
    else
      heap_.push_back(std::move(v));
    ++size_;
  }
  T& operator[](std::size_t i) { return i < N ? inline_[i] : heap_[i - N]; }
  const T& operator[](std::size_t i) const { return i < N ? inline_[i] : heap_[i - N]; }
  void clear() {
    for (std::size_t i = 0; i < size_ && i < N; ++i) inline_[i] = T{};
    heap_.clear();
    size_ = 0;
  }

 private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;
  std::size_t size_ = 0;
};

/// A tensor that backward will read, and its version when it was saved. The op's own output is
/// saved as a detached share (same data and version counter, no graph): the entry must not own
/// the tensor that owns it.
struct SavedTensor {
  Tensor tensor;
  std::uint64_t version = 0;
  bool is_output = false;
};

struct Registry;  // this thread's list of entries (src/autograd/record.cpp)

/// The part of an entry the engine sees; Entry<F> below adds the closure.
struct EntryBase {
  const char* op = "";                  ///< "mul", "embedding": a string that outlives the entry
  const std::string* module = nullptr;  ///< the module path active when recorded (interned)
  std::uint64_t seq = 0;                ///< position in the process-wide recording order
  Shape output_shape;
  SmallVector<Tensor, 3> inputs;  ///< every input, in the op's order
  SmallVector<SavedTensor, 3> saved;
  bool consumed = false;   ///< ran in a backward without retain_graph
  std::uint64_t walk = 0;  ///< the last backward walk that reached it

  // This thread's registry (what autograd::tape() lists): a doubly linked list.
  Registry* registry = nullptr;
  EntryBase* prev = nullptr;
  EntryBase* next = nullptr;

  EntryBase() = default;
  EntryBase(const EntryBase&) = delete;
  // Entries come from a per-thread cache of freed blocks (detail/object_cache.hpp).
  static void* operator new(std::size_t bytes) { return tapegrad::detail::cached_allocate(bytes); }
  static void operator delete(void* p, std::size_t bytes) {
    tapegrad::detail::cached_deallocate(p, bytes);
  }
  EntryBase& operator=(const EntryBase&) = delete;
  virtual ~EntryBase();

  /// Calls the closure with d(loss)/d(output), moved in: the closure may reuse its buffer.
  virtual void run(Array&& doutput) = 0;
  /// Frees the closure and what it captured (consumption, or a failed backward's cleanup).
  virtual void release_closure() = 0;
};

template <class F>
struct Entry final : EntryBase {
  static_assert(alignof(F) <= alignof(std::max_align_t),
                "autograd::record: an over-aligned closure capture");
  explicit Entry(F&& f) : closure(std::move(f)) {}
  void run(Array&& doutput) override { (*closure)(std::move(doutput)); }
  void release_closure() override { closure.reset(); }
  std::optional<F> closure;
};

/// True for a closure written the one way: a lambda (or function object) whose single, non-template
/// operator() takes the output's gradient by value, `[...](Array dy) { ... }`.
template <class F>
constexpr bool is_backward_closure() {
  if constexpr (requires { &F::operator(); }) {
    using Call = decltype(&F::operator());
    return std::is_same_v<Call, void (F::*)(Array) const> ||
           std::is_same_v<Call, void (F::*)(Array)>;
  } else {
    return false;
  }
}

}  // namespace tapegrad::autograd::detail
