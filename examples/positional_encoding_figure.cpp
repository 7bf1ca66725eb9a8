// examples/positional_encoding_figure.cpp: the data of the tutorials' positional-encoding figure
// (The Annotated Transformer's example_positional) as CSV: PositionalEncoding(d_model = 20,
// dropout = 0) applied to zeros of shape (1, 100, 20), dimensions 4 to 7 against the position.
// Plot the columns against `position` to see sines of falling frequency in pairs (sin, cos).
//
//     positional_encoding_figure --out pe.csv
//
// It also shows the buffer at work: pe is not a parameter, and verify() recomputes the table.
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"
#include "common/flag_checks.hpp"

using namespace tapegrad;

namespace {
int run(int argc, char** argv) {
  CLI::App app("Writes the tutorials' positional-encoding figure data as CSV");
  std::string out_path;
  std::int64_t d_model = 20, positions = 100, first_dim = 4, last_dim = 7;
  app.add_option("--out", out_path, "CSV file to write (default: standard output)");
  app.add_option("--d-model", d_model, "width of the encoding")->check(flags::integer_in(1, 4096));
  app.add_option("--positions", positions, "number of positions")
      ->check(flags::integer_in(1, 10000));
  app.add_option("--first-dim", first_dim, "first dimension plotted")
      ->check(flags::integer_in(0, 100000));
  app.add_option("--last-dim", last_dim, "last dimension plotted")
      ->check(flags::integer_in(0, 100000));
  examples::parse_flags(app, argc, argv);
  if (first_dim > last_dim || last_dim >= d_model)
    throw examples::FlagError(
        "--first-dim, --last-dim: expected first-dim <= last-dim < d-model, got " +
        std::to_string(first_dim) + ", " + std::to_string(last_dim) + ", " +
        std::to_string(d_model));

  nn::PositionalEncoding pe(d_model, /*dropout=*/0.0, /*max_len=*/positions);
  pe.eval();
  autograd::NoGradGuard no_grad;  // nothing to learn here: record nothing
  const Tensor y = pe.forward(
      Tensor(xt::zeros<float>({std::size_t{1}, std::size_t(positions), std::size_t(d_model)})));

  std::ostringstream csv;
  csv.precision(9);
  csv << "position";
  for (std::int64_t j = first_dim; j <= last_dim; ++j) csv << ",dim_" << j;
  csv << '\n';
  for (std::size_t pos = 0; pos < std::size_t(positions); ++pos) {
    csv << pos;
    for (std::int64_t j = first_dim; j <= last_dim; ++j)
      csv << ',' << y.data()(0, pos, std::size_t(j));
    csv << '\n';
  }
  if (out_path.empty())
    std::cout << csv.str();
  else  // the whole file or none of it, as every file tapegrad writes
    AtomicFile::write_whole(out_path, csv.str(), "--out");

  pe.verify();  // throws InvariantError if the table was touched
  std::cerr << "pe: buffer " << str(pe.pe.shape()) << ", parameters: " << pe.parameters().size()
            << ", fingerprint 0x" << std::hex << pe.fingerprint() << std::dec
            << ", verify() passed\n";
  return std::cout.good() ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("positional_encoding_figure", [&] { return run(argc, argv); });
}
