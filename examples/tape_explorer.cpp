// examples/tape_explorer.cpp: a training step as a web page to step through.
//
//     build/examples/tape_explorer --out step.html      then open step.html in a browser
//
// It trains the tutorials' model (toy_training/model.hpp: Embeddings with padding id 0, scaled by
// sqrt(d_model); PositionalEncoding, a fixed buffer, then Dropout; Linear; cross-entropy; Adam)
// on one small batch for a few steps, and writes one self-contained page: no network, no server,
// its script and its data inline (examples/tape_explorer/page.html, with the data put in).
//
// Every number on the page is the library's own, taken through its public views:
//   * the tape of step 1 as autograd::tape_of(loss) lists it (op, module, shapes, what is saved);
//   * the replay as autograd::BackwardTrace saw the engine run it: each entry's incoming
//     gradient and every gradient its closure added;
//   * each op's backward formula, read from the comment in the source that defines it (the
//     sources are compiled into this program, examples/tape_explorer/embed.cmake), so the page
//     and the code cannot disagree;
//   * after each Adam step: the embedding table, Adam's m and v (Optimizer::state_dict), the
//     positional table's fingerprint and the loss.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"
#include "common/flag_checks.hpp"
#include "tape_explorer_files.hpp"  // kEmbeddedFiles: the page and the op sources (embed.cmake)
#include "toy_training/language.hpp"
#include "toy_training/measure.hpp"
#include "toy_training/model.hpp"

using namespace tapegrad;

namespace {

// ---- where each op's backward is written down ---------------------------------------------------
// An op whose backward is a kernel of its own has its formula in the comment above that reference
// kernel; an op whose backward is a product, a copy or a mask has it in the formula block that
// opens the op. Either way the page shows the comment as it stands in the file, with its lines.
struct FormulaSource {
  std::string_view op, file, anchor;  // the line that starts with `anchor` declares the function
  bool above;                         // the comment above that line, else the one just below it
};
constexpr FormulaSource kFormulas[] = {
    {"embedding_scaled", "src/ops/embedding.cpp", "void embedding_dense_backward(", true},
    {"add_rows_dropout", "src/ops/dropout.cpp", "Tensor add_rows_dropout(", false},
    {"linear", "src/ops/matmul.cpp", "Tensor linear(", false},
    {"reshape", "src/ops/shape.cpp", "Tensor reshape(", false},
    {"cross_entropy", "src/ops/loss.cpp", "void cross_entropy_backward(", true},
};

std::string_view embedded(std::string_view path) {
  for (const EmbeddedFile& f : kEmbeddedFiles)
    if (f.path == path) return f.text;
  throw InvariantError("embedded files: expected " + std::string(path) +
                       " among the files compiled in (examples/CMakeLists.txt), got none");
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

// "  // dx = dy * m" -> "dx = dy * m"; false for a line that is not a // comment.
bool comment_text(std::string_view line, std::string_view& text) {
  const std::size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos || line.substr(start, 2) != "//") return false;
  text = line.substr(start + 2);
  if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return true;
}

struct Excerpt {
  std::string file;
  std::size_t line = 0;  // of the first line, counted from 1
  std::vector<std::string> lines;
};

// The whole // comment right above (or right below) the one line that starts with `anchor`.
Excerpt formula_of(const FormulaSource& s) {
  const auto lines = lines_of(embedded(s.file));
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].substr(0, s.anchor.size()) == s.anchor) found.push_back(i);
  if (found.size() != 1)
    throw InvariantError("kFormulas: expected one line starting with '" + std::string(s.anchor) +
                         "' in " + std::string(s.file) + ", got " + std::to_string(found.size()) +
                         "; update kFormulas");
  Excerpt e{std::string(s.file), 0, {}};
  std::string_view text;
  if (s.above) {
    std::size_t first = found[0];
    while (first > 0 && comment_text(lines[first - 1], text)) --first;
    for (std::size_t i = first; i < found[0]; ++i) {
      comment_text(lines[i], text);
      e.lines.emplace_back(text);
    }
    e.line = first + 1;
  } else {  // below the declaration's last line, which opens the body
    std::size_t open = found[0];
    while (open + 1 < lines.size() && (lines[open].empty() || lines[open].back() != '{')) ++open;
    for (std::size_t i = open + 1; i < lines.size() && comment_text(lines[i], text); ++i)
      e.lines.emplace_back(text);
    e.line = open + 2;
  }
  if (e.lines.empty())
    throw InvariantError("kFormulas: expected a formula comment " +
                         std::string(s.above ? "above" : "below") + " '" + std::string(s.anchor) +
                         "' in " + std::string(s.file) + ", got none");
  return e;
}

// The one line of `file` that contains `needle`.
Excerpt line_with(std::string_view file, std::string_view needle) {
  const auto lines = lines_of(embedded(file));
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(needle) != std::string_view::npos) {
      const std::size_t start = lines[i].find_first_not_of(' ');
      return {std::string(file), i + 1, {std::string(lines[i].substr(start))}};
    }
  throw InvariantError("padding lines: expected a line with '" + std::string(needle) + "' in " +
                       std::string(file) + ", got none");
}

// ---- JSON, written by hand: numbers as the float they are, strings safe inside <script> --------
std::string json_string(std::string_view s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\')
      q += std::string("\\") + c;
    else if (c == '<')
      q += "\\u003c";  // no "</script>" can end the data early
    else if (c == '\n')
      q += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20)
      q += ' ';
    else
      q += c;
  }
  return q + "\"";
}

std::string number(float v) {
  if (!std::isfinite(v)) return "null";             // JSON has no NaN; the page shows it as missing
  if (v == 0.0f && std::signbit(v)) return "-0.0";  // dropout's -0: a number, not the integer 0
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", double(v));  // 9 digits: the float comes back exact
  return buffer;
}

template <class A>
std::string tensor_json(const A& a) {
  std::ostringstream os;
  os << "{\"shape\":[";
  for (std::size_t d = 0; d < a.dimension(); ++d) os << (d ? "," : "") << a.shape()[d];
  os << "],\"data\":[";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i) os << ',';
    if constexpr (std::is_same_v<typename A::value_type, float>)
      os << number(a.data()[i]);
    else
      os << a.data()[i];
  }
  return os.str() + "]}";
}

std::string shape_json(const Shape& s) {
  std::string out = "[";
  for (std::size_t d = 0; d < s.size(); ++d) out += (d ? "," : "") + std::to_string(s[d]);
  return out + "]";
}

std::string excerpt_json(const Excerpt& e) {
  std::string lines;
  for (const std::string& l : e.lines) lines += (lines.empty() ? "" : ",") + json_string(l);
  return "{\"file\":" + json_string(e.file) + ",\"line\":" + std::to_string(e.line) +
         ",\"lines\":[" + lines + "]}";
}

std::string hex(std::uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

// Tensors are named on the page by small numbers ("t3"), in the order they are first met.
class TensorNames {
 public:
  std::string operator()(std::uintptr_t id) {
    const auto [it, added] = names_.try_emplace(id, "t" + std::to_string(names_.size()));
    return it->second;
  }

 private:
  std::map<std::uintptr_t, std::string> names_;
};

// ---- the run -------------------------------------------------------------------------------------
struct Settings {
  std::string out;
  std::int64_t steps = 8;
  std::uint64_t seed = 0;
  double lr = 0.05;
};

int run(int argc, char** argv) {
  CLI::App app("Writes one training step of the tutorials' model as a web page to step through");
  Settings s;
  app.add_option("--out", s.out, "the HTML page to write")->required();
  app.add_option("--steps", s.steps, "Adam steps shown by the page's slider")
      ->check(flags::integer_in(1, 100))
      ->capture_default_str();
  app.add_option("--seed", s.seed, "seed of the initial weights and the dropout masks")
      ->capture_default_str();
  app.add_option("--lr", s.lr, "Adam's learning rate")
      ->check(flags::number_in(0.0, 1.0, flags::Ends::open_low))
      ->capture_default_str();
  examples::parse_flags(app, argc, argv);

  // The model and the batch: three short sentences of a 7-word language, padded with id 0.
  const toy::Language lang(/*vocab=*/7, /*synonyms=*/3);  // <pad>, A1 A2 A3, B1 B2 B3
  const toy::ModelOptions options{lang.vocab(), /*d_model=*/8, lang.num_tags(), /*dropout=*/0.1,
                                  /*max_len=*/64};
  toy::ToyModel model(options, std::make_shared<Generator>(s.seed));
  const optim::Betas betas{0.9, 0.98};
  optim::Adam adam(model.parameters(), optim::AdamOptions(s.lr).betas(betas).eps(1e-9));
  nn::CrossEntropyLoss criterion;  // pad positions have target -100: ignored
  const toy::Batch batch = toy::make_batch(lang, {{1, 4, 2, 5, 3}, {4, 1, 6}, {2, 5, 1, 4}});
  const IndexArray targets = toy::flat(batch.targets);
  const Parameter& weight = model.embed->lut->weight;
  const Buffer& pe = model.pos->pe;

  TensorNames name_of;
  std::ostringstream tensors, entries, replay, steps;
  std::string sep_tensor;  // "" before the first element of tensors, then ","
  const auto add_tensor = [&](const std::string& tid, const std::string& label,
                              const std::string& kind, const std::string& value) {
    tensors << sep_tensor << json_string(tid) << ":{\"label\":" << json_string(label)
            << ",\"kind\":" << json_string(kind) << ",\"value\":" << value << "}";
    sep_tensor = ",";
  };
  const auto snapshot = [&](std::int64_t step, const std::string& loss) {
    const optim::OptimizerState state = adam.state_dict();
    const auto it = state.state.find(adam.param_id(weight));
    const bool has_state = it != state.state.end();
    steps << (step ? "," : "") << "{\"step\":" << step << ",\"loss\":" << loss
          << ",\"weight\":" << tensor_json(weight.data())
          << ",\"m\":" << (has_state ? tensor_json(*it->second.find("exp_avg")) : "null")
          << ",\"v\":" << (has_state ? tensor_json(*it->second.find("exp_avg_sq")) : "null")
          << ",\"pe_fingerprint\":" << json_string(hex(pe.fingerprint())) << "}";
    // The same numbers on standard output, as the library gives them (the browser test reads them).
    std::cout << "step " << step << "  loss " << (step ? loss : "-") << "  pe fingerprint "
              << hex(pe.fingerprint()) << '\n';
  };

  snapshot(0, "null");
  for (std::int64_t step = 1; step <= s.steps; ++step) {
    std::optional<autograd::KeepOutputs> keep;  // step 1's page shows every entry's output
    if (step == 1) keep.emplace();
    const Tensor loss = criterion.forward(model.forward(batch.ids), targets);
    keep.reset();
    if (step > 1) {
      loss.backward();
    } else {  // step 1, opened up: its tape, its leaves, and its backward as the engine ran it
      const autograd::Tape tape = autograd::tape_of(loss);
      std::map<std::string, Parameter> parameters;
      for (const auto& [path, p] : model.named_parameters()) parameters.emplace(path, p);
      std::string sep;
      for (auto e = tape.entries().rbegin(); e != tape.entries().rend(); ++e) {  // oldest first
        entries << sep << "{\"seq\":" << e->seq << ",\"op\":" << json_string(e->op)
                << ",\"module\":" << json_string(e->module) << ",\"inputs\":[";
        sep = ",";
        for (std::size_t i = 0; i < e->inputs.size(); ++i) {
          const autograd::TapeEntry::Input& in = e->inputs[i];
          const std::string tid = name_of(in.id);
          entries << (i ? "," : "") << "{\"tensor\":" << json_string(tid)
                  << ",\"shape\":" << shape_json(in.shape)
                  << ",\"requires_grad\":" << (in.requires_grad ? "true" : "false")
                  << ",\"producer\":" << in.producer << "}";
          if (in.producer < 0 &&
              parameters.count(in.name))  // a leaf: its value as the forward read it
            add_tensor(tid, in.name, "parameter", tensor_json(parameters.at(in.name).data()));
        }
        entries << "],\"output\":" << json_string(name_of(e->output_id))
                << ",\"output_shape\":" << shape_json(e->output) << ",\"saved\":[";
        for (std::size_t i = 0; i < e->saved.size(); ++i)
          entries << (i ? "," : "") << "{\"name\":" << json_string(e->saved[i].name)
                  << ",\"shape\":" << shape_json(e->saved[i].shape)
                  << ",\"version\":" << e->saved[i].version << "}";
        entries << "],\"formula\":";
        std::string formula = "null";
        for (const FormulaSource& f : kFormulas)
          if (f.op == e->op) formula = excerpt_json(formula_of(f));
        entries << formula << "}";
      }
      // pe is read by PositionalEncoding's forward as a constant: it is never an input of the tape.
      add_tensor("pe", "pos.pe", "buffer", tensor_json(pe.data()));

      autograd::BackwardTrace trace;
      loss.backward();
      trace.stop();
      sep.clear();
      for (const autograd::BackwardTrace::Step& st : trace.steps()) {
        replay << sep << "{\"seq\":" << st.seq << ",\"op\":" << json_string(st.op)
               << ",\"ran\":" << (st.ran ? "true" : "false")
               << ",\"grad_output\":" << (st.ran ? tensor_json(st.grad_output) : "null")
               << ",\"added\":[";
        sep = ",";
        for (std::size_t i = 0; i < st.added.size(); ++i)
          replay << (i ? "," : "") << "{\"tensor\":" << json_string(name_of(st.added[i].id))
                 << ",\"grad\":" << tensor_json(st.added[i].grad)
                 << ",\"total\":" << tensor_json(st.added[i].total) << "}";
        replay << "]}";
        for (const autograd::TapeEntry& e : tape.entries())  // the entry's output, as computed
          if (e.seq == st.seq)
            add_tensor(name_of(e.output_id), "#" + std::to_string(e.seq) + " " + e.op,
                       "intermediate", tensor_json(st.output));
      }
    }
    adam.step();
    adam.zero_grad();
    snapshot(step, number(float(loss.item())));
  }

  std::ostringstream words, tags;
  for (std::int64_t id = 0; id < lang.vocab(); ++id)
    words << (id ? "," : "") << json_string(lang.word(id));
  for (std::int64_t t = 0; t < lang.num_tags(); ++t)
    tags << (t ? "," : "") << json_string(lang.tag_name(t));
  std::ostringstream data;
  data << "{\"model\":{\"vocab\":" << lang.vocab() << ",\"d_model\":" << options.d_model
       << ",\"padding_idx\":" << toy::kPad << ",\"scale\":" << number(model.embed->scale())
       << ",\"dropout\":" << options.dropout << ",\"lr\":" << s.lr << ",\"betas\":[" << betas.first
       << "," << betas.second << "],\"words\":[" << words.str() << "],\"tags\":[" << tags.str()
       << "],\"ids\":" << tensor_json(batch.ids) << ",\"targets\":" << tensor_json(batch.targets)
       << "},\"tensors\":{" << tensors.str() << "},\"entries\":[" << entries.str()
       << "],\"replay\":[" << replay.str() << "],\"padding\":{\"skip\":"
       << excerpt_json(line_with("src/ops/embedding.cpp", "if (ids[p] == pad) continue;"))
       << ",\"zeroed\":"
       << excerpt_json(line_with("src/nn/embedding.cpp", "the padding row exactly 0"))
       << "},\"steps\":[" << steps.str() << "]}";

  // The page with its data put in: the only placeholder of page.html.
  std::string page(embedded("examples/tape_explorer/page.html"));
  const std::string placeholder = "TAPE_EXPLORER_DATA";
  const std::size_t at = page.find(placeholder);
  if (at == std::string::npos)
    throw InvariantError("page.html: expected " + placeholder + " in page.html, got none");
  page.replace(at, placeholder.size(), data.str());
  AtomicFile::write_whole(s.out, page, "--out");  // the whole page or none of it

  std::cout << "wrote " << s.out << ": step 1's tape (" << autograd::tape().size()
            << " entries left after backward), its replay, and " << s.steps
            << " Adam steps; open it in a browser\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("tape_explorer", [&] { return run(argc, argv); });
}
