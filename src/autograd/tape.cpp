// src/autograd/tape.cpp
//
// Every differentiable op appends one entry while it runs. An op can only use tensors that
// already exist, so every producer is recorded before its consumers: the tape is already in
// topological order. Walking it newest-first, a tensor has received all of its gradient by the
// time the entry that produced it runs. That is why backward() never sorts.
//
// Gradients in flight are kept on the tensors themselves: an intermediate's pending gradient
// sits where a leaf's .grad would, and is released as soon as the entry that produced the
// intermediate has used it. After backward only leaves hold gradients.
#include "tapegrad/autograd/tape.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "../tensor_impl.hpp"

namespace tapegrad::autograd {

namespace {
thread_local Tape the_tape;
thread_local bool grad_mode = true;
thread_local bool anomaly_mode = false;
struct ScopeFrame {
  std::string type_name, path;
};
thread_local std::vector<ScopeFrame> module_stack;

std::size_t count_nonfinite(const Array& a) {
  std::size_t n = 0;
  for (float v : a) n += !std::isfinite(v);
  return n;
}

std::string input_shapes(const TapeEntry& e) {
  std::ostringstream os;
  for (std::size_t i = 0; i < e.inputs.size(); ++i)
    os << (i ? " x " : "") << str(e.inputs[i].shape()) << (e.inputs[i].requires_grad() ? "*" : "");
  return os.str();
}
}  // namespace

Tape& tape() { return the_tape; }
bool grad_enabled() { return grad_mode; }
bool anomaly_enabled() { return anomaly_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }
AnomalyGuard::AnomalyGuard() : previous_(anomaly_mode) { anomaly_mode = true; }
AnomalyGuard::~AnomalyGuard() { anomaly_mode = previous_; }

ModuleScope::ModuleScope(std::string type_name, std::string path) {
  module_stack.push_back({std::move(type_name), std::move(path)});
}
ModuleScope::~ModuleScope() { module_stack.pop_back(); }

const std::string& current_module_path() {
  static const std::string none;
  return module_stack.empty() ? none : module_stack.back().path;
}

std::string where(const std::string& op) {
  if (module_stack.empty()) return op;
  const ScopeFrame& f = module_stack.back();
  return f.path.empty() ? f.type_name : f.type_name + " '" + f.path + "'";
}

bool should_record(std::initializer_list<Tensor> inputs) {
  return grad_mode && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
}
bool should_record(const std::vector<Tensor>& inputs) {
  return grad_mode && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
}

namespace detail {
void push_entry(std::string op, const Tensor& output, std::vector<Tensor> inputs, std::vector<Tensor> saved,
                BackwardFn backward) {
  TensorImpl& out = TensorAccess::impl(output);
  out.requires_grad = true;                   // the output now depends on something trainable
  out.is_leaf = false;
  out.producer = op;
  std::vector<SavedTensor> versions;
  versions.reserve(saved.size());
  for (Tensor& t : saved) {
    const std::uint64_t v = t.version();
    versions.push_back({std::move(t), v});
  }
  the_tape.push(TapeEntry{std::move(op), current_module_path(), output, std::move(inputs),
                          std::move(versions), std::move(backward)});
}

void check_anomaly(const std::string& op, const Tensor& output) {
  const std::size_t bad = count_nonfinite(output.data());
  check<AutogradError>(bad == 0, "anomaly: ", where(op), ": '", op, "' produced ", bad,
                       " NaN/Inf value(s) in its output of shape ", output.shape(),
                       " (tape entry #", the_tape.size(), ")");
}
}  // namespace detail

// ---- backward --------------------------------------------------------------------------------------

namespace {
constexpr std::size_t kNone = std::size_t(-1);

// The index of the entry that produced t (the newest one whose output it is), or kNone.
std::size_t producer_of(const std::vector<TapeEntry>& entries, const Tensor& t) {
  for (std::size_t k = entries.size(); k-- > 0;)
    if (entries[k].output.is_same(t)) return k;
  return kNone;
}

void check_saved_versions(const TapeEntry& e, std::size_t index) {
  for (const SavedTensor& s : e.saved)
    if (s.tensor.version() != s.version)
      fail<AutogradError>("one of the variables needed for gradient computation has been modified by an "
                          "inplace operation | ", e.op, " (entry #", index, "): ", s.tensor.describe(),
                          " is at version ", s.tensor.version(), "; expected version ", s.version,
                          ". It was written in place (an optimizer step, a max_norm renorm, "
                          "mutable_data()) after the forward pass used it; do that after backward()");
}

// Drops every pending intermediate gradient (after the walk, or when it failed half-way).
void release_pending(std::vector<TapeEntry>& entries) {
  for (TapeEntry& e : entries) TensorAccess::impl(e.output).grad.reset();
}
}  // namespace

void Tape::backward(const Tensor& loss, const Array& seed, bool retain_graph) {
  check<AutogradError>(loss.requires_grad(),
                       "element 0 of tensors does not require grad and does not have a grad_fn | backward: "
                       "the loss depends on no tensor that requires grad (computed under NoGradGuard, "
                       "or all parameters frozen?)");
  const std::size_t root = loss.is_leaf() ? kNone : producer_of(entries_, loss);
  check<AutogradError>(loss.is_leaf() || root != kNone,
                       "Trying to backward through the graph a second time | backward: no recorded operation "
                       "produced this loss; backward() already consumed the tape (use retain_graph=true to "
                       "call it twice), or the loss was built on another thread");
  NoGradGuard no_grad;                         // backward closures never record
  // d loss / d loss = seed. Only the loss's own entry (root) can receive it: every newer entry's
  // output has no gradient and is skipped. So root is called with the caller's seed itself;
  // BackwardFn copies it first only if root's closure may rewrite its gradient (backward(G) of a
  // large G whose entry only reads it, W4's embedding, saves a 32-MiB copy).
  check<ShapeError>(seed.shape() == loss.shape(), "backward: expected a seed of the loss's shape ", loss.shape(),
                    " for ", loss.describe(), ", got ", seed.shape());
  try {
    if (root == kNone) loss.accumulate_grad(seed, "backward");   // a leaf is its own loss
    for (std::size_t k = entries_.size(); k-- > 0;) {
      TapeEntry& e = entries_[k];
      TensorImpl& out = TensorAccess::impl(e.output);
      if (!out.grad && k != root) continue;    // not on a path to the loss
      check_saved_versions(e, k);
      if (k == root)
        e.backward(seed);                      // adds (+=) into the inputs' gradients
      else
        e.backward(*out.grad);
      out.grad.reset();                        // an intermediate's gradient is not kept
      if (anomaly_mode)
        for (std::size_t i = 0; i < e.inputs.size(); ++i) {
          const TensorImpl& in = TensorAccess::impl(e.inputs[i]);
          if (in.grad && count_nonfinite(*in.grad) != 0)
            fail<AutogradError>("anomaly: backward of '", e.op,
                                "' (entry #", k, ") produced NaN/Inf in the gradient of its input ", i, ", ",
                                e.inputs[i].describe());
        }
    }
  } catch (...) {
    release_pending(entries_);
    if (!retain_graph) entries_.clear();
    throw;
  }
  if (!retain_graph) entries_.clear();         // the graph is used up
}

// ---- printing --------------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, const Tape& tape) {
  os << "tape: " << tape.size() << (tape.size() == 1 ? " entry" : " entries")
     << " (backward replays them bottom-up; * = requires grad)\n";
  if (tape.empty()) return os;
  // One row of cells per entry; each column is as wide as its longest cell plus two spaces (at
  // least its usual width), so long op names and module paths never run into the next column.
  const auto& entries = tape.entries();
  std::vector<std::array<std::string, 6>> rows{{"#", "op", "module", "inputs", "output", "saved"}};
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const TapeEntry& e = entries[k];
    std::ostringstream saved;
    for (std::size_t i = 0; i < e.saved.size(); ++i) {
      const Tensor& t = e.saved[i].tensor;
      saved << (i ? ", " : "") << (t.name().empty() ? str(t.shape()) : "'" + t.name() + "'") << " v"
            << e.saved[i].version;
    }
    rows.push_back({std::to_string(k), e.op, e.module.empty() ? "-" : e.module, input_shapes(e),
                    str(e.output.shape()), e.saved.empty() ? "-" : saved.str()});
  }
  std::array<std::size_t, 5> width{5, 16, 18, 34, 16};
  for (const auto& row : rows)
    for (std::size_t c = 0; c < width.size(); ++c) width[c] = std::max(width[c], row[c].size() + 2);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < width.size(); ++c) os << std::left << std::setw(int(width[c])) << row[c];
    os << row[5] << '\n';
  }
  return os;
}

std::string Tape::to_dot() const {
  // One node per tensor (leaves as boxes, named when they have a name), one per op, edges along
  // the forward direction. Backward walks these edges in reverse.
  std::ostringstream os;
  os << "digraph tape {\n  rankdir=LR;\n  node [fontname=\"monospace\"];\n";
  auto id = [](const Tensor& t) {
    std::ostringstream s;
    s << "t" << static_cast<const void*>(t.impl());
    return s.str();
  };
  std::vector<const TensorImpl*> seen;
  auto tensor_node = [&](const Tensor& t) {
    if (std::find(seen.begin(), seen.end(), t.impl()) != seen.end()) return;
    seen.push_back(t.impl());
    os << "  " << id(t) << " [shape=" << (t.is_leaf() ? "box" : "ellipse") << ", label=\""
       << (t.name().empty() ? "" : t.name() + "\\n") << str(t.shape()) << (t.requires_grad() ? " *" : "")
       << "\"];\n";
  };
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    const TapeEntry& e = entries_[k];
    os << "  op" << k << " [shape=record, style=filled, fillcolor=lightgrey, label=\"#" << k << " " << e.op
       << "\"];\n";
    for (const Tensor& in : e.inputs) {
      tensor_node(in);
      os << "  " << id(in) << " -> op" << k << ";\n";
    }
    tensor_node(e.output);
    os << "  op" << k << " -> " << id(e.output) << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace tapegrad::autograd
