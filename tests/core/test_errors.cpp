// tests/core/test_errors.cpp: how messages print shapes, positions and floats (errors.hpp).
#include <cmath>

#include <doctest/doctest.h>

#include <tapegrad/core/errors.hpp>

using namespace tapegrad;

TEST_SUITE("errors") {
  TEST_CASE("str prints a shape as Python prints a tuple") {
    CHECK(str(Shape{}) == "()");
    CHECK(str(Shape{3}) == "(3,)");
    CHECK(str(Shape{2, 3}) == "(2, 3)");
  }

  TEST_CASE("position_str prints the multi-index of a flat position") {
    CHECK(position_str(0, Shape{2, 3}) == "(0, 0)");
    CHECK(position_str(5, Shape{2, 3}) == "(1, 2)");
    CHECK(position_str(7, Shape{2, 2, 2}) == "(1, 1, 1)");
    CHECK(position_str(0, Shape{}) == "()");
  }

  TEST_CASE("py_float prints numbers as Python's repr does, for PyTorch's messages and reprs") {
    CHECK(py_float(1.0) == "1.0");
    CHECK(py_float(0.1) == "0.1");
    CHECK(py_float(-0.5) == "-0.5");
    CHECK(py_float(0.0) == "0.0");
    CHECK(py_float(0.001) == "0.001");
    CHECK(py_float(0.0001) == "0.0001");  // the last exponent printed positionally
    CHECK(py_float(1e-5) == "1e-05");
    CHECK(py_float(1e-8) == "1e-08");
    CHECK(py_float(1.5e-7) == "1.5e-07");
    CHECK(py_float(100.0) == "100.0");
    CHECK(py_float(123456.789) == "123456.789");
    CHECK(py_float(1e15) == "1000000000000000.0");
    CHECK(py_float(1e16) == "1e+16");
    CHECK(py_float(1.5e16) == "1.5e+16");
    CHECK(py_float(1.25e100) == "1.25e+100");
    CHECK(py_float(INFINITY) == "inf");
    CHECK(py_float(-INFINITY) == "-inf");
    CHECK(py_float(NAN) == "nan");
  }

}  // TEST_SUITE
