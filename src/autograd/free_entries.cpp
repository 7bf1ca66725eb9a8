// src/autograd/free_entries.cpp: freeing entries without deep recursion.
//
// Freeing an entry frees what it holds: its inputs, whose own entries may then go too, and so on
// down a chain as long as the graph (100,000 steps of an unrolled loop). Done recursively, that
// would overflow the stack; so an entry freed while another is being freed on this thread waits
// in a list, and the outermost call empties it.
#include <vector>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"

namespace tapegrad::autograd::detail {

void destroy_entry(EntryBase* entry) {
  thread_local std::vector<EntryBase*> waiting;
  thread_local bool freeing = false;
  waiting.push_back(entry);
  if (freeing) return;
  freeing = true;
  while (!waiting.empty()) {
    EntryBase* e = waiting.back();
    waiting.pop_back();
    delete e;  // may add more entries to `waiting`
  }
  freeing = false;
}

}  // namespace tapegrad::autograd::detail

namespace tapegrad {
void TensorImpl::EntryDeleter::operator()(autograd::detail::EntryBase* e) const {
  autograd::detail::destroy_entry(e);
}
}  // namespace tapegrad
