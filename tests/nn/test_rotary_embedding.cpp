// tests/nn/test_rotary_embedding.cpp: the RotaryEmbedding module: its tables as non-persistent
// buffers, forward and forward_qkv from an offset (as a cache uses them), its printed form and
// errors (the op's values and gradients: tests/ops/test_rotary.cpp).
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>
#include <xtensor/xview.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.rotary_embedding") {
  TEST_CASE("RotaryEmbedding keeps its tables as non-persistent buffers, out of the state dict") {
    nn::RotaryEmbedding rope(nn::RotaryEmbeddingOptions(4, 6));
    const auto buffers = rope.named_buffers();
    REQUIRE(buffers.size() == 2);
    CHECK(buffers[0].first == "cos");
    CHECK(buffers[1].first == "sin");
    CHECK(rope.named_parameters().empty());
    CHECK(rope.state_dict().size() == 0);
    CHECK(bit_equal(rope.cos.data(), ops::rotary_table(4, 6).cos));
    CHECK(bit_equal(rope.sin.data(), ops::rotary_table(4, 6).sin));
    CHECK_FALSE(rope.cos.requires_grad());
  }

  TEST_CASE("forward and forward_qkv are the ops on the module's tables, from an offset") {
    nn::RotaryEmbedding rope(nn::RotaryEmbeddingOptions(4, 6));
    const Tensor qkv = testing::input({1, 2, 24}, 2, false);
    CHECK(bit_equal(rope.forward_qkv(qkv, 3).data(),
                    ops::rotary_embedding_qkv(qkv, rope.cos, rope.sin, 3).data()));
    const Tensor x = testing::input({2, 3, 8}, 1, false);
    CHECK(bit_equal(rope.forward(x, 2).data(),
                    ops::rotary_embedding(x, rope.cos, rope.sin, 2).data()));
    // a cache: positions 0..2 at once, or 0..1 and then 2 alone, give the same rows
    const Array all = rope.forward(x).data();
    const Tensor last(Array(xt::view(x.data(), xt::all(), xt::range(2, 3), xt::all())));
    CHECK(bit_equal(rope.forward(last, 2).data(),
                    Array(xt::view(all, xt::all(), xt::range(2, 3), xt::all()))));
  }

  TEST_CASE("RotaryEmbedding with halves and given frequencies: transformers' Llama tables") {
    const std::vector<float> inv_freq = {1.0f, 0.01f};
    nn::RotaryEmbedding rope(
        nn::RotaryEmbeddingOptions(4, 6).pairs(ops::RotaryPairs::halves).inv_freq(inv_freq));
    CHECK(bit_equal(rope.cos.data(), ops::rotary_table(inv_freq, 6).cos));
    CHECK(bit_equal(rope.sin.data(), ops::rotary_table(inv_freq, 6).sin));
    const Tensor qkv = testing::input({1, 2, 16}, 2, false);  // n_head 2, n_kv_head 1
    CHECK(bit_equal(rope.forward_qkv(qkv, 3, 1).data(),
                    ops::rotary_embedding_qkv(qkv, rope.cos, rope.sin, 3, ops::RotaryPairs::halves,
                                              1)
                        .data()));
    CHECK(rope.repr() ==
          "RotaryEmbedding(head_dim=4, max_len=6, base=10000.0, pairs=halves, inv_freq=given)");
    CHECK_THROWS_WITH_AS(
        nn::RotaryEmbedding(nn::RotaryEmbeddingOptions(4, 6).inv_freq(std::vector<float>{1.0f})),
        doctest::Contains("expected inv_freq of head_dim / 2 = 2 frequencies, got 1"), ValueError);
  }

  TEST_CASE("RotaryEmbedding prints its options and refuses bad ones by name") {
    CHECK(nn::RotaryEmbedding(nn::RotaryEmbeddingOptions(16, 64)).repr() ==
          "RotaryEmbedding(head_dim=16, max_len=64, base=10000.0)");
    CHECK_THROWS_WITH_AS(nn::RotaryEmbedding(nn::RotaryEmbeddingOptions(5, 8)),
                         doctest::Contains("RotaryEmbedding: expected an even head_dim >= 2"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::RotaryEmbedding(nn::RotaryEmbeddingOptions(4, 0)),
                         doctest::Contains("RotaryEmbedding: expected max_len >= 1, got 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::RotaryEmbedding(nn::RotaryEmbeddingOptions(4, 8).base(-1.0)),
                         doctest::Contains("RotaryEmbedding: expected a finite base > 0, got -1"),
                         ValueError);
    nn::RotaryEmbedding rope(nn::RotaryEmbeddingOptions(4, 3));
    CHECK_THROWS_WITH_AS(rope.forward(testing::input({1, 4, 4}, 1, false)),
                         doctest::Contains("RotaryEmbedding: expected positions offset + T"),
                         ShapeError);
  }

}  // TEST_SUITE
