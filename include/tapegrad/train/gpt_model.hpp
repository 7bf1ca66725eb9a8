// include/tapegrad/train/gpt_model.hpp
//
// The GPT the training programs build, described so that any program can rebuild it:
//
//   * its bounds, counted from its sizes before anything is allocated: a config outside them is
//     refused with the figure, instead of a build that runs for minutes or ends in bad_alloc;
//   * its description in a checkpoint: the notes "gpt.*" (its sizes, its parts BY NAME, its
//     tokenizer as text), written into every checkpoint of a run and read back, every note
//     checked, by gpt --resume, gpt_sample, gpt_eval and a learner's own program;
//   * loading it back from a checkpoint, or from a Hugging Face GPT-2 folder.
//
// A part a learner registered (transformer/gpt_parts.hpp: an attention, an MLP, a norm) is stored
// under its name: the program that reads the checkpoint must have registered the same name, and
// one that has not is refused, naming the part and how to register it. A part given only as a
// factory (GPTConfig::make_attention) has no name: such a model is refused at the first save.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "tapegrad/core/tensor.hpp"
#include "tapegrad/data/tokenizer.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/transformer/causal_lm.hpp"
#include "tapegrad/transformer/gpt.hpp"
#include "tapegrad/transformer/llama.hpp"

namespace tapegrad::train {

/// Each size's range, for the flags of the programs and the notes they read back.
struct GPTLimits {
  static constexpr std::int64_t kMaxLayers = 1000, kMaxHeads = 1024, kMaxWidth = 65536,
                                kMaxBlockSize = 65536, kMaxVocab = 1'114'112;  // every code point
  /// nanoGPT's GPT-2 small has 124 M parameters: more is not a model for a CPU program.
  static constexpr double kMaxParameters = 200e6;
  /// The share of the memory this process may use (tapegrad::machine_memory_bytes) that one
  /// training step may hold; the rest is left for the data, the program and the system.
  static constexpr double kTrainingShareOfMemory = 0.8;
};

/// What bounds the memory of running a causal language model, whichever its kind, counted from
/// its config (the programs' estimates: examples/gpt/inference_memory.hpp).
struct ModelSizes {
  std::int64_t vocab = 0, context = 0, layers = 0, heads = 0, width = 0;
  /// Floats a block holds per position while it runs: the GPT's 12 C (the residual, the
  /// normalised input, q, k, v, the attention's output, the MLP's two hidden layers of 4 C).
  std::int64_t activation_width = 0;
  /// Floats of keys (and as many of values) a layer caches per position: C for the GPT, the
  /// key/value heads' K d for a Llama.
  std::int64_t cache_width = 0;
  /// Whether the cache is allocated for the whole context at once (the GPT's), or grows by
  /// doubling up to it (the Llama's).
  bool cache_whole_context = true;
};
ModelSizes sizes_of(const nn::transformer::GPTConfig& c);
ModelSizes sizes_of(const nn::transformer::LlamaConfig& c);

/// The parameters of a GPT of config `c`, the tied token table once, the position table included:
/// GPT::num_params(false) of the model once built, for the built-in parts (a learner's part is
/// counted as the built-in one of its kind: the estimate bounds, it does not report).
double parameter_count(const nn::transformer::GPTConfig& c);
/// About the bytes one training step of `batch` windows of c.block_size() holds: 16 per parameter
/// (weight, gradient, AdamW's two moments) and 4 per activation kept for backward.
double training_bytes(const nn::transformer::GPTConfig& c, std::int64_t batch);
/// ValueError naming the figure when the model has more than GPTLimits::kMaxParameters
/// parameters (`what` says where the config came from: "the flags", a file).
void check_parameter_count(const nn::transformer::GPTConfig& c, const std::string& what);
/// ValueError naming the estimate, the machine's memory and the flags that lower it when a
/// training step would hold more than GPTLimits::kTrainingShareOfMemory of the memory this
/// process may use. A step reads its `grad_accum` batches of ids (inputs and targets, 8 bytes
/// each) before it starts, and the run keeps its `eval_windows` validation windows: they count too.
void check_training_memory(const nn::transformer::GPTConfig& c, std::int64_t batch,
                           std::int64_t grad_accum = 1, std::int64_t eval_windows = 0);

/// The same for any model, counted from its sizes (train::sizes_of, below): 4 bytes per parameter,
/// 12 more per parameter that trains (its gradient, AdamW's two moments: a frozen one has none),
/// and 4 per activation kept for backward: every block's, or with `recompute` every block's input
/// and one block's activations at a time. ValueError as above, naming the flags that lower it.
double training_bytes(const ModelSizes& s, double parameters, double trained, std::int64_t batch,
                      std::int64_t T, bool recompute);
void check_training_memory(const ModelSizes& s, double parameters, double trained,
                           std::int64_t batch, std::int64_t T, bool recompute);

/// The notes that describe the model: its config (its parts by name) and its tokenizer (its
/// name, and itself as text, so that nothing else is needed to read a prompt). ValueError for a
/// config whose part was given as a factory only: it has no name a checkpoint can store.
std::map<std::string, std::string> model_notes(const nn::transformer::GPTConfig& c,
                                               const data::Tokenizer& tokenizer);

/// The note `progress.extra.<key>` of a checkpoint, or, for the notes added after the first
/// files were written (gpt.norm, gpt.mlp, gpt.attention, ...), the value those files were made
/// with; CheckpointError naming the file when it is absent.
std::string note_or_default(const io::SafetensorsFile& f, const std::string& key,
                            const std::string& path);

/// The config and tokenizer a checkpoint of a GPT run was trained with, every note checked
/// (CheckpointError naming the file and the note; ValueError naming a part this program has not
/// registered) and the model's size bounded, before anything is allocated.
std::pair<nn::transformer::GPTConfig, data::Tokenizer> read_model_notes(
    const io::SafetensorsFile& f, const std::string& path);

/// A causal language model (the GPT, or a Llama) and its tokenizer, loaded to sample or score
/// (gpt_sample, gpt_eval), in eval mode.
struct LoadedModel {
  std::shared_ptr<nn::transformer::CausalLM> model;
  data::Tokenizer tokenizer;
  std::string kind;  ///< "Hugging Face GPT-2 folder", "Hugging Face Llama folder", "gpt checkpoint"
  double seconds = 0.0;  ///< the time the load took
  ModelSizes sizes;
  /// The parameters: the GPT's num_params(false) (its position table included), the Llama's
  /// num_params() (the tied table once), the adapter's matrices included.
  std::int64_t parameters = 0;
  /// "" or, with an adapter, " with the LoRA adapter DIR (r R, lora_alpha A, N layers)".
  std::string adapter;
  /// The GPT when the model is one, else null.
  nn::transformer::GPT* gpt() const;
  std::string unit() const { return tokenizer.name() == "char" ? "characters" : "tokens"; }
  /// "parameters (position table included)" for a GPT, "parameters" for a Llama.
  std::string parameters_text() const;
};

/// The model at `path`: a Hugging Face folder holding a GPT-2 (config.json, model.safetensors,
/// vocab.json, merges.txt: OpenAI's, or one exported by gpt --export-hf) or a Llama (config.json
/// with model_type "llama", model.safetensors or its shards, tokenizer.json), or a checkpoint
/// written by a GPT run (best.safetensors, last.safetensors), whose notes give the config and the
/// tokenizer. With `adapter`, a LoRA adapter folder in PEFT's layout is attached to it
/// (pretrained/lora_adapter.hpp). Every check runs before the model is built, its weights must be
/// finite, and it comes back in eval mode. DataError or CheckpointError naming --model (or
/// --adapter) and the file.
LoadedModel load_model(const std::string& path, const std::string& adapter = "");

/// DataError naming the parameter, its value and its position when one holds NaN or an infinity:
/// io::load takes any float (a safetensors file may hold Inf on purpose), so a diverged run's
/// checkpoint would otherwise load and sample NaN logits.
void check_finite(const nn::Module& model, const std::string& source);

/// The logits a scoring pass computes at once: rows of `vocab` floats, about 16 MiB of them.
std::int64_t logit_rows(std::int64_t vocab);

/// The cross-entropy of the model's next-token predictions for x (B, T) against y (B, T), SUMMED
/// over the targets not equal to `ignore` (eval mode is the caller's): the features once, then
/// the logits at most logit_rows(vocab) rows at a time, so that a long window of a large
/// vocabulary never holds all its logits. What validation and gpt_eval score with.
double summed_loss(nn::transformer::GPT& model, const IndexArray& x, const IndexArray& y,
                   std::int64_t ignore);
/// The same for any CausalLM: the GPT's and a Llama's logits a few rows at a time, another
/// model's all at once.
double summed_loss(nn::transformer::CausalLM& model, const IndexArray& x, const IndexArray& y,
                   std::int64_t ignore);
/// nanoGPT's estimate of a training step's FLOPs per token, 6 N + 12 L H d T (N the parameters,
/// d the head size, T the model's context): GPT::flops_per_token(), and the same for a Llama.
double flops_per_token(const nn::transformer::CausalLM& model);

/// The --pos choices of the programs: the library's positions (learned, sinusoidal, rope, none)
/// and "alibi", which is position "none" with ALiBi's attention (transformer/alibi.hpp).
nn::transformer::GPTConfig with_position(nn::transformer::GPTConfig c, const std::string& pos);
/// The --pos choice a config was made with ("alibi" for position none with ALiBi's attention).
std::string position_name(const nn::transformer::GPTConfig& c);

}  // namespace tapegrad::train
