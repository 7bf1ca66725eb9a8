// src/data/vocabulary.cpp: the character vocabulary (data/vocabulary.hpp).
#include "tapegrad/data/vocabulary.hpp"

#include <algorithm>
#include <set>

#include "tapegrad/data/text.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::data {

Vocabulary::Vocabulary(const std::u32string& training_text) {
  const std::set<char32_t> chars(training_text.begin(), training_text.end());
  chars_.assign(chars.begin(), chars.end());
  index();
}

std::string Vocabulary::to_text() const { return encode_utf8(chars_); }

Vocabulary Vocabulary::from_text(const std::string& utf8) {
  Vocabulary v;
  try {
    v.chars_ = decode_utf8(utf8, "the vocabulary");
  } catch (const DataError& e) {
    fail<ValueError>("Vocabulary::from_text: ", e.what());
  }
  check<ValueError>(std::is_sorted(v.chars_.begin(), v.chars_.end()) &&
                        std::adjacent_find(v.chars_.begin(), v.chars_.end()) == v.chars_.end(),
                    "Vocabulary::from_text: expected distinct characters in ascending order");
  v.index();
  return v;
}

std::int64_t Vocabulary::id(char32_t c) const {
  const auto it = ids_.find(c);
  return it == ids_.end() ? kUnk : it->second;
}

std::vector<std::int64_t> Vocabulary::encode(const std::u32string& text) const {
  std::vector<std::int64_t> ids(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) ids[i] = id(text[i]);
  return ids;
}

std::string Vocabulary::decode(const std::int64_t* ids, std::size_t n) const {
  std::string out;
  for (std::size_t i = 0; i < n; ++i)
    append_utf8(out, ids[i] >= 1 && ids[i] < size() ? chars_[std::size_t(ids[i] - 1)] : U'\uFFFD');
  return out;
}

void Vocabulary::index() {
  ids_.clear();
  for (std::size_t i = 0; i < chars_.size(); ++i) ids_[chars_[i]] = std::int64_t(i) + 1;
}

}  // namespace tapegrad::data
