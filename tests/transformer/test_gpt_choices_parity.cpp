// tests/transformer/test_gpt_choices_parity.cpp: a tiny GPT with RMSNorm, SwiGLU and RoPE loaded
// with PyTorch's weights gives PyTorch's logits, loss and gradients. The fixture
// tests/transformer/fixtures/gpt_choices_parity.safetensors is written by
// scripts/golden/gpt_layers.py (torch 1.13.0a0), whose model is nanoGPT's structure with each new
// piece written out (PyTorch 1.13 has none of them): RMSNorm eps 1e-5, SwiGLU of hidden width
// 2 * 48 / 3 = 32 with biases, the interleaved-pair rotation of q and k; vocab 11, block 8, 2
// layers, 2 heads, n_embd 12, eval mode, one batch (2, 7) with one <unk> target (id 0, not scored).
// Tolerances as the default GPT's parity test.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
namespace tt = tapegrad::nn::transformer;

TEST_SUITE("nn.transformer.gpt_choices_parity") {
  TEST_CASE("a GPT with RMSNorm, SwiGLU and RoPE and PyTorch's weights gives PyTorch's numbers") {
    const io::SafetensorsFile f =
        io::load_safetensors(std::string(TAPEGRAD_SOURCE_DIR) +
                             "/tests/transformer/fixtures/gpt_choices_parity.safetensors");
    tt::GPT model(
        tt::GPTConfig(11, 8).n_layer(2).n_head(2).n_embd(12).norm("rmsnorm").mlp("swiglu").position(
            "rope"),
        std::make_shared<Generator>(1));
    nn::StateDict sd;
    for (const auto& record : f.tensors())
      if (record.name.rfind("param.", 0) == 0)
        sd.insert(record.name.substr(6), f.to_float(record.name));
    sd.add_alias("lm_head.weight", "transformer.wte.weight");
    model.load_state_dict(sd);  // strict: the same keys, the rotary tables not among them
    model.eval();

    const IndexArray idx = f.to_int64("idx"), targets = f.to_int64("targets");
    CHECK(all_close(model.forward(idx).data(), f.to_float("logits"), 2e-6, 1e-5));
    Tensor loss = model.loss(idx, targets, /*ignore_index=*/0);
    CHECK(loss.item() == doctest::Approx(f.to_float("loss")()).epsilon(1e-6));
    loss.backward();
    std::set<std::string> compared;
    for (const auto& [name, p] : model.named_parameters()) {
      CAPTURE(name);
      REQUIRE(p.has_grad());
      CHECK(all_close(p.grad(), f.to_float("grad." + name), 1e-6, 1e-4));
      compared.insert(name);
    }
    CHECK(compared.size() == 1 + 2 * 12 + 1);  // wte; per block 2 norms, 4 + 6 linear tensors; ln_f
  }

}  // TEST_SUITE
