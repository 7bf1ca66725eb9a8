// tests/pretrained/test_gpt2_parity.cpp: a tiny GPT-2 in Hugging Face's layout, loaded by tapegrad,
// against PyTorch running transformers' GPT-2 semantics (scripts/golden/gpt2_hf.py, which wrote
// the fixtures: tests/pretrained/fixtures/gpt2_tiny/): both key layouts load the same weights,
// the logits equal PyTorch's to 1e-5, greedy decoding with the cache picks PyTorch's ids, and a
// fine-tuning step's loss and every gradient equal PyTorch's.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

const std::string kFixtures =
    std::string(TAPEGRAD_SOURCE_DIR) + "/tests/pretrained/fixtures/gpt2_tiny";

const io::SafetensorsFile& golden() {
  static const io::SafetensorsFile f = io::load_safetensors(kFixtures + "/golden.safetensors");
  return f;
}

double max_abs_diff(const Array& a, const Array& b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])));
  return worst;
}

Array transposed(const Array& a) {
  Array t = Array::from_shape({a.shape()[1], a.shape()[0]});
  for (std::size_t i = 0; i < a.shape()[0]; ++i)
    for (std::size_t j = 0; j < a.shape()[1]; ++j) t(j, i) = a(i, j);
  return t;
}

}  // namespace

TEST_CASE("OpenAI's layout and the prefixed one with a tied lm_head load the same weights") {
  const auto plain = pretrained::load_gpt2(kFixtures + "/plain");
  const auto prefixed = pretrained::load_gpt2(kFixtures + "/prefixed");
  CHECK(plain.config.n_embd == 8);
  CHECK(plain.config.n_positions == 32);
  CHECK(plain.config.vocab_size == 50257);
  const auto a = plain.model->named_parameters(), b = prefixed.model->named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].first);
    CHECK(testing::bit_equal(a[i].second.data(), b[i].second.data()));
  }
}

TEST_CASE("GPT-2's logits, loss and argmax equal PyTorch's") {
  const auto gpt2 = pretrained::load_gpt2(kFixtures + "/plain");
  gpt2.model->eval();
  autograd::NoGradGuard no_grad;
  const IndexArray idx = golden().to_int64("idx");
  const Array logits = gpt2.model->forward(idx).data();  // (2, 32, 50257)
  const std::size_t V = 50257, rows = idx.size();
  const Array head = golden().to_float("logits_head"), lse = golden().to_float("logsumexp");
  const IndexArray argmax = golden().to_int64("argmax");
  double worst_head = 0.0, worst_lse = 0.0;
  std::size_t same_argmax = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * V;
    for (std::size_t v = 0; v < 256; ++v)
      worst_head =
          std::max(worst_head, std::abs(double(row[v]) - double(head.data()[r * 256 + v])));
    double m = row[0], sum = 0.0;
    std::size_t best = 0;
    for (std::size_t v = 0; v < V; ++v)
      if (row[v] > row[best]) best = v;
    m = row[best];
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - m);
    worst_lse = std::max(worst_lse, std::abs(m + std::log(sum) - double(lse.data()[r])));
    same_argmax += std::int64_t(best) == argmax.data()[r];
  }
  MESSAGE("largest logit difference from PyTorch: ", worst_head, ", of logsumexp: ", worst_lse);
  CHECK(worst_head < 1e-5);
  CHECK(worst_lse < 1e-5);
  CHECK(same_argmax == rows);
  const Tensor loss = gpt2.model->loss(idx, golden().to_int64("targets"));
  CHECK(loss.item() == doctest::Approx(golden().to_float("loss")()).epsilon(1e-6));
}

TEST_CASE("greedy decoding with the cache picks PyTorch's ids, and so does decoding without it") {
  const auto gpt2 = pretrained::load_gpt2(kFixtures + "/prefixed");
  gpt2.model->eval();
  const IndexArray prompt = golden().to_int64("greedy.prompt"),
                   expected = golden().to_int64("greedy.out");
  CHECK(golden().to_float("greedy.min_gap")() > 1e-3);
  for (const bool cache : {true, false}) {
    CAPTURE(cache);
    Generator gen(0);  // (top-k 1 draws nothing at random)
    const IndexArray out =
        gpt2.model->generate(prompt, tt::GenerateOptions(20).top_k(1).use_cache(cache), gen);
    CHECK(out == expected);
  }
}

TEST_CASE("a fine-tuning step's loss and every gradient equal PyTorch's") {
  const auto gpt2 = pretrained::load_gpt2(kFixtures + "/plain");  // dropout 0, training mode
  const Tensor loss = gpt2.model->loss(golden().to_int64("idx"), golden().to_int64("targets"));
  loss.backward();
  CHECK(loss.item() == doctest::Approx(golden().to_float("loss")()).epsilon(1e-6));
  std::size_t compared = 0;
  for (const auto& [name, p] : gpt2.model->named_parameters()) {
    CAPTURE(name);
    REQUIRE(p.has_grad());
    const std::string key = "grad." + name;
    REQUIRE(golden().contains(key));
    const bool conv1d =
        name.find(".weight") != std::string::npos &&
        (name.find("c_attn") != std::string::npos || name.find("c_proj") != std::string::npos ||
         name.find("c_fc") != std::string::npos);
    const Array expected = conv1d ? transposed(golden().to_float(key)) : golden().to_float(key);
    double scale = 0.0;
    for (const float g : expected) scale = std::max(scale, double(std::abs(g)));
    CHECK(max_abs_diff(p.grad(), expected) <= 1e-5 * std::max(1.0, scale));
    ++compared;
  }
  CHECK(compared == 28);
}
