// src/train/gpt_pictures.cpp: the attention heatmaps of a GPT run (gpt_pictures.hpp).
#include "gpt_pictures.hpp"

#include <sstream>

#include "tapegrad/core/atomic_file.hpp"
#include "tapegrad/data/text.hpp"

namespace tapegrad::train::detail {

std::string tic_label(const std::string& text) {
  std::string s;
  for (const char32_t c : data::decode_utf8(text, "a token")) {
    if (c == U' ')
      s += "\xE2\x90\xA3";  // open box
    else if (c == U'\n')
      s += "\xE2\x8F\x8E";  // return symbol
    else if (c == U'\t')
      s += "\xE2\x87\xA5";  // tab arrow
    else if (c < 0x20 || c == 0x7F)
      s += "?";
    else
      data::append_utf8(s, c);
  }
  return s;
}

void write_attention_data(const std::filesystem::path& dir, const std::vector<Array>& weights) {
  for (std::size_t l = 0; l < weights.size(); ++l) {
    const std::size_t H = weights[l].shape()[1], T = weights[l].shape()[2];
    for (std::size_t h = 0; h < H; ++h) {
      std::ostringstream f;
      f.precision(5);
      for (std::size_t i = 0; i < T; ++i) {
        for (std::size_t j = 0; j < T; ++j) f << (j ? " " : "") << weights[l](0, h, i, j);
        f << '\n';
      }
      AtomicFile::write_whole(
          (dir / ("attention_l" + std::to_string(l) + "_h" + std::to_string(h) + ".dat")).string(),
          f.str(), "the attention data");
    }
  }
}

Picture attention_picture(std::size_t layers, std::size_t heads,
                          const std::vector<std::string>& labels) {
  // At most 16 labelled characters per axis, in a font that stays legible when 16 panels or more
  // share the picture; the panels grow with the context a little.
  const std::size_t every = (labels.size() + 15) / 16, panel = 300 + 2 * labels.size();
  std::string tics = "(";
  for (std::size_t i = 0; i < labels.size(); i += every)
    tics += (i ? ", " : "") + gnuplot_string(labels[i]) + " " + std::to_string(i);
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
  return {"attention.png", terminal.str(), f.str()};
}

}  // namespace tapegrad::train::detail
