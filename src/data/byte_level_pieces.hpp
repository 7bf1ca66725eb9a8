// src/data/byte_level_pieces.hpp: the pieces of Hugging Face's ByteLevel pre-tokenizer, private to
// src/data (data/hf_tokenizer.hpp).
//
// ByteLevel with use_regex cuts text with GPT-2's pattern as Oniguruma runs it, whose Unicode \s
// is Unicode's White_Space (U+0009..U+000D, U+0085 and the separators, Z). gpt2_pieces() spells
// \s as JavaScript does, for gpt-3-encoder's ids; the two differ on U+0085 and U+FEFF only.
#pragma once

#include <functional>
#include <string_view>

namespace tapegrad::data::detail {

/// Each of `text`'s pieces under GPT-2's pattern with Oniguruma's \s, in order, to `piece`; they
/// cover the text. ValueError naming the byte offset if `text` is not valid UTF-8.
void for_each_byte_level_piece(std::string_view text,
                               const std::function<void(std::string_view)>& piece);

}  // namespace tapegrad::data::detail
