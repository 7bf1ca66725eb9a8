// examples/gpt/model_notes.hpp: the model's settings and vocabulary, stored in a checkpoint's
// metadata as the TrainingProgress notes "gpt.*", so that gpt_sample rebuilds the same model and
// gpt --resume knows it continues the same one.
//
// Read back, every note is parsed strictly ("1abc" is not 1) and checked against the range the
// flags of gpt allow; the vocabulary must be distinct code points in ascending order (any
// character a training text held, control characters included); and the notes must fit the
// tensors beside them (the token table is vocabulary x n_embd, there are n_layer blocks, a
// learned position table is block_size x n_embd) before a model is built from them. The library
// checks the file itself (its checksums; io/checkpoint.hpp).
#pragma once

#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <tapegrad/tapegrad.hpp>

#include "../common/flag_checks.hpp"
#include "alibi.hpp"
#include "model_size.hpp"

namespace gpt {

/// The --pos choices of these programs: the library's positions (learned, sinusoidal, rope, none)
/// and alibi, no position table and the attention of alibi.hpp in every Block.
inline tt::GPTConfig with_position(tt::GPTConfig c, const std::string& pos) {
  if (pos == "alibi") return c.position("none").make_attention(examples::alibi_attention());
  return c.position(pos);
}
/// The --pos choice a config was made with (the only attention these programs plug in is ALiBi's).
inline std::string position_name(const tt::GPTConfig& c) {
  return c.make_attention() ? "alibi" : c.position();
}

/// The notes that describe the model: its config and its tokenizer (its name, and itself as
/// text: the characters, or the BPE's merges, so that nothing else is needed to read a prompt).
inline std::map<std::string, std::string> model_notes(const tt::GPTConfig& c,
                                                      const tapegrad::data::Tokenizer& tokenizer) {
  return {{"gpt.tokenizer", tokenizer.name()},
          {"gpt.vocab", tokenizer.to_text()},
          {"gpt.block_size", std::to_string(c.block_size())},
          {"gpt.n_layer", std::to_string(c.n_layer())},
          {"gpt.n_head", std::to_string(c.n_head())},
          {"gpt.n_embd", std::to_string(c.n_embd())},
          {"gpt.dropout", tapegrad::py_float(c.dropout())},
          {"gpt.position", position_name(c)},
          {"gpt.norm", c.norm()},
          {"gpt.mlp", c.mlp()},
          {"gpt.gelu", c.gelu()},
          {"gpt.norm_eps", tapegrad::py_float(c.norm_eps())}};
}

/// A checkpoint's metadata value `progress.extra.<key>`; CheckpointError naming the file if absent.
inline std::string note(const tapegrad::io::SafetensorsFile& f, const std::string& key,
                        const std::string& path) {
  const auto v = f.metadata_value("progress.extra." + key);
  if (!v)
    throw tapegrad::CheckpointError(
        "'" + path + "' holds no note '" + key + "': not a checkpoint of examples/gpt",
        "InvalidCheckpoint");
  return *v;
}

/// note(), or for the notes added after the first files were written (gpt.norm, gpt.mlp, ...) the value
/// those files were made with.
inline std::string note_or_default(const tapegrad::io::SafetensorsFile& f, const std::string& key,
                                   const std::string& path) {
  const auto v = f.metadata_value("progress.extra." + key);
  if (!v && key == "gpt.norm") return "layernorm";
  if (!v && key == "gpt.mlp") return "gelu";
  if (!v && key == "gpt.tokenizer") return "char";
  if (!v && key == "gpt.norm_eps") return tapegrad::py_float(1e-5);
  if (!v && key == "gpt.train_block_size") return note(f, "gpt.block_size", path);  // (were equal)
  if (!v && key == "gpt.data_format") return "fortunes";  // --data was read as fortunes only
  return v ? *v : note(f, key, path);
}

/// A note that does not hold what it should: CheckpointError naming the file, the note and the text.
[[noreturn]] inline void bad_note(const std::string& path, const std::string& key,
                                  const std::string& expected, const std::string& text) {
  throw tapegrad::CheckpointError("'" + path + "': the note '" + key + "': expected " + expected +
                                      ", got '" + text.substr(0, 40) + "'",
                                  "InvalidCheckpoint");
}

inline std::int64_t integer_note(const tapegrad::io::SafetensorsFile& f, const std::string& key,
                                 const std::string& path, std::int64_t low, std::int64_t high) {
  const std::string text = note(f, key, path);
  std::int64_t v = 0;
  if (!flags::parse_integer(text, v) || v < low || v > high)
    bad_note(path, key, "an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]",
             text);
  return v;
}

inline std::string choice_note(const tapegrad::io::SafetensorsFile& f, const std::string& key,
                               const std::string& path, const std::vector<std::string>& choices) {
  const std::string text = note_or_default(f, key, path);
  std::string list;
  for (const std::string& c : choices) {
    if (text == c) return text;
    list += (list.empty() ? "" : ", ") + c;
  }
  bad_note(path, key, "one of " + list, text);
}

/// The config's notes against the tensors they describe, before anything is allocated.
inline void check_notes_fit_tensors(const tt::GPTConfig& c, const tapegrad::io::SafetensorsFile& f,
                                    const std::string& path) {
  auto shape_of = [&](const std::string& name) -> std::string {
    if (!f.contains(name)) return "none";
    std::string s = "(";
    for (std::size_t d : f.record(name).shape) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
    return s + ")";
  };
  auto expect = [&](const std::string& name, const std::string& shape, const std::string& notes) {
    if (shape_of(name) != shape)
      throw tapegrad::CheckpointError("'" + path + "': the notes " + notes + " say '" + name +
                                          "' is " + shape + ", the file holds " + shape_of(name),
                                      "InvalidCheckpoint");
  };
  const std::string C = std::to_string(c.n_embd());
  expect("model.lm_head.weight", "(" + std::to_string(c.vocab_size()) + ", " + C + ")",
         "gpt.vocab and gpt.n_embd");
  expect("model.transformer.h." + std::to_string(c.n_layer() - 1) + ".attn.c_attn.weight",
         "(" + std::to_string(3 * c.n_embd()) + ", " + C + ")", "gpt.n_layer and gpt.n_embd");
  expect("model.transformer.h." + std::to_string(c.n_layer()) + ".attn.c_attn.weight", "none",
         "gpt.n_layer");
  if (c.position() == "learned")
    expect("model.transformer.wpe.weight", "(" + std::to_string(c.block_size()) + ", " + C + ")",
           "gpt.block_size and gpt.n_embd");
}

/// The config and tokenizer a checkpoint of examples/gpt was trained with, every note checked
/// (CheckpointError naming the file and the note) and the model's size bounded (ValueError).
inline std::pair<tt::GPTConfig, tapegrad::data::Tokenizer> read_model_notes(
    const tapegrad::io::SafetensorsFile& f, const std::string& path) {
  const std::string name = choice_note(f, "gpt.tokenizer", path, {"char", "bpe", "gpt2"});
  std::optional<tapegrad::data::Tokenizer> tokenizer;
  try {
    tokenizer = tapegrad::data::Tokenizer::from_text(name, note(f, "gpt.vocab", path),
                                                     "the note 'gpt.vocab'");
  } catch (const tapegrad::ValueError& e) {
    throw tapegrad::CheckpointError("'" + path + "': the note 'gpt.vocab': " + e.what(),
                                    "InvalidCheckpoint");
  }
  tt::GPTConfig c(tokenizer->vocab_size(),
                  integer_note(f, "gpt.block_size", path, 1, Limits::kMaxBlockSize));
  c = with_position(c, choice_note(f, "gpt.position", path,
                                   {"learned", "sinusoidal", "rope", "none", "alibi"}));
  c.n_layer(integer_note(f, "gpt.n_layer", path, 1, Limits::kMaxLayers))
      .n_head(integer_note(f, "gpt.n_head", path, 1, Limits::kMaxHeads))
      .n_embd(integer_note(f, "gpt.n_embd", path, 1, Limits::kMaxWidth))
      .norm(choice_note(f, "gpt.norm", path, {"layernorm", "rmsnorm"}))
      .mlp(choice_note(f, "gpt.mlp", path, {"gelu", "relu_squared", "swiglu"}))
      .gelu(choice_note(f, "gpt.gelu", path, {"none", "tanh"}));
  const std::string dropout = note(f, "gpt.dropout", path);
  double p = 0;
  if (!flags::parse_number(dropout, p) || !(p >= 0 && p <= 1))
    bad_note(path, "gpt.dropout", "a number in [0, 1]", dropout);
  c.dropout(p);
  const std::string eps = note_or_default(f, "gpt.norm_eps", path);
  double epsilon = 0;
  if (!flags::parse_number(eps, epsilon) || !(epsilon > 0 && epsilon < 1))
    bad_note(path, "gpt.norm_eps", "a number in (0, 1)", eps);
  c.norm_eps(epsilon);
  try {
    tt::validate(c);  // n_embd a multiple of n_head, an even head size with rope, ...
  } catch (const tapegrad::ValueError& e) {
    throw tapegrad::CheckpointError("'" + path + "': its notes: " + e.what(), "InvalidCheckpoint");
  }
  check_parameter_count(c, "'" + path + "': its notes");
  check_notes_fit_tensors(c, f, path);
  return {c, std::move(*tokenizer)};
}

}  // namespace gpt
