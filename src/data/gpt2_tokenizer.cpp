// src/data/gpt2_tokenizer.cpp: GPT-2's tokenizer read from its two files (data/gpt2_tokenizer.hpp).
#include "tapegrad/data/gpt2_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "line_reader.hpp"
#include "small_file.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::data {

namespace {

namespace fs = std::filesystem;
using detail::excerpt;

constexpr const char* kWho = "GPT2Tokenizer::load";
/// GPT-2's files are 1 MB and 0.5 MB; a vocabulary of 2^20 tokens fits in 64 MiB.
constexpr std::uint64_t kMaxFileBytes = std::uint64_t(64) << 20;

/// bytes_to_unicode of OpenAI's encoder.py, as a table.
const std::array<char32_t, 256>& byte_table() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;  // the bytes that are not printable take U+0100, U+0101, ... in order
    for (unsigned b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t[b] = printable ? char32_t(b) : next++;
    }
    return t;
  }();
  return table;
}

std::string utf8_of(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6));
    s += char(0x80 | (c & 0x3F));
  } else {  // the table's characters are all below U+0800; a general encoder is not needed
    fail<InvariantError>("utf8_of: expected a character below U+0800");
  }
  return s;
}

/// The vocabulary file: a JSON object of token -> id, read with nlohmann's SAX interface, so that
/// anything but a flat object of numbers (a nested array a million deep, say) is refused as it is
/// met, without building a document.
class VocabReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<std::pair<std::string, std::uint32_t>> entries;  ///< in file order
  std::string error;                                           ///< why the file was refused

  bool start_object(std::size_t) override { return depth_++ == 0 || refuse("a nested object"); }
  bool end_object() override { return --depth_, true; }
  bool key(string_t& k) override {
    key_ = k;
    have_key_ = true;
    return true;
  }
  bool number_unsigned(number_unsigned_t id) override {
    if (depth_ != 1 || !have_key_) return refuse("the number " + std::to_string(id));
    if (id >= BytePairEncoding::kMaxVocabSize)
      return fail_with("the token " + excerpt(key_) + " has id " + std::to_string(id) +
                       ", above the largest a vocabulary may have, " +
                       std::to_string(BytePairEncoding::kMaxVocabSize - 1));
    entries.emplace_back(key_, std::uint32_t(id));
    have_key_ = false;
    return true;
  }
  bool number_integer(number_integer_t id) override {
    return fail_with("the token " + excerpt(key_) + " has the negative id " + std::to_string(id));
  }
  bool number_float(number_float_t, const string_t& s) override {
    return refuse("the number " + s);
  }
  bool null() override { return refuse("null"); }
  bool boolean(bool) override { return refuse("a boolean"); }
  bool string(string_t& s) override { return refuse("the string " + excerpt(s)); }
  bool binary(binary_t&) override { return refuse("binary data"); }
  bool start_array(std::size_t) override { return refuse("an array"); }
  bool end_array() override { return false; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    return fail_with(std::string("not valid JSON: ") + e.what());
  }

 private:
  bool refuse(const std::string& what) {
    if (depth_ == 0 || !have_key_)
      return fail_with("expected a JSON object of token -> id, got " + what);
    return fail_with("expected the id of the token " + excerpt(key_) + ", got " + what);
  }
  bool fail_with(std::string why) {
    error = std::move(why);
    return false;
  }
  int depth_ = 0;
  std::string key_;
  bool have_key_ = false;
};

}  // namespace

char32_t GPT2Tokenizer::byte_to_unicode(std::uint8_t b) { return byte_table()[b]; }

GPT2Tokenizer GPT2Tokenizer::load(const std::string& folder) {
  const fs::path dir(folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail<DataError>(kWho, ": ", folder, " is not a folder (expected one holding encoder.json and ",
                    "vocab.bpe, or vocab.json and merges.txt)");
  for (const auto& [vocab, merges] :
       {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}})
    if (fs::exists(dir / vocab, ec) || fs::exists(dir / merges, ec))
      return load((dir / vocab).string(), (dir / merges).string());
  fail<DataError>(kWho, ": ", folder, " holds neither encoder.json and vocab.bpe (OpenAI's names) ",
                  "nor vocab.json and merges.txt (Hugging Face's)");
}

GPT2Tokenizer GPT2Tokenizer::load(const std::string& vocab_path, const std::string& merges_path) {
  // ---- the vocabulary: token text -> GPT-2 id, the ids 0 .. n - 1 each once
  VocabReader reader;
  {
    const std::string json =
        detail::read_small_file(vocab_path, kWho, kMaxFileBytes, "a tokenizer file");
    if (!nlohmann::json::sax_parse(json, &reader) || !reader.error.empty())
      fail<DataError>(kWho, ": ", vocab_path, ": ",
                      reader.error.empty() ? "not a JSON object of token -> id" : reader.error);
  }
  const std::size_t n = reader.entries.size();
  std::unordered_map<std::string, std::uint32_t> gpt2_id;  // token text -> GPT-2 id
  std::vector<const std::string*> token_of(n, nullptr);    // GPT-2 id -> token text
  for (const auto& [token, id] : reader.entries) {
    if (!gpt2_id.emplace(token, id).second)
      fail<DataError>(kWho, ": ", vocab_path, ": the token ", excerpt(token), " appears twice");
    if (id >= n)
      fail<DataError>(kWho, ": ", vocab_path, ": the token ", excerpt(token), " has id ", id,
                      ", but ", n, " tokens have the ids 0 .. ", n - 1);
    if (token_of[id] != nullptr)
      fail<DataError>(kWho, ": ", vocab_path, ": the tokens ", excerpt(*token_of[id]), " and ",
                      excerpt(token), " both have id ", id);
    token_of[id] = &token;
  }

  // ---- the bytes: each of the 256 has a token, spelled with byte_to_unicode
  GPT2Tokenizer t;
  std::unordered_map<std::string, std::uint32_t> bpe_id;  // token text -> BytePairEncoding id
  t.to_gpt2_.reserve(n);
  for (unsigned b = 0; b < 256; ++b) {
    const std::string token = utf8_of(byte_table()[b]);
    const auto it = gpt2_id.find(token);
    if (it == gpt2_id.end())
      fail<DataError>(kWho, ": ", vocab_path, ": no token for byte ", b, " (", excerpt(token),
                      "); a byte-level vocabulary has one for each of the 256");
    bpe_id.emplace(token, b);
    t.to_gpt2_.push_back(it->second);
  }

  // ---- the merges: "A B" on line k + 1 (after "#version") makes the token AB, BPE id 256 + k
  std::vector<BytePairEncoding::Merge> merges;
  {
    const std::string text =
        detail::read_small_file(merges_path, kWho, kMaxFileBytes, "a tokenizer file");
    std::istringstream in(text);
    detail::LineReader lines(in, merges_path, kWho);
    std::unordered_map<std::uint64_t, std::size_t> line_of;  // pair -> its line
    const auto bad = [&](const auto&... parts) {
      fail<DataError>(kWho, ": ", merges_path, " line ", lines.number, ": ", parts...);
    };
    std::string line;
    while (lines.next(line)) {
      if (lines.number == 1 && line.rfind("#", 0) == 0) continue;  // "#version: 0.2"
      const std::size_t space = line.find(' ');
      if (space == 0 || space == std::string::npos || space + 1 == line.size() ||
          line.find(' ', space + 1) != std::string::npos)
        bad("expected a merge \"A B\" of two tokens, got ", excerpt(line));
      const std::string a = line.substr(0, space), b = line.substr(space + 1);
      const auto left = bpe_id.find(a), right = bpe_id.find(b);
      if (left == bpe_id.end() || right == bpe_id.end())
        bad("the merge ", excerpt(line), " joins ", excerpt(left == bpe_id.end() ? a : b),
            ", which is neither a byte nor made by a merge above it");
      const auto made = gpt2_id.find(a + b);
      if (made == gpt2_id.end())
        bad("the merge ", excerpt(line), " makes ", excerpt(a + b), ", which ", vocab_path,
            " has no id for");
      const auto key = (std::uint64_t(left->second) << 32) | right->second;
      if (const auto [it, fresh] = line_of.emplace(key, lines.number); !fresh)
        bad("the merge ", excerpt(line), " is already on line ", it->second);
      if (!bpe_id.emplace(a + b, std::uint32_t(256 + merges.size())).second)
        bad("the merge ", excerpt(line), " makes ", excerpt(a + b),
            ", which a byte or an earlier merge already makes");
      merges.push_back({left->second, right->second});
      t.to_gpt2_.push_back(made->second);
    }
  }
  t.bpe_ = BytePairEncoding(std::move(merges), Pretokenizer::gpt2);

  // ---- the rest: special tokens, "<|...|>", in the order of their ids
  std::vector<std::string> special;
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::string& token = *token_of[id];
    if (bpe_id.count(token)) continue;
    if (token.size() < 4 || token.rfind("<|", 0) != 0 || token.compare(token.size() - 2, 2, "|>"))
      fail<DataError>(kWho, ": ", vocab_path, ": the token ", excerpt(token), " (id ", id,
                      ") is neither a byte nor made by a merge in ", merges_path,
                      " (is it cut short?), nor a special token \"<|...|>\"");
    if (special.size() == BytePairEncoding::kMaxSpecialTokens)
      fail<DataError>(kWho, ": ", vocab_path, ": more than ", BytePairEncoding::kMaxSpecialTokens,
                      " special tokens \"<|...|>\"");
    special.push_back(token);
    t.to_gpt2_.push_back(id);
  }
  try {
    t.bpe_.add_special_tokens(special);
  } catch (const ValueError& e) {  // one over 256 bytes, or holding a newline
    fail<DataError>(kWho, ": ", vocab_path, ": ", e.what());
  }
  const std::int64_t eot = t.bpe_.special_id("<|endoftext|>");
  if (eot < 0) fail<DataError>(kWho, ": ", vocab_path, " has no token \"<|endoftext|>\"");
  t.end_of_text_ = t.to_gpt2_[std::size_t(eot)];
  t.from_gpt2_.assign(n, 0);
  for (std::uint32_t k = 0; k < n; ++k) t.from_gpt2_[t.to_gpt2_[k]] = k;
  return t;
}

GPT2Tokenizer GPT2Tokenizer::from_bpe(BytePairEncoding bpe, std::vector<std::uint32_t> gpt2_ids) {
  const std::size_t n = bpe.vocab_size();
  check<ValueError>(gpt2_ids.size() == n, "GPT2Tokenizer::from_bpe: expected ", n,
                    " GPT-2 ids (one for each id of the BPE), got ", gpt2_ids.size());
  GPT2Tokenizer t;
  t.from_gpt2_.assign(n, std::uint32_t(-1));
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t id = gpt2_ids[k];
    if (id >= n || t.from_gpt2_[id] != std::uint32_t(-1))
      fail<ValueError>("GPT2Tokenizer::from_bpe: GPT-2 id ", id, " (of BPE id ", k,
                       id >= n ? ") is out of range" : ") is given twice");
    t.from_gpt2_[id] = k;
  }
  const std::int64_t eot = bpe.special_id("<|endoftext|>");
  check<ValueError>(eot >= 0, "GPT2Tokenizer::from_bpe: the BPE has no \"<|endoftext|>\"");
  t.end_of_text_ = gpt2_ids[std::size_t(eot)];
  t.bpe_ = std::move(bpe);
  t.to_gpt2_ = std::move(gpt2_ids);
  return t;
}

std::vector<std::uint32_t> GPT2Tokenizer::encode(std::string_view text,
                                                 SpecialTokens special) const {
  std::vector<std::uint32_t> ids = bpe_.encode(text, special);
  for (std::uint32_t& id : ids) id = to_gpt2_[id];
  return ids;
}

std::string GPT2Tokenizer::decode(const std::vector<std::uint32_t>& ids) const {
  std::vector<std::uint32_t> own(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab_size())
      fail<ValueError>("GPT2Tokenizer::decode: expected ids in [0, ", vocab_size(), "), got ",
                       ids[i], " at position ", i);
    own[i] = from_gpt2_[ids[i]];
  }
  return bpe_.decode(own);
}

namespace {
// A token as GPT-2's files spell it: each byte as its printable character.
std::string spelled(const std::string& bytes) {
  std::string s;
  for (const char c : bytes) s += utf8_of(byte_table()[static_cast<unsigned char>(c)]);
  return s;
}
}  // namespace

std::string GPT2Tokenizer::vocab_json() const {
  const std::size_t specials_from = 256 + bpe_.merges().size();  // bpe ids from here are special
  std::string out = "{";
  for (std::uint32_t id = 0; id < vocab_size(); ++id) {
    const std::uint32_t own = from_gpt2_[id];
    const std::string& bytes = bpe_.bytes_of(own);
    out += (id ? ", " : "") + nlohmann::json(own >= specials_from ? bytes : spelled(bytes)).dump() +
           ": " + std::to_string(id);
  }
  return out + "}\n";
}

std::string GPT2Tokenizer::merges_txt() const {
  std::string out = "#version: 0.2\n";
  for (const BytePairEncoding::Merge& m : bpe_.merges())
    out += spelled(bpe_.bytes_of(m.left)) + " " + spelled(bpe_.bytes_of(m.right)) + "\n";
  return out;
}

const std::string& GPT2Tokenizer::bytes_of(std::uint32_t id) const {
  check<ValueError>(id < vocab_size(), "GPT2Tokenizer::bytes_of: expected an id in [0, ",
                    vocab_size(), "), got ", id);
  return bpe_.bytes_of(from_gpt2_[id]);
}

}  // namespace tapegrad::data
