// include/tapegrad/options.hpp: TAPEGRAD_ARG, how every options type declares a field once.
//
//     struct LinearOptions {
//       LinearOptions(std::int64_t in_features, std::int64_t out_features)
//           : in_features_(in_features), out_features_(out_features) {}
//       /// Size of each input sample.
//       TAPEGRAD_ARG(std::int64_t, in_features);
//       TAPEGRAD_ARG(std::int64_t, out_features);
//       /// Learn an additive bias.
//       TAPEGRAD_ARG(bool, bias) = true;
//     };
//
// Each line declares the field `name_` (with its default after the `=`), a setter `name(value)`
// that returns the options for chaining, and a getter `name()`, as libtorch's TORCH_ARG does; so
// call sites read `LinearOptions(16, 12).bias(false)` and `options.bias()`. The macro leaves the
// class in `private:` (where the field is): declare the fields last, or write `public:` after them.
// An options type holds values only; the module or op that takes it checks them, in one place.
#pragma once

#include <utility>

#define TAPEGRAD_ARG(T, name)                        \
 public:                                             \
  auto& name(T value) {                              \
    name##_ = std::move(value);                      \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
                                                     \
 private:                                            \
  T name##_
