// src/data/bpe_fast.cpp: the fast byte pair encoding (bpe_fast.hpp).
//
// The text is a doubly linked list of symbols (one per piece, when it is split): node i starts as
// byte i, and a merge gives its left node the new id and unlinks the right one, so a node's index
// keeps the text's order. A pair's occurrence is named by the index of its left node. Two facts make lazy bookkeeping exact:
//   - ids only grow, and a node's next changes only when the node itself merges, so an occurrence
//     once gone never comes back;
//   - a merge into id c creates only pairs holding c, so a pair gains occurrences only in the merge
//     that creates it, in left-to-right order; after that it only loses them.
// So each pair keeps its occurrences in a sorted list that may hold stale entries (skipped when
// met), and its first occurrence only moves right.
#include "bpe_fast.hpp"

#include <limits>
#include <queue>

namespace tapegrad::data::detail {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();  // no node / dead node

/// The text as doubly linked lists of symbols, one list per piece.
struct Symbols {
  std::vector<std::uint32_t> id, prev, next;  // id[i] == kNone: node i was merged away

  /// One list per piece; the pieces are consecutive stretches of one text.
  explicit Symbols(const std::vector<std::string_view>& pieces) {
    std::size_t total = 0;
    for (const std::string_view piece : pieces) total += piece.size();
    id.reserve(total), prev.reserve(total), next.reserve(total);
    for (const std::string_view piece : pieces) {
      const auto start = std::uint32_t(id.size());
      for (std::uint32_t k = 0; k < piece.size(); ++k) {
        id.push_back(static_cast<unsigned char>(piece[k]));
        prev.push_back(k == 0 ? kNone : start + k - 1);
        next.push_back(k + 1 == piece.size() ? kNone : start + k + 1);
      }
    }
  }
  /// Whether the pair (left, right) still starts at node i.
  bool holds(std::uint32_t i, std::uint32_t left, std::uint32_t right) const {
    return id[i] == left && next[i] != kNone && id[next[i]] == right;
  }
  /// Node i takes id c and swallows its next node.
  void join(std::uint32_t i, std::uint32_t c) {
    const std::uint32_t gone = next[i];
    id[i] = c;
    next[i] = next[gone];
    if (next[gone] != kNone) prev[next[gone]] = i;
    id[gone] = kNone;
  }
  std::vector<std::uint32_t> ids() const {
    std::vector<std::uint32_t> out;
    for (std::uint32_t i = id.empty() ? kNone : 0; i != kNone; i = next[i]) out.push_back(id[i]);
    return out;
  }
};

struct PairStats {
  std::uint32_t left, right;
  std::int64_t count = 0;
  std::vector<std::uint32_t> where;  // occurrences, ascending; those from `head` on may be live
  std::size_t head = 0;
  std::size_t touched = 0;  // the last round that changed count (1-based), to queue it once

  /// The first live occurrence (stale ones at the front are dropped).
  std::uint32_t first(const Symbols& s) {
    while (!s.holds(where[head], left, right)) ++head;
    return where[head];
  }
};

/// A candidate in the max-heap: most occurrences first, then the earliest first occurrence.
/// Entries go stale when their pair changes; a fresh one is queued then, and stale ones are
/// dropped (or corrected) when they reach the top.
struct Candidate {
  std::int64_t count;
  std::uint32_t first;
  std::uint64_t key;
  bool operator<(const Candidate& o) const {
    return count != o.count ? count < o.count : first > o.first;
  }
};

}  // namespace

std::vector<BytePairEncoding::Merge> train_fast(const std::vector<std::string_view>& pieces,
                                                std::size_t num_merges) {
  Symbols s(pieces);
  std::unordered_map<std::uint64_t, PairStats> pairs;
  const auto stats = [&](std::uint32_t left, std::uint32_t right) -> PairStats& {
    PairStats& p = pairs[pair_key(left, right)];  // references survive rehashing
    p.left = left, p.right = right;
    return p;
  };
  for (std::uint32_t i = 0; i < s.id.size(); ++i) {
    if (s.next[i] == kNone) continue;  // the end of a piece
    PairStats& p = stats(s.id[i], s.id[i + 1]);
    ++p.count;
    p.where.push_back(i);
  }
  std::priority_queue<Candidate> heap;
  for (auto& [key, p] : pairs) heap.push({p.count, p.first(s), key});

  std::vector<BytePairEncoding::Merge> merges;
  std::vector<std::uint64_t> touched;
  while (merges.size() < num_merges) {
    // The best pair: the top of the heap once it is checked to be up to date.
    PairStats* best = nullptr;
    while (!heap.empty() && best == nullptr) {
      const Candidate top = heap.top();
      heap.pop();
      const auto it = pairs.find(top.key);
      if (it == pairs.end() || it->second.count != top.count) continue;  // stale
      const std::uint32_t first = it->second.first(s);
      if (first != top.first)
        heap.push({top.count, first, top.key});  // moved right: requeue
      else
        best = &it->second;
    }
    if (best == nullptr) break;  // one token left: nothing to merge
    const std::uint32_t a = best->left, b = best->right;
    const auto c = std::uint32_t(256 + merges.size());
    merges.push_back({a, b});

    // Replace the occurrences left to right, moving the neighbours' counts.
    const std::size_t round = merges.size();
    const auto add = [&](std::uint32_t left, std::uint32_t right, std::int64_t delta,
                         std::uint32_t at) {
      PairStats& p = stats(left, right);
      p.count += delta;
      if (delta > 0) p.where.push_back(at);
      if (p.touched != round) p.touched = round, touched.push_back(pair_key(left, right));
    };
    const std::vector<std::uint32_t> where = std::move(best->where);
    pairs.erase(pair_key(a, b));
    for (const std::uint32_t i : where) {
      if (!s.holds(i, a, b)) continue;  // stale, or swallowed by the previous occurrence
      const std::uint32_t before = s.prev[i], after = s.next[s.next[i]];
      if (before != kNone) {
        add(s.id[before], a, -1, before);
        add(s.id[before], c, +1, before);
      }
      if (after != kNone) {
        add(b, s.id[after], -1, s.next[i]);
        add(c, s.id[after], +1, i);
      }
      s.join(i, c);
    }
    // (a, b) itself may have been counted down above ("aaa": the (a, a) at 1); it is gone.
    pairs.erase(pair_key(a, b));
    for (const std::uint64_t key : touched) {
      const auto it = pairs.find(key);
      if (it == pairs.end()) continue;
      if (it->second.count == 0)
        pairs.erase(it);  // can never come back
      else
        heap.push({it->second.count, it->second.first(s), key});
    }
    touched.clear();
  }
  return merges;
}

std::vector<std::uint32_t> encode_fast(
    std::string_view text, const std::vector<BytePairEncoding::Merge>& merges,
    const std::unordered_map<std::uint64_t, std::uint32_t>& ranks) {
  // Merging in order of (merge index, position) is minbpe's order: a merge into id c creates
  // only pairs holding c, whose merges come later, so each index is done, left to right, before
  // the next one starts.
  Symbols s({text});
  using Entry = std::pair<std::uint32_t, std::uint32_t>;  // (merge index, node)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  const auto queue = [&](std::uint32_t i) {  // the pair starting at node i, if it has a merge
    if (i == kNone || s.next[i] == kNone) return;
    const auto it = ranks.find(pair_key(s.id[i], s.id[s.next[i]]));
    if (it != ranks.end()) heap.push({it->second, i});
  };
  for (std::uint32_t i = 0; i + 1 < text.size(); ++i) queue(i);
  while (!heap.empty()) {
    const auto [rank, i] = heap.top();
    heap.pop();
    if (!s.holds(i, merges[rank].left, merges[rank].right)) continue;  // stale
    s.join(i, 256 + rank);
    queue(s.prev[i]);
    queue(i);
  }
  return s.ids();
}

}  // namespace tapegrad::data::detail
