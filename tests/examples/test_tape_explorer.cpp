// tests/examples/test_tape_explorer.cpp: examples/tape_explorer's page holds the library's own
// numbers. The test runs the program, reads the JSON inside the page, runs the same training in
// this process, and compares them bit for bit: the tape, the entries' outputs, the gradients
// backward left on the parameters, the embedding table, Adam's m and v, the positional table's
// fingerprint and the loss after every step. Each backward formula the page shows must be the
// whole comment it names, line for line, in the source file.
// The program's path comes from examples/CMakeLists.txt (TAPEGRAD_TAPE_EXPLORER).
#include <doctest/doctest.h>

#ifdef TAPEGRAD_TAPE_EXPLORER

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tapegrad/tapegrad.hpp>

#include "../../examples/toy_training/language.hpp"
#include "../../examples/toy_training/measure.hpp"
#include "../../examples/toy_training/model.hpp"
#include "../test_files.hpp"
#include "run_program.hpp"

using namespace tapegrad;
using nlohmann::json;

namespace {

json page_data(const std::string& page) {
  const std::string open = "<script id=\"tape-data\" type=\"application/json\">";
  const std::size_t start = page.find(open);
  REQUIRE(start != std::string::npos);
  const std::size_t end = page.find("</script>", start);
  REQUIRE(end != std::string::npos);
  return json::parse(page.substr(start + open.size(), end - start - open.size()));
}

// The page's tensor equals `a` element for element, as float32 bits (a JSON null is a NaN).
template <class A>
bool same_tensor(const json& t, const A& a) {
  if (t.is_null() || t["shape"].size() != a.dimension()) return false;
  for (std::size_t d = 0; d < a.dimension(); ++d)
    if (t["shape"][d].get<std::size_t>() != a.shape()[d]) return false;
  const json& data = t["data"];
  if (data.size() != a.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_same_v<typename A::value_type, float>) {
      const float got = data[i].is_null() ? NAN : float(data[i].get<double>());
      if (!toy::same_bits(Array{got}, Array{a.data()[i]})) return false;
    } else if (data[i].get<std::int64_t>() != a.data()[i]) {
      return false;
    }
  }
  return true;
}

std::string hex(std::uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

std::vector<std::string> source_lines(const std::string& file) {
  std::ifstream in(std::string(TAPEGRAD_SOURCE_DIR) + "/" + file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "  // text" -> "text"; false for a line that is not a // comment.
bool comment_of(const std::string& line, std::string& text) {
  const std::size_t start = line.find_first_not_of(' ');
  if (start == std::string::npos || line.compare(start, 2, "//") != 0) return false;
  text = line.substr(start + 2);
  if (!text.empty() && text.front() == ' ') text.erase(0, 1);
  return true;
}

}  // namespace

TEST_SUITE("examples.tape_explorer") {
  TEST_CASE("the page holds the numbers of the same run computed by the library") {
    const auto dir = testing::fresh_folder("tape_explorer", "numbers");
    const std::string page_path = (dir / "step.html").string();
    const auto run = testing::run_program(TAPEGRAD_TAPE_EXPLORER,
                                          "--out " + testing::quoted(page_path) + " --steps 4");
    INFO(run.text);
    REQUIRE(run.status == 0);
    const json data = page_data(testing::bytes_of(page_path));

    // The same run, here: the program's model, batch and optimizer.
    const toy::Language lang(7, 3);
    toy::ToyModel model(toy::ModelOptions{lang.vocab(), 8, lang.num_tags(), 0.1, 64},
                        std::make_shared<Generator>(0));
    optim::Adam adam(model.parameters(), optim::AdamOptions(0.05).betas({0.9, 0.98}).eps(1e-9));
    nn::CrossEntropyLoss criterion;
    const toy::Batch batch = toy::make_batch(lang, {{1, 4, 2, 5, 3}, {4, 1, 6}, {2, 5, 1, 4}});
    const IndexArray targets = toy::flat(batch.targets);
    const Parameter& weight = model.embed->lut->weight;
    CHECK(same_tensor(data["model"]["ids"], batch.ids));
    CHECK(same_tensor(data["model"]["targets"], batch.targets));

    const json& steps = data["steps"];
    REQUIRE(steps.size() == 5);
    CHECK(same_tensor(steps[0]["weight"], weight.data()));
    CHECK(steps[0]["m"].is_null());
    const std::string pe_at_start = hex(model.pos->pe.fingerprint());
    for (std::size_t step = 1; step <= 4; ++step) {
      CAPTURE(step);
      // ToyModel::forward, one module at a time, to hold each entry's output.
      const Tensor x0 = model.embed->forward(batch.ids);
      const Tensor x1 = model.pos->forward(x0);
      const Tensor x2 = model.out->forward(x1);
      const Tensor logits = ops::reshape(x2, {-1, lang.num_tags()});
      const Tensor loss = criterion.forward(logits, targets);
      if (step == 1) {
        const json& entries = data["entries"];
        const autograd::Tape tape = autograd::tape_of(loss);
        REQUIRE(entries.size() == tape.size());
        const std::vector<Tensor> outputs{x0, x1, x2, logits, loss};
        for (std::size_t k = 0; k < entries.size(); ++k) {  // recording order
          CAPTURE(k);
          const autograd::TapeEntry& e = tape.entries()[tape.size() - 1 - k];
          CHECK(entries[k]["op"] == e.op);
          CHECK(entries[k]["module"] == e.module);
          CHECK(entries[k]["inputs"].size() == e.inputs.size());
          CHECK(same_tensor(data["tensors"][entries[k]["output"].get<std::string>()]["value"],
                            outputs[k].data()));
        }
        // The leaves as the forward read them, and pe.
        for (const json& e : entries)
          for (const json& in : e["inputs"])
            if (in["producer"] == -1) {
              const json& t = data["tensors"][in["tensor"].get<std::string>()];
              CHECK(t["kind"] == "parameter");
              for (const auto& [name, p] : model.named_parameters())
                if (name == t["label"]) CHECK(same_tensor(t["value"], p.data()));
            }
        CHECK(same_tensor(data["tensors"]["pe"]["value"], model.pos->pe.data()));

        loss.backward();
        // The replay: newest first, seeded with 1, and what was added into each parameter sums
        // to the .grad backward left on it here.
        const json& replay = data["replay"];
        REQUIRE(replay.size() == entries.size());
        for (std::size_t k = 0; k < replay.size(); ++k)
          CHECK(replay[k]["seq"] == entries[entries.size() - 1 - k]["seq"]);
        CHECK(same_tensor(replay[0]["grad_output"], Array(1.0f)));
        std::size_t parameters_seen = 0;
        for (const json& st : replay)
          for (const json& added : st["added"]) {
            const std::string label = data["tensors"][added["tensor"].get<std::string>()]["label"];
            for (const auto& [name, p] : model.named_parameters())
              if (name == label) {
                CAPTURE(name);
                CHECK(same_tensor(added["total"], p.grad()));
                ++parameters_seen;
              }
          }
        CHECK(parameters_seen == 3);  // embed.lut.weight, out.weight, out.bias
        // Each entry received what its consumer added into its output.
        for (std::size_t k = 1; k < replay.size(); ++k) {
          const std::string output = entries[entries.size() - 1 - k]["output"];
          for (const json& added : replay[k - 1]["added"])
            if (added["tensor"] == output) CHECK(added["total"] == replay[k]["grad_output"]);
        }
      } else {
        loss.backward();
      }
      adam.step();
      adam.zero_grad();
      const optim::OptimizerState state = adam.state_dict();
      const optim::ParamState& s = state.state.at(adam.param_id(weight));
      CHECK(float(steps[step]["loss"].get<double>()) == float(loss.item()));
      CHECK(same_tensor(steps[step]["weight"], weight.data()));
      CHECK(same_tensor(steps[step]["m"], *s.find("exp_avg")));
      CHECK(same_tensor(steps[step]["v"], *s.find("exp_avg_sq")));
      CHECK(steps[step]["pe_fingerprint"] == hex(model.pos->pe.fingerprint()));
      CHECK(steps[step]["pe_fingerprint"] == pe_at_start);
      CHECK(toy::row_is_plus_zero(weight.data(), 0));
    }
  }

  TEST_CASE("each formula shown is the whole comment of the source, line for line") {
    const auto dir = testing::fresh_folder("tape_explorer", "formulas");
    const std::string page_path = (dir / "step.html").string();
    const auto run = testing::run_program(TAPEGRAD_TAPE_EXPLORER,
                                          "--out " + testing::quoted(page_path) + " --steps 1");
    INFO(run.text);
    REQUIRE(run.status == 0);
    const json data = page_data(testing::bytes_of(page_path));
    std::size_t formulas = 0;
    for (const json& e : data["entries"]) {
      CAPTURE(e["op"].get<std::string>());
      REQUIRE(!e["formula"].is_null());  // every op of this model has one
      const json& f = e["formula"];
      const auto lines = source_lines(f["file"]);
      const std::size_t first = f["line"].get<std::size_t>() - 1, n = f["lines"].size();
      REQUIRE(first + n <= lines.size());
      std::string text;
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(comment_of(lines[first + i], text));
        CHECK(text == f["lines"][i].get<std::string>());
      }
      // The whole comment: no comment line just before or just after it.
      CHECK_FALSE((first > 0 && comment_of(lines[first - 1], text)));
      CHECK_FALSE((first + n < lines.size() && comment_of(lines[first + n], text)));
      ++formulas;
    }
    CHECK(formulas == 5);
    // The padding row's two lines, as they stand in their files.
    for (const char* which : {"skip", "zeroed"}) {
      const json& p = data["padding"][which];
      const auto lines = source_lines(p["file"]);
      const std::size_t line = p["line"].get<std::size_t>();
      REQUIRE(line <= lines.size());
      const std::string& source = lines[line - 1];
      CHECK(source.substr(source.find_first_not_of(' ')) == p["lines"][0].get<std::string>());
    }
    CHECK(data["padding"]["skip"]["lines"][0] == "if (ids[p] == pad) continue;");
  }

  TEST_CASE("a bad flag is refused, naming it") {
    const auto run = testing::run_program(TAPEGRAD_TAPE_EXPLORER, "--out x.html --steps 0");
    CHECK(run.status == 2);
    CHECK(testing::has(run.text, "--steps"));
    const auto missing = testing::run_program(TAPEGRAD_TAPE_EXPLORER, "");
    CHECK(missing.status == 2);
    CHECK(testing::has(missing.text, "--out"));
  }
}

#endif  // TAPEGRAD_TAPE_EXPLORER
