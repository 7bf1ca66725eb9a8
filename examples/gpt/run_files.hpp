// examples/gpt/run_files.hpp: what the GPT programs write and read besides the weights.
//
//   the model's settings and vocabulary    the notes "gpt.*" (model_notes.hpp)
//   the loss history                       also in the notes, so a resumed run draws the whole curve
//   pictures                               loss.dat, val.dat, attention_l{L}_h{H}.dat and plots.gp in
//                                          the output folder; gnuplot (if installed) draws loss.png
//                                          and attention.png from them
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <tapegrad/tapegrad.hpp>

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

/// The program `name` if an executable of that name is in a folder of $PATH, else "".
inline std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  const std::string folders = path ? path : "";
  for (std::size_t begin = 0; begin <= folders.size();) {
    std::size_t end = folders.find(':', begin);
    if (end == std::string::npos) end = folders.size();
    const std::filesystem::path candidate =
        std::filesystem::path(folders.substr(begin, end - begin)) / name;
    if (end > begin && access(candidate.c_str(), X_OK) == 0) return candidate.string();
    begin = end + 1;
  }
  return "";
}

/// A token's text as a gnuplot tic label: printable, quotes escaped; space, newline and tab as
/// symbols.
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
    else {
      if (c == U'"' || c == U'\\') s += '\\';
      tapegrad::data::append_utf8(s, c);
    }
  }
  return s;
}

/// Writes loss.dat (step, training loss), val.dat (step, validation loss) and the loss part of
/// plots.gp; the attention part is added by write_attention.
inline void write_loss_data(const std::filesystem::path& dir, const std::vector<float>& train,
                            const std::vector<std::pair<std::int64_t, float>>& val) {
  std::ofstream t(dir / "loss.dat"), v(dir / "val.dat");
  t.precision(6), v.precision(6);
  for (std::size_t k = 0; k < train.size(); ++k) t << k + 1 << ' ' << train[k] << '\n';
  for (const auto& [step, loss] : val) v << step << ' ' << loss << '\n';
  if (!t || !v) throw std::runtime_error("cannot write the loss data into '" + dir.string() + "'");
}

/// Writes attention_l{l}_h{h}.dat, the weights (T, T) of every head of every block on one line
/// of text (rows: the position attending, columns: the position attended to).
inline void write_attention_data(const std::filesystem::path& dir,
                                 const std::vector<tapegrad::Array>& weights) {
  for (std::size_t l = 0; l < weights.size(); ++l) {
    const std::size_t H = weights[l].shape()[1], T = weights[l].shape()[2];
    for (std::size_t h = 0; h < H; ++h) {
      std::ofstream f(dir /
                      ("attention_l" + std::to_string(l) + "_h" + std::to_string(h) + ".dat"));
      f.precision(5);
      for (std::size_t i = 0; i < T; ++i) {
        for (std::size_t j = 0; j < T; ++j) f << (j ? " " : "") << weights[l](0, h, i, j);
        f << '\n';
      }
      if (!f)
        throw std::runtime_error("cannot write the attention data into '" + dir.string() + "'");
    }
  }
}

/// plots.gp: loss.png (training loss per step, validation loss at each evaluation) and
/// attention.png (one heatmap per head, blocks as rows), the line's tokens (tic_label) as tic
/// labels; `unit` names a token in the loss's axis ("character" or "token").
inline void write_plot_script(const std::filesystem::path& dir, const std::string& title,
                              std::size_t layers, std::size_t heads,
                              const std::vector<std::string>& labels, const std::string& unit) {
  std::ofstream f(dir / "plots.gp");
  f << "# Draws the pictures of examples/gpt from the data files in this folder: gnuplot plots.gp\n"
       "set terminal pngcairo size 900,560 font 'sans,11'\n"
       "set output 'loss.png'\nset grid\nset key top right\n"
       "set title \""
    << title << "\"\nset xlabel 'step'\nset ylabel 'cross-entropy (nats per " << unit
    << ")'\n"
       "plot 'loss.dat' using 1:2 with lines lc rgb '#9ecae1' title 'training batch', \\\n"
       "     'val.dat' using 1:2 with linespoints pt 7 ps 0.8 lw 2 lc rgb '#08519c' title "
       "'validation windows'\n\n";
  if (layers > 0 && !labels.empty()) {
    // At most 16 labelled characters per axis, in a font that stays legible when 16 panels or
    // more share the picture; the panels grow with the context a little.
    const std::size_t every = (labels.size() + 15) / 16, panel = 300 + 2 * labels.size();
    std::string tics = "(";
    for (std::size_t i = 0; i < labels.size(); i += every)
      tics += (i ? ", \"" : "\"") + labels[i] + "\" " + std::to_string(i);
    tics += ")";
    f << "set terminal pngcairo size " << panel * heads << "," << panel * layers + 60
      << " font 'sans,10'\n"
         "set output 'attention.png'\nunset grid\nunset key\nunset xlabel\nunset ylabel\n"
         "set palette defined (0 '#ffffff', 0.25 '#9ecae1', 1 '#08306b')\nset cbrange [0:1]\nunset "
         "colorbox\n"
         "set size ratio -1\nset xrange [-0.5:"
      << labels.size() - 0.5 << "]\nset yrange [" << labels.size() - 0.5 << ":-0.5]\nset xtics "
      << tics << " font ',9'\nset ytics " << tics
      << " font ',9'\n"
         "set multiplot layout "
      << layers << "," << heads
      << " title 'Attention of each head on a validation line (row: the position attending; "
         "column: the position it reads)'\n";
    for (std::size_t l = 0; l < layers; ++l)
      for (std::size_t h = 0; h < heads; ++h)
        f << "set title 'block " << l << ", head " << h << "' font ',11'\nplot 'attention_l" << l
          << "_h" << h << ".dat' matrix with image\n";
    f << "unset multiplot\n";
  }
  if (!f) throw std::runtime_error("cannot write '" + (dir / "plots.gp").string() + "'");
}

/// Runs gnuplot on plots.gp in `dir`; returns a sentence saying what happened.
inline std::string draw(const std::filesystem::path& dir) {
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty())
    return "gnuplot is not installed: the data and plots.gp are in " + dir.string() +
           " (apt-get install gnuplot-nox, then: cd " + dir.string() + " && gnuplot plots.gp)";
  const std::string command = "cd '" + dir.string() + "' && '" + gnuplot + "' plots.gp 2>&1";
  const int status = std::system(command.c_str());
  return status == 0
             ? "pictures: " + (dir / "loss.png").string() + ", " + (dir / "attention.png").string()
             : "gnuplot failed on " + (dir / "plots.gp").string() + " (status " +
                   std::to_string(status) + ")";
}

}  // namespace gpt
