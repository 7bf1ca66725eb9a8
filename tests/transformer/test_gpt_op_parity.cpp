// tests/transformer/test_gpt_op_parity.cpp: the GPT's fused ops against the PyTorch goldens kept
// in the GPT parity fixture (scripts/golden/gpt.py writes tests/transformer/fixtures/
// gpt_parity.safetensors): GELU in both forms and nanoGPT's causal attention, values and
// gradients. The fixture is read with the io layer, which is why these cases live above the core
// (the ops' other tests are in tests/ops/). Their suites are the ops' own, so that they run on
// every kernel set too.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include <tapegrad/core.hpp>
#include <tapegrad/io.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

namespace {
const std::string FIXTURE =
    std::string(TAPEGRAD_SOURCE_DIR) + "/tests/transformer/fixtures/gpt_parity.safetensors";
}

TEST_SUITE("ops.activation") {
  TEST_CASE("gelu matches PyTorch's F.gelu, values and gradients, in both forms") {
    const io::SafetensorsFile f = io::load_safetensors(FIXTURE);
    const Array g = f.to_float("gelu.g");
    for (const std::string form : {"none", "tanh"}) {
      CAPTURE(form);
      Tensor x(f.to_float("gelu.x"), true);
      Tensor y = ops::gelu(x, form);
      CHECK(all_close(y.data(), f.to_float("gelu." + form + ".y"), 1e-6, 1e-5));
      y.backward(g);
      CHECK(all_close(x.grad(), f.to_float("gelu." + form + ".dx"), 1e-6, 1e-5));
    }
  }
}

TEST_SUITE("ops.causal_attention") {
  TEST_CASE(
      "matches PyTorch's nanoGPT attention, values and gradients, including a single position") {
    const io::SafetensorsFile f = io::load_safetensors(FIXTURE);
    for (const auto& [name, heads] : {std::pair{"a", 2}, std::pair{"b", 3}}) {
      CAPTURE(name);
      const std::string p = std::string("attn.") + name + ".";
      Tensor qkv(f.to_float(p + "qkv"), true);
      Tensor y = ops::causal_self_attention(qkv, heads);
      CHECK(all_close(y.data(), f.to_float(p + "y"), 1e-6, 1e-5));
      y.backward(f.to_float(p + "r"));
      CHECK(all_close(qkv.grad(), f.to_float(p + "dqkv"), 1e-6, 1e-5));
    }
  }
}
