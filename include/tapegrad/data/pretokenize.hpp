// include/tapegrad/data/pretokenize.hpp: how text is cut into pieces before a BPE merges within
// them, and what an encoder does with the text of a special token.
//
// GPT-2 cuts text with a regular expression so that no merge crosses a word boundary: " world"
// and "world!" share the token " world", and digits, letters and punctuation never mix. The
// pattern needs Unicode's letter and number classes (\p{L}, \p{N}), which std::regex lacks; PCRE2
// (Debian's libpcre2-dev) matches it, compiled once and JIT-compiled; the ASCII that most text is
// made of is cut by hand.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

namespace tapegrad::data {

/// How a BPE cuts its text into pieces before merging within them.
enum class Pretokenizer {
  none,  ///< one piece of bytes: merges may cross spaces (minbpe's BasicTokenizer)
  gpt2,  ///< gpt2_pieces() (minbpe's RegexTokenizer with GPT-2's pattern)
};

/// What an encoder does when the text holds a special token's text, such as "<|endoftext|>".
/// tiktoken's encode() refuses by default, because text from a user that spells a special token
/// must not become one silently.
enum class SpecialTokens {
  refuse,    ///< ValueError naming the token and its byte offset (tiktoken's default)
  allow,     ///< the text becomes the special token's id (tiktoken's allowed_special="all")
  ordinary,  ///< encoded as ordinary text (tiktoken's encode_ordinary; gpt-3-encoder's encode)
};

/// GPT-2's pre-tokenization pattern as OpenAI's encoder.py writes it. gpt2_pieces() matches it
/// with `\s` as JavaScript defines it (gpt-3-encoder is the reference it is tested against): the
/// Unicode space separators, \t \n \v \f \r, U+2028, U+2029 and U+FEFF.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// `text` cut into GPT-2's pieces, left to right; they cover it without gaps. "Hello world!!"
/// gives "Hello", " world", "!!"; "a  b" gives "a", " ", " b" (a run of spaces leaves its last one
/// to the word that follows). ValueError naming the byte offset if `text` is not valid UTF-8.
/// Each piece is cut by hand while ASCII decides it, and by PCRE2 where a character beyond ASCII
/// could (gpt2_pieces_reference's pieces, several times faster on mostly-ASCII text).
std::vector<std::string_view> gpt2_pieces(std::string_view text);
/// Whether GPT-2's pattern ends a piece just before byte `at` of `text`, where a space (a line
/// end, say) begins: it does when the character before is not a space (JavaScript's \s), since no
/// piece holds a space after another character. So a text cut there encodes, piece by piece, as
/// the whole text does: what lets a corpus be encoded in blocks. False for a character cut short.
bool gpt2_piece_ends_before(std::string_view text, std::size_t at);
/// gpt2_pieces without the vector: each piece to `piece`, in order (what encode uses).
void for_each_gpt2_piece(std::string_view text, const std::function<void(std::string_view)>& piece);
/// The same pieces, every one found by PCRE2: the definition gpt2_pieces is tested against.
std::vector<std::string_view> gpt2_pieces_reference(std::string_view text);

}  // namespace tapegrad::data
