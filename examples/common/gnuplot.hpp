// examples/common/gnuplot.hpp: pictures drawn by gnuplot from the data files in a run's folder.
//
// A program writes its data files into the folder (through tapegrad::AtomicFile), then describes
// each picture as the gnuplot commands that draw it from those files, named plainly ('loss.dat'):
//
//     const std::vector<examples::Picture> pictures = {
//         {"loss.png", "set terminal pngcairo size 900,560", "plot 'loss.dat' using 1:2 with lines"}};
//     examples::write_plot_script(dir, "# the pictures of my program", pictures);  // plots.gp
//     const examples::Drawing d = examples::draw(dir, pictures);  // d.drawn: what was drawn
//
// Each picture is one run of gnuplot, started in the folder with an argument vector (no shell:
// child_process.hpp), its commands on standard input, `set output` with no file name so that the
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
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <tapegrad/core/atomic_file.hpp>

#include "child_process.hpp"

namespace examples {

/// One picture: its file in the folder, the terminal that draws it, the commands that plot it.
struct Picture {
  std::string file;      ///< "loss.png"
  std::string terminal;  ///< "set terminal pngcairo size 900,560 font 'sans,11'"
  std::string commands;  ///< the rest, ending with a newline; data files by their plain names
};

/// `text` as a gnuplot string in single quotes: a quote is doubled, nothing else is special
/// (no backslash escapes, no backquote substitution).
inline std::string gnuplot_string(std::string_view text) {
  std::string q = "'";
  for (const char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

/// What a PNG file starts with, for AtomicFile's rule on symbolic links.
inline bool is_png(std::string_view first_bytes, std::uint64_t size) {
  return size == 0 || first_bytes.starts_with("\x89PNG\r\n\x1a\n");
}
inline constexpr tapegrad::FileFormat kPngFormat{"a PNG picture", is_png};

/// The script that draws every picture into its file, each from gnuplot's defaults.
inline std::string plot_script(const std::string& comment, const std::vector<Picture>& pictures) {
  std::string script = comment + "\n";
  for (const Picture& p : pictures)
    script +=
        "\nreset\n" + p.terminal + "\nset output " + gnuplot_string(p.file) + "\n" + p.commands;
  return script;
}

/// Writes plot_script(...) to dir/plots.gp (AtomicFile).
inline void write_plot_script(const std::filesystem::path& dir, const std::string& comment,
                              const std::vector<Picture>& pictures) {
  tapegrad::AtomicFile::write_whole((dir / "plots.gp").string(), plot_script(comment, pictures),
                                    "the plot script");
}

/// What draw() made: the pictures' paths, and what stopped the others ("" when none was stopped).
struct Drawing {
  std::vector<std::string> drawn;
  std::string problem;
};

/// Draws each picture with gnuplot (if installed) in `dir`, as the top of this file says.
inline Drawing draw(const std::filesystem::path& dir, const std::vector<Picture>& pictures) {
  Drawing d;
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    d.problem = "gnuplot is not installed: the data files and plots.gp are in '" + dir.string() +
                "' (apt-get install gnuplot-nox, then run gnuplot plots.gp in that folder)";
    return d;
  }
  for (const Picture& p : pictures) {
    const std::string path = (dir / p.file).string();
    try {
      tapegrad::AtomicFile out(path, "gnuplot", &kPngFormat);
      std::string first;  // the first bytes, to check that they are a PNG
      const ProgramRun run =
          run_program({gnuplot}, dir.string(), p.terminal + "\nset output\n" + p.commands,
                      [&](std::string_view bytes) {
                        if (first.size() < 8) first += bytes.substr(0, 8 - first.size());
                        out.write(bytes);
                      });
      if (!run.ok() || !is_png(first, 1)) {
        const std::string why = run.signal  ? "stopped by signal " + std::to_string(run.signal)
                                : !run.ok() ? "exit status " + std::to_string(run.exit_status)
                                            : "it wrote no PNG";
        d.problem += (d.problem.empty() ? "" : "; ") + std::string("gnuplot did not draw ") + path +
                     " (" + why + ")" +
                     (run.errors.empty() ? "" : ": " + run.errors.substr(0, run.errors.find('\n')));
        continue;  // `out` is not committed: its temporary goes, the old picture stays
      }
      out.commit();
      if (!run.errors.empty()) std::cerr << "gnuplot, drawing " << path << ":\n" << run.errors;
      d.drawn.push_back(path);
    } catch (const std::exception& e) {
      d.problem += (d.problem.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  return d;
}

}  // namespace examples
