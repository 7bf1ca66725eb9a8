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
//
// Two details of the macro. The getter returns `const std::type_identity_t<T>&`, not `const T&`:
// T is pasted as text, and with T = Generator* the latter would read `const Generator*&` (a
// pointer to const) where `Generator* const&` is meant. The setter's return type is
// `decltype(*this)`, the class it is written in, named without naming it, and known where it is
// declared (an `auto&` return is not, until its body is read, so a member written earlier in the
// class could not call it); so a template that differs only in its defaults
// (AdamOptionsOf<Defaults>) chains on its own type. A type with a comma in it (std::pair<double,
// double>) needs an alias first (optim::Betas).
#pragma once

#include <type_traits>
#include <utility>

#define TAPEGRAD_ARG(T, name)                                              \
 public:                                                                   \
  auto name(T value)->decltype(*this) {                                    \
    name##_ = std::move(value);                                            \
    return *this;                                                          \
  }                                                                        \
  const std::type_identity_t<T>& name() const noexcept { return name##_; } \
                                                                           \
 private:                                                                  \
  T name##_
