// examples/own_model/own_model.cpp: a GPT of one's own, trained by the library's trainer. Its
// attention is multi-query (Shazeer, 2019): every query head reads ONE shared key/value head,
// which makes the cache of keys and values n_head times smaller when sampling. It is registered
// by name, so the checkpoints name it and a resumed run rebuilds it; the rest is tapegrad::train:
// validation, best/last checkpoints, --resume, mpirun, Ctrl-C, the pictures and a sample.
//
//     own_model --steps 300 --out mqa_run          # train (Debian's fortunes)
//     own_model --steps 600 --out mqa_run --resume # go on, bit for bit
//     mpirun -np 2 own_model --out mqa_run2        # on 2 processes
#include <charconv>
#include <iostream>
#include <memory>
#include <string>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/train.hpp>

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

// x (B, T, C) -> q (n_head heads), k and v (one head each), packed as (B, T, C + 2 C / n_head):
// the fused causal attention reads the one key/value head for every query head, never copied.
class MultiQueryAttention : public tt::BlockAttention {
 public:
  MultiQueryAttention(const tt::GPTConfig& c, std::shared_ptr<Generator> g)
      : qkv(register_module("qkv",
                            linear(c.n_embd(), c.n_embd() + 2 * c.n_embd() / c.n_head(), g))),
        c_proj(register_module("c_proj", linear(c.n_embd(), c.n_embd(), g))),
        attn_dropout(
            register_module("attn_dropout", std::make_shared<nn::Dropout>(c.dropout(), g))),
        resid_dropout(
            register_module("resid_dropout", std::make_shared<nn::Dropout>(c.dropout(), g))),
        n_head(c.n_head()) {}

  Tensor forward(const Tensor& x, Array* attention) override {
    autograd::ModuleScope scope(type_name(), path());  // errors and profiles name it
    auto options = CausalAttentionOptions()
                       .n_kv_head(1)
                       .dropout(attn_dropout->options().p())
                       .training(attn_dropout->is_training());
    if (attn_dropout->is_training() && attn_dropout->options().p() > 0.0)
      options.dropout_stream(attn_dropout->next_stream());
    const Tensor y = ops::causal_self_attention(qkv->forward(x), n_head, options, attention);
    return resid_dropout->forward(c_proj->forward(y));  // c_proj: a residual projection, by name
  }

  std::shared_ptr<nn::Linear> qkv, c_proj;
  std::shared_ptr<nn::Dropout> attn_dropout, resid_dropout;
  std::int64_t n_head;

 private:
  static std::shared_ptr<nn::Linear> linear(std::int64_t in, std::int64_t out,
                                            std::shared_ptr<Generator> g) {
    return std::make_shared<nn::Linear>(nn::LinearOptions(in, out), std::move(g));
  }
};

// --steps N: the whole text a whole number in [1, 10^7], as gpt's --steps (std::atoll would read
// "1e3" as 1, "10abc" as 10 and 99999999999999999999 as 2^63 - 1 steps, without a word).
std::int64_t steps_flag(const std::string& text) {
  std::int64_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || n < 1 ||
      n > 10'000'000)
    throw ValueError("--steps: expected an integer in [1, 10000000], got '" + text + "'");
  return n;
}

// A few flags, by hand: this program's point is its model, not its command line.
train::GPTRunOptions options(int argc, char** argv) {
  train::GPTRunOptions o;
  o.attention = "mqa";
  o.steps = 300, o.out = "own_model_out", o.sample_tokens = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--resume")
      o.resume = true;
    else if (flag == "--quiet")
      o.quiet = true;
    else if (flag == "--steps" && has_value)
      o.steps = steps_flag(argv[++i]);
    else if (flag == "--out" && has_value)
      o.out = argv[++i];
    else if (flag == "--data" && has_value)
      o.text.data.push_back(argv[++i]);
    else
      throw ValueError(flag + ": expected --steps N, --out DIR, --data FILE, --resume or --quiet");
  }
  return o;
}

int main(int argc, char** argv) {
  try {
    tt::register_attention("mqa", [](const tt::GPTConfig& c, std::shared_ptr<Generator> g) {
      return std::make_shared<MultiQueryAttention>(c, std::move(g));
    });
    train::Session session(argc, argv);  // MPI under mpirun; rank 0 speaks for the job
    return session.run("own_model", [&] { return train::run_gpt(options(argc, argv), session); });
  } catch (const std::exception& e) {
    std::cerr << "own_model: " << e.what() << "\n";
    return 2;
  }
}
