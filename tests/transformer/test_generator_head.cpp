// tests/transformer/test_generator_head.cpp: the tutorial's Generator — log_softmax(proj(x)).
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.transformer.generator_head") {
  TEST_CASE("the head projects to the vocabulary and returns log-probabilities") {
    GeneratorHead head(4, 7, std::make_shared<Generator>(1));
    Generator gen(2);
    Tensor x(randn({2, 3, 4}, &gen));
    const Tensor y = head.forward(x);
    CHECK(y.shape() == Shape{2, 3, 7});
    CHECK(bit_equal(y.data(), ops::log_softmax(head.proj->forward(x), -1).data()));
    for (std::size_t r = 0; r < 6; ++r) {
      double total = 0.0;
      for (std::size_t c = 0; c < 7; ++c) total += std::exp(double(y.data().data()[r * 7 + c]));
      CHECK(total == doctest::Approx(1.0));
    }
    CHECK(head.repr() ==
          "Generator(\n  (proj): Linear(in_features=4, out_features=7, bias=True)\n)");
    CHECK(head.named_parameters().front().first == "proj.weight");
  }

  TEST_CASE("the head passes gradcheck") {
    GeneratorHead head(3, 5, std::make_shared<Generator>(3));
    Generator gen(4);
    Tensor x(randn({2, 3}, &gen), true);
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>&) { return head.forward(x); },
                                        {x, head.proj->weight, head.proj->bias});
    CHECK_MESSAGE(r.ok, r.message);
  }

}  // TEST_SUITE
