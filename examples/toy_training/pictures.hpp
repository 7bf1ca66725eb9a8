// examples/toy_training/pictures.hpp: the pictures, drawn by gnuplot from plain data files the
// program writes into the output folder:
//
//     pe.dat                  the positional-encoding table, one row per position
//     loss.dat, held_out.dat  step and loss: every training step, and the held-out loss now and then
//     similarity_before.dat   the words' cosine similarities before training, and after
//     similarity_after.dat
//     plots.gp                the gnuplot script that turns them into pe.png, loss.png, similarity.png
//
// Each file is written whole or not at all, and gnuplot runs without a shell, in the folder, with
// its PNG streamed into the picture's file (tapegrad/train/pictures.hpp). Without gnuplot the
// program still writes everything and says how to draw the pictures later.
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include <tapegrad/train/pictures.hpp>
#include "language.hpp"
#include "measure.hpp"

namespace toy {

namespace fs = std::filesystem;

using Matrix = std::vector<std::vector<double>>;

/// Writes `m`, one row per line, whole or not at all (AtomicFile).
inline void write_matrix(const fs::path& path, const Matrix& m) {
  std::ostringstream f;
  f.precision(6);
  for (const auto& row : m) {
    for (std::size_t j = 0; j < row.size(); ++j) f << (j ? " " : "") << row[j];
    f << '\n';
  }
  tapegrad::AtomicFile::write_whole(path.string(), f.str(), "toy_training's picture data");
}

/// gnuplot's tic labels for the words, ('A1' 0, 'A2' 1, ...), or nothing when there are too
/// many words to label.
inline std::string word_tics(const Language& lang) {
  if (lang.vocab() - 1 > 48) return "";
  std::string tics = "(";
  for (std::int64_t id = 1; id < lang.vocab(); ++id)
    tics += (id > 1 ? ", " : "") + tapegrad::train::gnuplot_string(lang.word(id)) + " " +
            std::to_string(id - 1);
  return tics + ")";
}

/// The three pictures, each drawn from gnuplot's defaults by its own commands.
inline std::vector<tapegrad::train::Picture> pictures(const Language& lang, std::int64_t positions,
                                               std::int64_t d_model) {
  const std::int64_t n = lang.vocab() - 1;
  const std::string tics = word_tics(lang);
  const std::string palette =
      "set palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')\nset cbrange [-1:1]\n";
  std::ostringstream pe, loss, similarity;
  // pe.png: the table as a heatmap, then dimensions 4 to 7 as curves (The Annotated
  // Transformer's figure).
  pe << palette << "set multiplot layout 2,1 title 'The positional encoding pe (1, " << positions
     << ", " << d_model
     << "): a fixed buffer, never trained'\n"
        "set title 'pe[0, position, j]: sin on even j, cos on odd j, slower as j grows'\n"
        "set xlabel 'position'\nset ylabel 'dimension j'\n"
        "set xrange [-0.5:"
     << positions - 0.5 << "]\nset yrange [-0.5:" << d_model - 0.5
     << "]\n"
        "plot 'pe.dat' matrix using 2:1:3 with image notitle\n"
        "set title 'dimensions 4 to 7 against the position'\nset ylabel 'value'\nset yrange "
        "[-1.1:1.1]\n"
        "set key outside right\nset grid\n"
        "plot for [j=4:"
     << std::min<std::int64_t>(7, d_model - 1)
     << "] 'pe.dat' using 0:(column(j + 1)) with lines lw 2 title sprintf('dim %d', j)\n"
        "unset multiplot\n";
  loss << "set key inside top right\nset grid\n"
          "set title 'Cross-entropy loss per word'\nset xlabel 'training step'\nset ylabel "
          "'loss'\n"
          "plot 'loss.dat' using 1:2 with lines lc rgb '#9ecae1' title 'training batch (with "
          "dropout)', \\\n"
          "     'held_out.dat' using 1:2 with linespoints pt 7 ps 0.6 lc rgb '#08519c' \\\n"
          "         title 'held-out sentences (eval mode)'\n";
  similarity << palette
             << "set multiplot layout 1,2 title 'Cosine similarity of the word embeddings "
                "(synonyms: the same letter)'\n"
                "set size ratio -1\nunset xlabel\nunset ylabel\n"
                "set xrange [-0.5:"
             << n - 0.5 << "]\nset yrange [" << n - 0.5 << ":-0.5]\n";
  if (!tics.empty())
    similarity << "set xtics " << tics << " rotate by 90 right font ',8'\nset ytics " << tics
               << " font ',8'\n";
  similarity << "set title 'before training'\nplot 'similarity_before.dat' matrix with image "
                "notitle\n"
                "set title 'after training'\nplot 'similarity_after.dat' matrix with image "
                "notitle\n"
                "unset multiplot\n";
  return {
      {"pe.png", "set terminal pngcairo size 900,720 font 'sans,11'", pe.str()},
      {"loss.png", "set terminal pngcairo size 900,560 font 'sans,11'", loss.str()},
      {"similarity.png", "set terminal pngcairo size 1200,620 font 'sans,10'", similarity.str()}};
}

/// Writes the data files and the script into `dir`.
inline void write_picture_data(const fs::path& dir, const Language& lang, const tapegrad::Array& pe,
                               const LossHistory& loss, const Matrix& before, const Matrix& after) {
  const std::size_t positions = pe.shape()[1], D = pe.shape()[2];
  Matrix table(positions, std::vector<double>(D));
  for (std::size_t p = 0; p < positions; ++p)
    for (std::size_t j = 0; j < D; ++j) table[p][j] = pe(0, p, j);
  write_matrix(dir / "pe.dat", table);
  std::ostringstream train, held_out;
  train.precision(6), held_out.precision(6);
  for (std::size_t k = 0; k < loss.train.size(); ++k)
    train << k + 1 << ' ' << loss.train[k] << '\n';
  for (const auto& [step, value] : loss.held_out) held_out << step << ' ' << value << '\n';
  tapegrad::AtomicFile::write_whole((dir / "loss.dat").string(), train.str(), "toy_training");
  tapegrad::AtomicFile::write_whole((dir / "held_out.dat").string(), held_out.str(),
                                    "toy_training");
  write_matrix(dir / "similarity_before.dat", before);
  write_matrix(dir / "similarity_after.dat", after);
  tapegrad::train::write_plot_script(
      dir,
      "# Draws the pictures of toy_training from the data files in this folder: gnuplot plots.gp",
      pictures(lang, std::int64_t(positions), std::int64_t(D)));
}

/// Draws the pictures with gnuplot in `dir` (tapegrad/train/pictures.hpp). Returns what to tell
/// the reader: the pictures drawn, and why any was not.
inline std::string draw_pictures(const fs::path& dir, const Language& lang, std::int64_t positions,
                                 std::int64_t d_model) {
  const tapegrad::train::Drawing d = tapegrad::train::draw(dir, pictures(lang, positions, d_model));
  std::string text;
  for (std::size_t i = 0; i < d.drawn.size(); ++i)
    text += (i ? ", " + fs::path(d.drawn[i]).filename().string() : "pictures: " + d.drawn[i]);
  if (!d.drawn.empty()) text += " (drawn by gnuplot from " + (dir / "plots.gp").string() + ")";
  if (!d.problem.empty()) text += (text.empty() ? "" : "\n") + d.problem;
  return text;
}

}  // namespace toy
