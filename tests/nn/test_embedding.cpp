// tests/nn/test_embedding.cpp: the Embedding module (torch.nn.Embedding's module-level parts) —
// options and their validation, padding_idx normalisation, N(0, 1) initialisation from the
// generator with the pad row zeroed, _weight / _freeze / from_pretrained, reset_parameters, forward
// through ops::embedding with the module's path in errors, gradcheck, printing. The lookup's own
// semantics (max_norm, sparse, scale_grad_by_freq) are tested in tests/ops/test_embedding.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "models.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
// y with the rows at padding positions set to 0 (a constant). padding_idx withholds the pad row's
// gradient although the lookup reads that row, so finite differences agree only once the pad
// positions no longer reach the loss (as with ignore_index in training).
Tensor without_pad_positions(const Tensor& y, const IndexArray& ids,
                             std::optional<std::int64_t> pad) {
  if (!pad) return y;
  Shape mask_shape(ids.shape().begin(), ids.shape().end());
  mask_shape.push_back(1);
  Mask mask = Mask::from_shape(mask_shape);
  for (std::size_t p = 0; p < ids.size(); ++p) mask.data()[p] = ids.data()[p] == *pad;
  return ops::masked_fill(y, mask, 0.0);
}

bool row_is_zero(const Array& w, std::size_t row) {
  for (std::size_t j = 0; j < w.shape()[1]; ++j)
    if (w(row, j) != 0.0f || std::signbit(w(row, j))) return false;
  return true;
}
}  // namespace

TEST_SUITE("nn.embedding") {
  TEST_CASE("the weight is (num_embeddings, embedding_dim), registered as 'weight'") {
    Embedding emb(10, 3);
    CHECK(emb.weight.shape() == Shape{10, 3});
    REQUIRE(emb.named_parameters().size() == 1);
    CHECK(emb.named_parameters()[0].first == "weight");
    CHECK(emb.weight.name() == "weight");
    CHECK(emb.weight.requires_grad());
    CHECK(emb.num_embeddings() == 10);
    CHECK(emb.embedding_dim() == 3);
  }

  TEST_CASE("initialisation is N(0, 1) from the generator, then the padding row is exactly zero") {
    Embedding emb(EmbeddingOptions(10, 3).padding_idx(4), std::make_shared<Generator>(17));
    Generator replay(17);
    Array want = randn({10, 3}, &replay);
    for (std::size_t j = 0; j < 3; ++j) want(4, j) = 0.0f;
    CHECK(bit_equal(emb.weight.data(), want));
    CHECK(row_is_zero(emb.weight.data(), 4));
  }

  TEST_CASE("the same seed gives the same embedding and another seed another one") {
    Embedding a(EmbeddingOptions(20, 4), std::make_shared<Generator>(1));
    Embedding b(EmbeddingOptions(20, 4), std::make_shared<Generator>(1));
    Embedding c(EmbeddingOptions(20, 4), std::make_shared<Generator>(2));
    CHECK(bit_equal(a.weight.data(), b.weight.data()));
    CHECK_FALSE(bit_equal(a.weight.data(), c.weight.data()));
    SUBCASE("the default generator, reseeded") {
      manual_seed(99);
      Embedding d(20, 4);
      manual_seed(99);
      Embedding e(20, 4);
      CHECK(bit_equal(d.weight.data(), e.weight.data()));
    }
  }

  TEST_CASE("a negative padding_idx is normalised and out-of-range values are refused") {
    CHECK(Embedding(EmbeddingOptions(10, 3).padding_idx(-1)).padding_idx() == 9);
    CHECK(Embedding(EmbeddingOptions(10, 3).padding_idx(-10)).padding_idx() == 0);
    CHECK(Embedding(EmbeddingOptions(10, 3).padding_idx(-1)).options().padding_idx() == 9);
    CHECK(row_is_zero(Embedding(EmbeddingOptions(10, 3).padding_idx(-1)).weight.data(), 9));
    CHECK_FALSE(Embedding(10, 3).padding_idx().has_value());
    CHECK_THROWS_WITH_AS(Embedding(EmbeddingOptions(10, 3).padding_idx(10)),
                         doctest::Contains("Padding_idx must be within num_embeddings | Embedding: "
                                           "expected padding_idx in [-10, 10), got 10"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Embedding(EmbeddingOptions(10, 3).padding_idx(-11)),
                         doctest::Contains("expected padding_idx in [-10, 10), got -11"),
                         ValueError);
  }

  TEST_CASE("other options are validated at construction") {
    CHECK_THROWS_WITH_AS(Embedding(-1, 3),
                         doctest::Contains("Trying to create tensor with negative dimension -1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Embedding(EmbeddingOptions(10, 3).max_norm(0.0)),
                         doctest::Contains("expected max_norm > 0, got 0.0"), ValueError);
    CHECK_THROWS_WITH_AS(Embedding(EmbeddingOptions(10, 3).max_norm(NAN)),
                         doctest::Contains("expected max_norm > 0, got nan"), ValueError);
    CHECK_THROWS_WITH_AS(Embedding(EmbeddingOptions(10, 3).norm_type(NAN)),
                         doctest::Contains("norm_type"), ValueError);
    CHECK_THROWS_WITH_AS(
        Embedding(EmbeddingOptions(10, 3).sparse(true).scale_grad_by_freq(true)),
        doctest::Contains(
            "embedding_backward: scale_grad_by_freq not supported with sparse gradients | "
            "Embedding: expected at most one of sparse and scale_grad_by_freq, got both"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        Embedding(EmbeddingOptions(10, 3)._weight(xt::zeros<float>({10, 4}))),
        doctest::Contains("Shape of weight does not match num_embeddings and embedding_dim | "
                          "Embedding: expected (10, 3), got (10, 4)"),
        ValueError);
    CHECK_NOTHROW(Embedding(0, 3));  // zero rows, as PyTorch allows
    CHECK_NOTHROW(Embedding(EmbeddingOptions(10, 3).max_norm(INFINITY)));
  }

  TEST_CASE(
      "the module and the op refuse the same options with the same text, each naming itself") {
    // One check (ops::check_embedding_options): the module runs it at construction, the op at
    // every lookup, on the same options type.
    Tensor w(Array(xt::zeros<float>({10, 3})), true);
    const std::pair<EmbeddingOptions, std::string> cases[] = {
        {EmbeddingOptions().padding_idx(12), "expected padding_idx in [-10, 10), got 12"},
        {EmbeddingOptions().max_norm(-1.0),
         "expected max_norm > 0, got -1.0; leave max_norm unset to never renormalise"},
        {EmbeddingOptions().norm_type(NAN), "expected norm_type to be a number, got nan"},
        {EmbeddingOptions().sparse(true).scale_grad_by_freq(true),
         "expected at most one of sparse and scale_grad_by_freq, got both"}};
    for (const auto& [options, text] : cases) {
      EmbeddingOptions sized = options;
      sized.num_embeddings(10).embedding_dim(3);
      CHECK_THROWS_WITH_AS(Embedding{sized}, doctest::Contains(("Embedding: " + text).c_str()),
                           ValueError);
      CHECK_THROWS_WITH_AS(ops::embedding(IndexArray{1}, w, options),
                           doctest::Contains(("embedding: " + text).c_str()), ValueError);
    }
  }

  TEST_CASE(
      "_weight is used as given (copied, pad row not zeroed) and _freeze stops its gradient") {
    Array given = {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}};
    Embedding emb(EmbeddingOptions(3, 2).padding_idx(0)._weight(given)._freeze(true));
    CHECK(bit_equal(emb.weight.data(), given));
    CHECK_FALSE(emb.weight.requires_grad());
    given(0, 0) = 100.f;
    CHECK(emb.weight.data()(0, 0) == 1.f);             // a copy
    CHECK_FALSE(emb.options()._weight().has_value());  // kept once, in weight
    Embedding trainable(EmbeddingOptions(3, 2)._weight(given));
    CHECK(trainable.weight.requires_grad());
  }

  TEST_CASE("from_pretrained keeps the rows, the pad row included, and freezes by default") {
    const Array rows = {{9.f, 9.f}, {1.f, 2.f}, {3.f, 4.f}};
    auto emb = Embedding::from_pretrained(rows, EmbeddingOptions().padding_idx(0));
    CHECK(bit_equal(emb->weight.data(), rows));
    CHECK(emb->padding_idx() == 0);
    CHECK_FALSE(emb->weight.requires_grad());
    CHECK(emb->repr() == "Embedding(3, 2, padding_idx=0)");
    auto trainable = Embedding::from_pretrained(rows, EmbeddingOptions()._freeze(false));
    CHECK(trainable->weight.requires_grad());
    CHECK_THROWS_WITH_AS(
        Embedding::from_pretrained(Array{1.f, 2.f, 3.f, 4.f}),
        doctest::Contains("Embeddings parameter is expected to be 2-dimensional | "), ValueError);
    CHECK_THROWS_WITH_AS(Embedding::from_pretrained(Array{1.f, 2.f, 3.f, 4.f}),
                         doctest::Contains("got shape (4,)"), ValueError);
  }

  TEST_CASE("a frozen embedding records nothing") {
    auto emb = Embedding::from_pretrained(Array{{1.f, 2.f}, {3.f, 4.f}});
    const Tensor y = emb->forward(IndexArray{1, 0});
    CHECK(autograd::tape().empty());
    CHECK(all_close(y.data(), Array{{3.f, 4.f}, {1.f, 2.f}}));
  }

  TEST_CASE("reset_parameters redraws N(0, 1) and zeroes the pad row again") {
    auto gen = std::make_shared<Generator>(4);
    Embedding emb(EmbeddingOptions(6, 2).padding_idx(1), gen);
    {
      autograd::NoGradGuard no_grad;
      emb.weight.mutable_data().fill(3.f);
    }
    const std::uint64_t v = emb.weight.version();
    emb.reset_parameters();
    CHECK(row_is_zero(emb.weight.data(), 1));
    CHECK(emb.weight.data()(0, 0) != 3.f);
    CHECK(emb.weight.version() > v);
  }

  TEST_CASE("forward looks up rows for ids of any shape") {
    Embedding emb(EmbeddingOptions(5, 3).padding_idx(0), std::make_shared<Generator>(8));
    const Array& w = emb.weight.data();
    SUBCASE("(2, 4)") {
      const IndexArray ids = {{1, 2, 0, 4}, {3, 3, 1, 0}};
      const Tensor y = emb.forward(ids);
      REQUIRE(y.shape() == Shape{2, 4, 3});
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 4; ++t)
          for (std::size_t j = 0; j < 3; ++j)
            CHECK(y.data()(b, t, j) == w(static_cast<std::size_t>(ids(b, t)), j));
    }
    SUBCASE("a scalar id gives one row") {
      const Tensor y = emb.forward(IndexArray(std::int64_t{2}));
      CHECK(y.shape() == Shape{3});
    }
    SUBCASE("no ids give an empty (0, dim) result") {
      const Tensor y = emb.forward(IndexArray::from_shape({0}));
      CHECK(y.shape() == Shape{0, 3});
    }
  }

  TEST_CASE("the padding row receives no gradient and repeated ids add up") {
    Embedding emb(EmbeddingOptions(4, 2).padding_idx(0));
    ops::sum(emb.forward(IndexArray{{1, 2, 1}, {0, 1, 3}})).backward();
    CHECK(
        all_close(emb.weight.grad(), Array{{0.f, 0.f}, {3.f, 3.f}, {1.f, 1.f}, {1.f, 1.f}}, 0, 0));
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("the gradient matches finite differences, with and without padding and scaling") {
    // scale_grad_by_freq deliberately turns a repeated id's sum into a mean, which is not the
    // derivative of the lookup: it can be checked only with distinct non-pad ids (its division is
    // checked in tests/ops/test_embedding.cpp).
    const std::pair<EmbeddingOptions, IndexArray> cases[] = {
        {EmbeddingOptions(5, 3), {{1, 4, 4}, {0, 2, 1}}},
        {EmbeddingOptions(5, 3).padding_idx(4), {{1, 4, 4}, {0, 2, 1}}},
        {EmbeddingOptions(5, 3).padding_idx(1).scale_grad_by_freq(true), {{1, 4, 1}, {0, 2, 1}}},
    };
    for (const auto& [options, ids] : cases) {
      Embedding emb(options, std::make_shared<Generator>(6));
      const auto r = gradcheck(
          [&](const std::vector<Tensor>&) {
            return without_pad_positions(emb.forward(ids), ids, emb.padding_idx());
          },
          {emb.weight});
      CHECK_MESSAGE(r.ok, r);
    }
  }

  TEST_CASE("an out-of-range id names the module's path, the id and its position") {
    testing::TutorialModel model(4, 10, 16);
    CHECK_THROWS_WITH_AS(
        model.forward(IndexArray{{1, 2, 3, 4}, {5, 6, 7, 12}}),
        doctest::Contains("index out of range in self | Embedding 'src_embed.0.lut': expected ids "
                          "in [0, 10), got 12 at position (1, 3)"),
        IndexError);
  }

  TEST_CASE("forward records an 'embedding' entry under the module's path") {
    testing::TutorialModel model(4, 10, 16);
    const Tensor y =
        model.src_embed->ptr<Embeddings>(0)->lut->forward(IndexArray{1, 2});  // y owns the entry
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "embedding");
    CHECK(autograd::tape().entries()[0].module == "src_embed.0.lut");
  }

  TEST_CASE("printing lists the options that differ from the defaults, as PyTorch does") {
    CHECK(Embedding(10, 3).repr() == "Embedding(10, 3)");
    CHECK(
        Embedding(
            EmbeddingOptions(10, 3).padding_idx(0).max_norm(1.0).norm_type(1.0).scale_grad_by_freq(
                true))
            .repr() ==
        "Embedding(10, 3, padding_idx=0, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)");
    CHECK(Embedding(EmbeddingOptions(10, 3).sparse(true)).repr() ==
          "Embedding(10, 3, sparse=True)");
    CHECK(Embedding(EmbeddingOptions(10, 3).padding_idx(-1)).repr() ==
          "Embedding(10, 3, padding_idx=9)");
  }
}  // TEST_SUITE
