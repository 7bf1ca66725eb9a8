// src/data/pretokenize.cpp: GPT-2's pre-tokenization with PCRE2 (data/pretokenize.hpp).
#include "tapegrad/data/pretokenize.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "byte_level_pieces.hpp"
#include "tapegrad/core/errors.hpp"
#include "../core/utf8.hpp"

namespace tapegrad::data {

namespace {

// kGpt2Pattern with each \s written out, in two spellings. JavaScript's \s (the Unicode space
// separators, \t \n \v \f \r, U+2028, U+2029, U+FEFF) gives gpt-3-encoder's pieces, which
// gpt2_pieces() is tested against. Oniguruma's Unicode \s (\t .. \r, U+0085 and the separators,
// Z), which is Unicode's White_Space, gives the pieces of Hugging Face's ByteLevel pre-tokenizer,
// which runs the same pattern with Oniguruma. PCRE2's own \s (with PCRE2_UCP) would also match
// U+180E; Python's `regex` module, which OpenAI's encoder.py uses, matches Oniguruma's set.
#define TAPEGRAD_GPT2_PATTERN(SPACE)                                                        \
  R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^)" SPACE R"(\p{L}\p{N}]+)" R"(|[)" SPACE \
  R"(]+(?![^)" SPACE R"(])|[)" SPACE R"(]+)"
constexpr const char* kPattern =
    TAPEGRAD_GPT2_PATTERN(R"(\t\n\x{0B}\f\r\p{Zs}\x{2028}\x{2029}\x{FEFF})");
constexpr const char* kOnigurumaPattern = TAPEGRAD_GPT2_PATTERN(R"(\t-\r\x{85}\p{Z})");
#undef TAPEGRAD_GPT2_PATTERN

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

/// `pattern`, compiled and JIT-compiled (a compiled pattern is read-only when matching, so one
/// serves every thread).
std::unique_ptr<pcre2_code, CodeDeleter> compile_gpt2(const char* pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                PCRE2_UTF, &error, &offset, nullptr);
  if (c == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    fail<InvariantError>("gpt2_pieces: PCRE2 cannot compile GPT-2's pattern at offset ", offset,
                         ": ", reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // when JIT is unavailable, pcre2_match interprets
  return std::unique_ptr<pcre2_code, CodeDeleter>(c);
}

/// GPT-2's pattern with JavaScript's \s, compiled once.
const pcre2_code* gpt2_code() {
  static const std::unique_ptr<pcre2_code, CodeDeleter> code = compile_gpt2(kPattern);
  return code.get();
}

/// GPT-2's pattern with Oniguruma's \s, compiled once.
const pcre2_code* oniguruma_gpt2_code() {
  static const std::unique_ptr<pcre2_code, CodeDeleter> code = compile_gpt2(kOnigurumaPattern);
  return code.get();
}

/// Passes each piece of `text` to `sink`, in order: `piece_end` says where the piece that starts
/// at a byte ends, or 0 to ask PCRE2.
template <class PieceEnd>
void cut(std::string_view text, const char* who, const pcre2_code* code,
         const PieceEnd& piece_end, const std::function<void(std::string_view)>& sink) {
  const std::size_t bad = tapegrad::detail::first_invalid_utf8(text);
  check<ValueError>(bad == std::string_view::npos, who, ": the text is not valid UTF-8 at byte ",
                    bad, "; GPT-2's pattern reads characters, so the text must be UTF-8");
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code, nullptr));
  check<OutOfMemoryError>(match != nullptr, who, ": PCRE2 could not allocate its match data");
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = piece_end(text, at);
    if (end == 0) {
      // The text was checked once above: checking it again at every match would be quadratic.
      const int rc =
          pcre2_match(code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
      check<InvariantError>(rc > 0, who, ": PCRE2 failed with error ", rc, " at byte ", at);
      const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
      // Every character is in some alternative, so the match starts here and is not empty.
      check<InvariantError>(span[0] == at && span[1] > at, who, ": no piece at byte ", at);
      end = span[1];
    }
    sink(text.substr(at, end - at));
    at = end;
  }
}

// ---- the fast path: ASCII decided by hand --------------------------------------------------------
// Most text is ASCII, and on ASCII the pattern is simple enough to follow by hand; a pcre2_match
// call per piece costs more than the scan. So each piece is cut here while only ASCII characters
// decide it, and by PCRE2 as soon as a character beyond ASCII could (is "é" a letter, is U+00A0 a
// space?). The tests compare the two on random mixes of both.

enum Class : std::uint8_t { kSpace, kLetter, kDigit, kOther, kBeyondAscii };

constexpr std::array<Class, 256> kClass = [] {
  std::array<Class, 256> t{};
  for (unsigned b = 0; b < 256; ++b)
    t[b] = b >= 0x80                                  ? kBeyondAscii
           : (b == ' ' || (b >= '\t' && b <= '\r'))   ? kSpace  // JavaScript's \s in ASCII
           : ((b | 0x20) >= 'a' && (b | 0x20) <= 'z') ? kLetter
           : (b >= '0' && b <= '9')                   ? kDigit
                                                      : kOther;
  return t;
}();

/// Where the piece that starts at `i` ends, when ASCII decides it; 0 when PCRE2 must.
std::size_t ascii_piece_end(std::string_view s, std::size_t i) {
  const std::size_t n = s.size();
  const auto at = [&](std::size_t k) { return kClass[static_cast<unsigned char>(s[k])]; };
  // 's|'t|'re|'ve|'m|'ll|'d, tried first.
  if (s[i] == '\'' && i + 1 < n) {
    const char a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n && ((a == 'r' && s[i + 2] == 'e') || (a == 'v' && s[i + 2] == 'e') ||
                      (a == 'l' && s[i + 2] == 'l')))
      return i + 3;
  }
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
  std::size_t start = i;
  Class c = at(i);
  if (s[i] == ' ' && i + 1 < n && at(i + 1) != kSpace) start = i + 1, c = at(i + 1);
  if (c == kBeyondAscii) return 0;
  if (c != kSpace) {
    std::size_t k = start;
    while (k < n && at(k) == c) ++k;
    return k < n && at(k) == kBeyondAscii ? 0 : k;  // "naï": the run may go on
  }
  // `\s+(?!\S)|\s+`: a run of spaces; before a non-space it leaves its last space to what follows,
  // unless it is that one space.
  std::size_t k = i;
  while (k < n && at(k) == kSpace) ++k;
  if (k == n) return k;
  if (at(k) == kBeyondAscii) return 0;  // U+00A0 would extend the run
  return k - i >= 2 ? k - 1 : k;
}

}  // namespace

void for_each_gpt2_piece(std::string_view text,
                         const std::function<void(std::string_view)>& piece) {
  cut(text, "gpt2_pieces", gpt2_code(), ascii_piece_end, piece);
}

void detail::for_each_byte_level_piece(std::string_view text,
                                       const std::function<void(std::string_view)>& piece) {
  // On ASCII the two spellings of \s agree, so the same hand-cut fast path serves both.
  cut(text, "byte-level pieces", oniguruma_gpt2_code(), ascii_piece_end, piece);
}

bool gpt2_piece_ends_before(std::string_view text, std::size_t at) {
  if (at == 0 || at > text.size()) return false;
  std::size_t start = at - 1;  // the first byte of the character that ends at `at`
  while (start > 0 && at - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
    --start;
  const auto lead = static_cast<unsigned char>(text[start]);
  const std::size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  if (start + length != at || (lead >= 0x80 && lead < 0xC0)) return false;
  char32_t c = length == 1 ? lead : lead & (0x3F >> (length - 1));
  for (std::size_t k = start + 1; k < at; ++k)
    c = (c << 6) | (static_cast<unsigned char>(text[k]) & 0x3F);
  // JavaScript's \s, as TAPEGRAD_JS_SPACE spells it for PCRE2 above (the space separators, Zs,
  // written out).
  const bool space = c == ' ' || (c >= '\t' && c <= '\r') || c == 0xA0 || c == 0x1680 ||
                     (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
                     c == 0x205F || c == 0x3000 || c == 0xFEFF;
  return !space;
}

std::vector<std::string_view> gpt2_pieces(std::string_view text) {
  std::vector<std::string_view> pieces;
  for_each_gpt2_piece(text, [&](std::string_view p) { pieces.push_back(p); });
  return pieces;
}

std::vector<std::string_view> gpt2_pieces_reference(std::string_view text) {
  std::vector<std::string_view> pieces;
  const auto ask_pcre2 = [](std::string_view, std::size_t) { return std::size_t(0); };
  cut(text, "gpt2_pieces_reference", gpt2_code(), ask_pcre2,
      [&](std::string_view p) { pieces.push_back(p); });
  return pieces;
}

}  // namespace tapegrad::data
