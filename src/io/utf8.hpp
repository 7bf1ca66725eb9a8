// src/io/utf8.hpp (private to the library)
//
// Strict UTF-8, as Rust's str::from_utf8 (which the reference reader uses): no overlong forms,
// no UTF-16 surrogates, nothing above U+10FFFF. Names and metadata must pass it before they are
// written, and a file's header before it is parsed.
#pragma once

#include <cstddef>
#include <string_view>

namespace tapegrad::io {

/// The offset of the first byte that is not valid UTF-8, or std::string_view::npos.
std::size_t first_invalid_utf8(std::string_view s);

}  // namespace tapegrad::io
