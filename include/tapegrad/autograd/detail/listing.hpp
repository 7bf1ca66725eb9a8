// include/tapegrad/autograd/detail/listing.hpp (implementation detail; a learner can skip it)
//
// An entry's place in the list of the entries recorded on its thread, which exists only so that
// autograd::tape() and autograd::live_entries() can show them (src/autograd/listing.cpp). The
// tensors own the entries; this list only points at them. Backward never reads it.
#pragma once

namespace tapegrad::autograd::detail {

struct EntryBase;
struct Registry;  // one thread's list, behind a small lock (src/autograd/listing.cpp)

/// The links of a doubly linked list.
struct Listing {
  Registry* registry = nullptr;
  EntryBase* prev = nullptr;
  EntryBase* next = nullptr;
};

}  // namespace tapegrad::autograd::detail
