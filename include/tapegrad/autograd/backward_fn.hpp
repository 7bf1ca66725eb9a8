// include/tapegrad/autograd/backward_fn.hpp
//
// BackwardFn: what a tape entry calls in backward, a move-only std::function<void(Array&)> with
// room inside for a typical op's captures (a few tensors and scalars, up to 64 bytes). Recording
// an op then allocates nothing for its closure: libstdc++'s std::function keeps only trivially
// copyable closures inline, so every closure holding a Tensor went to the heap, one allocation
// and one free per recorded op (W2 measures that overhead). Larger closures still go to the heap.
// It remembers whether the closure only reads the output's gradient (takes `const Array&`): then
// Tape::backward can hand it the caller's seed of backward(gradient) without copying it first.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "tapegrad/tensor.hpp"

namespace tapegrad::autograd {

class BackwardFn {
 public:
  BackwardFn() = default;
  /// Any callable as f(Array& doutput); closures taking `const Array&` fit too.
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, BackwardFn>>>
  BackwardFn(F&& f) {  // NOLINT: implicit, so that a lambda converts as it does to std::function
    using Fn = std::decay_t<F>;
    if constexpr (fits_inline<Fn>()) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      ops_ = &inline_ops<Fn>;
    } else {
      ::new (static_cast<void*>(storage_)) Fn*(new Fn(std::forward<F>(f)));
      ops_ = &heap_ops<Fn>;
    }
  }
  BackwardFn(BackwardFn&& other) noexcept { take(other); }
  BackwardFn& operator=(BackwardFn&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  BackwardFn(const BackwardFn&) = delete;
  BackwardFn& operator=(const BackwardFn&) = delete;
  ~BackwardFn() { reset(); }

  void operator()(Array& doutput) { ops_->call(storage_, doutput); }
  /// A gradient the closure may not change: handed over as it is when the closure reads_only(),
  /// else as a copy the closure may rewrite.
  void operator()(const Array& doutput) {
    if (ops_->call_const != nullptr) return ops_->call_const(storage_, doutput);
    Array copy(doutput);
    ops_->call(storage_, copy);
  }
  explicit operator bool() const { return ops_ != nullptr; }
  /// True when the closure takes `const Array&` (or a copy): it never writes the output's gradient.
  /// A generic closure (`auto& dy`) counts as one that may write.
  bool reads_only() const { return ops_ != nullptr && ops_->call_const != nullptr; }

 private:
  static constexpr std::size_t kInlineBytes = 64;

  struct Ops {                                  // what the stored callable's type knows how to do
    void (*call)(void* self, Array& doutput);
    void (*call_const)(void* self, const Array& doutput);   // nullptr unless Fn takes const Array&
    void (*move_to)(void* self, void* destination);   // move-construct into destination, destroy self
    void (*destroy)(void* self);
  };

  template <class Fn>
  static constexpr bool fits_inline() {
    return sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<Fn>;
  }
  template <class Fn>
  static Fn& stored(void* self) {
    return *std::launder(static_cast<Fn*>(self));
  }

  // The const call exists only for closures that accept a const Array& (and so cannot write dy).
  // Only a closure with one, non-template operator() is asked: testing a generic lambda with a
  // const Array would compile its body for one, a hard error if the body writes dy.
  template <class Fn, bool on_heap>
  static constexpr auto const_call() {
    using Call = void (*)(void*, const Array&);
    if constexpr (requires { &Fn::operator(); }) {
      if constexpr (std::is_invocable_v<Fn&, const Array&>)
        return Call([](void* self, const Array& dy) { closure<Fn, on_heap>(self)(dy); });
      else
        return Call(nullptr);
    } else {
      return Call(nullptr);
    }
  }
  // The stored closure: in storage_ itself, or behind the pointer kept there.
  template <class Fn, bool on_heap>
  static Fn& closure(void* self) {
    if constexpr (on_heap)
      return *stored<Fn*>(self);
    else
      return stored<Fn>(self);
  }

  template <class Fn>
  static constexpr Ops inline_ops{
      [](void* self, Array& dy) { closure<Fn, false>(self)(dy); },
      const_call<Fn, false>(),
      [](void* self, void* destination) {
        ::new (destination) Fn(std::move(stored<Fn>(self)));
        stored<Fn>(self).~Fn();
      },
      [](void* self) { stored<Fn>(self).~Fn(); }};
  template <class Fn>
  static constexpr Ops heap_ops{
      [](void* self, Array& dy) { closure<Fn, true>(self)(dy); },
      const_call<Fn, true>(),
      [](void* self, void* destination) { ::new (destination) Fn*(stored<Fn*>(self)); },
      [](void* self) { delete stored<Fn*>(self); }};

  void take(BackwardFn& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->move_to(other.storage_, storage_);
    ops_ = std::exchange(other.ops_, nullptr);
  }
  void reset() noexcept {
    if (ops_ != nullptr) std::exchange(ops_, nullptr)->destroy(storage_);
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace tapegrad::autograd
