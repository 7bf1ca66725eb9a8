// src/autograd/engine.hpp (private)
//
// What the rest of the library needs from the engine: backward itself (Tensor::backward calls
// it), the check that a gradient lands only where the running backward expects one, and the
// per-thread registry that autograd::tape() reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "tapegrad/autograd/detail/entry.hpp"
#include "tapegrad/tensor.hpp"

namespace tapegrad {
struct TensorImpl;
}

namespace tapegrad::autograd::detail {

/// Backpropagates d(root) = seed through every entry `root` reaches (engine.cpp).
void backward(const Tensor& root, Array seed, bool retain_graph);

/// Throws AutogradError unless the running backward (on this thread) has reached the entry that
/// produced `t`: a closure may add only into the inputs its op recorded.
void expect_reached(const TensorImpl& t, const char* op);

/// Deletes an entry and, without recursion, every entry that only it kept alive.
void destroy_entry(EntryBase* entry);

/// The path of the module whose forward is running on this thread (interned), or null.
const std::string* module_stack_top();

/// Calls f(entry) for each entry of this thread's registry, oldest first, under its lock.
void for_each_registered(const std::function<void(const EntryBase&)>& f);

}  // namespace tapegrad::autograd::detail
