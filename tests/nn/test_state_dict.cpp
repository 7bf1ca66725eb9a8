// tests/nn/test_state_dict.cpp: state_dict(), the atomic load_state_dict() and its exact error
// text (PyTorch's), StateDict itself and diff_state_dicts(). The model-level round
// trips with real layers are in the layer tests.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::bit_equal;

namespace {
// A layer with a parameter "weight" (rows, 2), a persistent buffer "table" (1, rows, 2) and a
// non-persistent buffer "cache".
struct Layer : Module {
  explicit Layer(std::size_t rows = 3, float start = 0.f)
      : weight(register_parameter("weight", Parameter(Array::from_shape({rows, 2})))),
        table(register_buffer("table", Buffer(Array::from_shape({1, rows, 2})))),
        cache(register_buffer("cache", Buffer(Array{1.f}), /*persistent=*/false)) {
    float v = start;
    for (float& x : weight.mutable_data()) x = v++;
    for (float& x : table.mutable_data()) x = v++;
  }
  Parameter weight;
  Buffer table, cache;
};

// A tutorial-shaped model in miniature: src_embed is a list (0: "lut" holder, 1: table holder).
struct Model : Module {
  explicit Model(float start = 0.f) {
    src_embed = register_module("src_embed", std::make_shared<ModuleList>());
    src_embed->push_back(std::make_shared<Layer>(3, start));
    src_embed->push_back(std::make_shared<Layer>(2, start + 100.f));
    head = register_module("head", std::make_shared<Layer>(4, start + 200.f));
  }
  std::shared_ptr<ModuleList> src_embed;
  std::shared_ptr<Layer> head;
};

// Holds the same Parameter as `a.weight` under "b.weight".
struct TiedModel : Module {
  struct Holder : Module {
    explicit Holder(Parameter w) : weight(register_parameter("weight", w)) {}
    Parameter weight;
  };
  TiedModel() {
    a = register_module("a", std::make_shared<Layer>());
    b = register_module("b", std::make_shared<Holder>(a->weight));
  }
  std::shared_ptr<Layer> a;
  std::shared_ptr<Holder> b;
};

using Names = std::vector<std::string>;

std::vector<std::uint64_t> versions(const Module& m) {
  std::vector<std::uint64_t> v;
  for (const auto& p : m.parameters()) v.push_back(p.version());
  for (const auto& b : m.buffers()) v.push_back(b.version());
  return v;
}

bool same_state(const StateDict& a, const StateDict& b) {
  if (a.keys() != b.keys()) return false;
  for (const auto& [k, v] : a)
    if (!bit_equal(v, b.at(k))) return false;
  return true;
}
}  // namespace

TEST_SUITE("nn.state_dict") {
  TEST_CASE("state_dict lists parameters then persistent buffers, module by module in pre-order") {
    Model m;
    const StateDict sd = m.state_dict();
    CHECK(sd.keys() == Names{"src_embed.0.weight", "src_embed.0.table", "src_embed.1.weight",
                             "src_embed.1.table", "head.weight", "head.table"});
    CHECK(sd.at("src_embed.1.table").shape() == Shape{1, 2, 2});
    CHECK(bit_equal(sd.at("head.weight"), m.head->weight.data()));
    CHECK(sd.aliases().empty());
  }

  TEST_CASE("state_dict holds copies: later changes to the model do not reach it") {
    Model m;
    const StateDict sd = m.state_dict();
    m.head->weight.mutable_data()(0, 0) = 42.f;
    CHECK(sd.at("head.weight")(0, 0) == 200.f);
  }

  TEST_CASE("a tied parameter appears under both keys and in the aliases") {
    TiedModel m;
    const StateDict sd = m.state_dict();
    CHECK(sd.keys() == Names{"a.weight", "a.table", "b.weight"});
    REQUIRE(sd.aliases().size() == 1);
    CHECK(sd.aliases()[0] == std::pair<std::string, std::string>{"b.weight", "a.weight"});
    SUBCASE("a state dict that stores the tensor once and the alias loads completely") {
      StateDict once;
      once.insert("a.weight", Array::from_shape({3, 2}));
      once.at("a.weight").fill(7.f);
      once.insert("a.table", sd.at("a.table"));
      once.add_alias("b.weight", "a.weight");
      CHECK(m.load_state_dict(once).to_string() == "<All keys matched successfully>");
      CHECK(m.b->weight.data()(2, 1) == 7.f);
    }
  }

  TEST_CASE("a full load copies every value, bumps versions and records nothing") {
    Model source(1000.f), target(0.f);
    const auto before = versions(target);
    Tensor probe(Array{1.f}, true);
    const std::size_t tape_before = autograd::tape().size();
    const IncompatibleKeys r = target.load_state_dict(source.state_dict());
    CHECK(r.missing_keys.empty());
    CHECK(r.unexpected_keys.empty());
    CHECK(r.to_string() == "<All keys matched successfully>");
    CHECK(same_state(target.state_dict(), source.state_dict()));
    CHECK(autograd::tape().size() == tape_before);
    const auto after = versions(target);
    CHECK(after[0] == before[0] + 1);  // parameters: written once each
    CHECK(target.src_embed->ptr<Layer>(0)->cache.data()(0) == 1.f);  // non-persistent: untouched
    CHECK(after.back() == before.back());
  }

  TEST_CASE("the strict / non-strict matrix") {
    Model m(0.f);
    const StateDict good = Model(500.f).state_dict();

    SUBCASE("a missing key: an error when strict, reported otherwise") {
      StateDict sd = good;
      sd.erase("src_embed.1.weight");
      CHECK_THROWS_WITH_AS(
          m.load_state_dict(sd),
          doctest::Contains("Missing key(s) in state_dict: \"src_embed.1.weight\". "),
          StateDictError);
      const IncompatibleKeys r = m.load_state_dict(sd, /*strict=*/false);
      CHECK(r.missing_keys == Names{"src_embed.1.weight"});
      CHECK(r.unexpected_keys.empty());
      CHECK(r.to_string() ==
            "IncompatibleKeys(missing_keys=['src_embed.1.weight'], unexpected_keys=[])");
      CHECK(m.head->weight.data()(0, 0) == 700.f);                      // the rest was loaded
      CHECK(m.src_embed->ptr<Layer>(1)->weight.data()(0, 0) == 100.f);  // the missing one kept
    }
    SUBCASE("an unexpected key: an error when strict, reported otherwise") {
      StateDict sd = good;
      sd.insert("head.extra", Array{1.f});
      CHECK_THROWS_WITH_AS(m.load_state_dict(sd),
                           doctest::Contains("Unexpected key(s) in state_dict: \"head.extra\". "),
                           StateDictError);
      const IncompatibleKeys r = m.load_state_dict(sd, false);
      CHECK(r.missing_keys.empty());
      CHECK(r.unexpected_keys == Names{"head.extra"});
      CHECK(m.head->weight.data()(0, 0) == 700.f);
    }
    SUBCASE("a size mismatch is an error either way") {
      StateDict sd = good;
      sd.at("head.table") = Array::from_shape({1, 5, 2});
      for (bool strict : {true, false}) {
        CHECK_THROWS_WITH_AS(
            m.load_state_dict(sd, strict),
            doctest::Contains("size mismatch for head.table: copying a param with shape (1, 5, 2) "
                              "from checkpoint, the shape in current model is (1, 4, 2)."),
            StateDictError);
      }
    }
    SUBCASE("a non-persistent buffer's key is unexpected, and never missing") {
      StateDict sd = good;
      sd.insert("head.cache", Array{9.f});
      const IncompatibleKeys r = m.load_state_dict(sd, false);
      CHECK(r.unexpected_keys == Names{"head.cache"});
      CHECK(r.missing_keys.empty());
      CHECK(m.head->cache.data()(0) == 1.f);
    }
    SUBCASE("non-strict with missing keys and a mismatch: the message lists only the mismatch") {
      StateDict sd = good;
      sd.erase("head.weight");
      sd.at("head.table") = Array::from_shape({2});
      try {
        m.load_state_dict(sd, false);
        FAIL("expected StateDictError");
      } catch (const StateDictError& e) {
        const std::string what = e.what();
        CHECK(what.find("Missing") == std::string::npos);
        CHECK(what.find("size mismatch for head.table") != std::string::npos);
        CHECK(e.missing == Names{"head.weight"});
        CHECK(e.mismatches == Names{"head.table"});
      }
    }
  }

  TEST_CASE("the error text is PyTorch's, section by section, then a hint") {
    Model m;
    StateDict sd = m.state_dict();
    sd.erase("src_embed.0.weight");
    sd.erase("head.weight");
    sd.insert("head.bias", Array{0.f});
    sd.insert("stray", Array{0.f});
    sd.at("src_embed.1.table") = Array::from_shape({1, 7, 2});
    try {
      m.load_state_dict(sd);
      FAIL("expected StateDictError");
    } catch (const StateDictError& e) {
      CHECK(std::string(e.what()) ==
            "Error(s) in loading state_dict for Model:\n"
            "\tMissing key(s) in state_dict: \"src_embed.0.weight\", \"head.weight\". \n"
            "\tUnexpected key(s) in state_dict: \"stray\", \"head.bias\". \n"
            "\tsize mismatch for src_embed.1.table: copying a param with shape (1, 7, 2) from "
            "checkpoint, the shape in current model is (1, 2, 2).\n"
            "\thint: in a size mismatch the first shape is the checkpoint's, the second the "
            "model's; size mismatches are refused even with strict=false");
      CHECK(e.missing == Names{"src_embed.0.weight", "head.weight"});
      CHECK(e.unexpected == Names{"stray", "head.bias"});  // PyTorch's order: the root judges first
      CHECK(e.mismatches == Names{"src_embed.1.table"});
    }
  }

  TEST_CASE("the hint names max_len when the positional table does not fit") {
    struct Pos : Module {
      Pos() : pe(register_buffer("pe", Buffer(Array::from_shape({1, 8, 4})))) {}
      Buffer pe;
    };
    Pos m;
    StateDict sd;
    sd.insert("pe", Array::from_shape({1, 16, 4}));
    CHECK_THROWS_WITH_AS(m.load_state_dict(sd), doctest::Contains("'pe' depends on max_len"),
                         StateDictError);
  }

  TEST_CASE("the hint spots a checkpoint whose keys all carry an extra prefix") {
    Model m;
    StateDict wrapped;
    for (const auto& [k, v] : m.state_dict()) wrapped.insert("module." + k, v);
    CHECK_THROWS_WITH_AS(m.load_state_dict(wrapped), doctest::Contains("extra prefix 'module.'"),
                         StateDictError);
  }

  TEST_CASE("a refused load leaves the model exactly as it was (atomic)") {
    Model m(0.f);
    const StateDict before = m.state_dict();
    const auto versions_before = versions(m);
    StateDict sd = Model(900.f).state_dict();      // every key present and matching ...
    sd.at("head.table") = Array::from_shape({3});  // ... but the last one has the wrong shape
    CHECK_THROWS_AS(m.load_state_dict(sd, false), StateDictError);
    CHECK(same_state(m.state_dict(), before));
    CHECK(versions(m) == versions_before);
    sd.at("head.table") = Array::from_shape({1, 4, 2});
    sd.insert("unknown", Array{1.f});
    CHECK_THROWS_AS(m.load_state_dict(sd), StateDictError);  // strict: unexpected key
    CHECK(same_state(m.state_dict(), before));
    CHECK(versions(m) == versions_before);
  }

  TEST_CASE("check_state_dict throws what load_state_dict would and copies nothing") {
    Model m(0.f);
    const StateDict before = m.state_dict();
    const auto versions_before = versions(m);
    StateDict sd = Model(900.f).state_dict();
    const IncompatibleKeys keys = m.check_state_dict(sd);  // a good one: passes, changes nothing
    CHECK(keys.missing_keys.empty());
    CHECK(keys.unexpected_keys.empty());
    CHECK(same_state(m.state_dict(), before));
    CHECK(versions(m) == versions_before);
    sd.at("head.table") = Array::from_shape({3});
    std::string from_load, from_check;
    try {
      m.load_state_dict(sd);
    } catch (const StateDictError& e) {
      from_load = e.what();
    }
    try {
      m.check_state_dict(sd);
    } catch (const StateDictError& e) {
      from_check = e.what();
    }
    CHECK(from_check.find("size mismatch for head.table") != std::string::npos);
    CHECK(from_check == from_load);
    CHECK(same_state(m.state_dict(), before));
  }

  TEST_CASE("a model saved and loaded into a differently initialised one becomes identical") {
    Model a(3.f), b(-50.f);
    CHECK_FALSE(diff_state_dicts(a.state_dict(), b.state_dict()).identical());
    b.load_state_dict(a.state_dict());
    CHECK(diff_state_dicts(a.state_dict(), b.state_dict()).identical());
  }

  TEST_CASE("StateDict keeps insertion order and refuses duplicate or unknown keys") {
    StateDict sd;
    sd.insert("z", Array{1.f});
    sd.insert("a", Array{2.f});
    sd.insert("m", Array{3.f});
    CHECK(sd.keys() == Names{"z", "a", "m"});
    CHECK(sd.size() == 3);
    CHECK_THROWS_WITH_AS(sd.insert("a", Array{0.f}),
                         doctest::Contains("expected a new key, got 'a'"), ValueError);
    CHECK_THROWS_WITH_AS(sd.at("nope"), doctest::Contains("got 'nope'"), ValueError);
    CHECK_THROWS_WITH_AS(sd.add_alias("x", "nope"),
                         doctest::Contains("expected a target key holding a value"), ValueError);
    sd.add_alias("y", "a");
    CHECK(sd.contains("y"));
    CHECK(sd.at("y")(0) == 2.f);
    CHECK(sd.keys() == Names{"z", "a", "m", "y"});
    CHECK_THROWS_AS(sd.insert("y", Array{0.f}), ValueError);
    sd.erase("a");
    CHECK(sd.keys() == Names{"z", "m"});
    CHECK(sd.aliases().empty());
    CHECK(sd.at("m")(0) == 3.f);
  }

  TEST_CASE("diff_state_dicts reports missing, unexpected, shape mismatches and max differences") {
    StateDict a, b;
    a.insert("same", Array{1.f, 2.f});
    a.insert("moved", Array{1.f, 2.f, 3.f});
    a.insert("only_a", Array{0.f});
    a.insert("reshaped", Array{0.f, 0.f});
    a.insert("nan", Array{NAN, 1.f});
    b.insert("only_b", Array{0.f});
    b.insert("same", Array{1.f, 2.f});
    b.insert("moved", Array{1.f, 2.5f, 2.f});
    b.insert("reshaped", Array{0.f});
    b.insert("nan", Array{NAN, 1.f});
    const StateDictDiff d = diff_state_dicts(a, b);
    CHECK(d.missing == Names{"only_a"});
    CHECK(d.unexpected == Names{"only_b"});
    REQUIRE(d.shape_mismatches.size() == 1);
    CHECK(d.shape_mismatches[0].key == "reshaped");
    CHECK(d.shape_mismatches[0].a == Shape{2});
    CHECK(d.shape_mismatches[0].b == Shape{1});
    REQUIRE(d.max_abs_diff.size() == 3);
    CHECK(d.max_abs_diff[0] == std::pair<std::string, double>{"same", 0.0});
    CHECK(d.max_abs_diff[1] == std::pair<std::string, double>{"moved", 1.0});
    CHECK(d.max_abs_diff[2] == std::pair<std::string, double>{"nan", 0.0});  // NaN in both places
    CHECK_FALSE(d.identical());
    const std::string text = d.to_string();
    CHECK(text.find("missing (in a, not in b): \"only_a\"") != std::string::npos);
    CHECK(text.find("shape mismatch for \"reshaped\": (2,) vs (1,)") != std::string::npos);
    b.at("nan")(0) = 0.f;
    CHECK(std::isnan(diff_state_dicts(a, b).max_abs_diff[2].second));  // NaN on one side only
  }

  TEST_CASE("iterating state_dict().items() of a temporary is safe") {
    nn::Linear lin(2, 3);
    static_assert(std::is_same_v<decltype(std::declval<nn::StateDict>().items()),
                                 std::vector<nn::StateDict::Item>>);  // by value from a temporary
    std::vector<std::string> keys;
    std::size_t values = 0;
    for (auto& [k, v] : lin.state_dict().items()) {
      keys.push_back(k);
      values += v.size();
    }
    CHECK(keys == std::vector<std::string>{"weight", "bias"});
    CHECK(values == 9);
  }
}  // TEST_SUITE
