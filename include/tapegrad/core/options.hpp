// include/tapegrad/core/options.hpp: TAPEGRAD_ARG, how every options type declares a field once.
//
//     class LinearOptions {
//      public:
//       LinearOptions(std::int64_t in_features, std::int64_t out_features)
//           : in_features_(in_features), out_features_(out_features) {}
//       /// Size of each input sample, >= 0.
//       TAPEGRAD_ARG(std::int64_t, in_features);
//       /// Size of each output sample, >= 0.
//       TAPEGRAD_ARG(std::int64_t, out_features);
//       /// Learn an additive bias; default true.
//       TAPEGRAD_ARG(bool, bias) = true;
//     };
//
// Each line declares the field `name_` (with its default after the `=`), a setter `name(value)`
// that returns the options for chaining, and a getter `name()`, as libtorch's TORCH_ARG does; so
// call sites read `LinearOptions(16, 12).bias(false)` and `options.bias()`. The macro leaves the
// class in `private:` (where the field is): declare the fields last, or write `public:` after them.
// An options type holds values only; the module or op that takes it checks them, in one place.
//
// Two details, because T is pasted as text: the getter returns `const std::type_identity_t<T>&`,
// since `const T&` with T = Generator* would read `const Generator*&` (a pointer to const); the
// setter returns `decltype(*this)`, the class it is in, a type known where it is declared (an
// `auto&` one is not known until its body is read, so a member above it could not call it). A
// type with a comma in it (std::pair<double, double>) needs an alias first (optim::Betas).
#pragma once

#include <type_traits>
#include <utility>

// clang-format off
#define TAPEGRAD_ARG(T, name)                                              \
 public:                                                                   \
  auto name(T value) -> decltype(*this) {                                  \
    name##_ = std::move(value);                                            \
    return *this;                                                          \
  }                                                                        \
  const std::type_identity_t<T>& name() const noexcept { return name##_; } \
                                                                           \
 private:                                                                  \
  T name##_
// clang-format on
