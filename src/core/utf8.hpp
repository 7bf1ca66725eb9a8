// src/core/utf8.hpp: UTF-8 checked and repaired, private to the library (io checks names and
// headers with it before it writes or parses them, data the text it tokenizes).
//
// Both follow Unicode's definition of well-formed UTF-8 (The Unicode Standard, Table 3-7), which
// is also Rust's str::from_utf8 (the reference safetensors reader's): no overlong forms, no
// surrogates (U+D800..DFFF), nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tapegrad::detail {

/// The offset of the first byte of `text` that does not begin a well-formed UTF-8 sequence (a
/// stray continuation byte, a sequence cut short or ill-formed), or std::string_view::npos when
/// all of `text` is well-formed.
std::size_t first_invalid_utf8(std::string_view text);

/// `bytes` with each maximal subpart of an ill-formed sequence replaced by U+FFFD (Unicode 3.9,
/// "U+FFFD Substitution of Maximal Subparts"): what Python's bytes.decode("utf-8",
/// errors="replace") and JavaScript's TextDecoder do. "\xe2\x82" is one U+FFFD, "\xff\xfe" two.
std::string repair_utf8(std::string_view bytes);

}  // namespace tapegrad::detail
