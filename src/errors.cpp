// src/errors.cpp: how shapes and positions print in messages.
#include "tapegrad/errors.hpp"

namespace tapegrad {

std::string str(const Shape& shape) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';   // "(3,)", as Python prints a one-element tuple
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

}  // namespace tapegrad
