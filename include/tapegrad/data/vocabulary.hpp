// include/tapegrad/data/vocabulary.hpp: a character-level vocabulary, text <-> token ids.
//
// Id 0 is <unk>, for a character the training text does not hold (one only the validation text or
// a prompt has); ids 1 .. V-1 are the training text's characters (Unicode code points), sorted.
// A model trained on ids cannot know an <unk> target, so a loss should not score it
// (cross_entropy's ignore_index = Vocabulary::kUnk).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tapegrad::data {

class Vocabulary {
 public:
  static constexpr std::int64_t kUnk = 0;
  Vocabulary() = default;  ///< only <unk>
  /// The characters of `training_text`, sorted, as ids 1 .. V-1.
  explicit Vocabulary(const std::u32string& training_text);

  /// The characters of ids 1 .. V-1 as UTF-8 text: how a checkpoint stores the vocabulary.
  std::string to_text() const;
  /// The inverse of to_text(). ValueError unless `utf8` is valid UTF-8 holding distinct
  /// characters in ascending order.
  static Vocabulary from_text(const std::string& utf8);

  std::int64_t size() const { return std::int64_t(chars_.size()) + 1; }  ///< V, <unk> included
  std::int64_t id(char32_t c) const;                                     ///< kUnk if unknown
  std::vector<std::int64_t> encode(const std::u32string& text) const;
  /// UTF-8 text of ids; <unk> (and any id outside [1, V)) prints as U+FFFD.
  std::string decode(const std::int64_t* ids, std::size_t n) const;

 private:
  void index();
  std::u32string chars_;
  std::map<char32_t, std::int64_t> ids_;
};

}  // namespace tapegrad::data
