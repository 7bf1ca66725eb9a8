// tests/tools/blas_warning.cpp: two matrix products, for tests/kernels/check_blas_warning.cmake.
// Prints the best kernel set of this CPU on stdout; tapegrad's warning about OpenBLAS's core, if
// any, goes to stderr. --quiet turns the warning off through the API first.
#include <cstdio>
#include <exception>
#include <string>

#include <tapegrad/tapegrad.hpp>

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::string(argv[1]) == "--quiet") tapegrad::set_blas_warning(false);
    const tapegrad::Tensor a(tapegrad::Array{{1.0f, 2.0f}, {3.0f, 4.0f}});
    tapegrad::ops::matmul(a, a);
    tapegrad::ops::matmul(a, a);
    std::printf(
        "best set: %s\n",
        std::string(tapegrad::to_string(tapegrad::available_cpu_capabilities().back())).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blas_warning: %s\n", e.what());
    return 2;
  }
}
