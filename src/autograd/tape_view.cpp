// src/autograd/tape_view.cpp
//
// The tape as people see it, newest first: autograd::tape() (this thread's entries that a
// backward could still run) and autograd::tape_of(loss) (what a backward from loss would
// replay), printed as a table or exported as Graphviz text. Both are snapshots: copying the
// facts out of the entries means a printed tape never keeps a tensor alive.
#include <algorithm>
#include <array>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::autograd {

namespace {
std::uintptr_t id_of(const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.impl()); }

TapeEntry describe(const detail::EntryBase& e, std::uintptr_t output_id) {
  TapeEntry v;
  v.seq = e.seq;
  v.op = e.op;
  v.module = e.module ? *e.module : "";
  v.output = e.output_shape;
  v.output_id = output_id;
  v.consumed = e.consumed;
  for (std::size_t i = 0; i < e.inputs.size(); ++i) {
    const Tensor& in = e.inputs[i];
    const TensorImpl& impl = TensorAccess::impl(in);
    v.inputs.push_back({in.shape(), in.requires_grad(), in.name(), id_of(in),
                        impl.is_leaf() ? -1 : static_cast<std::int64_t>(impl.grad_fn->seq),
                        impl.storage != nullptr ||
                            (impl.grad_fn != nullptr && impl.grad_fn->kept_output.defined())});
  }
  for (std::size_t i = 0; i < e.saved.size(); ++i) {
    const detail::SavedTensor& s = e.saved[i];
    v.saved.push_back({s.tensor.shape(), s.tensor.name(), s.version});
  }
  return v;
}
}  // namespace

Tape tape() {
  // The registry lists entries, not their outputs; an entry's output is found through the next
  // entry's inputs only, so the Graphviz export names an output by its entry ("out#seq").
  std::vector<TapeEntry> entries;
  detail::for_each_listed([&](const detail::EntryBase& e) {
    if (!e.consumed) entries.push_back(describe(e, 0));
  });
  std::reverse(entries.begin(), entries.end());  // newest first, as backward replays them
  return Tape(std::move(entries), Tape::Order::replay);
}

Tape tape_of(const Tensor& loss) {
  std::vector<TapeEntry> entries;
  if (!loss.defined() || loss.is_leaf()) return Tape({}, Tape::Order::replay);
  std::unordered_set<const TensorImpl*> seen{loss.impl()};
  std::vector<Tensor> stack{loss};
  while (!stack.empty()) {
    const Tensor t = std::move(stack.back());
    stack.pop_back();
    const detail::EntryBase& e = *TensorAccess::impl(t).grad_fn;
    entries.push_back(describe(e, id_of(t)));
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
      const Tensor& in = e.inputs[i];
      if (in.requires_grad() && !in.is_leaf() && seen.insert(in.impl()).second) stack.push_back(in);
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const TapeEntry& a, const TapeEntry& b) { return a.seq > b.seq; });
  return Tape(std::move(entries), Tape::Order::replay);
}

// ---- printing -----------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, const Tape& tape) {
  os << "tape: " << tape.size() << (tape.size() == 1 ? " entry" : " entries")
     << (tape.order() == Tape::Order::recording
             ? " (oldest first; backward replays them bottom-up; * = requires grad)\n"
             : " (newest first, the order backward replays them; * = requires grad)\n");
  if (tape.empty()) return os;
  // One row of cells per entry; each column is as wide as its longest cell plus two spaces (at
  // least its usual width), so long op names and module paths never run into the next column.
  std::vector<std::array<std::string, 6>> rows{{"#", "op", "module", "inputs", "output", "saved"}};
  for (const TapeEntry& e : tape.entries()) {
    std::ostringstream inputs, saved;
    for (std::size_t i = 0; i < e.inputs.size(); ++i)
      inputs << (i ? " x " : "") << str(e.inputs[i].shape)
             << (e.inputs[i].requires_grad ? "*" : "");
    for (std::size_t i = 0; i < e.saved.size(); ++i)
      saved << (i ? ", " : "")
            << (e.saved[i].name.empty() ? str(e.saved[i].shape) : "'" + e.saved[i].name + "'")
            << " v" << e.saved[i].version;
    rows.push_back({std::to_string(e.seq), e.consumed ? e.op + " (consumed)" : e.op,
                    e.module.empty() ? "-" : e.module, e.consumed ? "(freed)" : inputs.str(),
                    str(e.output), e.saved.empty() ? "-" : saved.str()});
  }
  std::array<std::size_t, 5> width{5, 16, 18, 34, 16};
  for (const auto& row : rows)
    for (std::size_t c = 0; c < width.size(); ++c) width[c] = std::max(width[c], row[c].size() + 2);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < width.size(); ++c)
      os << std::left << std::setw(int(width[c])) << row[c];
    os << row[5] << '\n';
  }
  return os;
}

std::string Tape::to_dot() const {
  // One node per op and one per tensor between them (leaves as boxes, named when they have a
  // name), edges along the forward direction. Backward walks these edges in reverse.
  std::ostringstream os;
  os << "digraph tape {\n  rankdir=LR;\n  node [fontname=\"monospace\"];\n";
  std::unordered_set<std::string> drawn;
  auto node = [&](const std::string& id, const std::string& attributes) {
    if (drawn.insert(id).second) os << "  " << id << " [" << attributes << "];\n";
  };
  for (const TapeEntry& e : entries_) {
    const std::string op = "op" + std::to_string(e.seq);
    node(op, "shape=record, style=filled, fillcolor=lightgrey, label=\"#" + std::to_string(e.seq) +
                 " " + e.op + (e.consumed ? " (consumed)" : "") + "\"");
    for (const TapeEntry::Input& in : e.inputs) {
      // an input made by a listed entry is that entry's output node; others are drawn on their own
      std::string id =
          in.producer >= 0 ? "out" + std::to_string(in.producer) : "t" + std::to_string(in.id);
      if (in.producer < 0)
        node(id, std::string("shape=") + (in.requires_grad ? "box" : "box, style=dashed") +
                     ", label=\"" + (in.name.empty() ? "" : in.name + "\\n") + str(in.shape) +
                     (in.requires_grad ? " *" : "") + "\"");
      else
        node(id, "shape=ellipse, label=\"" + str(in.shape) + " *\"");
      os << "  " << id << " -> " << op << ";\n";
    }
    const std::string out = "out" + std::to_string(e.seq);
    node(out, "shape=ellipse, label=\"" + str(e.output) + " *\"");
    os << "  " << op << " -> " << out << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace tapegrad::autograd
