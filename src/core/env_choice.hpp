// src/core/env_choice.hpp (private to src/core)
//
// A process-wide choice among named options that an environment variable may force, made at the
// first use and kept in an atomic: the kernel set (cpu.cpp, TAPEGRAD_CPU_CAPABILITY) and the
// engine of the matrix products (gemm_engine.cpp, TAPEGRAD_GEMM). A refused value keeps nothing,
// so it throws at every use, and a setter may replace the choice at any time.
#pragma once

#include <atomic>
#include <span>
#include <string>
#include <string_view>

namespace tapegrad::detail {

/// What the environment variable forces: `index` is -1 when it is unset or empty, else its value's
/// place in `names`; `where` ("TAPEGRAD_GEMM=onednn") names it in the caller's further checks.
/// An unknown value is a ValueError "<variable>=<value>: expected a, b or c, got '<value>'".
struct ForcedChoice {
  int index = -1;
  std::string where;
};
ForcedChoice forced_by_env(const char* variable, std::span<const std::string_view> names);

/// `names` as a message lists them: "a, b or c".
std::string one_of(std::span<const std::string_view> names);

/// The choice: get(choose) calls choose() at the first use (and after a use that threw), then
/// returns what it chose until set() replaces it.
class EnvChoice {
 public:
  template <class Choose>
  int get(Choose choose) {
    int c = current_.load(std::memory_order_relaxed);
    if (c < 0) {
      int unset = -1;
      current_.compare_exchange_strong(unset, choose());
      c = current_.load();
    }
    return c;
  }
  void set(int c) { current_.store(c); }

 private:
  std::atomic<int> current_{-1};  // -1 until the first use chooses
};

}  // namespace tapegrad::detail
