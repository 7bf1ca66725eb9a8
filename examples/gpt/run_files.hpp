// examples/gpt/run_files.hpp: what the GPT programs write and read besides the weights.
//
//   the model's settings and vocabulary    the notes "gpt.*" (model_notes.hpp)
//   the loss history                       also in the notes, so a resumed run draws the whole curve
//   pictures                               loss.dat, val.dat, attention_l{L}_h{H}.dat and plots.gp in
//                                          the output folder; gnuplot (if installed) draws loss.png
//                                          and attention.png from them (examples/common/gnuplot.hpp)
// Every file is written whole or not at all (tapegrad::AtomicFile).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../common/gnuplot.hpp"

namespace gpt {

namespace tt = tapegrad::nn::transformer;

/// Floats as text with every bit kept (hex floats), for the loss history in the notes.
inline std::string floats_text(const std::vector<float>& v) {
  std::ostringstream os;
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? " " : "") << std::hexfloat << v[i];
  return os.str();
}
/// The inverse of floats_text; CheckpointError naming `what` for a word that is not a number.
inline std::vector<float> floats_from(const std::string& text, const std::string& what) {
  std::vector<float> v;
  std::istringstream is(text);
  for (std::string word; is >> word;) {
    char* end = nullptr;
    v.push_back(std::strtof(word.c_str(), &end));
    if (end != word.c_str() + word.size())
      throw tapegrad::CheckpointError(what + ": expected numbers, got '" + word.substr(0, 40) + "'",
                                      "InvalidCheckpoint");
  }
  return v;
}

/// The loss history's validation part: "step loss step loss ...", steps rising within [0, step],
/// starting with the validation before training (step 0). CheckpointError naming the file.
inline std::vector<std::pair<std::int64_t, float>> val_history_from(const std::string& text,
                                                                    std::int64_t step,
                                                                    const std::string& path) {
  const std::vector<float> v = floats_from(text, "'" + path + "': history.val");
  std::vector<std::pair<std::int64_t, float>> history;
  for (std::size_t i = 0; i + 1 < v.size(); i += 2) {
    const float at = v[i];
    const bool rising = history.empty() ? at == 0 : at > float(history.back().first);
    if (!(rising && at <= float(step) && at == std::floor(at)) || v.size() % 2 != 0)
      throw tapegrad::CheckpointError("'" + path +
                                          "': the note 'history.val': expected (step, loss) "
                                          "pairs from step 0 rising to the run's step " +
                                          std::to_string(step),
                                      "InvalidCheckpoint");
    history.emplace_back(std::int64_t(at), v[i + 1]);
  }
  if (history.empty())
    throw tapegrad::CheckpointError("'" + path + "': the note 'history.val' holds no validation",
                                    "InvalidCheckpoint");
  return history;
}

/// The best validation loss as text with every bit kept, and back: a number >= 0 or "inf" (none
/// yet). CheckpointError naming the file for anything else ("abc" is not 0).
inline std::string best_val_text(double v) {
  std::ostringstream b;
  b << std::hexfloat << v;
  return b.str();
}
inline double best_val_from(const std::string& text, const std::string& path) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= 0))
    throw tapegrad::CheckpointError("'" + path +
                                        "': the note 'best_val': expected a loss >= 0, got '" +
                                        text.substr(0, 40) + "'",
                                    "InvalidCheckpoint");
  return v;
}

/// x with `digits` decimals.
inline std::string fixed(double x, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << x;
  return os.str();
}

/// "4.2 s", "38 s", "3 min 05 s".
inline std::string duration(double seconds) {
  if (seconds < 60) return fixed(seconds, seconds < 10 ? 1 : 0) + " s";
  const auto s = static_cast<std::int64_t>(seconds + 0.5);
  std::ostringstream os;
  os << s / 60 << " min " << std::setw(2) << std::setfill('0') << s % 60 << " s";
  return os.str();
}

/// Whether `name` is one of the files the GPT program writes into its --out folder.
inline bool is_run_output(const std::string& name) {
  for (const char* ours : {"last.safetensors", "best.safetensors", "loss.dat", "val.dat",
                           "plots.gp", "loss.png", "attention.png"})
    if (name == ours) return true;
  return name.rfind("attention_l", 0) == 0 && name.ends_with(".dat");
}

/// A token's text as a tic label of the heatmaps: printable; space, newline and tab as symbols.
/// (examples::gnuplot_string puts it in the script, in single quotes: nothing in it is ever run.)
inline std::string tic_label(const std::string& text) {
  std::string s;
  for (const char32_t c : tapegrad::data::decode_utf8(text, "a token")) {
    if (c == U' ')
      s += "\xE2\x90\xA3";  // open box
    else if (c == U'\n')
      s += "\xE2\x8F\x8E";  // return symbol
    else if (c == U'\t')
      s += "\xE2\x87\xA5";  // tab arrow
    else if (c < 0x20 || c == 0x7F)
      s += "?";
    else
      tapegrad::data::append_utf8(s, c);
  }
  return s;
}

/// Writes loss.dat (step, training loss) and val.dat (step, validation loss), each whole.
inline void write_loss_data(const std::filesystem::path& dir, const std::vector<float>& train,
                            const std::vector<std::pair<std::int64_t, float>>& val) {
  std::ostringstream t, v;
  t.precision(6), v.precision(6);
  for (std::size_t k = 0; k < train.size(); ++k) t << k + 1 << ' ' << train[k] << '\n';
  for (const auto& [step, loss] : val) v << step << ' ' << loss << '\n';
  tapegrad::AtomicFile::write_whole((dir / "loss.dat").string(), t.str(), "the loss data");
  tapegrad::AtomicFile::write_whole((dir / "val.dat").string(), v.str(), "the loss data");
}

/// Writes attention_l{l}_h{h}.dat, the weights (T, T) of every head of every block on one line
/// of text (rows: the position attending, columns: the position attended to).
inline void write_attention_data(const std::filesystem::path& dir,
                                 const std::vector<tapegrad::Array>& weights) {
  for (std::size_t l = 0; l < weights.size(); ++l) {
    const std::size_t H = weights[l].shape()[1], T = weights[l].shape()[2];
    for (std::size_t h = 0; h < H; ++h) {
      std::ostringstream f;
      f.precision(5);
      for (std::size_t i = 0; i < T; ++i) {
        for (std::size_t j = 0; j < T; ++j) f << (j ? " " : "") << weights[l](0, h, i, j);
        f << '\n';
      }
      tapegrad::AtomicFile::write_whole(
          (dir / ("attention_l" + std::to_string(l) + "_h" + std::to_string(h) + ".dat")).string(),
          f.str(), "the attention data");
    }
  }
}

/// The pictures: loss.png (training loss per step, validation loss at each evaluation) and, when
/// there is a line to show (`labels`, each token's tic_label), attention.png (one heatmap per
/// head, blocks as rows); `unit` names a token in the loss's axis ("character" or "token").
inline std::vector<examples::Picture> pictures(const std::string& title, std::size_t layers,
                                               std::size_t heads,
                                               const std::vector<std::string>& labels,
                                               const std::string& unit) {
  std::vector<examples::Picture> p;
  p.push_back({"loss.png", "set terminal pngcairo size 900,560 font 'sans,11'",
               "set grid\nset key top right\nset title " + examples::gnuplot_string(title) +
                   "\nset xlabel 'step'\nset ylabel 'cross-entropy (nats per " + unit +
                   ")'\n"
                   "plot 'loss.dat' using 1:2 with lines lc rgb '#9ecae1' title 'training batch', "
                   "\\\n"
                   "     'val.dat' using 1:2 with linespoints pt 7 ps 0.8 lw 2 lc rgb '#08519c' "
                   "title 'validation windows'\n"});
  if (layers == 0 || labels.empty()) return p;
  // At most 16 labelled characters per axis, in a font that stays legible when 16 panels or more
  // share the picture; the panels grow with the context a little.
  const std::size_t every = (labels.size() + 15) / 16, panel = 300 + 2 * labels.size();
  std::string tics = "(";
  for (std::size_t i = 0; i < labels.size(); i += every)
    tics += (i ? ", " : "") + examples::gnuplot_string(labels[i]) + " " + std::to_string(i);
  tics += ")";
  std::ostringstream f;
  f << "unset key\nset palette defined (0 '#ffffff', 0.25 '#9ecae1', 1 '#08306b')\n"
       "set cbrange [0:1]\nunset colorbox\nset size ratio -1\nset xrange [-0.5:"
    << labels.size() - 0.5 << "]\nset yrange [" << labels.size() - 0.5 << ":-0.5]\nset xtics "
    << tics << " font ',9'\nset ytics " << tics << " font ',9'\nset multiplot layout " << layers
    << "," << heads
    << " title 'Attention of each head on a validation line (row: the position attending; "
       "column: the position it reads)'\n";
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t h = 0; h < heads; ++h)
      f << "set title 'block " << l << ", head " << h << "' font ',11'\nplot 'attention_l" << l
        << "_h" << h << ".dat' matrix with image\n";
  f << "unset multiplot\n";
  std::ostringstream terminal;
  terminal << "set terminal pngcairo size " << panel * heads << "," << panel * layers + 60
           << " font 'sans,10'";
  p.push_back({"attention.png", terminal.str(), f.str()});
  return p;
}

}  // namespace gpt
