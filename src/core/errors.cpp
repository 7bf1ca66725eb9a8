// src/core/errors.cpp: how shapes, positions and floats print in messages.
#include "tapegrad/core/errors.hpp"

#include <charconv>
#include <cmath>

namespace tapegrad {

std::string str(const Shape& shape) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';  // "(3,)", as Python prints a one-element tuple
  os << ')';
  return os.str();
}

std::string position_str(std::size_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    index[i] = shape[i] == 0 ? 0 : flat % shape[i];
    flat = shape[i] == 0 ? 0 : flat / shape[i];
  }
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < index.size(); ++i) os << (i ? ", " : "") << index[i];
  os << ')';
  return os.str();
}

std::string py_float(double x) {
  // Python's repr: the shortest digits that read back as x, in positional notation when the
  // decimal exponent is in [-4, 16), else as d.ddde-XX; a whole number keeps ".0".
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // "-1.2345e-05"
  const std::size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exponent < 0 ? "e-" : "e+";
    const std::string mag = std::to_string(std::abs(exponent));
    out += (mag.size() < 2 ? "0" : "") + mag;
  } else if (exponent < 0) {
    out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const std::size_t int_digits = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= int_digits)
      out += digits + std::string(int_digits - digits.size(), '0') + ".0";
    else
      out += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
  }
  return out;
}

}  // namespace tapegrad
