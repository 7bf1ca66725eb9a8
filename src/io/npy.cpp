// src/io/npy.cpp
//
// .npy files (numpy/numpy: numpy/lib/format.py): the magic "\x93NUMPY", a version byte pair,
// the header length (uint16 little-endian in version 1, uint32 in versions 2 and 3), a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces
// and a newline, then the raw data.
//
// Writing uses xt::dump_npy. Reading does not use xt::load_npy: in xtensor 0.24 it sign-extends
// the header length bytes (headers of 128 bytes or more, e.g. rank >= 20, fail to load), does not
// check that the data were fully read, and allocates whatever size the header claims. So the
// reader below validates every field and the exact data length before it copies anything.
#include "tapegrad/io/npy.hpp"

#include <cstring>
#include <optional>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xnpy.hpp>

#include "tapegrad/core/sizes.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

namespace {
// Builds "load_npy: 'file': message" and throws CheckpointError (kind "InvalidNpy") or E.
class NpyReader {
 public:
  explicit NpyReader(std::string_view source) : source_(source) {}
  template <class E = CheckpointError, class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream os;
    os << "load_npy: '" << source_ << "': ";
    (detail::append(os, parts), ...);
    if constexpr (std::is_same_v<E, CheckpointError>)
      throw CheckpointError(os.str(), "InvalidNpy");
    else
      throw E(os.str());
  }

 private:
  std::string_view source_;
};

// The header's dict literal: exactly the keys descr, fortran_order and shape, in any order.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class DictParser {
 public:
  explicit DictParser(std::string_view text) : s_(text) {}

  std::optional<NpyHeader> parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    if (!eat('{')) return std::nullopt;
    while (!eat('}')) {
      const auto key = string_literal();
      if (!key || !eat(':')) return std::nullopt;
      if (*key == "descr" && !has_descr) {
        const auto d = string_literal();
        if (!d) return std::nullopt;
        h.descr = *d;
        has_descr = true;
      } else if (*key == "fortran_order" && !has_order) {
        if (word("True"))
          h.fortran_order = true;
        else if (word("False"))
          h.fortran_order = false;
        else
          return std::nullopt;
        has_order = true;
      } else if (*key == "shape" && !has_shape) {
        auto shape = tuple();
        if (!shape) return std::nullopt;
        h.shape = std::move(*shape);
        has_shape = true;
      } else {
        return std::nullopt;  // an unknown or repeated key
      }
      if (!eat(',')) {
        if (!eat('}')) return std::nullopt;
        break;
      }
    }
    skip_space();
    if (pos_ != s_.size() || !has_descr || !has_order || !has_shape) return std::nullopt;
    return h;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool word(std::string_view w) {
    skip_space();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::optional<std::string> string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return std::nullopt;
    const char quote = s_[pos_++];
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote)
      if (s_[pos_++] == '\\') return std::nullopt;  // no escapes in the strings numpy writes
    if (pos_ >= s_.size()) return std::nullopt;
    return std::string(s_.substr(start, pos_++ - start));
  }
  // A Python tuple of non-negative ints: (), (3,), (2, 3) or (2, 3,). "(3)" is an int, not a tuple.
  std::optional<Shape> tuple() {
    if (!eat('(')) return std::nullopt;
    Shape shape;
    if (eat(')')) return shape;
    for (;;) {
      skip_space();
      std::uint64_t v = 0;
      const std::size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        const auto digit = static_cast<std::uint64_t>(s_[pos_++] - '0');
        if (__builtin_mul_overflow(v, std::uint64_t{10}, &v) ||
            __builtin_add_overflow(v, digit, &v))
          return std::nullopt;
      }
      if (pos_ == start) return std::nullopt;
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 wrote long ints as 3L
      shape.push_back(v);
      if (eat(',')) {
        if (eat(')')) return shape;
        continue;
      }
      if (eat(')') && shape.size() > 1) return shape;
      return std::nullopt;
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

std::uint64_t read_le(std::string_view bytes, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < width; ++k)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + k])) << (8 * k);
  return v;
}
}  // namespace

Array parse_npy(std::string_view bytes, std::string_view source) {
  const NpyReader reader(source);
  constexpr std::string_view magic("\x93NUMPY", 6);
  if (bytes.size() < 10 || bytes.substr(0, 6) != magic)
    reader.fail("expected a .npy file starting with \\x93NUMPY, got ",
                bytes.size() < 10 ? "a file of " + std::to_string(bytes.size()) + " bytes"
                                  : std::string("other bytes"));
  const int major = static_cast<unsigned char>(bytes[6]),
            minor = static_cast<unsigned char>(bytes[7]);
  if (!(major >= 1 && major <= 3 && minor == 0))
    reader.fail("expected format version 1.0, 2.0 or 3.0, got ", major, ".", minor);
  const std::size_t width = major == 1 ? 2 : 4;  // the header length's size
  if (bytes.size() < 8 + width)
    reader.fail("expected the header length after the version, got a file of ", bytes.size(),
                " bytes");
  const std::uint64_t header_len = read_le(bytes, 8, width);
  const std::size_t data_start = 8 + width + header_len;
  if (header_len > bytes.size() - 8 - width)
    reader.fail("expected a ", header_len, "-byte header, got a file of ", bytes.size(), " bytes");

  const auto header = DictParser(bytes.substr(8 + width, header_len)).parse();
  if (!header)
    reader.fail("expected a header {'descr': ..., 'fortran_order': ..., 'shape': (...)}, got \"",
                bytes.substr(8 + width, std::min<std::uint64_t>(header_len, 80)), "\"");
  std::size_t item = 0;
  if (header->descr == "<f4")
    item = 4;
  else if (header->descr == "<f8")
    item = 8;
  else
    reader.fail<TypeError>("expected float32 ('<f4') or float64 ('<f8') data, got '", header->descr,
                           "'; convert it in NumPy first, e.g. np.save(path, a.astype('<f4'))");

  std::uint64_t numel = 1, size = 0;
  for (std::size_t d : header->shape)
    if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(d), &numel))
      reader.fail("expected a shape whose size fits in 64 bits, got ", header->shape);
  if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(item), &size))
    reader.fail("expected a shape whose size fits in 64 bits, got ", header->shape);
  if (!fits_in_strides(header->shape))
    reader.fail("expected a shape whose non-zero dimensions multiply to less than 2^63, got ",
                header->shape);
  if (size != bytes.size() - data_start)
    reader.fail("expected ", size, " data bytes for shape ", header->shape, " of '", header->descr,
                "', got ", bytes.size() - data_start);

  // Fortran order holds the transpose's C-order data: read it with the reversed shape, then
  // transpose back.
  Shape stored = header->shape;
  if (header->fortran_order) std::reverse(stored.begin(), stored.end());
  Array out = Array::from_shape(stored);
  const char* data = bytes.data() + data_start;
  if (item == 4) {
    if (numel != 0) std::memcpy(out.data(), data, numel * 4);
  } else {
    for (std::size_t i = 0; i < numel; ++i) {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      out.data()[i] = static_cast<float>(v);  // round to nearest, as NumPy's astype
    }
  }
  if (header->fortran_order && stored.size() > 1) return Array(xt::transpose(out));
  return out;
}

Array load_npy(const std::string& path) { return parse_npy(read_file(path, "load_npy"), path); }

void save_npy(const std::string& path, const Tensor& tensor) {
  write_file_atomic(path, xt::dump_npy(tensor.data()), "save_npy");
}

}  // namespace tapegrad::io
