// src/train/pictures.cpp: pictures drawn by gnuplot, each written whole (train/pictures.hpp).
#include "tapegrad/train/pictures.hpp"

#include <exception>
#include <iostream>
#include <sstream>

#include "child_process.hpp"

namespace tapegrad::train {

std::string gnuplot_string(std::string_view text) {
  std::string q = "'";
  for (const char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

bool is_png(std::string_view first_bytes, std::uint64_t size) {
  return size == 0 || first_bytes.starts_with("\x89PNG\r\n\x1a\n");
}

std::string plot_script(const std::string& comment, const std::vector<Picture>& pictures) {
  std::string script = comment + "\n";
  for (const Picture& p : pictures)
    script +=
        "\nreset\n" + p.terminal + "\nset output " + gnuplot_string(p.file) + "\n" + p.commands;
  return script;
}

void write_plot_script(const std::filesystem::path& dir, const std::string& comment,
                       const std::vector<Picture>& pictures) {
  AtomicFile::write_whole((dir / "plots.gp").string(), plot_script(comment, pictures),
                          "the plot script");
}

Drawing draw(const std::filesystem::path& dir, const std::vector<Picture>& pictures) {
  Drawing d;
  const std::string gnuplot = detail::find_on_path("gnuplot");
  if (gnuplot.empty()) {
    d.problem = "gnuplot is not installed: the data files and plots.gp are in '" + dir.string() +
                "' (apt-get install gnuplot-nox, then run gnuplot plots.gp in that folder)";
    return d;
  }
  for (const Picture& p : pictures) {
    const std::string path = (dir / p.file).string();
    try {
      AtomicFile out(path, "gnuplot", &kPngFormat);
      std::string first;  // the first bytes, to check that they are a PNG
      const detail::ProgramRun run =
          detail::run_program({gnuplot}, dir.string(), p.terminal + "\nset output\n" + p.commands,
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

void write_loss_data(const std::filesystem::path& dir, const std::vector<float>& train,
                     const std::vector<std::pair<std::int64_t, float>>& val) {
  std::ostringstream t, v;
  t.precision(6), v.precision(6);
  for (std::size_t k = 0; k < train.size(); ++k) t << k + 1 << ' ' << train[k] << '\n';
  for (const auto& [step, loss] : val) v << step << ' ' << loss << '\n';
  tapegrad::AtomicFile::write_whole((dir / "loss.dat").string(), t.str(), "the loss data");
  tapegrad::AtomicFile::write_whole((dir / "val.dat").string(), v.str(), "the loss data");
}

Picture loss_picture(const std::string& title, const std::string& unit) {
  return {"loss.png", "set terminal pngcairo size 900,560 font 'sans,11'",
          "set grid\nset key top right\nset title " + gnuplot_string(title) +
              "\nset xlabel 'step'\nset ylabel 'cross-entropy (nats per " + unit +
              ")'\n"
              "plot 'loss.dat' using 1:2 with lines lc rgb '#9ecae1' title 'training batch', \\\n"
              "     'val.dat' using 1:2 with linespoints pt 7 ps 0.8 lw 2 lc rgb '#08519c' "
              "title 'validation windows'\n"};
}

void report(const Drawing& drawing) {
  if (!drawing.drawn.empty()) {
    std::cout << "pictures:";
    for (std::size_t i = 0; i < drawing.drawn.size(); ++i)
      std::cout << (i ? ", " : " ") << drawing.drawn[i];
    std::cout << "\n";
  }
  if (!drawing.problem.empty()) std::cout << drawing.problem << "\n";
}

}  // namespace tapegrad::train
