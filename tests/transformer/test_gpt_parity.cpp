// tests/transformer/test_gpt_parity.cpp: a tiny GPT with PyTorch's weights gives PyTorch's logits,
// loss and gradients. The fixture tests/transformer/fixtures/gpt_parity.safetensors is written by
// scripts/golden/gpt.py with the model of bench/gpt_torch.py (nanoGPT's, in PyTorch 1.13): vocab 11,
// block 8, 2 layers, 2 heads, n_embd 12, eval mode, one batch (2, 7) with one <unk> target (id 0,
// not scored); once with learned positions and the erf GELU, once with the sinusoidal table and the
// tanh GELU. The keys are nanoGPT's, so the weights load key for key.
//
// Tolerances: logits within 2e-6 + 1e-5 relative, gradients within 1e-6 + 1e-4 relative. The two
// sides round differently (the fused layer norm and softmax sum in double, GELU's erf is erf_f32
// against PyTorch's Abramowitz-Stegun form, the attention scale is applied inside sgemm).
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
namespace tt = tapegrad::nn::transformer;

TEST_SUITE("nn.transformer.gpt_parity") {
  TEST_CASE("a tiny GPT with PyTorch's weights gives PyTorch's logits, loss and gradients") {
    const io::SafetensorsFile f = io::load_safetensors(
        std::string(TAPEGRAD_SOURCE_DIR) + "/tests/transformer/fixtures/gpt_parity.safetensors");
    for (const auto& [pos, gelu] :
         {std::pair{"learned", "none"}, std::pair{"sinusoidal", "tanh"}}) {
      CAPTURE(pos);
      const std::string prefix = std::string("gpt.") + pos + ".";
      tt::GPT model(tt::GPTConfig(11, 8).n_layer(2).n_head(2).n_embd(12).position(pos).gelu(gelu),
                    std::make_shared<Generator>(1));
      nn::StateDict sd;
      for (const auto& record : f.tensors())
        if (record.name.rfind(prefix + "param.", 0) == 0)
          sd.insert(record.name.substr(prefix.size() + 6), f.to_float(record.name));
      const std::string table =
          std::string(pos) == "learned" ? "transformer.wte.weight" : "transformer.wte.lut.weight";
      sd.add_alias("lm_head.weight", table);  // the tie, as safetensors' save_model writes it
      const nn::IncompatibleKeys keys = model.load_state_dict(sd, /*strict=*/false);
      CHECK(keys.unexpected_keys.empty());
      CHECK(keys.missing_keys == (std::string(pos) == "learned"
                                      ? std::vector<std::string>{}
                                      : std::vector<std::string>{"transformer.wpe.pe"}));
      model.eval();

      const IndexArray idx = f.to_int64(prefix + "idx"), targets = f.to_int64(prefix + "targets");
      const Tensor logits = model.forward(idx);
      CHECK(all_close(logits.data(), f.to_float(prefix + "logits"), 2e-6, 1e-5));
      Tensor loss = model.loss(idx, targets, /*ignore_index=*/0);
      CHECK(loss.item() == doctest::Approx(f.to_float(prefix + "loss")()).epsilon(1e-6));
      loss.backward();
      std::set<std::string> compared;
      for (const auto& [name, p] : model.named_parameters()) {
        CAPTURE(name);
        REQUIRE(p.has_grad());
        CHECK(all_close(p.grad(), f.to_float(prefix + "grad." + name), 1e-6, 1e-4));
        compared.insert(name);
      }
      CHECK(compared.size() == (std::string(pos) == "learned" ? 28u : 27u));
    }
  }

}  // TEST_SUITE
