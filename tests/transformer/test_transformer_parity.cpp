// tests/transformer/test_transformer_parity.cpp: a small EncoderDecoder with PyTorch's weights gives
// PyTorch's outputs and gradients. The fixture tests/transformer/fixtures/transformer_parity.safetensors is
// written by scripts/golden/transformer.py (torch 1.13, V = 11, N = 1, d_model = 16, d_ff = 32,
// h = 2, eval mode): every parameter under "param.<key>", its gradient under "grad.<key>", the
// batch (src, tgt, tgt_y) and the results (out, logp, loss).
//
// Tolerances: outputs within 5e-6 absolute + 5e-5 relative, gradients within 1e-6 + 1e-4 relative.
// The two sides round differently (tapegrad's fused layer norm sums in double and multiplies by
// 1/d where the tutorial divides; its attention scales inside the fused softmax; its positional
// table is computed in double, PyTorch's in float32), and the differences grow through the layers
// and the backward pass. Measured: the largest output difference is 1.0e-6 (a log-probability of
// -0.2644), and every gradient is within 1e-7 + 1e-5 relative, so the bounds leave a margin of
// about five to ten.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

namespace {
const std::string FIXTURE = std::string(TAPEGRAD_SOURCE_DIR) +
                            "/tests/transformer/fixtures/transformer_parity.safetensors";

std::shared_ptr<nn::transformer::EncoderDecoder> tiny_model() {
  return nn::transformer::make_model(
      11, 11, nn::transformer::TransformerOptions().N(1).d_model(16).d_ff(32).h(2),
      std::make_shared<Generator>(1));
}

// The fixture's parameters as a state dict (its keys are the tutorial's).
nn::StateDict fixture_params(const io::SafetensorsFile& f) {
  nn::StateDict sd;
  for (const auto& record : f.tensors())
    if (record.name.rfind("param.", 0) == 0)
      sd.insert(record.name.substr(6), f.to_float(record.name));
  return sd;
}
}  // namespace

TEST_SUITE("nn.transformer.transformer_parity") {
  TEST_CASE(
      "the model's state-dict keys are the tutorial's, so PyTorch's weights load key for key") {
    const io::SafetensorsFile f = io::load_safetensors(FIXTURE);
    auto model = tiny_model();
    const nn::IncompatibleKeys keys = model->load_state_dict(fixture_params(f), /*strict=*/false);
    CHECK(keys.unexpected_keys.empty());
    // only the positional-encoding tables, which the fixture leaves out, are missing
    CHECK(keys.missing_keys == std::vector<std::string>{"src_embed.1.pe", "tgt_embed.1.pe"});
  }

  TEST_CASE("forward and backward of a small EncoderDecoder match PyTorch") {
    const io::SafetensorsFile f = io::load_safetensors(FIXTURE);
    auto model = tiny_model();
    model->load_state_dict(fixture_params(f), /*strict=*/false);
    model->eval();

    const IndexArray src = f.to_int64("src"), tgt = f.to_int64("tgt"), tgt_y = f.to_int64("tgt_y");
    const Tensor out =
        model->forward(src, tgt, ops::padding_mask(src, 0), ops::target_mask(tgt, 0));
    const Tensor logp = model->generator->forward(out);
    nn::transformer::LabelSmoothing criterion(11, 0, 0.1);
    IndexArray flat_y = tgt_y;
    flat_y.reshape({tgt_y.size()});
    std::int64_t ntokens = 0;
    for (std::int64_t id : flat_y) ntokens += id != 0;
    Tensor loss =
        criterion.forward(ops::reshape(logp, {-1, 11}), flat_y) / static_cast<double>(ntokens);

    CHECK(all_close(out.data(), f.to_float("out"), 5e-6, 5e-5));
    CHECK(all_close(logp.data(), f.to_float("logp"), 5e-6, 5e-5));
    CHECK(loss.item() == doctest::Approx(f.to_float("loss")()).epsilon(1e-6));

    loss.backward();
    std::set<std::string> compared;
    for (const auto& [name, p] : model->named_parameters()) {
      CAPTURE(name);
      REQUIRE(p.has_grad());
      CHECK(all_close(p.grad(), f.to_float("grad." + name), 1e-6, 1e-4));
      compared.insert(name);
    }
    CHECK(compared.size() == 50);  // every parameter of the PyTorch model
  }

}  // TEST_SUITE
