// src/data/hf_tokenizer_json.cpp: tokenizer.json read into an HFTokenizer, each field checked
// before it is used, and written back (data/hf_tokenizer.hpp).
//
// The file is Hugging Face's tokenizers library's serialisation of a Tokenizer: `model` (here a
// BPE: `vocab`, token -> id, and `merges`, "a b" strings or [a, b] pairs, in rank order),
// `added_tokens`, `normalizer`, `pre_tokenizer`, `post_processor` and `decoder`, each an object
// whose "type" names its kind. What this reader accepts is listed in docs/tokenizers.md; every
// other kind is refused by name, since a tokenizer read half-right gives wrong ids silently.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bpe_fast.hpp"
#include "hf_tokenizer_model.hpp"
#include "line_reader.hpp"
#include "small_file.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::data {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using detail::excerpt;
using Model = detail::HFTokenizerModel;

constexpr const char* kWho = "HFTokenizer::load";
constexpr const char* kSupported =
    "supported: byte-level BPE (GPT-2, Llama 3, SmolLM2, Qwen2 style)";

/// Refusals name the source and the field: "HFTokenizer::load: <source>: <field>: <parts>".
class Fields {
 public:
  explicit Fields(const std::string& source) : source_(source) {}

  template <class... Parts>
  [[noreturn]] void bad(const std::string& field, const Parts&... parts) const {
    fail<DataError>(kWho, ": ", source_, ": ", field, ": ", parts...);
  }

  /// A value as a message shows it: a string quoted, anything else by its JSON type.
  static std::string shown(const json& v) {
    if (v.is_string()) return excerpt(v.get<std::string>());
    if (v.is_boolean() || v.is_number()) return v.dump();
    return v.type_name();
  }

  /// obj[key], or null when absent.
  static const json& member(const json& obj, const char* key) {
    static const json null;
    const auto it = obj.find(key);
    return it == obj.end() ? null : *it;
  }

  /// A boolean field; absent or null is `fallback`.
  bool flag(const json& obj, const char* key, const std::string& field, bool fallback) const {
    const json& v = member(obj, key);
    if (v.is_null()) return fallback;
    if (!v.is_boolean()) bad(field, "expected true or false, got ", shown(v));
    return v.get<bool>();
  }

  /// A field that must be a string.
  std::string text(const json& obj, const char* key, const std::string& field) const {
    const json& v = member(obj, key);
    if (!v.is_string())
      bad(field, "expected a string, got ", obj.contains(key) ? shown(v) : "nothing");
    return v.get<std::string>();
  }

  /// An id: an integer in [0, kMaxVocabSize).
  std::uint32_t id(const json& v, const std::string& field) const {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= HFTokenizer::kMaxVocabSize)
      bad(field, "expected an id in [0, ", HFTokenizer::kMaxVocabSize, "), got ", shown(v));
    return v.get<std::uint32_t>();
  }

  const std::string& source() const { return source_; }

 private:
  const std::string& source_;
};

/// Whether `v` or a step of a Sequence in it has "type" `type`.
bool holds_type(const json& v, const char* type) {
  if (!v.is_object()) return false;
  if (Fields::member(v, "type") == type) return true;
  for (const char* list : {"pretokenizers", "decoders", "normalizers"})
    if (const json& steps = Fields::member(v, list); steps.is_array())
      for (const json& step : steps)
        if (holds_type(step, type)) return true;
  return false;
}

// ---- model ---------------------------------------------------------------------------------------

void read_vocab(const Fields& f, const json& model, Model& m) {
  const json& vocab = Fields::member(model, "vocab");
  if (!vocab.is_object())
    f.bad("model.vocab", "expected an object of token -> id, got ", Fields::shown(vocab));
  std::vector<const std::string*> token_of;  // id -> its token, to name two that share one
  for (const auto& [token, value] : vocab.items()) {
    const std::uint32_t id = f.id(value, "model.vocab: the token " + excerpt(token));
    if (id >= token_of.size()) token_of.resize(id + 1, nullptr);
    if (token_of[id] != nullptr)
      f.bad("model.vocab", "the tokens ", excerpt(*token_of[id]), " and ", excerpt(token),
            " both have id ", id);
    token_of[id] = &token;
    m.vocab.emplace(token, id);
  }
  for (unsigned b = 0; b < 256; ++b) {
    const auto it = m.vocab.find(detail::byte_spelling(std::uint8_t(b)));
    if (it == m.vocab.end())
      f.bad("model.vocab", "no token for byte ", b, " (", excerpt(detail::byte_spelling(b)),
            "); a byte-level BPE has one for each of the 256 bytes");
    m.byte_ids[b] = it->second;
  }
}

void read_merges(const Fields& f, const json& model, Model& m) {
  const json& merges = Fields::member(model, "merges");
  if (!merges.is_array())
    f.bad("model.merges", "expected an array of merges, got ", Fields::shown(merges));
  m.merge_pairs.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const json& merge = merges[rank];
    const std::string field = "model.merges[" + std::to_string(rank) + "]";
    std::string a, b;
    if (merge.is_string()) {  // "a b": the library splits on the one space
      const std::string s = merge.get<std::string>();
      const std::size_t space = s.find(' ');
      if (space == 0 || space == std::string::npos || space + 1 == s.size() ||
          s.find(' ', space + 1) != std::string::npos)
        f.bad(field, "expected a merge \"a b\" of two tokens, got ", excerpt(s));
      a = s.substr(0, space), b = s.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      a = merge[0].get<std::string>(), b = merge[1].get<std::string>();
    } else {
      f.bad(field, "expected a merge \"a b\" or [\"a\", \"b\"], got ", Fields::shown(merge));
    }
    const auto left = m.vocab.find(a), right = m.vocab.find(b), made = m.vocab.find(a + b);
    if (left == m.vocab.end() || right == m.vocab.end())
      f.bad(field, "the merge ", excerpt(a + " " + b), " joins ",
            excerpt(left == m.vocab.end() ? a : b), ", which model.vocab does not hold");
    if (made == m.vocab.end())
      f.bad(field, "the merge ", excerpt(a + " " + b), " makes ", excerpt(a + b),
            ", which model.vocab does not hold");
    const auto key = detail::pair_key(left->second, right->second);
    const auto [it, fresh] = m.merges.emplace(key, Model::Merge{std::uint32_t(rank), made->second});
    if (!fresh)
      f.bad(field, "the merge ", excerpt(a + " " + b), " is already model.merges[", it->second.rank,
            "]");
    m.merge_pairs.push_back({left->second, right->second});
  }
}

void read_model(const Fields& f, const json& model, Model& m) {
  const json& dropout = Fields::member(model, "dropout");
  if (!dropout.is_null() && !(dropout.is_number() && dropout.get<double>() == 0.0))
    f.bad("model.dropout", "expected null (the same ids every time), got ", Fields::shown(dropout));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = Fields::member(model, key);
    if (!v.is_null() && v != "")
      f.bad(std::string("model.") + key, "expected null or \"\" (a byte-level BPE has none), got ",
            Fields::shown(v));
  }
  if (const json& unk = Fields::member(model, "unk_token"); !unk.is_null() && !unk.is_string())
    f.bad("model.unk_token", "expected null or a string, got ", Fields::shown(unk));
  f.flag(model, "fuse_unk", "model.fuse_unk", false);  // no unknown bytes: nothing to fuse
  m.ignore_merges = f.flag(model, "ignore_merges", "model.ignore_merges", false);
  read_vocab(f, model, m);
  read_merges(f, model, m);
}

// ---- added tokens --------------------------------------------------------------------------------

void read_added_tokens(const Fields& f, const json& root, Model& m) {
  const json& list = Fields::member(root, "added_tokens");
  if (list.is_null()) return;
  if (!list.is_array()) f.bad("added_tokens", "expected an array, got ", Fields::shown(list));
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& t = list[k];
    const std::string field = "added_tokens[" + std::to_string(k) + "]";
    if (!t.is_object()) f.bad(field, "expected an object, got ", Fields::shown(t));
    HFTokenizer::AddedToken token;
    token.id = f.id(Fields::member(t, "id"), field + ".id");
    token.content = f.text(t, "content", field + ".content");
    if (token.content.empty()) f.bad(field + ".content", "expected a token, got \"\"");
    token.special = f.flag(t, "special", field + ".special", false);
    token.normalized = f.flag(t, "normalized", field + ".normalized", !token.special);
    for (const char* key : {"single_word", "lstrip", "rstrip"})
      if (f.flag(t, key, field + "." + key, false))
        f.bad(field + "." + key, "true is not supported (", excerpt(token.content),
              " would be found only as a word, or take the spaces beside it); supported: false");
    if (const auto [it, fresh] = m.added_ids.emplace(token.content, token.id); !fresh)
      f.bad(field, "the added token ", excerpt(token.content), " is given twice");
    m.added.push_back(std::move(token));
  }
  std::sort(m.added.begin(), m.added.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  for (std::size_t k = 1; k < m.added.size(); ++k)
    if (m.added[k].id == m.added[k - 1].id)
      f.bad("added_tokens", "the added tokens ", excerpt(m.added[k - 1].content), " and ",
            excerpt(m.added[k].content), " both have id ", m.added[k].id);
}

// ---- pre-tokenizer and decoder -------------------------------------------------------------------

void read_step(const Fields& f, const json& step, const std::string& field, Model& m) {
  if (!step.is_object()) f.bad(field, "expected an object, got ", Fields::shown(step));
  const std::string type = f.text(step, "type", field + ".type");
  Model::Step s;
  if (type == "Sequence") {
    const json& steps = Fields::member(step, "pretokenizers");
    if (!steps.is_array())
      f.bad(field + ".pretokenizers", "expected an array, got ", Fields::shown(steps));
    for (std::size_t k = 0; k < steps.size(); ++k)
      read_step(f, steps[k], field + ".pretokenizers[" + std::to_string(k) + "]", m);
    return;
  }
  if (!m.steps.empty() && m.steps.back().kind == Model::Step::Kind::byte_level)
    f.bad(field,
          "expected nothing after the ByteLevel pre-tokenizer (which writes each byte as "
          "the vocabulary spells it), got ",
          type);
  if (type == "ByteLevel") {
    s.kind = Model::Step::Kind::byte_level;
    s.add_prefix_space = f.flag(step, "add_prefix_space", field + ".add_prefix_space", false);
    s.use_regex = f.flag(step, "use_regex", field + ".use_regex", true);
  } else if (type == "Split") {
    s.kind = Model::Step::Kind::split;
    const json& pattern = Fields::member(step, "pattern");
    const bool literal = pattern.is_object() && pattern.size() == 1 && pattern.contains("String");
    if (!literal && !(pattern.is_object() && pattern.size() == 1 && pattern.contains("Regex")))
      f.bad(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}, got ",
            Fields::shown(pattern));
    const char* key = literal ? "String" : "Regex";
    const std::string text = f.text(pattern, key, field + ".pattern." + key);
    try {
      s.regex = std::make_shared<const detail::Regex>(text, literal);
    } catch (const ValueError& e) {
      f.bad(field + ".pattern." + key, e.what(), " (pattern ", excerpt(text), ")");
    }
    const std::string behavior = f.text(step, "behavior", field + ".behavior");
    if (behavior != "Isolated")
      f.bad(field + ".behavior", excerpt(behavior), " is not supported; supported: \"Isolated\"",
            " (each match a piece, and each stretch between two)");
    if (f.flag(step, "invert", field + ".invert", false))
      f.bad(field + ".invert", "true is not supported; supported: false");
  } else if (type == "Digits") {
    s.kind = Model::Step::Kind::digits;
    s.individual_digits = f.flag(step, "individual_digits", field + ".individual_digits", false);
    // The library's Digits cuts at char::is_numeric, Unicode's number categories: \p{N}.
    s.regex =
        std::make_shared<const detail::Regex>(s.individual_digits ? "\\p{N}" : "\\p{N}+", false);
  } else {
    f.bad(field + ".type", excerpt(type), " is not supported; supported: ByteLevel, or a Sequence ",
          "of Split, Digits and ByteLevel");
  }
  m.steps.push_back(std::move(s));
}

void read_pre_tokenizer(const Fields& f, const json& root, Model& m) {
  const json& pre = Fields::member(root, "pre_tokenizer");
  if (pre.is_null())
    f.bad("pre_tokenizer", "expected ByteLevel, or a Sequence ending with ByteLevel, got null");
  read_step(f, pre, "pre_tokenizer", m);
  if (m.steps.empty() || m.steps.back().kind != Model::Step::Kind::byte_level)
    f.bad("pre_tokenizer",
          "expected ByteLevel last (it writes each byte as the vocabulary spells "
          "it), got none");
}

void read_decoder(const Fields& f, const json& root) {
  const json& decoder = Fields::member(root, "decoder");
  if (!decoder.is_object()) f.bad("decoder", "expected ByteLevel, got ", Fields::shown(decoder));
  const std::string type = f.text(decoder, "type", "decoder.type");
  if (type != "ByteLevel")
    f.bad("decoder.type", excerpt(type), " is not supported; supported: ByteLevel");
}

// ---- the ids, and what each stands for -----------------------------------------------------------

/// The bytes of a token as the ByteLevel decoder reads it: each character back to its byte; a
/// token with a character outside the table stays as its UTF-8.
std::string token_bytes(const std::string& spelled,
                        const detail::StringMap<std::uint8_t>& byte_of_char) {
  std::string out;
  for (std::size_t i = 0; i < spelled.size();) {
    const auto lead = static_cast<unsigned char>(spelled[i]);
    const std::size_t n = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    const auto it = byte_of_char.find(std::string_view(spelled).substr(i, n));
    if (it == byte_of_char.end()) return spelled;
    out += char(it->second);
    i += n;
  }
  return out;
}

void number_tokens(const Fields& f, Model& m) {
  std::size_t n = 0;
  for (const auto& [token, id] : m.vocab) n = std::max<std::size_t>(n, id + 1);
  for (const auto& t : m.added) n = std::max<std::size_t>(n, t.id + 1);
  m.spelled.assign(n, std::string());
  m.in_vocab.assign(n, false);
  std::vector<bool> named(n, false);
  for (const auto& [token, id] : m.vocab) {
    m.spelled[id] = token;
    m.in_vocab[id] = named[id] = true;
  }
  for (const auto& t : m.added) {
    if (m.in_vocab[t.id] && m.spelled[t.id] != t.content)
      f.bad("added_tokens", "the added token ", excerpt(t.content), " has id ", t.id,
            ", which is model.vocab's ", excerpt(m.spelled[t.id]));
    m.spelled[t.id] = t.content;
    named[t.id] = true;
  }
  for (std::size_t id = 0; id < n; ++id)
    if (!named[id])
      f.bad("model.vocab", "no token has id ", id, ", but the largest id is ", n - 1,
            " (model.vocab and added_tokens must number their tokens 0 .. N - 1)");

  detail::StringMap<std::uint8_t> byte_of_char;
  for (unsigned b = 0; b < 256; ++b)
    byte_of_char.emplace(detail::byte_spelling(b), std::uint8_t(b));
  m.bytes.resize(n);
  for (std::size_t id = 0; id < n; ++id)
    m.bytes[id] = m.in_vocab[id] ? token_bytes(m.spelled[id], byte_of_char) : m.spelled[id];
  for (const auto& t : m.added) m.bytes[t.id] = t.content;  // an added token is its text
}

/// Whether `text` nests arrays and objects more than `limit` deep (brackets inside strings aside).
bool nested_deeper_than(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

HFTokenizer HFTokenizer::load(const std::string& path) {
  return from_json(detail::read_small_file(path, kWho, kMaxFileBytes, "a tokenizer.json"), path);
}

HFTokenizer HFTokenizer::from_json(std::string_view text, const std::string& source) {
  const Fields f(source);
  // A tokenizer.json nests 6 deep; a hostile one a million deep would overflow the stack of the
  // recursive walks below (and of the JSON library's dump), so it is refused before parsing.
  constexpr std::size_t kMaxDepth = 64;
  if (nested_deeper_than(text, kMaxDepth))
    fail<DataError>(kWho, ": ", source, ": expected JSON nested at most ", kMaxDepth,
                    " deep (a tokenizer.json nests about 6), got deeper");
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail<DataError>(kWho, ": ", source, ": not valid JSON: ", e.what());
  }
  if (!root.is_object())
    fail<DataError>(kWho, ": ", source, ": expected a JSON object (a tokenizer.json), got ",
                    root.type_name());
  const json& model = Fields::member(root, "model");
  if (!model.is_object()) f.bad("model", "expected an object, got ", Fields::shown(model));
  const std::string type = f.text(model, "type", "model.type");
  if (type != "BPE")
    fail<DataError>(kWho, ": ", source, ": model.type ", excerpt(type), " is not supported; ",
                    kSupported);
  // A sentencepiece BPE (Llama 2, Mistral) is a BPE too, over characters with "▁" for the space
  // and <0x0A>-style byte tokens: its ids would come out wrong, not refused, if read as bytes.
  const json& normalizer = Fields::member(root, "normalizer");
  const char* sentencepiece =
      f.flag(model, "byte_fallback", "model.byte_fallback", false) ? "model.byte_fallback is true"
      : holds_type(Fields::member(root, "pre_tokenizer"), "Metaspace")
          ? "the pre_tokenizer is Metaspace"
      : holds_type(Fields::member(root, "decoder"), "Metaspace")    ? "the decoder is Metaspace"
      : holds_type(Fields::member(root, "decoder"), "ByteFallback") ? "the decoder has ByteFallback"
      : normalizer.dump().find("\xE2\x96\x81") != std::string::npos
          ? "the normalizer writes spaces as \"\xE2\x96\x81\""
          : nullptr;
  if (sentencepiece != nullptr)
    fail<DataError>(kWho, ": ", source, ": ", sentencepiece, ": sentencepiece BPE with byte ",
                    "fallback is not supported; ", kSupported);
  if (!normalizer.is_null() &&
      !(holds_type(normalizer, "Sequence") && Fields::member(normalizer, "normalizers").empty()))
    f.bad("normalizer",
          normalizer.is_object() ? excerpt(f.text(normalizer, "type", "normalizer.type"))
                                 : Fields::shown(normalizer),
          " is not supported; supported: null (no normalizer)");

  auto m = std::make_shared<Model>();
  read_model(f, model, *m);
  read_added_tokens(f, root, *m);
  read_pre_tokenizer(f, root, *m);
  read_decoder(f, root);
  number_tokens(f, *m);
  m->post_processor = Fields::member(root, "post_processor").dump();
  return HFTokenizer(std::move(m));
}

std::string HFTokenizer::to_json() const {
  using ordered = nlohmann::ordered_json;
  const Model& m = *model_;
  ordered added = ordered::array();
  for (const AddedToken& t : m.added)
    added.push_back({{"id", t.id},
                     {"content", t.content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", t.normalized},
                     {"special", t.special}});
  ordered steps = ordered::array();
  for (const Model::Step& s : m.steps) {
    if (s.kind == Model::Step::Kind::byte_level)
      steps.push_back({{"type", "ByteLevel"},
                       {"add_prefix_space", s.add_prefix_space},
                       {"trim_offsets", true},
                       {"use_regex", s.use_regex}});
    else if (s.kind == Model::Step::Kind::digits)
      steps.push_back({{"type", "Digits"}, {"individual_digits", s.individual_digits}});
    else
      steps.push_back({{"type", "Split"},
                       {"pattern", {{s.regex->literal() ? "String" : "Regex", s.regex->pattern()}}},
                       {"behavior", "Isolated"},
                       {"invert", false}});
  }
  ordered merges = ordered::array();
  for (const auto& [left, right] : m.merge_pairs)
    merges.push_back(ordered::array({m.spelled[left], m.spelled[right]}));
  const ordered model = {{"type", "BPE"},
                         {"dropout", nullptr},
                         {"unk_token", nullptr},
                         {"continuing_subword_prefix", nullptr},
                         {"end_of_word_suffix", nullptr},
                         {"fuse_unk", false},
                         {"byte_fallback", false},
                         {"ignore_merges", m.ignore_merges}};
  const ordered head = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", nullptr},
      {"pre_tokenizer", steps.size() == 1
                            ? steps[0]
                            : ordered{{"type", "Sequence"}, {"pretokenizers", std::move(steps)}}},
      {"post_processor", ordered::parse(m.post_processor)},
      {"decoder",
       {{"type", "ByteLevel"},
        {"add_prefix_space", true},
        {"trim_offsets", true},
        {"use_regex", true}}}};
  // The vocabulary is written by hand, in id order: an ordered_json object finds each key by a
  // linear search, which 128,000 tokens would make quadratic.
  std::string out = head.dump();
  out.pop_back();  // the head's closing brace
  out += ",\"model\":" + model.dump();
  out.pop_back();
  out += ",\"vocab\":{";
  for (std::size_t id = 0, written = 0; id < m.spelled.size(); ++id)
    if (m.in_vocab[id])
      out += (written++ ? "," : "") + ordered(m.spelled[id]).dump() + ":" + std::to_string(id);
  out += "},\"merges\":" + merges.dump() + "}}";
  return out;
}

}  // namespace tapegrad::data
