// src/data/pretokenize.cpp: GPT-2's pre-tokenization with PCRE2 (data/pretokenize.hpp).
#include "tapegrad/data/pretokenize.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <string>

#include "tapegrad/core/errors.hpp"
#include "utf8.hpp"

namespace tapegrad::data {

namespace {

// kGpt2Pattern with each \s written out as JavaScript's \s, so that the pieces are
// gpt-3-encoder's. PCRE2's own \s (with PCRE2_UCP) would also match U+0085 and U+180E, and not
// U+FEFF; Python's `regex` module, which OpenAI's encoder.py uses, matches U+0085 and not U+FEFF.
#define TAPEGRAD_JS_SPACE R"(\t\n\x{0B}\f\r\p{Zs}\x{2028}\x{2029}\x{FEFF})"
constexpr const char* kPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^)" TAPEGRAD_JS_SPACE R"(\p{L}\p{N}]+)"
    R"(|[)" TAPEGRAD_JS_SPACE R"(]+(?![^)" TAPEGRAD_JS_SPACE R"(])|[)" TAPEGRAD_JS_SPACE R"(]+)";
#undef TAPEGRAD_JS_SPACE

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

/// The pattern, compiled once (thread-safe: a compiled pattern is read-only when matching).
const pcre2_code* gpt2_code() {
  static const std::unique_ptr<pcre2_code, CodeDeleter> code = [] {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                  PCRE2_UTF, &error, &offset, nullptr);
    if (c == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      fail<InvariantError>("gpt2_pieces: PCRE2 cannot compile GPT-2's pattern at offset ", offset,
                           ": ", reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // when JIT is unavailable, pcre2_match interprets
    return std::unique_ptr<pcre2_code, CodeDeleter>(c);
  }();
  return code.get();
}

}  // namespace

std::vector<std::string_view> gpt2_pieces(std::string_view text) {
  const std::size_t bad = detail::first_invalid_utf8(text);
  check<ValueError>(bad == std::string_view::npos,
                    "gpt2_pieces: the text is not valid UTF-8 at byte ", bad,
                    "; GPT-2's pattern reads characters, so the text must be UTF-8");
  const pcre2_code* code = gpt2_code();
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code, nullptr));
  check<OutOfMemoryError>(match != nullptr, "gpt2_pieces: PCRE2 could not allocate its match data");
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::vector<std::string_view> pieces;
  for (std::size_t at = 0; at < text.size();) {
    // The text was checked once above: checking it again at every match would be quadratic.
    const int rc =
        pcre2_match(code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;  // cannot happen: every character is in some class
    check<InvariantError>(rc > 0, "gpt2_pieces: PCRE2 failed with error ", rc, " at byte ", at);
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
    // Every alternative takes at least one character, so a match is never empty.
    pieces.push_back(text.substr(span[0], span[1] - span[0]));
    at = span[1];
  }
  return pieces;
}

}  // namespace tapegrad::data
