// examples/gpt/load_model.hpp: the model gpt_sample and gpt_eval run, from either kind of file:
//
//     a folder       a Hugging Face GPT-2 (config.json, model.safetensors, vocab.json,
//                    merges.txt): OpenAI's GPT-2, or one fine-tuned and exported by gpt --export-hf
//     a .safetensors a checkpoint written by gpt (best.safetensors, last.safetensors), whose notes
//                    give the config and the tokenizer (model_notes.hpp)
//
// Either way every check runs before the model is built (the library's for a folder,
// pretrained/gpt2.hpp; the notes' for a checkpoint), the weights must be finite, and the model
// comes back in eval mode.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "model_notes.hpp"

namespace gpt {

struct LoadedModel {
  std::shared_ptr<tt::GPT> model;
  tapegrad::data::Tokenizer tokenizer;
  std::string kind;      ///< "Hugging Face GPT-2 folder" or "gpt checkpoint"
  double seconds = 0.0;  ///< the time the load took
  std::string unit() const { return tokenizer.name() == "char" ? "characters" : "tokens"; }
};

/// A trained model's weights are finite. io::load takes any float (a safetensors file may hold
/// Inf on purpose), so a diverged run's checkpoint, or an edited one whose checksums were written
/// again, would load and sample NaN logits: refuse it, naming the tensor.
inline void check_finite(const tapegrad::nn::Module& model, const std::string& checkpoint) {
  for (const auto& [name, p] : model.named_parameters()) {
    const tapegrad::Array& w = p.data();
    const auto bad = std::find_if(w.begin(), w.end(), [](float v) { return !std::isfinite(v); });
    if (bad != w.end())
      throw tapegrad::DataError(checkpoint + ": the parameter '" + name + "' holds " +
                                std::to_string(*bad) + " at flat position " +
                                std::to_string(bad - w.begin()) +
                                ": the run that saved it diverged, or the file was edited");
  }
}

/// The model at `path`, a folder or a checkpoint (see above), in eval mode.
inline LoadedModel load_model(const std::string& path) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw tapegrad::DataError("--model: '" + path +
                              "': " + (ec ? ec.message() : std::string("no such file or folder")) +
                              " (expected a Hugging Face GPT-2 folder or a checkpoint written by "
                              "gpt)");
  if (fs::is_directory(path, ec)) {
    tapegrad::pretrained::PretrainedGPT2 gpt2 = tapegrad::pretrained::load_gpt2(path);
    if (!gpt2.tokenizer)
      throw tapegrad::DataError(path +
                                " has no vocab.json and merges.txt: the model's tokenizer "
                                "is needed to read and write text (copy GPT-2's two files "
                                "into the folder)");
    gpt2.model->eval();
    return {gpt2.model, tapegrad::data::Tokenizer(std::move(*gpt2.tokenizer)),
            "Hugging Face GPT-2 folder", seconds()};
  }
  const tapegrad::io::SafetensorsFile f = tapegrad::io::load_safetensors(path);
  auto [config, tokenizer] = read_model_notes(f, path);
  std::shared_ptr<tt::GPT> model;
  {
    tapegrad::nn::SkipInitGuard skip;  // io::load below writes every parameter (strict)
    model = std::make_shared<tt::GPT>(config, std::make_shared<tapegrad::Generator>(0));
  }
  tapegrad::io::load(*model, f, path);  // the "model." part of the training checkpoint, strict
  check_finite(*model, path);
  model->eval();
  return {model, std::move(tokenizer), "gpt checkpoint", seconds()};
}

}  // namespace gpt
