// src/data/tokenizer.cpp: one interface to the four tokenizers (data/tokenizer.hpp).
#include "tapegrad/data/tokenizer.hpp"

#include <charconv>
#include <limits>
#include <sstream>

#include "tapegrad/core/errors.hpp"
#include "tapegrad/data/text.hpp"
#include "../core/utf8.hpp"

namespace tapegrad::data {

namespace {

/// A visitor from one lambda per alternative (the C++17 idiom).
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::vector<std::uint32_t> unsigned_ids(const std::int64_t* ids, std::size_t n,
                                        std::int64_t vocab_size) {
  std::vector<std::uint32_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size)
      fail<ValueError>("Tokenizer::decode: expected ids in [0, ", vocab_size, "), got ", ids[i],
                       " at position ", i);
    out[i] = std::uint32_t(ids[i]);
  }
  return out;
}

}  // namespace

Tokenizer::Tokenizer(Vocabulary characters) : tokenizer_(std::move(characters)) {
  count_token_bytes();
}
Tokenizer::Tokenizer(BytePairEncoding bpe) : tokenizer_(std::move(bpe)) { count_token_bytes(); }
Tokenizer::Tokenizer(GPT2Tokenizer gpt2) : tokenizer_(std::move(gpt2)) { count_token_bytes(); }
Tokenizer::Tokenizer(HFTokenizer hf) : tokenizer_(std::move(hf)) { count_token_bytes(); }

void Tokenizer::count_token_bytes() {
  token_bytes_.resize(std::size_t(vocab_size()));
  for (std::size_t id = 0; id < token_bytes_.size(); ++id)
    token_bytes_[id] = std::visit(
        Overloaded{[&](const Vocabulary& v) {
                     const auto i = std::int64_t(id);
                     return v.decode(&i, 1).size();
                   },
                   [&](const BytePairEncoding& b) { return b.bytes_of(std::uint32_t(id)).size(); },
                   [&](const GPT2Tokenizer& g) { return g.bytes_of(std::uint32_t(id)).size(); },
                   [&](const HFTokenizer& h) { return h.bytes_of(std::uint32_t(id)).size(); }},
        tokenizer_);
}

const GPT2Tokenizer* Tokenizer::gpt2() const { return std::get_if<GPT2Tokenizer>(&tokenizer_); }
const HFTokenizer* Tokenizer::hf() const { return std::get_if<HFTokenizer>(&tokenizer_); }

std::string Tokenizer::name() const {
  return std::visit(Overloaded{[](const Vocabulary&) { return "char"; },
                               [](const BytePairEncoding&) { return "bpe"; },
                               [](const GPT2Tokenizer&) { return "gpt2"; },
                               [](const HFTokenizer&) { return "hf"; }},
                    tokenizer_);
}

std::int64_t Tokenizer::vocab_size() const {
  return std::visit(
      Overloaded{[](const Vocabulary& v) { return v.size(); },
                 [](const BytePairEncoding& b) { return std::int64_t(b.vocab_size()); },
                 [](const GPT2Tokenizer& g) { return std::int64_t(g.vocab_size()); },
                 [](const HFTokenizer& h) { return std::int64_t(h.vocab_size()); }},
      tokenizer_);
}

std::vector<std::int64_t> Tokenizer::encode(std::string_view text,
                                            const std::string& source) const {
  const std::size_t bad = tapegrad::detail::first_invalid_utf8(text);
  if (bad != std::string_view::npos) fail<DataError>(source, ": not valid UTF-8 at byte ", bad);
  const auto widen = [](const std::vector<std::uint32_t>& ids) {
    return std::vector<std::int64_t>(ids.begin(), ids.end());
  };
  return std::visit(
      Overloaded{
          [&](const Vocabulary& v) { return v.encode(decode_utf8(std::string(text), source)); },
          [&](const BytePairEncoding& b) { return widen(b.encode(text, SpecialTokens::ordinary)); },
          [&](const GPT2Tokenizer& g) { return widen(g.encode(text, SpecialTokens::ordinary)); },
          [&](const HFTokenizer& h) { return widen(h.encode(text, SpecialTokens::ordinary)); }},
      tokenizer_);
}

std::string Tokenizer::decode(const std::int64_t* ids, std::size_t n) const {
  return std::visit(
      Overloaded{
          [&](const Vocabulary& v) {
            unsigned_ids(ids, n, v.size());  // the same check as the others'
            return v.decode(ids, n);
          },
          [&](const BytePairEncoding& b) { return b.decode(unsigned_ids(ids, n, vocab_size())); },
          [&](const GPT2Tokenizer& g) { return g.decode(unsigned_ids(ids, n, vocab_size())); },
          [&](const HFTokenizer& h) { return h.decode(unsigned_ids(ids, n, vocab_size())); }},
      tokenizer_);
}

std::int64_t Tokenizer::ignore_index() const {
  return std::holds_alternative<Vocabulary>(tokenizer_) ? Vocabulary::kUnk : -100;
}

// ---- as a checkpoint stores it -----------------------------------------------------------------
//   char   the characters, Vocabulary::to_text()
//   bpe    the BPE file's text (BytePairEncoding::to_text)
//   gpt2   "gpt2_ids N" and the N GPT-2 ids of the BPE's ids on the next line, then the BPE's text
//   hf     the tokenizer.json as HFTokenizer::to_json writes it

namespace {

std::string gpt2_text(const GPT2Tokenizer& g) {
  std::string out = "gpt2_ids " + std::to_string(g.gpt2_ids().size()) + "\n";
  for (const std::uint32_t id : g.gpt2_ids()) out += std::to_string(id) + ' ';
  out.back() = '\n';
  return out + g.bpe().to_text();
}

// FNV-1a 64 of name, "\n", text: the rule of Tokenizer::fingerprint.
std::uint64_t fingerprint_of(std::string_view name, std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto add = [&](std::string_view bytes) {
    for (const unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  };
  add(name);
  add("\n");
  add(text);
  return h;
}

}  // namespace

std::string Tokenizer::to_text() const {
  return std::visit(Overloaded{[](const Vocabulary& v) { return v.to_text(); },
                               [](const BytePairEncoding& b) { return b.to_text(); },
                               [](const GPT2Tokenizer& g) { return gpt2_text(g); },
                               [](const HFTokenizer& h) { return h.to_json(); }},
                    tokenizer_);
}

std::uint64_t Tokenizer::fingerprint() const { return fingerprint_of(name(), to_text()); }

std::uint64_t tokenizer_fingerprint(const BytePairEncoding& bpe) {
  return fingerprint_of("bpe", bpe.to_text());
}

std::uint64_t tokenizer_fingerprint(const GPT2Tokenizer& gpt2) {
  return fingerprint_of("gpt2", gpt2_text(gpt2));
}

std::uint64_t tokenizer_fingerprint(const HFTokenizer& hf) {
  return fingerprint_of("hf", hf.to_json());
}

Tokenizer Tokenizer::from_text(const std::string& name, const std::string& text,
                               const std::string& source) {
  if (name == "char") return Tokenizer(Vocabulary::from_text(text));
  try {
    if (name == "bpe") return Tokenizer(BytePairEncoding::from_text(text, source));
    if (name == "hf") return Tokenizer(HFTokenizer::from_json(text, source));
    if (name == "gpt2") {
      // "gpt2_ids N\n" then N ids on one line, then the BPE.
      const std::size_t first = text.find('\n');
      const std::size_t second = first == std::string::npos ? first : text.find('\n', first + 1);
      std::size_t n = 0;
      const std::string_view head = std::string_view(text).substr(0, first);
      if (second == std::string::npos || head.rfind("gpt2_ids ", 0) != 0 ||
          std::from_chars(head.data() + 9, head.data() + head.size(), n).ec != std::errc() ||
          n > BytePairEncoding::kMaxVocabSize)
        fail<ValueError>(source, ": expected \"gpt2_ids N\" and a line of N ids before the BPE");
      std::vector<std::uint32_t> ids;
      ids.reserve(n);
      std::istringstream line(text.substr(first + 1, second - first - 1));
      bool too_large = false;
      for (std::uint64_t id; line >> id && ids.size() <= n;) {
        too_large = too_large || id > std::numeric_limits<std::uint32_t>::max();
        ids.push_back(std::uint32_t(id));
      }
      if (ids.size() != n || !line.eof() || too_large)
        fail<ValueError>(source, ": expected ", n, " GPT-2 ids on line 2");
      return Tokenizer(GPT2Tokenizer::from_bpe(
          BytePairEncoding::from_text(text.substr(second + 1), source), std::move(ids)));
    }
  } catch (const DataError& e) {
    throw ValueError(e.what());
  }
  fail<ValueError>(source, ": expected the tokenizer char, bpe, gpt2 or hf, got '", name, "'");
}

}  // namespace tapegrad::data
