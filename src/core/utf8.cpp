// src/core/utf8.cpp: UTF-8 checked and repaired (utf8.hpp).
#include "utf8.hpp"

namespace tapegrad::detail {

namespace {

/// How many bytes of a well-formed sequence begin at `i` (1 to 4), or, when the sequence there is
/// ill-formed, 0 with `taken` set to the length of its maximal subpart (at least 1). The table
/// gives, for a lead byte, the sequence's length and the range its second byte must be in
/// (Unicode's Table 3-7); later bytes are 80..BF.
std::size_t sequence_at(std::string_view bytes, std::size_t i, std::size_t& taken) {
  const unsigned char lead = static_cast<unsigned char>(bytes[i]);
  std::size_t length = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (lead < 0x80)
    length = 1;
  else if (lead >= 0xC2 && lead <= 0xDF)
    length = 2;
  else if (lead == 0xE0)
    length = 3, lo = 0xA0;  // not an overlong form
  else if (lead == 0xED)
    length = 3, hi = 0x9F;  // not the surrogates D800..DFFF
  else if (lead >= 0xE1 && lead <= 0xEF)
    length = 3;
  else if (lead == 0xF0)
    length = 4, lo = 0x90;  // not an overlong form
  else if (lead == 0xF4)
    length = 4, hi = 0x8F;  // not above U+10FFFF
  else if (lead >= 0xF1 && lead <= 0xF3)
    length = 4;
  if (length == 0) {  // 80..C1 or F5..FF: never a lead byte
    taken = 1;
    return 0;
  }
  std::size_t k = 1;  // bytes of the sequence found so far
  for (; k < length && i + k < bytes.size(); ++k) {
    const unsigned char c = static_cast<unsigned char>(bytes[i + k]);
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
  }
  taken = k;
  return k == length ? length : 0;
}

}  // namespace

std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t taken = 0;
  for (std::size_t i = 0; i < text.size(); i += taken) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII, the common case
      taken = 1;
      continue;
    }
    if (sequence_at(text, i, taken) == 0) return i;
  }
  return std::string_view::npos;
}

std::string repair_utf8(std::string_view bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(bytes.size());
  std::size_t taken = 0;
  for (std::size_t i = 0; i < bytes.size(); i += taken) {
    if (sequence_at(bytes, i, taken) > 0)
      out.append(bytes.substr(i, taken));
    else
      out += kReplacement;  // the bytes that began a sequence: one U+FFFD
  }
  return out;
}

}  // namespace tapegrad::detail
