// include/tapegrad/train/gpt_run.hpp
//
// A GPT trained on text, from start to end: what examples/gpt/gpt.cpp does after reading its
// flags, in one call, for the library's GPT or a learner's (a GPT whose attention, MLP or norm is
// a part registered by name: transformer/gpt_parts.hpp).
//
//     train::Session session(argc, argv);      // MPI under mpirun, rank 0's console
//     train::GPTRunOptions o;                  // nanoGPT's baby GPT on Debian's fortunes
//     o.attention = "mqa";                     // a learner's registered attention
//     return train::run_gpt(o, session);       // 0, 1 (the loss did not fall), 128 + a signal
//
// The recipe (nanoGPT's train.py): random windows of the training text, the mean cross-entropy of
// every next token, AdamW (betas 0.9, 0.99; weight decay 0.1 on the matrices only,
// GPT::parameter_groups), gradients clipped to norm 1, the learning rate warmed up linearly for
// --warmup steps, then cosine-decayed from --lr to --min-lr (optim::cosine_with_warmup). The
// Trainer (trainer.hpp) validates every --eval-every steps and writes OUT/last.safetensors and
// OUT/best.safetensors with the model's description (gpt_model.hpp), so --resume continues exactly
// and gpt_sample rebuilds the model. At the end: the loss picture and the attention heatmaps
// (gnuplot), a sample of generated text, --export-hf's folder, and one line "gpt result: ..."
// for bench/gpt_compare.
//
// --init-from DIR starts from a Hugging Face folder instead of random weights, a GPT-2's (vocab.json
// and merges.txt its tokenizer) or a Llama's (LlamaForCausalLM, its tokenizer.json): its sizes,
// weights and tokenizer replace the model's fields and --tokenizer; --block-size then sets the
// training windows, at most the model's context (the default).
//
// --lora-r R trains LoRA adapters (PEFT's, nn/lora.hpp) on the --lora-targets Linears and freezes
// every other weight; --export-adapter DIR writes them in PEFT's layout at the end, and
// --merge-adapter folds them into the weights --export-hf writes.
#pragma once

#include <cstdint>
#include <string>

#include "tapegrad/train/session.hpp"
#include "tapegrad/train/text_data.hpp"

namespace tapegrad::train {

/// Every setting of a run. Each field is the flag of gpt of the same name (--n-layer is
/// n_layer), and its messages name the flags; the defaults are gpt's.
struct GPTRunOptions {
  TextOptions text;  ///< --data, --tokens, --data-format, --tokenizer, --val-fraction, --split-seed

  // The model (replaced by --init-from's folder).
  std::int64_t block_size = 64, n_layer = 4, n_head = 4, n_embd = 128;
  double dropout = 0.0;
  std::string pos = "learned";       ///< learned, sinusoidal, rope, none, alibi
  std::string attention = "causal";  ///< a registered attention (gpt_parts.hpp)
  std::string norm = "layernorm";    ///< a registered norm: layernorm, rmsnorm, ...
  std::string mlp = "gelu";          ///< a registered MLP: gelu, relu_squared, swiglu, ...
  std::string gelu = "none";         ///< the GELU of mlp gelu: none or tanh

  // The training.
  std::int64_t steps = 2000, batch_size = 12, warmup = 100, grad_accum = 1;
  double lr = 1e-3, min_lr = 1e-4, beta1 = 0.9, beta2 = 0.99, weight_decay = 0.1, clip = 1.0;
  std::uint64_t seed = 0;
  bool bf16 = false;
  bool recompute = false;  ///< each Block run again in backward instead of keeping its activations
  std::int64_t threads = 1;

  // The run.
  std::int64_t eval_every = 0;  ///< 0: the default, steps / 8 within [min(25, steps), 250]
  std::int64_t eval_windows = 480, stop_after = 0, profile = 0, sample_tokens = 500;
  std::string out = "gpt_out", init_from, export_hf;

  // LoRA (PEFT's): 0 trains every weight.
  std::int64_t lora_r = 0;
  double lora_alpha = 8.0, lora_dropout = 0.0;  ///< PEFT's defaults
  /// Comma-separated module names, matched as PEFT matches them; "" is PEFT's default for the
  /// model: q_proj,v_proj for a Llama, c_attn for a GPT.
  std::string lora_targets;
  std::string export_adapter;  ///< PEFT's adapter folder, written at the end
  bool merge_adapter = false;  ///< fold the adapters into the weights for --export-hf
  bool resume = false, quiet = false, check_in_sync = false;
};

/// The default --eval-every of a run of `steps`: every eighth of the run, but not more often than
/// every 25 steps (a validation and a checkpoint each time: a short run of a large model would
/// spend more time saving than training) and at least every 250.
std::int64_t default_eval_every(std::int64_t steps);

/// The options checked together (each one's range is the flags' own): ValueError naming the flags
/// that do not go together. Clamps a warm-up longer than the run, saying so, and sets the default
/// eval_every.
void check_options(GPTRunOptions& o);

/// Trains as the top of this file says. Returns the exit status: 0 when the validation loss fell
/// below its value before training, 1 otherwise; 128 + the signal for a run stopped by SIGINT or
/// SIGTERM (saved: --resume continues it). Throws, naming the flag or file, for anything that
/// cannot be used (the program exits 2).
int run_gpt(GPTRunOptions o, const Session& session);

}  // namespace tapegrad::train
