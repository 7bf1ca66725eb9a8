// include/tapegrad/core/errors.hpp
//
// The exception types of tapegrad (docs/semantics.md#errors) and check(), the one helper that
// raises them.
// Every mistake a user can make is checked by tapegrad itself, in every build type, before
// xtensor sees the data (xtensor checks nothing in Release). Messages have the shape
//
//     where: expected ..., got ...[; hint]
//
// and, when PyTorch has a message for the same mistake, start with PyTorch's text and " | ",
// so that the familiar text stays searchable:
//
//     index out of range in self | Embedding 'embed.lut': expected ids in [0, 10), got 12 at position (1, 3)
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xarray.hpp>

namespace tapegrad {

using Shape = xt::xarray<float>::shape_type;

/// A bad argument value, option or name (PyTorch's ValueError, AssertionError, KeyError).
struct ValueError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// The wrong kind of thing: a row-sparse gradient for Adam, an unsupported checkpoint dtype.
struct TypeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// Shapes that do not fit: broadcasting, matmul, d_model, a sequence longer than max_len.
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// An id, target or position outside its valid range.
struct IndexError : std::out_of_range {
  using std::out_of_range::out_of_range;
};
/// Tape misuse: backward twice, a saved tensor modified in place, a non-scalar loss.
struct AutogradError : std::logic_error {
  using std::logic_error::logic_error;
};
/// A promised invariant found broken (PositionalEncoding::verify, Buffer::expect_unchanged).
struct InvariantError : std::logic_error {
  using std::logic_error::logic_error;
};
/// An array that cannot be allocated: more bytes than the machine has, or refused by the C library.
/// The message says how many bytes were asked for and by what.
struct OutOfMemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// load_state_dict refused the state dict; the model was left unchanged.
struct StateDictError : std::runtime_error {
  StateDictError(const std::string& what, std::vector<std::string> missing_keys,
                 std::vector<std::string> unexpected_keys, std::vector<std::string> size_mismatches)
      : std::runtime_error(what),
        missing(std::move(missing_keys)),
        unexpected(std::move(unexpected_keys)),
        mismatches(std::move(size_mismatches)) {}
  std::vector<std::string> missing, unexpected, mismatches;
};
/// A text or data file that cannot be used: unreadable, not a regular file, not UTF-8, too large,
/// or too short for what was asked of it. The message names the file.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A file that cannot be read or written, or is not valid safetensors; kind names the check that
/// failed, e.g. "InvalidOffset" (the list: docs/checkpoints.md).
struct CheckpointError : std::runtime_error {
  CheckpointError(const std::string& what, std::string error_kind)
      : std::runtime_error(what), kind(std::move(error_kind)) {}
  std::string kind;
};

/// "(2, 3)" for a shape, "()" for a scalar's.
std::string str(const Shape& shape);
/// The multi-index of flat (row-major) position `flat` in `shape`, printed "(1, 3)".
std::string position_str(std::size_t flat, const Shape& shape);
/// A double as Python's repr() prints a float ("1.0", "0.1", "1e-05", "inf"): PyTorch's
/// messages and module reprs quote options and hyper-parameters this way, and tapegrad keeps
/// their text.
std::string py_float(double x);

namespace detail {
template <class T>
void append(std::ostringstream& os, const T& part) {
  if constexpr (std::is_same_v<T, Shape>)
    os << str(part);
  else
    os << part;
}

template <class E, class... Parts>
[[noreturn]] void raise(const Parts&... parts) {
  std::ostringstream os;
  os.precision(10);
  (append(os, parts), ...);
  throw E(os.str());
}
}  // namespace detail

/// Throws E with the message built from `parts` (streamed; Shapes print as "(2, 3)") when
/// `condition` is false. A function, not a macro: the parts are only formatted on failure, but
/// they are still EVALUATED on every call, so pass cheap values (numbers, shapes, literals). When
/// a part must be computed (t.describe(), a position string), write `if (!ok) fail<E>(...)`.
template <class E = ValueError, class... Parts>
inline void check(bool condition, const Parts&... parts) {
  if (!condition) [[unlikely]]
    detail::raise<E>(parts...);
}

/// Throws E with the message built from `parts`, unconditionally.
template <class E = ValueError, class... Parts>
[[noreturn]] inline void fail(const Parts&... parts) {
  detail::raise<E>(parts...);
}

}  // namespace tapegrad
