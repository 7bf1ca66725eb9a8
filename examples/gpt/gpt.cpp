// examples/gpt/gpt.cpp: train a small GPT on real text, character by character — nanoGPT's "baby
// GPT" (4 layers, 4 heads, width 128, context 64) on Debian's fortunes, or on any UTF-8 text.
//
//     gpt                                      # the baby GPT, 2,000 steps, a few minutes on one core
//     gpt --pos rope --norm rmsnorm --mlp swiglu   # LLaMA's pieces in the same block
//     gpt --data shakespeare.txt --out run2    # your own text
//     gpt --resume                             # continue an interrupted run, bit for bit
//     mpirun -np 2 gpt                         # data-parallel on 2 processes, 12 windows each
//     gpt --init-from gpt2 --data my.txt --block-size 256 --batch-size 4 --grad-accum 2 --lr 3e-5
//                                              # fine-tune OpenAI's GPT-2 (a Hugging Face folder)
//     gpt ... --export-hf my-gpt2             # and write the result in Hugging Face's layout
//     gpt --init-from SmolLM2-135M --data my.txt --lora-r 8 --export-adapter my-lora
//                                              # LoRA on a Llama folder, the adapter in PEFT's layout
//
// This program is its flags: everything else is the library's, in one call, train::run_gpt
// (include/tapegrad/train/gpt_run.hpp: the recipe, the data, the model, what the run shows), over
// train::Trainer (trainer.hpp: the steps, validation, checkpoints and exact resume, several ranks,
// Ctrl-C). A learner's own GPT trains through the same call: examples/own_model.
//
// One run per folder: --out and --export-hf are locked for the whole run, and no file the run
// writes may be one it reads. The first Ctrl-C (or SIGTERM) lets the current step finish, saves it
// and exits 130 (143); a token file that shrinks under the run stops it the same way, exit 2.
//
// Exit status: 0 when the validation loss fell below its value before training, 1 otherwise;
// 2 for bad flags, data or files, with one line saying which (examples/common/checked_main.hpp);
// 130 or 143 when stopped by SIGINT or SIGTERM, after saving.
#include <tuple>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/train.hpp>

#include "../common/checked_main.hpp"
#include "../common/flag_checks.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

using flags::Ends;
using flags::integer_in;
using flags::number_in;
using Limits = train::GPTLimits;

void add_model_flags(CLI::App& app, train::GPTRunOptions& o) {
  app.add_option("--tokenizer", o.text.tokenizer,
                 "what a token is: char (a character of the training text), bpe:N (a byte pair "
                 "encoding of N tokens trained on the training text, split as GPT-2 splits), "
                 "bpe-model:FILE (a BPE saved by tokenize --train-bpe), gpt2:DIR (GPT-2's, "
                 "from DIR's encoder.json and vocab.bpe), or hf:FILE (a pretrained model's "
                 "tokenizer.json, a byte-level BPE)");
  app.add_option("--block-size", o.block_size, "context length in tokens")
      ->check(integer_in(1, Limits::kMaxBlockSize));
  app.add_option("--n-layer", o.n_layer, "Transformer blocks")
      ->check(integer_in(1, Limits::kMaxLayers));
  app.add_option("--n-head", o.n_head, "attention heads (must divide --n-embd)")
      ->check(integer_in(1, Limits::kMaxHeads));
  app.add_option("--n-embd", o.n_embd, "model width")->check(integer_in(1, Limits::kMaxWidth));
  app.add_option("--dropout", o.dropout, "dropout probability")->check(number_in(0, 1));
  app.add_option("--pos", o.pos,
                 "positions: learned (GPT-2), sinusoidal, rope (rotary, LLaMA), none, alibi "
                 "(a bias on the scores: position none with --attention alibi)")
      ->check(flags::one_of({"learned", "sinusoidal", "rope", "none", "alibi"}));
  app.add_option("--attention", o.attention,
                 "the blocks' attention, by its registered name: causal (nanoGPT's) or alibi "
                 "(with --pos none), or a learner's (transformer/gpt_parts.hpp)")
      ->check(flags::one_of(tt::registered_attentions()));
  app.add_option("--norm", o.norm, "the blocks' norm: layernorm (GPT-2) or rmsnorm (LLaMA)")
      ->check(flags::one_of(tt::registered_norms()));
  app.add_option("--mlp", o.mlp,
                 "the blocks' MLP: gelu (GPT-2), relu_squared (Primer) or swiglu (LLaMA)")
      ->check(flags::one_of(tt::registered_mlps()));
  app.add_option("--gelu", o.gelu, "GELU form of --mlp gelu")
      ->check(flags::one_of({"none", "tanh"}));
}

// The upper bounds stop values that could only exhaust memory or time; the memory a step needs
// is bounded as a whole once the model's sizes are known (train::check_training_memory).
void add_training_flags(CLI::App& app, train::GPTRunOptions& o) {
  app.add_option("--steps", o.steps, "training steps (the schedule decays over them)")
      ->check(integer_in(1, 10'000'000));
  app.add_option("--batch-size", o.batch_size, "windows per step (per rank under mpirun)")
      ->check(integer_in(1, 65536));
  app.add_option("--lr", o.lr, "peak learning rate, after the warm-up")
      ->check(number_in(0, 10, Ends::open_low));
  app.add_option("--min-lr", o.min_lr, "learning rate at the end of the cosine decay (<= --lr)")
      ->check(number_in(0, 10));
  app.add_option("--warmup", o.warmup, "linear warm-up steps (at most --steps - 1 are used)")
      ->check(integer_in(0, 10'000'000));
  app.add_option("--beta1", o.beta1, "AdamW beta1")->check(number_in(0, 1, Ends::open_high));
  app.add_option("--beta2", o.beta2, "AdamW beta2")->check(number_in(0, 1, Ends::open_high));
  app.add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay of the matrices")
      ->check(number_in(0, 100));
  app.add_option("--grad-accum", o.grad_accum,
                 "micro-batches per step: the step's gradient is the mean over K batches of "
                 "--batch-size windows")
      ->check(integer_in(1, 1024));
  app.add_flag("--bf16", o.bf16,
               "mixed precision: the matrix products take bfloat16 operands and sum in float32, "
               "as torch.autocast(\"cpu\", dtype=torch.bfloat16); weights, gradients and AdamW "
               "stay float32 (docs/bf16.md)");
  app.add_flag("--recompute", o.recompute,
               "activation recompute: each block keeps its input, not its activations, and runs "
               "again in backward (torch.utils.checkpoint); the same bits, less memory, more time");
  app.add_option("--clip", o.clip, "gradient clipping norm (0: none)")->check(number_in(0, 1e6));
  app.add_option("--seed", o.seed, "seed of the initial weights, dropout and batches")
      ->check(flags::unsigned_integer());
  app.add_option("--threads", o.threads,
                 "threads of tapegrad's kernels (results do not depend on it)")
      ->check(integer_in(1, 256));
}

void add_run_flags(CLI::App& app, train::GPTRunOptions& o) {
  app.add_option("--data", o.text.data,
                 "UTF-8 text files (default: every fortune file in /usr/share/games/fortunes)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--data-format", o.text.data_format,
                 "how --data is read: fortunes (entries between lines holding only %, or "
                 "paragraphs in a file without such lines; split by whole entries, each followed "
                 "by a % line) or text (the files as one stream, as cat gives them: the first "
                 "1 - --val-fraction of the characters train, the rest validate; nothing added). "
                 "Default: fortunes for fortune files (a line that is exactly %), text for others")
      ->check(flags::one_of({"fortunes", "text"}));
  app.add_option("--tokens", o.text.tokens,
                 "a token file (tokenize --gpt2 DIR --text FILE --out FILE.tokens) to train on "
                 "instead of --data, read a window at a time: its last --val-fraction of ids "
                 "validate; needs --tokenizer gpt2:DIR or bpe-model:FILE");
  app.add_option("--val-fraction", o.text.val_fraction,
                 "share held out for validation: of the entries (fortunes), of the characters "
                 "(text) or of the ids (--tokens)")
      ->check(number_in(0, 1, Ends::open));
  app.add_option("--split-seed", o.text.split_seed,
                 "seed of the train/validation split and the validation windows")
      ->check(flags::unsigned_integer());
  app.add_option("--eval-every", o.eval_every,
                 "steps between validations and checkpoints (default: --steps / 8, at least 25 "
                 "and at most 250, so that the curve has points and a short run of a large model "
                 "does not spend its time saving)")
      ->check(integer_in(1, 10'000'000));
  app.add_option("--eval-windows", o.eval_windows, "fixed validation windows")
      ->check(integer_in(1, 100'000));
  app.add_option("--out", o.out,
                 "folder for checkpoints, data files and pictures (one run at a time: it is "
                 "locked for the run)");
  app.add_option("--init-from", o.init_from,
                 "start from the Hugging Face model in DIR: a GPT-2 (config.json, "
                 "model.safetensors, vocab.json, merges.txt) or a Llama (config.json with "
                 "model_type llama, model.safetensors or its shards, tokenizer.json): its sizes, "
                 "weights and tokenizer");
  app.add_option("--export-hf", o.export_hf,
                 "when training ends, write the model to DIR in Hugging Face's layout (a GPT: "
                 "GPT-2's choices only, --pos learned --norm layernorm --mlp gelu; a Llama: its "
                 "folder's config.json and tokenizer files); DIR new or empty, locked for the "
                 "run, filled whole at the end");
  app.add_option("--lora-r", o.lora_r,
                 "train LoRA adapters of rank R (PEFT's) on --lora-targets, every other weight "
                 "frozen (0: train every weight)")
      ->check(integer_in(0, 4096));
  app.add_option("--lora-alpha", o.lora_alpha, "LoRA's scaling numerator: alpha / r")
      ->check(number_in(0, 1e6, Ends::open_low));
  app.add_option("--lora-dropout", o.lora_dropout, "dropout on the adapters' input")
      ->check(number_in(0, 1, Ends::open_high));
  app.add_option("--lora-targets", o.lora_targets,
                 "comma-separated module names the adapters go on, matched as PEFT's "
                 "target_modules (default: q_proj,v_proj for a Llama, c_attn for a GPT)");
  app.add_option("--export-adapter", o.export_adapter,
                 "when training ends, write the LoRA adapters to DIR in PEFT's layout "
                 "(adapter_config.json, adapter_model.safetensors); DIR new or empty");
  app.add_flag("--merge-adapter", o.merge_adapter,
               "fold the LoRA adapters into the weights --export-hf writes (W += alpha / r B A)");
  app.add_flag("--resume", o.resume, "continue from OUT/last.safetensors");
  app.add_option("--stop-after", o.stop_after,
                 "stop after this step (checkpoint saved), to --resume later")
      ->check(integer_in(0, 10'000'000));
  app.add_option("--sample-tokens", o.sample_tokens, "tokens to generate at the end")
      ->check(integer_in(0, 100'000));
  app.add_flag("--quiet", o.quiet, "no progress lines");
  app.add_option("--profile", o.profile,
                 "print the profiler's table of this many training steps, taken after 10 "
                 "warm-up steps: each op's forward and backward time, the products' GFLOP/s, "
                 "[bf16] on the products run in bfloat16 (docs/engine.md#the-profiler)")
      ->check(integer_in(1, 10'000'000));
  app.add_flag(
      "--check-in-sync", o.check_in_sync,
      "under mpirun: after every backward, check that every rank holds the same bits (slower)");
}

// The flags; the library checks them together (train::check_options).
train::GPTRunOptions parse_options(int argc, char** argv) {
  train::GPTRunOptions o;
  CLI::App app(
      "Train a small GPT on real text, one character at a time (nanoGPT's baby GPT on Debian's "
      "fortunes). Its last line, \"gpt result: ...\", gives seconds= (the training steps alone) "
      "and wall_seconds= (the whole run: data, validations, checkpoints, pictures, sample)");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last wins
  app.option_defaults()->always_capture_default();  // --help shows them
  add_model_flags(app, o);
  add_training_flags(app, o);
  add_run_flags(app, o);
  examples::parse_flags(app, argc, argv);
  // An empty name means "not given" to the library: given so (a shell variable that was never
  // set, --tokens "$TOKENS"), it would train on the fortunes, start from random weights or export
  // nothing, without a word.
  for (const auto& [flag, value, what] : {std::tuple{"--tokens", &o.text.tokens, "a file"},
                                          std::tuple{"--init-from", &o.init_from, "a folder"},
                                          std::tuple{"--export-hf", &o.export_hf, "a folder"}})
    if (app.get_option(flag)->count() > 0 && value->empty())
      throw examples::FlagError(std::string(flag) + ": expected " + what + " name, got ''");
  if (!o.init_from.empty()) {  // the folder gives the model and its tokenizer
    for (const char* flag : {"--tokenizer", "--n-layer", "--n-head", "--n-embd", "--pos",
                             "--attention", "--norm", "--mlp", "--gelu"})
      if (app.get_option(flag)->count() > 0)
        throw examples::FlagError(std::string(flag) + " does not go with --init-from: the model " +
                                  "and its tokenizer come from " + o.init_from);
    if (app.get_option("--block-size")->count() == 0) o.block_size = 0;  // 0: n_positions
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("gpt", [&] {
    keep_freed_memory(true);             // a training process reuses its freed buffers (memory.hpp)
    train::Session session(argc, argv);  // MPI under mpirun; rank 0 speaks for the job
    const int status =
        session.run("gpt", [&] { return train::run_gpt(parse_options(argc, argv), session); });
    // Lines that could not be written (a full disk, a closed pipe) are no success: the result line
    // is what a script reads. (The checkpoints were written all the same.)
    std::cout.flush();
    if (session.rank() == 0 && !std::cout)
      throw DataError(
          "cannot write to standard output: the run's lines and its result line are "
          "lost (its checkpoints are in --out)");
    return status;
  });
}
