// src/io/crc32c.cpp: CRC-32C by slicing-by-8 (Intel's method: eight 256-entry tables, eight
// bytes per step, about one byte per cycle).
//
// A CRC is the remainder of the message, as a polynomial over GF(2), divided by the generator
// polynomial; "reflected" means bits are taken least significant first, so the register shifts
// right. Table 0 gives the effect of one byte on the register; table k the effect of a byte
// followed by k zero bytes, which lets eight bytes be folded in with eight independent lookups.
#include "tapegrad/io/crc32c.hpp"

#include <array>
#include <bit>
#include <cstring>

namespace tapegrad::io {

static_assert(std::endian::native == std::endian::little,
              "crc32c reads the bytes as little-endian words");

namespace {
constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, reflected

using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}
constexpr Tables kTables = make_tables();
}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  for (; size >= 8; p += 8, size -= 8) {  // the bytes are little-endian words (x86, ARM)
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xFFu] ^ kTables[6][(lo >> 8) & 0xFFu] ^ kTables[5][(lo >> 16) & 0xFFu] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFFu] ^ kTables[2][(hi >> 8) & 0xFFu] ^
        kTables[1][(hi >> 16) & 0xFFu] ^ kTables[0][hi >> 24];
  }
  for (; size > 0; ++p, --size) c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xFFu];
  return ~c;
}

}  // namespace tapegrad::io
