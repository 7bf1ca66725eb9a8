// tests/fortune_corpus.hpp: a small text in the fortune format, for the tests that run the GPT
// example (tests/examples/test_gpt.cpp, tests/distributed/launch/test_launch.cpp).
#pragma once

#include <cstdint>
#include <string>

#include <tapegrad/core/random.hpp>

namespace tapegrad::testing {

/// `n` entries of 3 to 8 words drawn from a dozen, each ended by a line holding "%".
inline std::string fortune_corpus(std::size_t n, std::uint64_t seed) {
  static const char* words[] = {"the", "cat", "sat", "on",  "a",    "mat",
                                "and", "dog", "ran", "far", "away", "home"};
  Generator g(seed);
  std::string text;
  for (std::size_t e = 0; e < n; ++e) {
    const auto len = g.randint(3, 9);
    for (std::int64_t w = 0; w < len; ++w)
      text += std::string(w ? " " : "") + words[g.randint(0, 12)];
    text += ".\n%\n";
  }
  return text;
}

}  // namespace tapegrad::testing
