// src/data/regex.hpp: a regular expression from a tokenizer file, run by PCRE2; private to
// src/data (data/hf_tokenizer.hpp).
//
// A tokenizer.json names its own pattern (Llama 3's, Qwen2's), written for Oniguruma. PCRE2 reads
// the same syntax for what such patterns use ((?i:...), \p{L}, \p{N}, {1,3}, (?!...)); compiled
// with PCRE2_UCP, its \s, \d and \w are Unicode's, as Oniguruma's are. The one difference known
// to matter is that PCRE2's \s also matches U+180E (MONGOLIAN VOWEL SEPARATOR), which Unicode no
// longer counts as a space.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace tapegrad::data::detail {

class Regex {
 public:
  /// Compiles `pattern` (as a regex, or, when `literal`, as text to find). A pattern PCRE2
  /// rejects is a ValueError with PCRE2's reason and the offset it gives.
  Regex(std::string_view pattern, bool literal);

  /// Calls `match(start, end)` for each match in `text` (valid UTF-8), left to right, as Rust's
  /// find_iter does: a search resumes where the last match ended, and after an empty match one
  /// character further on. ValueError naming `who` if PCRE2 fails (a match limit, say).
  template <class Match>
  void for_each_match(std::string_view text, const char* who, const Match& match) const;

  const std::string& pattern() const { return pattern_; }
  bool literal() const { return literal_; }

 private:
  /// The first match at or after `from`: true and [start, end), or false.
  bool find(std::string_view text, std::size_t from, void* match_data, const char* who,
            std::size_t& start, std::size_t& end) const;
  void* new_match_data() const;
  static void free_match_data(void* data);

  std::string pattern_;
  bool literal_ = false;
  std::shared_ptr<void> code_;  ///< the pcre2_code, read-only once compiled
};

template <class Match>
void Regex::for_each_match(std::string_view text, const char* who, const Match& match) const {
  const std::unique_ptr<void, void (*)(void*)> data(new_match_data(), &free_match_data);
  std::size_t from = 0, start = 0, end = 0;
  while (from <= text.size() && find(text, from, data.get(), who, start, end)) {
    match(start, end);
    from = end;
    if (end == start) {  // empty: step over one character
      if (end == text.size()) break;
      ++from;
      while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
    }
  }
}

}  // namespace tapegrad::data::detail
