// src/autograd/listing.cpp: the list of live entries per thread, for autograd::tape().
//
// Every thread has a registry, the list of the entries recorded on it that still exist, so that
// autograd::tape() can show them and autograd::live_entries() count them. The registry only lists
// entries; the tensors own them, and backward never reads it. An entry may die on another thread
// than the one that recorded it (a graph built on one thread and backpropagated on another), so
// each registry has a small lock.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::autograd {

namespace detail {

struct Registry {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;  // a spin lock: held for a few pointer writes
  EntryBase* head = nullptr;                 // oldest
  EntryBase* tail = nullptr;                 // newest
  std::size_t count = 0;

  void lock() {
    while (busy.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() { busy.clear(std::memory_order_release); }
};

namespace {
// Registries are never freed: an entry recorded on a thread that has ended may still be alive.
// There is one per thread that ever recorded, a few dozen bytes each.
std::mutex registries_mutex;
std::vector<Registry*>& all_registries() {
  static auto* registries = new std::vector<Registry*>();
  return *registries;
}
Registry& this_thread_registry() {
  thread_local Registry* mine = [] {
    auto* r = new Registry();
    std::lock_guard<std::mutex> lock(registries_mutex);
    all_registries().push_back(r);
    return r;
  }();
  return *mine;
}
}  // namespace

void list_entry(EntryBase* e) {
  Registry& r = this_thread_registry();
  r.lock();
  e->listing = {&r, r.tail, nullptr};
  (r.tail ? r.tail->listing.next : r.head) = e;
  r.tail = e;
  ++r.count;
  r.unlock();
}

void unlist_entry(EntryBase* e) {
  Listing& l = e->listing;
  if (l.registry == nullptr) return;  // never listed: its op failed a check in attach
  Registry& r = *l.registry;
  r.lock();
  (l.prev ? l.prev->listing.next : r.head) = l.next;
  (l.next ? l.next->listing.prev : r.tail) = l.prev;
  --r.count;
  r.unlock();
}

void for_each_listed(const std::function<void(const EntryBase&)>& f) {
  Registry& r = this_thread_registry();
  r.lock();
  try {
    for (const EntryBase* e = r.head; e != nullptr; e = e->listing.next) f(*e);
  } catch (...) {
    r.unlock();
    throw;
  }
  r.unlock();
}

}  // namespace detail

std::size_t live_entries() {
  std::lock_guard<std::mutex> lock(detail::registries_mutex);
  std::size_t n = 0;
  for (detail::Registry* r : detail::all_registries()) {
    r->lock();
    n += r->count;
    r->unlock();
  }
  return n;
}

}  // namespace tapegrad::autograd
