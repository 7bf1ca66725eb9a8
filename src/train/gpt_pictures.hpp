// src/train/gpt_pictures.hpp (private to the library): what a GPT run draws at its end beside its
// loss: the attention of every head of every block on one validation line, as heatmaps.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "tapegrad/core/tensor.hpp"
#include "tapegrad/train/pictures.hpp"

namespace tapegrad::train::detail {

/// A token's text as a tic label of the heatmaps: printable; space, newline and tab as symbols.
/// (gnuplot_string puts it in the script, in single quotes: nothing in it is ever run.)
std::string tic_label(const std::string& text);

/// Writes attention_l{l}_h{h}.dat, the weights (T, T) of every head of every block, each whole
/// (rows: the position attending, columns: the position attended to).
void write_attention_data(const std::filesystem::path& dir, const std::vector<Array>& weights);

/// attention.png: one heatmap per head, blocks as rows, the line's tokens (`labels`, each a
/// tic_label) on the axes.
Picture attention_picture(std::size_t layers, std::size_t heads,
                          const std::vector<std::string>& labels);

}  // namespace tapegrad::train::detail
