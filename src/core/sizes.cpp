// src/core/sizes.cpp: shapes checked before they become counts and allocations (sizes.hpp).
#include "tapegrad/core/sizes.hpp"

#include <limits>
#include <new>
#include <unistd.h>

namespace tapegrad {

namespace {
// 128-bit counts, so that a product of sizes never wraps before it is checked (a GCC and Clang
// extension: __extension__ keeps -Wpedantic quiet about it).
__extension__ using u128 = unsigned __int128;

constexpr u128 kMax = std::numeric_limits<std::int64_t>::max();

std::string u128_str(u128 v) {
  if (v == 0) return "0";
  std::string s;
  for (; v > 0; v /= 10) s.insert(s.begin(), char('0' + int(v % 10)));
  return s;
}

// The product of the sizes, exact in 128 bits; `exact` is false if even that overflowed.
u128 product(const Shape& shape, bool skip_zeros, bool& exact) {
  u128 n = 1;
  exact = true;
  for (std::size_t d : shape) {
    if (d == 0 && skip_zeros) continue;
    if (__builtin_mul_overflow(n, static_cast<u128>(d), &n)) {
      exact = false;
      return std::numeric_limits<u128>::max();
    }
  }
  return n;
}

std::string bytes_str(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  std::ostringstream os;
  os.precision(u == 0 ? 0 : 1);
  os << std::fixed << bytes << ' ' << units[u];
  return os.str();
}

std::size_t physical_memory() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page)
                                 : std::numeric_limits<std::size_t>::max();
  }();
  return bytes;
}
}  // namespace

std::size_t checked_numel(const Shape& shape, const std::string& where) {
  bool exact = true;
  const u128 n = product(shape, false, exact);
  if (n > kMax)
    fail<ShapeError>(
        where, ": the shape ", shape, " has ", exact ? u128_str(n) : "more than 2^128",
        " elements, more than 2^63 - 1: its sizes multiply past what a count holds (check them)");
  if (n == 0 && product(shape, true, exact) > kMax)
    fail<ShapeError>(where, ": the non-zero sizes of the empty shape ", shape,
                     " multiply past 2^63 - 1, which no array layout can hold (check them)");
  return static_cast<std::size_t>(n);
}

Shape checked_shape(const std::vector<std::int64_t>& sizes, const std::string& where,
                    const std::string& what) {
  Shape shape(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      fail<ValueError>("Trying to create tensor with negative dimension ", sizes[i], ": ", where,
                       ": expected ", what, " >= 0, got ", sizes[i]);
    shape[i] = static_cast<std::size_t>(sizes[i]);
  }
  checked_numel(shape, where);
  return shape;
}

void check_allocation(const Shape& shape, std::size_t element_size, const std::string& where) {
  const std::size_t n = checked_numel(shape, where);
  const u128 bytes = static_cast<u128>(n) * element_size;
  if (bytes > physical_memory())
    fail<OutOfMemoryError>("DefaultCPUAllocator: not enough memory: you tried to allocate ",
                           u128_str(bytes), " bytes. | ", where, ": an array of shape ", shape,
                           " needs ", bytes_str(static_cast<double>(bytes)),
                           ", more than this machine's ",
                           bytes_str(static_cast<double>(physical_memory())), " of memory");
}

xt::xarray<float> new_array(const Shape& shape, const std::string& where) {
  check_allocation(shape, sizeof(float), where);
  try {
    return xt::xarray<float>::from_shape(shape);
  } catch (const std::bad_alloc&) {
    const double bytes = static_cast<double>(checked_numel(shape, where)) * sizeof(float);
    fail<OutOfMemoryError>("DefaultCPUAllocator: not enough memory: you tried to allocate ",
                           u128_str(static_cast<u128>(bytes)), " bytes. | ", where,
                           ": the C library refused ", bytes_str(bytes), " for an array of shape ",
                           shape);
  }
}

}  // namespace tapegrad
