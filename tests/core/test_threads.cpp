// tests/core/test_threads.cpp: tapegrad's thread pool (threads.hpp): parallel_for covers every
// index once, nested and from several program threads, and set_num_threads refuses zero. That the
// thread count changes no bit of a training step is tested in tests/transformer/test_threads.cpp.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <tapegrad/core.hpp>

#include "../../src/core/parallel.hpp"  // the pool's parallel_for, tested directly below

using namespace tapegrad;

TEST_SUITE("threads") {
  TEST_CASE(
      "parallel_for visits every index exactly once, in chunks, for any size and thread count") {
    for (int threads : {1, 2, 3, 5}) {
      set_num_threads(threads);
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000},
                            std::size_t{65537}}) {
        std::vector<std::atomic<int>> seen(n);
        std::atomic<int> chunks{0};
        detail::parallel_for(n, 3, [&](std::size_t begin, std::size_t end) {
          ++chunks;
          for (std::size_t i = begin; i < end; ++i) ++seen[i];
        });
        bool once = true;
        for (const auto& s : seen) once = once && s == 1;
        CHECK_MESSAGE(once, "n = ", n, ", threads = ", threads);
        CHECK(chunks <= std::max(1, threads));
      }
    }
    set_num_threads(1);
  }

  TEST_CASE(
      "a parallel_for inside a parallel_for, or from two program threads at once, still covers "
      "everything") {
    set_num_threads(2);
    std::atomic<long> total{0};
    detail::parallel_for(100, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i)
        detail::parallel_for(100, 1,
                             [&](std::size_t b2, std::size_t e2) { total += long(e2 - b2); });
    });
    CHECK(total == 100 * 100);
    std::atomic<long> a{0}, b{0};
    std::thread other([&] {
      for (int r = 0; r < 200; ++r)
        detail::parallel_for(1000, 1, [&](std::size_t x, std::size_t y) { a += long(y - x); });
    });
    for (int r = 0; r < 200; ++r)
      detail::parallel_for(1000, 1, [&](std::size_t x, std::size_t y) { b += long(y - x); });
    other.join();
    CHECK(a == 200 * 1000);
    CHECK(b == 200 * 1000);
    set_num_threads(1);
  }

  TEST_CASE("set_num_threads sets the pool size and refuses zero") {
    set_num_threads(2);
    CHECK(get_num_threads() == 2);
    set_num_threads(1);
    CHECK(get_num_threads() == 1);
    CHECK_THROWS_WITH_AS(set_num_threads(0),
                         doctest::Contains("expected a positive number of threads, got 0"),
                         ValueError);
  }
}
