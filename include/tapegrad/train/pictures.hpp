// include/tapegrad/train/pictures.hpp
//
// Pictures drawn by gnuplot from the data files in a run's folder: the loss curve the trainer
// draws at the end of a run, and any a program adds (the GPT's attention heatmaps).
//
// A program writes its data files into the folder (through tapegrad::AtomicFile), then describes
// each picture as the gnuplot commands that draw it from those files, named plainly ('loss.dat'):
//
//     const std::vector<train::Picture> pictures = {
//         {"loss.png", "set terminal pngcairo size 900,560", "plot 'loss.dat' using 1:2 with lines"}};
//     train::write_plot_script(dir, "# the pictures of my program", pictures);  // plots.gp
//     const train::Drawing d = train::draw(dir, pictures);  // d.drawn: what was drawn
//
// Each picture is one run of gnuplot, started in the folder with an argument vector (no shell: posix_spawn
// with an argument vector), its commands on standard input, `set output` with no file name so that the
// PNG comes out on standard output. That stream goes into the picture's file through AtomicFile,
// committed only when gnuplot ended well and wrote a PNG: a picture is whole or not there (the
// previous one stays), and is replaced under the same rules as a checkpoint (no link followed to
// a file of another kind, no temporary left behind). gnuplot writing `set output 'loss.png'`
// itself would truncate the file in place, follow any symbolic link there, and leave half a
// picture under the final name when it is stopped halfway.
//
// plots.gp holds the same pictures for a reader to redraw by hand (`gnuplot plots.gp` in the
// folder): each one from gnuplot's defaults (`reset`), as its own run draws it.
//
// Text inside a script: in double quotes, gnuplot runs whatever stands between backquotes as a
// shell command, so text that does not come from the program itself (a token of the training
// text as a label) is written in single quotes, where nothing is substituted: gnuplot_string().
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tapegrad/core/atomic_file.hpp"

namespace tapegrad::train {

struct Run;

/// One picture: its file in the folder, the terminal that draws it, the commands that plot it.
struct Picture {
  std::string file;      ///< "loss.png"
  std::string terminal;  ///< "set terminal pngcairo size 900,560 font 'sans,11'"
  std::string commands;  ///< the rest, ending with a newline; data files by their plain names
};

/// `text` as a gnuplot string in single quotes: a quote is doubled, nothing else is special
/// (no backslash escapes, no backquote substitution).
std::string gnuplot_string(std::string_view text);

/// What a PNG file starts with, for AtomicFile's rule on symbolic links.
bool is_png(std::string_view first_bytes, std::uint64_t size);
inline constexpr FileFormat kPngFormat{"a PNG picture", is_png};

/// The script that draws every picture into its file, each from gnuplot's defaults.
std::string plot_script(const std::string& comment, const std::vector<Picture>& pictures);
/// Writes plot_script(...) to dir/plots.gp (AtomicFile).
void write_plot_script(const std::filesystem::path& dir, const std::string& comment,
                       const std::vector<Picture>& pictures);

/// What draw() made: the pictures' paths, and what stopped the others ("" when none was stopped).
struct Drawing {
  std::vector<std::string> drawn;
  std::string problem;
};

/// Draws each picture with gnuplot (if installed) in `dir`, as the top of this file says.
Drawing draw(const std::filesystem::path& dir, const std::vector<Picture>& pictures);

/// loss.dat (step, training loss) and val.dat (step, validation loss) of a run, each whole.
void write_loss_data(const std::filesystem::path& dir, const std::vector<float>& train_losses,
                     const std::vector<std::pair<std::int64_t, float>>& val_history);
/// loss.png from them: the training loss of every step, the validation loss at each validation;
/// `unit` names what the loss is per ("token", "character", "target").
Picture loss_picture(const std::string& title, const std::string& unit);

/// "pictures: a, b" (the ones drawn), then what stopped the others, on standard output.
void report(const Drawing& drawing);

}  // namespace tapegrad::train
