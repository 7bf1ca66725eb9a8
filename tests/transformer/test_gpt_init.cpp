// tests/transformer/test_gpt_init.cpp: init_gpt_weights, nanoGPT's initialisation, on a model
// that is not a GPT: which modules it draws for, the residual projections, the norms it leaves
// alone, reproducibility, and its error.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {
// A learner's block of its own: an embedding, an RMSNorm, a SwiGLU and a projection back.
class MyModel : public nn::Module {
 public:
  MyModel()
      : tok(register_module("tok", std::make_shared<nn::Embedding>(nn::EmbeddingOptions(50, 64)))),
        norm(register_module("norm", std::make_shared<nn::RMSNorm>(64))),
        ff(register_module("ff",
                           std::make_shared<nn::SwiGLU>(nn::SwiGLUOptions(64, 170).bias(true)))),
        c_proj(register_module("c_proj", std::make_shared<nn::Linear>(64, 64))),
        out(register_module("out", std::make_shared<nn::Linear>(64, 50))) {}
  std::shared_ptr<nn::Embedding> tok;
  std::shared_ptr<nn::RMSNorm> norm;
  std::shared_ptr<nn::SwiGLU> ff;
  std::shared_ptr<nn::Linear> c_proj, out;
};

double sample_std(const Array& a) {
  double mean = 0.0, sq = 0.0;
  for (float v : a) mean += v;
  mean /= double(a.size());
  for (float v : a) sq += (v - mean) * (v - mean);
  return std::sqrt(sq / double(a.size()));
}
}  // namespace

TEST_SUITE("nn.transformer.gpt_init") {
  TEST_CASE("init_gpt_weights draws nanoGPT's weights on a model of one's own") {
    MyModel m;
    {  // a norm that is not at 1 stays as it is: nanoGPT leaves the norms alone
      autograd::NoGradGuard no_grad;
      m.norm->weight.mutable_data().fill(2.0f);
    }
    Generator gen(0);
    tt::init_gpt_weights(m, /*n_layer=*/2, gen);
    const double residual = 0.02 / std::sqrt(4.0);
    CHECK(sample_std(m.tok->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(m.out->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(m.ff->w1->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(sample_std(m.ff->w2->weight.data()) == doctest::Approx(residual).epsilon(0.05));
    CHECK(sample_std(m.c_proj->weight.data()) == doctest::Approx(residual).epsilon(0.05));
    CHECK(testing::bit_equal(m.ff->w2->bias.data(), xt::zeros<float>({64})));
    CHECK(testing::bit_equal(m.out->bias.data(), xt::zeros<float>({50})));
    CHECK(testing::bit_equal(m.norm->weight.data(), xt::full_like(m.norm->weight.data(), 2.0f)));
    // the same generator state gives the same weights
    MyModel again;
    Generator gen2(0);
    tt::init_gpt_weights(again, 2, gen2);
    CHECK(testing::bit_equal(again.ff->w3->weight.data(), m.ff->w3->weight.data()));
  }

  TEST_CASE("the residual projections are named by the caller, and n_layer must be positive") {
    MyModel m;
    Generator gen(1);
    tt::init_gpt_weights(m, 8, gen, /*residual_projections=*/{"out"});
    CHECK(sample_std(m.out->weight.data()) == doctest::Approx(0.005).epsilon(0.05));
    CHECK(sample_std(m.c_proj->weight.data()) == doctest::Approx(0.02).epsilon(0.05));
    CHECK_THROWS_WITH_AS(tt::init_gpt_weights(m, 0, gen),
                         doctest::Contains("init_gpt_weights: expected n_layer >= 1, got 0"),
                         ValueError);
  }

}  // TEST_SUITE
