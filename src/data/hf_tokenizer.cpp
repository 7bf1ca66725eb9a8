// src/data/hf_tokenizer.cpp: encoding and decoding with a tokenizer.json's byte-level BPE
// (data/hf_tokenizer.hpp); hf_tokenizer_json.cpp reads the file.
//
// encode: the added tokens cut out first (two passes: the tokens that are not `normalized`, then
// the others in what is left), each stretch between them through the pre-tokenizers, each piece
// through the BPE. A text repeats its words, so each distinct piece is merged once per call.
#include "tapegrad/data/hf_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <queue>

#include "bpe_fast.hpp"
#include "byte_level_pieces.hpp"
#include "hf_tokenizer_model.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/data/gpt2_tokenizer.hpp"
#include "tapegrad/data/text.hpp"
#include "../core/utf8.hpp"

namespace tapegrad::data {

using Model = detail::HFTokenizerModel;

const std::string& detail::byte_spelling(std::uint8_t b) {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    for (unsigned k = 0; k < 256; ++k)
      append_utf8(t[k], GPT2Tokenizer::byte_to_unicode(std::uint8_t(k)));
    return t;
  }();
  return table[b];
}

HFTokenizer::HFTokenizer(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

std::size_t HFTokenizer::vocab_size() const { return model_->spelled.size(); }

const std::vector<HFTokenizer::AddedToken>& HFTokenizer::added_tokens() const {
  return model_->added;
}

std::int64_t HFTokenizer::token_to_id(std::string_view token) const {
  if (const auto it = model_->added_ids.find(token); it != model_->added_ids.end())
    return it->second;
  if (const auto it = model_->vocab.find(token); it != model_->vocab.end()) return it->second;
  return -1;
}

const std::string& HFTokenizer::bytes_of(std::uint32_t id) const {
  check<ValueError>(id < vocab_size(), "HFTokenizer::bytes_of: expected an id in [0, ",
                    vocab_size(), "), got ", id);
  return model_->bytes[id];
}

std::string HFTokenizer::decode(const std::vector<std::uint32_t>& ids) const {
  std::string bytes;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab_size())
      fail<ValueError>("HFTokenizer::decode: expected ids in [0, ", vocab_size(), "), got ", ids[i],
                       " at position ", i);
    bytes += model_->bytes[ids[i]];
  }
  return tapegrad::detail::repair_utf8(bytes);
}

namespace {

// ---- 1. added tokens ----------------------------------------------------------------------------

/// A stretch of the text: an added token's (id >= 0) or one to pre-tokenize (id -1).
struct Segment {
  std::string_view text;
  std::int64_t id;
};

/// Cuts the text segments of `in` at the added tokens whose `normalized` is `normalized`: at each
/// byte, the longest token that starts there; the leftmost byte where one does, first.
std::vector<Segment> cut_added(const std::vector<Segment>& in, const Model& m, bool normalized,
                               SpecialTokens special, std::string_view whole) {
  // Candidates by first byte, longest first: the first that matches is the longest.
  std::array<std::vector<const HFTokenizer::AddedToken*>, 256> by_first;
  bool any = false;
  for (const auto& t : m.added)
    if (t.normalized == normalized) {
      by_first[static_cast<unsigned char>(t.content[0])].push_back(&t);
      any = true;
    }
  if (!any) return in;
  for (auto& list : by_first)
    std::stable_sort(list.begin(), list.end(),
                     [](auto* a, auto* b) { return a->content.size() > b->content.size(); });
  std::vector<Segment> out;
  for (const Segment& seg : in) {
    if (seg.id >= 0) {
      out.push_back(seg);
      continue;
    }
    const std::string_view s = seg.text;
    std::size_t start = 0;  // of the text not yet passed on
    for (std::size_t at = 0; at < s.size();) {
      const HFTokenizer::AddedToken* found = nullptr;
      for (const auto* t : by_first[static_cast<unsigned char>(s[at])])
        if (s.compare(at, t->content.size(), t->content) == 0) {
          found = t;
          break;
        }
      if (found == nullptr) {
        ++at;
        continue;
      }
      if (found->special && special == SpecialTokens::ordinary) {  // found, and left as text
        at += found->content.size();
        continue;
      }
      if (found->special && special == SpecialTokens::refuse)
        fail<ValueError>("HFTokenizer::encode: the text holds the special token \"", found->content,
                         "\" at byte ", s.data() + at - whole.data(),
                         "; pass SpecialTokens::allow to encode it as its id, or ",
                         "SpecialTokens::ordinary to encode it as text");
      if (at > start) out.push_back({s.substr(start, at - start), -1});
      out.push_back({s.substr(at, found->content.size()), found->id});
      at += found->content.size();
      start = at;
    }
    if (start < s.size()) out.push_back({s.substr(start), -1});
  }
  return out;
}

// ---- 2. pre-tokenizers --------------------------------------------------------------------------

using Sink = std::function<void(std::string_view)>;

/// `piece` through the pre-tokenizers from `step` on, each final piece to `sink`; empty pieces
/// are dropped, as the library drops them.
void pre_tokenize(const Model& m, std::size_t step, std::string_view piece, const Sink& sink) {
  if (piece.empty()) return;
  if (step == m.steps.size()) return sink(piece);
  const Model::Step& s = m.steps[step];
  // The last step hands its pieces to `sink` itself: a std::function built per piece would cost
  // an allocation each.
  const Sink deeper = step + 1 == m.steps.size() ? Sink() : [&](std::string_view p) {
    pre_tokenize(m, step + 1, p, sink);
  };
  const Sink& next = step + 1 == m.steps.size() ? sink : deeper;
  if (s.kind != Model::Step::Kind::byte_level) {  // Split, Digits: "Isolated"
    std::size_t done = 0;
    s.regex->for_each_match(piece, "HFTokenizer::encode", [&](std::size_t start, std::size_t end) {
      if (start > done) next(piece.substr(done, start - done));
      next(piece.substr(start, end - start));
      done = end;
    });
    next(piece.substr(done));
    return;
  }
  // ByteLevel: a space before a piece that does not start with one; GPT-2's pattern. (Writing
  // each byte as its character is left to the BPE, which spells only what it looks up.)
  std::string spaced;
  if (s.add_prefix_space && piece[0] != ' ') {
    spaced = " " + std::string(piece);
    piece = spaced;
  }
  if (s.use_regex)
    detail::for_each_byte_level_piece(piece, next);
  else
    next(piece);
}

// ---- 3. the BPE ---------------------------------------------------------------------------------

/// One piece's ids: its bytes' tokens, then, while some adjacent pair has a merge, the pair of
/// lowest rank joined, the leftmost of equal ranks first. Kept as the library's Word::merge_all
/// keeps it: a linked list of symbols and a min-heap of (rank, position) whose stale entries are
/// skipped when they come up.
void merge_piece(const Model& m, std::string_view piece, std::vector<std::uint32_t>& out) {
  constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  const auto n = std::uint32_t(piece.size());
  std::vector<std::uint32_t> id(n), next(n);
  std::vector<std::uint32_t> prev(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    id[i] = m.byte_ids[static_cast<unsigned char>(piece[i])];
    prev[i] = i == 0 ? kNone : i - 1;
    next[i] = i + 1 == n ? kNone : i + 1;
  }
  using Entry = std::pair<std::uint32_t, std::uint32_t>;  // (rank, position of the left symbol)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  const auto queue = [&](std::uint32_t i) {
    if (i == kNone || next[i] == kNone) return;
    const auto it = m.merges.find(detail::pair_key(id[i], id[next[i]]));
    if (it != m.merges.end()) heap.push({it->second.rank, i});
  };
  for (std::uint32_t i = 0; i + 1 < n; ++i) queue(i);
  while (!heap.empty()) {
    const auto [rank, i] = heap.top();
    heap.pop();
    if (id[i] == kNone || next[i] == kNone) continue;  // merged away, or last
    const auto it = m.merges.find(detail::pair_key(id[i], id[next[i]]));
    if (it == m.merges.end() || it->second.rank != rank) continue;  // the pair has changed
    const std::uint32_t gone = next[i];
    id[i] = it->second.id;
    id[gone] = kNone;
    next[i] = next[gone];
    if (next[i] != kNone) prev[next[i]] = i;
    queue(prev[i]);
    queue(i);
  }
  for (std::uint32_t i = 0; i != kNone && n > 0; i = next[i]) out.push_back(id[i]);
}

/// A piece's ids: with ignore_merges, the whole piece when the vocabulary holds it.
void encode_piece(const Model& m, std::string_view piece, std::vector<std::uint32_t>& out) {
  if (m.ignore_merges) {
    std::string spelled;
    for (const char c : piece) spelled += detail::byte_spelling(static_cast<unsigned char>(c));
    if (const auto it = m.vocab.find(spelled); it != m.vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  merge_piece(m, piece, out);
}

}  // namespace

std::vector<std::uint32_t> HFTokenizer::encode(std::string_view text, SpecialTokens special) const {
  check<ValueError>(text.size() < std::numeric_limits<std::uint32_t>::max(),
                    "HFTokenizer::encode: expected a text shorter than 4 GiB, got ", text.size(),
                    " bytes");
  const std::size_t bad = tapegrad::detail::first_invalid_utf8(text);
  if (bad != std::string_view::npos)
    fail<ValueError>("HFTokenizer::encode: the text is not valid UTF-8 at byte ", bad);
  const Model& m = *model_;
  std::vector<Segment> segments{{text, -1}};
  segments = cut_added(segments, m, false, special, text);
  segments = cut_added(segments, m, true, special, text);

  std::vector<std::uint32_t> out;
  out.reserve(text.size() / 3);
  detail::StringMap<std::pair<std::uint32_t, std::uint32_t>> seen;  // piece -> (at, n) in merged
  std::vector<std::uint32_t> merged;
  const Sink piece = [&](std::string_view p) {
    if (p.empty()) return;  // the library drops empty pieces
    auto it = seen.find(p);
    if (it == seen.end()) {
      const auto at = std::uint32_t(merged.size());
      encode_piece(m, p, merged);
      it = seen.emplace(std::string(p), std::pair{at, std::uint32_t(merged.size()) - at}).first;
    }
    const auto [at, n] = it->second;
    out.insert(out.end(), merged.begin() + at, merged.begin() + at + n);
  };
  for (const Segment& s : segments) {
    if (s.id >= 0)
      out.push_back(std::uint32_t(s.id));
    else
      pre_tokenize(m, 0, s.text, piece);
  }
  return out;
}

}  // namespace tapegrad::data
