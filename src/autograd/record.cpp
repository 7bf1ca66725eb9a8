// src/autograd/record.cpp
//
// Recording: how an op's entry is numbered, filled in and handed to the tensor it produced; how
// entries are freed; and the thread-local state around them (grad mode, anomaly mode, the module
// whose forward is running). Backward itself is in engine.cpp, the printable views in
// tape_view.cpp.
//
// Every thread has a registry, the list of the entries recorded on it that still exist, so that
// autograd::tape() can show them. The registry only lists entries; the tensors own them. An entry
// may die on another thread than the one that recorded it (a graph built on one thread and
// backpropagated on another), so each registry has a small lock.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "../tensor_impl.hpp"
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
std::atomic<std::uint64_t> next_seq{0};  // the process-wide recording order

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

void link(Registry& r, EntryBase* e) {
  r.lock();
  e->registry = &r;
  e->prev = r.tail;
  e->next = nullptr;
  (r.tail ? r.tail->next : r.head) = e;
  r.tail = e;
  ++r.count;
  r.unlock();
}

void unlink(EntryBase* e) {
  Registry& r = *e->registry;
  r.lock();
  (e->prev ? e->prev->next : r.head) = e->next;
  (e->next ? e->next->prev : r.tail) = e->prev;
  --r.count;
  r.unlock();
}

// Names that live as long as the program: module paths and run-time op names. There are few.
std::mutex names_mutex;
const std::string* intern_name(const std::string& s) {
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(names_mutex);
  return &*names->insert(s).first;
}
}  // namespace

EntryBase::~EntryBase() {
  if (registry != nullptr) unlink(this);
}

const char* intern(const std::string& name) { return intern_name(name)->c_str(); }

void for_each_registered(const std::function<void(const EntryBase&)>& f) {
  Registry& r = this_thread_registry();
  r.lock();
  try {
    for (const EntryBase* e = r.head; e != nullptr; e = e->next) f(*e);
  } catch (...) {
    r.unlock();
    throw;
  }
  r.unlock();
}

// Freeing an entry frees what it holds: its inputs, whose own entries may then go too, and so on
// down a chain as long as the graph (100,000 steps of an unrolled loop). Done recursively, that
// would overflow the stack; so an entry freed while another is being freed on this thread waits
// in a list, and the outermost call empties it.
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

void check_anomaly(const char* op, const Tensor& output) {
  std::size_t bad = 0;
  for (float v : output.data()) bad += !std::isfinite(v);
  check<AutogradError>(bad == 0, "anomaly: ", where(op), ": '", op, "' produced ", bad,
                       " NaN/Inf value(s) in its output of shape ", output.shape(),
                       " (it would be entry #", next_seq.load(), ")");
}

void attach(EntryBase* entry, const char* op, const Tensor& output, const Tensor* inputs,
            std::size_t n_inputs, const Tensor* saved, std::size_t n_saved) {
  std::unique_ptr<EntryBase, TensorImpl::EntryDeleter> owned(
      entry);  // freed if a check below throws
  TensorImpl& out = TensorAccess::impl(output);
  if (!out.is_leaf() || out.requires_grad || out.is_buffer)
    fail<AutogradError>("autograd::record: '", op,
                        "' must record on the new tensor it computed, got ", output.describe(),
                        " (already a leaf that requires grad, a buffer, or another op's output)");
  for (std::size_t i = 0; i < n_inputs; ++i)
    check<AutogradError>(
        !inputs[i].is_same(output), "autograd::record: '", op, "' lists its output as input ", i,
        "; an in-place op returns a new handle on the same data (x.detach()) and records on it");
  entry->op = op;
  entry->module = module_stack_top();
  entry->output_shape = output.shape();
  for (std::size_t i = 0; i < n_inputs; ++i)
    if (inputs[i].defined()) entry->inputs.push_back(inputs[i]);  // an optional input may be absent
  for (std::size_t i = 0; i < n_saved; ++i) {
    const bool is_output = saved[i].is_same(output);  // saved without its graph: no cycle
    entry->saved.push_back({is_output ? output.detach() : saved[i], saved[i].version(), is_output});
  }
  entry->seq = next_seq.fetch_add(1, std::memory_order_relaxed);
  link(this_thread_registry(), entry);
  out.requires_grad = true;        // the output now depends on something trainable
  out.grad_fn = std::move(owned);  // ... and owns the entry that says how
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

// ---- grad mode, anomaly mode, the running module --------------------------------------------------

namespace {
thread_local bool grad_mode = true;
thread_local bool anomaly_mode = false;
struct ScopeFrame {
  const std::string* type_name;
  const std::string* path;
};
thread_local std::vector<ScopeFrame> module_stack;
}  // namespace

namespace detail {
const std::string* module_stack_top() {
  return module_stack.empty() ? nullptr : module_stack.back().path;
}
}  // namespace detail

bool grad_enabled() { return grad_mode; }
bool anomaly_enabled() { return anomaly_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }
AnomalyGuard::AnomalyGuard() : previous_(anomaly_mode) { anomaly_mode = true; }
AnomalyGuard::~AnomalyGuard() { anomaly_mode = previous_; }

ModuleScope::ModuleScope(const std::string& type_name, const std::string& path) {
  module_stack.push_back({detail::intern_name(type_name), detail::intern_name(path)});
}
ModuleScope::~ModuleScope() { module_stack.pop_back(); }

const std::string& current_module_path() {
  static const std::string none;
  return module_stack.empty() ? none : *module_stack.back().path;
}

std::string where(const std::string& op) {
  if (module_stack.empty()) return op;
  const ScopeFrame& f = module_stack.back();
  return f.path->empty() ? *f.type_name : *f.type_name + " '" + *f.path + "'";
}

bool should_record(std::initializer_list<Tensor> inputs) {
  return grad_mode && std::any_of(inputs.begin(), inputs.end(),
                                  [](const Tensor& t) { return t.requires_grad(); });
}
bool should_record(const std::vector<Tensor>& inputs) {
  return grad_mode && std::any_of(inputs.begin(), inputs.end(),
                                  [](const Tensor& t) { return t.requires_grad(); });
}

}  // namespace tapegrad::autograd

namespace tapegrad {
void TensorImpl::EntryDeleter::operator()(autograd::detail::EntryBase* e) const {
  autograd::detail::destroy_entry(e);
}
}  // namespace tapegrad
