// src/data/regex.cpp: a tokenizer file's regular expression, run by PCRE2 (regex.hpp).
#include "regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::data::detail {

namespace {

std::string pcre2_message(int error) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(error, message, sizeof message);
  return reinterpret_cast<const char*>(message);
}

}  // namespace

Regex::Regex(std::string_view pattern, bool literal) : pattern_(pattern), literal_(literal) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const std::uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr)
    fail<ValueError>("PCRE2 rejects the pattern at offset ", offset, ": ", pcre2_message(error));
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // when JIT is unavailable, pcre2_match interprets
  code_ =
      std::shared_ptr<void>(code, [](void* c) { pcre2_code_free(static_cast<pcre2_code*>(c)); });
}

void* Regex::new_match_data() const {
  pcre2_match_data* data =
      pcre2_match_data_create_from_pattern(static_cast<const pcre2_code*>(code_.get()), nullptr);
  check<OutOfMemoryError>(data != nullptr, "Regex: PCRE2 could not allocate its match data");
  return data;
}

void Regex::free_match_data(void* data) {
  pcre2_match_data_free(static_cast<pcre2_match_data*>(data));
}

bool Regex::find(std::string_view text, std::size_t from, void* match_data, const char* who,
                 std::size_t& start, std::size_t& end) const {
  auto* data = static_cast<pcre2_match_data*>(match_data);
  // The text was checked to be UTF-8 once: checking it at every match would be quadratic.
  const int rc = pcre2_match(static_cast<const pcre2_code*>(code_.get()),
                             reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), from,
                             PCRE2_NO_UTF_CHECK, data, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0)
    fail<ValueError>(who, ": PCRE2 failed to match the pattern at byte ", from, ": ",
                     pcre2_message(rc));
  const PCRE2_SIZE* span = pcre2_get_ovector_pointer(data);
  start = span[0];
  end = span[1];
  // \K in a lookahead can end a match before its start; such a pattern cuts nothing sensible.
  if (end < start) fail<ValueError>(who, ": the pattern matched backwards (\\K in a lookahead)");
  return true;
}

}  // namespace tapegrad::data::detail
