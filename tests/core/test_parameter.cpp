// tests/core/test_parameter.cpp: Parameter and Buffer are distinct; the fingerprint proves a buffer unchanged.
#include <doctest/doctest.h>

#include <type_traits>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

// Optimizers take std::vector<Parameter>: a Buffer (or a plain Tensor) does not convert.
static_assert(!std::is_convertible_v<Buffer, Parameter>);
static_assert(!std::is_convertible_v<Tensor, Parameter>);
static_assert(!std::is_convertible_v<std::vector<Buffer>, std::vector<Parameter>>);

TEST_SUITE("parameter") {
  TEST_CASE("a Parameter is a leaf that requires grad, a Buffer never does") {
    Parameter p(Array{1.f, 2.f});
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
    Buffer b(Array{1.f, 2.f});
    b.set_name("pos.pe");
    CHECK_FALSE(b.requires_grad());
    CHECK_THROWS_WITH_AS(b.requires_grad_(true),
                         doctest::Contains("Buffer 'pos.pe' (2,): expected requires_grad=false, "
                                           "got true; register it as a Parameter to train it"),
                         ValueError);
    CHECK_THROWS_WITH_AS(b.accumulate_grad(Array{1.f, 1.f}),
                         doctest::Contains("is a Buffer and never has a gradient"), AutogradError);
  }

  TEST_CASE("a Buffer used in an op is a constant: no gradient flows to it") {
    Parameter x(Array{1.f, 2.f});
    Buffer b(Array{3.f, 4.f});
    ops::sum(ops::mul(x, b)).backward();
    CHECK(tapegrad::testing::all_close(x.grad(), Array{3.f, 4.f}));
    CHECK_FALSE(b.has_grad());
  }

  TEST_CASE("Parameter(tensor) shares the data and version counter, like detach") {
    Tensor t(Array{1.f});
    Parameter p(t);
    p.mutable_data()(0) = 2.f;
    CHECK(t.data()(0) == 2.f);
    CHECK(t.version() == 1);
  }

  TEST_CASE(
      "the fingerprint is FNV-1a 64 over rank, dims and float bytes, and detects any change") {
    // Hand-computed: rank 1, dim 1, float 1.0f (bytes 00 00 80 3F)
    std::uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char bytes[20] = {1, 0, 0, 0, 0, 0, 0,    0,    1,    0,
                                     0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3F};
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
    Buffer b(Array{1.f});
    CHECK(b.fingerprint() == h);
    const std::uint64_t before = b.fingerprint();
    b.expect_unchanged(before);
    b.mutable_data()(0) = std::nextafter(1.f, 2.f);  // one ulp
    CHECK(b.fingerprint() != before);
    CHECK_THROWS_WITH_AS(b.expect_unchanged(before), doctest::Contains("the buffer was modified"),
                         InvariantError);
  }

}  // TEST_SUITE
