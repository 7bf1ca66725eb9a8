// tests/transformer/test_greedy_decode.cpp: greedy_decode — shape and start symbol, each token the argmax
// of the model given the tokens before it, determinism, no tape, errors.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;

TEST_SUITE("nn.transformer.greedy_decode") {
  TEST_CASE("every decoded token is the model's argmax given the tokens before it") {
    auto model = make_model(7, 7, TransformerOptions().N(1).d_model(8).d_ff(16).h(2),
                            std::make_shared<Generator>(1));
    model->eval();
    const IndexArray src = {{1, 2, 3, 4, 5}, {1, 6, 6, 0, 0}};
    const Mask src_mask = ops::padding_mask(src, 0);
    const IndexArray ys = greedy_decode(*model, src, src_mask, 6, /*start_symbol=*/1);
    CHECK(ys.shape() == std::vector<std::size_t>{2, 6});
    CHECK(ys(0, 0) == 1);
    CHECK(ys(1, 0) == 1);
    CHECK(autograd::tape().empty());
    // Under the causal mask the prediction at position t depends on ys[:, :t + 1] only, so one
    // pass over the finished output must reproduce every greedy choice.
    autograd::NoGradGuard no_grad;
    IndexArray prefix = IndexArray::from_shape({2, 5});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 5; ++t) prefix(b, t) = ys(b, t);
    const Tensor logp = model->generator->forward(
        model->decode(model->encode(src, src_mask), src_mask, prefix, ops::subsequent_mask(5)));
    const IndexArray best = ops::argmax(logp, -1);
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 5; ++t) CHECK(best(b, t) == ys(b, t + 1));
    CHECK(greedy_decode(*model, src, src_mask, 6, 1) == ys);  // eval mode: deterministic
  }

  TEST_CASE("max_len 1 returns the start symbol alone, and bad arguments are refused") {
    auto model = make_model(5, 5, TransformerOptions().N(1).d_model(4).d_ff(4).h(1),
                            std::make_shared<Generator>(2));
    const IndexArray src = {{1, 2}};
    const IndexArray alone = greedy_decode(*model, src, std::nullopt, 1, 3);
    CHECK(alone.shape() == std::vector<std::size_t>{1, 1});
    CHECK(alone(0, 0) == 3);
    CHECK_THROWS_WITH_AS(greedy_decode(*model, src, std::nullopt, 0, 3),
                         doctest::Contains("expected max_len >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(greedy_decode(*model, IndexArray{1, 2}, std::nullopt, 3, 1),
                         doctest::Contains("expected src of shape (B, T)"), ShapeError);
  }

}  // TEST_SUITE
