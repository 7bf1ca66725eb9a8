// include/tapegrad/autograd/detail/small_vector.hpp (implementation detail; a learner can skip it)
//
// The lists of a tape entry (its inputs, its saved tensors), kept in place: most ops have at most
// three of each, so recording one allocates nothing for these lists. It reads like a
// std::vector<T> with push_back, size, operator[] and clear.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace tapegrad::autograd::detail {

/// The first N elements in place, the rest on the heap.
template <class T, std::size_t N>
class SmallVector {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void push_back(T v) {
    if (size_ < N)
      inline_[size_] = std::move(v);
    else
      heap_.push_back(std::move(v));
    ++size_;
  }
  T& operator[](std::size_t i) { return i < N ? inline_[i] : heap_[i - N]; }
  const T& operator[](std::size_t i) const { return i < N ? inline_[i] : heap_[i - N]; }
  void clear() {
    for (std::size_t i = 0; i < size_ && i < N; ++i) inline_[i] = T{};
    heap_.clear();
    size_ = 0;
  }

 private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;
  std::size_t size_ = 0;
};

}  // namespace tapegrad::autograd::detail
