// src/kernels/scratch.hpp (private)
//
// detail::Scratch<T>: a kernel's working buffer of n elements, in the per-set inline namespace
// (kernels/set_namespace.hpp). A fast kernel's std::vector would be std::vector<float>, the same
// name in every set: where the compiler does not inline its members (a sanitizer build at -O2
// does not), each set's object keeps a weak copy and the linker picks one copy for all sets, which
// could be an AVX-512 one called from the baseline kernels. Scratch<float> is a name of each set's
// own (tapegrad::detail::avx2::Scratch<float>), and holds no more than a kernel needs: the
// elements, each set to the same value at the start, freed at the end of the scope.
#pragma once

#include <cstddef>

#include "../core/set_namespace.hpp"

namespace tapegrad::detail {
inline namespace TAPEGRAD_SET_NAMESPACE {

template <class T>
class Scratch {
 public:
  Scratch() = default;
  /// n elements, each `fill`. Never null, even for n = 0 (new T[0] is a valid, empty array), so a
  /// kernel may take offsets of data() without checking its sizes first.
  explicit Scratch(std::size_t n, T fill = T()) : data_(new T[n]) {
    for (std::size_t i = 0; i < n; ++i) data_[i] = fill;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  Scratch(Scratch&& other) noexcept : data_(other.data_) { other.data_ = nullptr; }
  Scratch& operator=(Scratch&& other) noexcept {
    if (this != &other) {
      delete[] data_;
      data_ = other.data_;
      other.data_ = nullptr;
    }
    return *this;
  }
  ~Scratch() { delete[] data_; }

  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
};

}  // namespace TAPEGRAD_SET_NAMESPACE
}  // namespace tapegrad::detail
