// tests/io/test_checkpoint.cpp: models, optimizers and whole training runs in safetensors files
// round trips with a tied parameter, dtype conversion, strict and non-strict
// loads, all-or-nothing loads of damaged or mismatched files, NumPy reading tapegrad's files, exact
// resume in one process, and a training process killed with SIGKILL and resumed
// (tests/tools/resumable_training.cpp) ending bit-identical to an uninterrupted run.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "scratch.hpp"

extern char** environ;  // the environment handed on to the programs the tests start

using namespace tapegrad;
using namespace tapegrad::io;
using tapegrad::testing::bit_equal;
using tapegrad::testing::folder_listing;
using tapegrad::testing::read_bytes;
using tapegrad::testing::scratch_dir;
using tapegrad::testing::write_bytes;

namespace {
using Names = std::vector<std::string>;
constexpr std::int64_t kVocab = 11, kDModel = 8;

// A module holding a parameter made elsewhere under "weight": how a tie is built.
struct Projection : nn::Module {
  explicit Projection(Parameter w) : weight(register_parameter("weight", w)) {}
  Parameter weight;
};

// The tutorials' shape: src_embed = [Embeddings, PositionalEncoding], and a generator whose
// projection is TIED to the embedding table (as The Annotated Transformer ties them).
struct TiedTutorialModel : nn::Module {
  struct Generator_ : nn::Module {
    explicit Generator_(Parameter w)
        : proj(register_module("proj", std::make_shared<Projection>(w))) {}
    std::string type_name() const override { return "Generator"; }
    std::shared_ptr<Projection> proj;
  };
  explicit TiedTutorialModel(std::uint64_t seed, std::int64_t max_len = 16)
      : gen(std::make_shared<Generator>(seed)),
        src_embed(register_module("src_embed", std::make_shared<nn::ModuleList>())) {
    src_embed->push_back(std::make_shared<nn::Embeddings>(
        nn::EmbeddingOptions(kVocab, kDModel).padding_idx(0), gen));
    src_embed->push_back(std::make_shared<nn::PositionalEncoding>(kDModel, 0.1, max_len, gen));
    generator = register_module("generator", std::make_shared<Generator_>(lut_weight()));
  }
  Parameter lut_weight() const { return src_embed->ptr<nn::Embeddings>(0)->lut->weight; }
  std::shared_ptr<Generator> gen;
  std::shared_ptr<nn::ModuleList> src_embed;
  std::shared_ptr<Generator_> generator;
};

bool same_state(const nn::StateDict& a, const nn::StateDict& b) {
  if (a.keys() != b.keys()) return false;
  for (const std::string& k : a.keys())
    if (!bit_equal(a.at(k), b.at(k))) return false;
  return true;
}

bool same_optimizer_state(const optim::OptimizerState& a, const optim::OptimizerState& b) {
  if (a.optimizer != b.optimizer || a.state.size() != b.state.size() ||
      a.param_groups.size() != b.param_groups.size())
    return false;
  for (std::size_t g = 0; g < a.param_groups.size(); ++g)
    if (a.param_groups[g].params != b.param_groups[g].params ||
        a.param_groups[g].options != b.param_groups[g].options)
      return false;
  for (const auto& [id, s] : a.state) {
    const auto it = b.state.find(id);
    if (it == b.state.end() || it->second.step != s.step ||
        it->second.tensors.size() != s.tensors.size())
      return false;
    for (const auto& [name, value] : s.tensors)
      if (it->second.find(name) == nullptr || !bit_equal(value, *it->second.find(name)))
        return false;
  }
  return true;
}

// A batch of 4 rows x 6 ids from [1, vocab), the last id of each row padding (0); targets = ids.
IndexArray draw_batch(Generator& data) {
  IndexArray ids = IndexArray::from_shape({4, 6});
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 6; ++c) ids(r, c) = c == 5 ? 0 : data.randint(1, kVocab);
  return ids;
}

// The toy training program's model in small: its dropout draws from the DEFAULT generator, its data
// from a generator of its own, so an exact resume needs both.
struct ToyModel : nn::Module {
  ToyModel(std::shared_ptr<Generator> init, bool sparse)
      : embed(register_module(
            "embed",
            std::make_shared<nn::Embeddings>(
                nn::EmbeddingOptions(kVocab, kDModel).padding_idx(0).sparse(sparse), init))),
        pos(register_module("pos", std::make_shared<nn::PositionalEncoding>(
                                       nn::PositionalEncodingOptions(kDModel, 0.1).max_len(16)))),
        out(register_module(
            "out", std::make_shared<nn::Linear>(nn::LinearOptions(kDModel, kVocab), init))) {}
  std::shared_ptr<nn::Embeddings> embed;
  std::shared_ptr<nn::PositionalEncoding> pos;
  std::shared_ptr<nn::Linear> out;
};

// One training run: model, Adam + LambdaLR(noam) (plus SparseAdam for a sparse embedding), data
// generator, and the checkpoint that tracks them all.
struct ToyRun {
  ToyRun(std::uint64_t init_seed, std::uint64_t data_seed, bool sparse = false)
      : init(std::make_shared<Generator>(init_seed)),
        data(std::make_shared<Generator>(data_seed)),
        model(init, sparse),
        adam(sparse ? model.out->parameters() : model.parameters(),
             optim::AdamOptions(1.0).betas({0.9, 0.98}).eps(1e-9)),
        sched(adam, [](std::int64_t e) { return optim::noam(e, kDModel, 1.0, 4); }),
        ckpt(model, adam, &sched) {
    if (sparse) {
      sparse_adam = std::make_unique<optim::SparseAdam>(model.embed->parameters(),
                                                        optim::SparseAdamOptions(0.05));
      ckpt.add_optimizer(*sparse_adam);
    }
    ckpt.add_generator("data", data);
  }
  void train(int steps) {
    for (int s = 0; s < steps; ++s) {
      const IndexArray ids = draw_batch(*data);
      IndexArray target = IndexArray::from_shape({ids.size()});
      std::copy(ids.begin(), ids.end(), target.begin());
      Tensor logits = ops::reshape(
          model.out->forward(model.pos->forward(model.embed->forward(ids))), {-1, kVocab});
      Tensor loss = ops::cross_entropy(logits, target, ops::CrossEntropyOptions().ignore_index(0));
      loss.backward();
      adam.step();
      if (sparse_adam) sparse_adam->step();
      adam.zero_grad();
      if (sparse_adam) sparse_adam->zero_grad();
      sched.step();
      ++steps_done;
    }
  }
  std::shared_ptr<Generator> init, data;
  ToyModel model;
  optim::Adam adam;
  optim::LambdaLR sched;
  std::unique_ptr<optim::SparseAdam> sparse_adam;
  io::TrainingCheckpoint ckpt;
  std::int64_t steps_done = 0;
};

// Everything a TrainingCheckpoint tracks, for "nothing changed" checks.
struct Snapshot {
  explicit Snapshot(const ToyRun& r)
      : model(r.model.state_dict()),
        adam(r.adam.state_dict()),
        last_epoch(r.sched.last_epoch()),
        last_lr(r.sched.get_last_lr()),
        data(r.data->state()),
        dflt(default_generator()->state()) {}
  bool operator==(const Snapshot& o) const {
    return same_state(model, o.model) && same_optimizer_state(adam, o.adam) &&
           last_epoch == o.last_epoch && last_lr == o.last_lr && data == o.data && dflt == o.dflt;
  }
  nn::StateDict model;
  optim::OptimizerState adam;
  std::int64_t last_epoch;
  std::vector<double> last_lr;
  std::string data, dflt;
};

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

template <class T>
std::vector<std::uint8_t> bytes_of(std::initializer_list<T> values) {
  std::vector<std::uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

// The message of the exception `f` throws, checked to be of type E.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw another type: " << e.what());
  }
  FAIL("threw nothing");
  return "";
}
}  // namespace

TEST_SUITE("io.checkpoint") {
  // ---- a model's weights ------------------------------------------------------------------------

  TEST_CASE(
      "a model round trip stores a tied parameter once and restores every value and the alias") {
    const auto dir = scratch_dir("ckpt_model_round_trip");
    const std::string path = (dir / "model.safetensors").string();
    TiedTutorialModel source(1);
    CHECK(source.state_dict().keys() ==
          Names{"src_embed.0.lut.weight", "src_embed.1.pe", "generator.proj.weight"});
    save(source, path);

    const SafetensorsFile f = load_safetensors(path);
    REQUIRE(f.tensors().size() == 2);  // the tied weight once
    // Stored under the smallest name, the other name in __metadata__ (safetensors' save_model).
    CHECK(f.has_tensor("generator.proj.weight"));
    CHECK(f.has_tensor("src_embed.1.pe"));
    CHECK(f.aliases() == std::vector<std::pair<std::string, std::string>>{
                             {"src_embed.0.lut.weight", "generator.proj.weight"}});
    CHECK(f.metadata_value("format") == "pt");
    CHECK(f.metadata_value("framework") == "tapegrad");
    CHECK(f.metadata_value("tapegrad.version") == std::string(TAPEGRAD_VERSION));

    TiedTutorialModel target(99);  // another initialisation
    CHECK_FALSE(same_state(target.state_dict(), source.state_dict()));
    CHECK(load(target, path).to_string() == "<All keys matched successfully>");
    CHECK(same_state(target.state_dict(), source.state_dict()));
    CHECK(target.lut_weight().is_same(target.generator->proj->weight));  // still one parameter
    const nn::StateDict read = load_state_dict(path);
    CHECK(read.aliases() == std::vector<std::pair<std::string, std::string>>{
                                {"src_embed.0.lut.weight", "generator.proj.weight"}});
    CHECK(nn::diff_state_dicts(source.state_dict(), read).identical());
  }

  TEST_CASE(
      "saving the same model twice gives the same bytes, and the file is replaced atomically") {
    const auto dir = scratch_dir("ckpt_model_bytes");
    TiedTutorialModel m(3);
    save(m, (dir / "a.safetensors").string());
    save(m, (dir / "b.safetensors").string());
    CHECK(read_bytes(dir / "a.safetensors") == read_bytes(dir / "b.safetensors"));
    m.lut_weight().mutable_data()(1, 1) = 42.f;
    save(m, (dir / "a.safetensors").string());
    CHECK(read_bytes(dir / "a.safetensors") != read_bytes(dir / "b.safetensors"));
    CHECK(folder_listing(dir) == Names{"a.safetensors", "b.safetensors"});  // no temporary left
  }

  TEST_CASE(
      "the reference writer's file loads into a module: tie, F16, BF16 and F64 converted, the rest "
      "unexpected") {
    // tests/io/fixtures/reference.safetensors, from scripts/golden/safetensors_fixture.py (numpy 1.24).
    struct ReferenceShaped : nn::Module {
      ReferenceShaped()
          : embed(register_module("embed", std::make_shared<nn::Embedding>(3, 2))),
            lm_head(register_module("lm_head", std::make_shared<Projection>(embed->weight))),
            half(register_parameter("half", Parameter(Array::from_shape({4})))),
            bf(register_parameter("bf", Parameter(Array::from_shape({3})))),
            dbl(register_parameter("dbl", Parameter(Array::from_shape({2, 2})))) {}
      std::shared_ptr<nn::Embedding> embed;
      std::shared_ptr<Projection> lm_head;
      Parameter half, bf, dbl;
    };
    const std::string path =
        std::string(TAPEGRAD_SOURCE_DIR) + "/tests/io/fixtures/reference.safetensors";
    ReferenceShaped m;
    CHECK_THROWS_WITH_AS(
        load(m, path),
        doctest::Contains(
            "Unexpected key(s) in state_dict: \"state.0.step\", \"empty\", \"mask\"."),
        StateDictError);
    nn::IncompatibleKeys r = load(m, path, /*strict=*/false);
    CHECK(r.missing_keys.empty());
    CHECK(r.unexpected_keys == Names{"state.0.step", "empty", "mask"});
    CHECK(bit_equal(m.embed->weight.data(), Array{{0.5f, -1.f}, {2.f, 3.25f}, {-0.f, 1e-3f}}));
    CHECK(m.lm_head->weight.is_same(m.embed->weight));
    CHECK(bit_equal(m.half.data(), Array{1.f, -2.f, 65504.f, std::ldexp(1.f, -24)}));
    CHECK(bit_equal(m.bf.data(), Array{1.f, -5.f, 3.140625f}));
    CHECK(m.dbl.data()(0, 1) == -2.25f);
    CHECK(std::isinf(m.dbl.data()(1, 0)));
    CHECK(std::isnan(m.dbl.data()(1, 1)));
  }

  TEST_CASE("F64, F16 and BF16 tensors load converted to float32") {
    const auto dir = scratch_dir("ckpt_dtypes");
    SafetensorsFile f;
    f.add_raw("weight", Dtype::F64, {2, 2}, bytes_of<double>({0.5, -1.25, 1e-3, 3.0}));
    f.add_raw("bias", Dtype::F16, {2}, bytes_of<std::uint16_t>({0x3C00, 0xC000}));  // 1, -2
    save_safetensors((dir / "half.safetensors").string(), f);
    nn::Linear lin(2, 2);
    load(lin, (dir / "half.safetensors").string());
    CHECK(bit_equal(lin.weight.data(), Array{{0.5f, -1.25f}, {1e-3f, 3.f}}));
    CHECK(bit_equal(lin.bias.data(), Array{1.f, -2.f}));

    SafetensorsFile g;
    g.add_raw("weight", Dtype::BF16, {2, 2},
              bytes_of<std::uint16_t>({0x3F80, 0x4040, 0xBF00, 0x0000}));  // 1 3 -0.5 0
    g.add("bias", Array{7.f, 8.f});
    save_safetensors((dir / "bf16.safetensors").string(), g);
    load(lin, (dir / "bf16.safetensors").string());
    CHECK(bit_equal(lin.weight.data(), Array{{1.f, 3.f}, {-0.5f, 0.f}}));
  }

  TEST_CASE("an integer dtype for one of the model's keys is a TypeError naming key and dtype") {
    const auto dir = scratch_dir("ckpt_int_dtype");
    nn::Linear lin(2, 2);
    const nn::StateDict before = lin.state_dict();
    SafetensorsFile f;
    f.add_raw("weight", Dtype::I32, {2, 2}, bytes_of<std::int32_t>({1, 2, 3, 4}));
    f.add("bias", Array{7.f, 8.f});
    save_safetensors((dir / "int.safetensors").string(), f);
    CHECK_THROWS_WITH_AS(load(lin, (dir / "int.safetensors").string()),
                         doctest::Contains("expected tensor 'weight' to hold floating-point data "
                                           "(F32, F64, F16 or BF16), got dtype I32"),
                         TypeError);
    CHECK(same_state(lin.state_dict(), before));

    SUBCASE(
        "an integer tensor the model does not have is only unexpected (a PyTorch counter buffer)") {
      SafetensorsFile g;
      g.add("weight", Array{{1.f, 2.f}, {3.f, 4.f}});
      g.add("bias", Array{7.f, 8.f});
      g.add("num_batches_tracked", IndexArray(std::int64_t{5}));
      save_safetensors((dir / "counter.safetensors").string(), g);
      CHECK_THROWS_WITH_AS(
          load(lin, (dir / "counter.safetensors").string()),
          doctest::Contains("Unexpected key(s) in state_dict: \"num_batches_tracked\""),
          StateDictError);
      const nn::IncompatibleKeys r =
          load(lin, (dir / "counter.safetensors").string(), /*strict=*/false);
      CHECK(r.unexpected_keys == Names{"num_batches_tracked"});
      CHECK(bit_equal(lin.weight.data(), Array{{1.f, 2.f}, {3.f, 4.f}}));
    }
  }

  TEST_CASE(
      "strict and non-strict loads report missing and unexpected keys, and a size mismatch always "
      "fails") {
    const auto dir = scratch_dir("ckpt_strict");
    const std::string with_bias = (dir / "with_bias.safetensors").string();
    nn::Linear source(nn::LinearOptions(3, 2), std::make_shared<Generator>(1));
    save(source, with_bias);
    nn::Linear no_bias(nn::LinearOptions(3, 2).bias(false), std::make_shared<Generator>(2));

    const std::string what = message_of<StateDictError>([&] { load(no_bias, with_bias); });
    CHECK(what.find("Error(s) in loading state_dict for Linear:\n\tUnexpected key(s) in "
                    "state_dict: \"bias\". ") == 0);
    CHECK(what.find("\n\tcheckpoint: '" + with_bias + "'") != std::string::npos);
    CHECK_FALSE(bit_equal(no_bias.weight.data(), source.weight.data()));

    const nn::IncompatibleKeys r = load(no_bias, with_bias, /*strict=*/false);
    CHECK(r.unexpected_keys == Names{"bias"});
    CHECK(r.missing_keys.empty());
    CHECK(bit_equal(no_bias.weight.data(), source.weight.data()));

    const std::string without_bias = (dir / "without_bias.safetensors").string();
    save(no_bias, without_bias);
    nn::Linear target(nn::LinearOptions(3, 2), std::make_shared<Generator>(3));
    CHECK_THROWS_WITH_AS(load(target, without_bias),
                         doctest::Contains("Missing key(s) in state_dict: \"bias\""),
                         StateDictError);
    CHECK(load(target, without_bias, false).missing_keys == Names{"bias"});

    nn::Linear wider(nn::LinearOptions(4, 2), std::make_shared<Generator>(4));
    CHECK_THROWS_WITH_AS(
        load(wider, with_bias, false),
        doctest::Contains("size mismatch for weight: copying a param with shape (2, 3) from "
                          "checkpoint, the shape in current model is (2, 4)."),
        StateDictError);
  }

  TEST_CASE("a damaged or refused file leaves the model unchanged, and the file too") {
    const auto dir = scratch_dir("ckpt_damaged");
    const std::string path = (dir / "model.safetensors").string();
    TiedTutorialModel source(1), target(2);
    save(source, path);
    const std::string good = read_bytes(path);
    const nn::StateDict before = target.state_dict();
    const auto versions = [](const nn::Module& m) {
      std::vector<std::uint64_t> v;
      for (const auto& p : m.parameters()) v.push_back(p.version());
      for (const auto& b : m.buffers()) v.push_back(b.version());
      return v;
    };
    const auto versions_before = versions(target);

    SUBCASE("truncated") {
      write_bytes(path, good.substr(0, good.size() - 5));
      CHECK_THROWS_WITH_AS(load(target, path), doctest::Contains("MetadataIncompleteBuffer"),
                           CheckpointError);
    }
    SUBCASE("a flipped header byte") {
      std::string bad = good;
      bad[20] = '\x01';
      write_bytes(path, bad);
      CHECK_THROWS_AS(load(target, path), CheckpointError);
    }
    SUBCASE("garbage") {
      write_bytes(path, std::string(100, 'x'));
      CHECK_THROWS_WITH_AS(load(target, path), doctest::Contains("HeaderTooLarge"),
                           CheckpointError);
    }
    SUBCASE("missing") {
      std::filesystem::remove(path);
      CHECK_THROWS_WITH_AS(load(target, path), doctest::Contains("cannot open"), CheckpointError);
      write_bytes(path, "");
    }
    SUBCASE("from a model with another max_len") {
      save(TiedTutorialModel(1, /*max_len=*/32), path);
      CHECK_THROWS_WITH_AS(load(target, path),
                           doctest::Contains("size mismatch for src_embed.1.pe"), StateDictError);
    }
    const std::string damaged = read_bytes(path);
    CHECK(same_state(target.state_dict(), before));
    CHECK(versions(target) == versions_before);
    CHECK(read_bytes(path) == damaged);  // a load never writes
  }

  // ---- an optimizer's state ---------------------------------------------------------------------

  TEST_CASE(
      "an optimizer and its scheduler round trip through a file and then take identical steps") {
    const auto dir = scratch_dir("ckpt_optimizer");
    const std::string model_path = (dir / "model.safetensors").string(),
                      opt_path = (dir / "optim.safetensors").string();
    manual_seed(7);
    ToyRun a(1, 2);
    a.adam.set_options(0, optim::AdamOptions(a.adam.options(0)).amsgrad(true).weight_decay(0.01));
    a.train(3);
    save(a.model, model_path);
    save_optimizer(a.adam, opt_path, &a.sched);

    // The file: the optimizer layout (tensors state.{id}.{name}, JSON texts in the metadata).
    const SafetensorsFile f = load_safetensors(opt_path);
    CHECK(f.metadata_value("optimizer") == "Adam");
    CHECK(f.metadata_value("lr_scheduler") == R"({"base_lrs":[1.0],"last_epoch":3})");
    const std::string groups = *f.metadata_value("param_groups");
    CHECK(groups.find(R"("amsgrad":true,"betas":[0.9,0.98],"eps":1e-09,)") != std::string::npos);
    CHECK(groups.find(R"("params":[0,1,2]}])") != std::string::npos);
    CHECK(f.record("state.0.step").dtype == Dtype::I64);
    CHECK(f.record("state.0.step").shape.empty());
    CHECK(f.to_int64("state.2.step")() == 3);
    CHECK(f.has_tensor("state.2.exp_avg"));
    CHECK(f.has_tensor("state.2.exp_avg_sq"));
    CHECK(f.has_tensor("state.2.max_exp_avg_sq"));

    manual_seed(7);   // the dropout stream of run a, again
    ToyRun b(50, 2);  // other weights, same data
    b.data->set_state(a.data->state());
    b.adam.set_lr(0, 0.5);
    load(b.model, model_path);
    load_optimizer(b.adam, opt_path, &b.sched);
    CHECK(b.sched.last_epoch() == 3);
    CHECK(b.adam.options(0).amsgrad());
    CHECK(b.adam.options(0).lr() == a.adam.options(0).lr());
    CHECK(same_optimizer_state(b.adam.state_dict(), a.adam.state_dict()));
    default_generator()->set_state(Generator(0).state());  // the same stream for both runs below
    a.train(2);
    default_generator()->set_state(Generator(0).state());
    b.train(2);
    CHECK(same_state(b.model.state_dict(), a.model.state_dict()));
    CHECK(same_optimizer_state(b.adam.state_dict(), a.adam.state_dict()));
  }

  TEST_CASE("SGD's momentum round trips, with no step count on disk") {
    const auto dir = scratch_dir("ckpt_sgd");
    Parameter p(Array{1.f, -1.f}), q(Array{1.f, -1.f});
    optim::SGD s1({p}, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
    p.set_grad(Array{0.3f, -0.7f});
    s1.step();
    save_optimizer(s1, (dir / "sgd.safetensors").string());
    const SafetensorsFile f = load_safetensors((dir / "sgd.safetensors").string());
    CHECK_FALSE(f.contains("state.0.step"));
    CHECK(f.has_tensor("state.0.momentum_buffer"));
    q.mutable_data() = p.data();
    optim::SGD s2({q}, optim::SGDOptions(0.5));
    load_optimizer(s2, (dir / "sgd.safetensors").string());
    p.set_grad(Array{0.1f, 0.2f});
    q.set_grad(Array{0.1f, 0.2f});
    s1.step();
    s2.step();
    CHECK(bit_equal(p.data(), q.data()));
  }

  TEST_CASE(
      "param_groups and lr_scheduler texts keep every double exactly, NaN and infinities "
      "included") {
    optim::OptimizerState s;
    s.optimizer = "Custom";
    const double weird[] = {0.1, 1e-9, 5e-324, 1.7976931348623157e308, -0.0, 1.0 / 3.0};
    s.param_groups.push_back(
        {{{"a", weird[0]},
          {"b", weird[1]},
          {"c", weird[2]},
          {"d", weird[3]},
          {"e", weird[4]},
          {"f", weird[5]},
          {"flag", false},
          {"list", std::vector<double>{std::numeric_limits<double>::quiet_NaN(),
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity()}}},
         {0, 7}});
    optim::LambdaLRState sched{-1, {weird[5], std::numeric_limits<double>::infinity()}};
    SafetensorsFile f;
    add_optimizer_state(f, s, &sched, "opt.");
    const SafetensorsFile g = parse_safetensors(serialize_safetensors(f));
    const optim::OptimizerState r = read_optimizer_state(g, "opt.");
    REQUIRE(r.param_groups.size() == 1);
    const optim::HyperParams& h = r.param_groups[0].options;
    const char* keys[] = {"a", "b", "c", "d", "e", "f"};
    for (int i = 0; i < 6; ++i) {
      const double x = std::get<double>(h.at(keys[i]));
      CHECK_MESSAGE(std::memcmp(&x, &weird[i], sizeof x) == 0, keys[i]);
    }
    CHECK(std::get<bool>(h.at("flag")) == false);
    const auto& list = std::get<std::vector<double>>(h.at("list"));
    REQUIRE(list.size() == 3);
    CHECK(std::isnan(list[0]));
    CHECK(list[1] == std::numeric_limits<double>::infinity());
    CHECK(list[2] == -std::numeric_limits<double>::infinity());
    CHECK(r.param_groups[0].params == std::vector<std::size_t>{0, 7});
    CHECK(r.state.empty());
    const auto rs = read_lambda_lr_state(g, "opt.");
    REQUIRE(rs.has_value());
    CHECK(rs->last_epoch == -1);
    CHECK(rs->base_lrs == sched.base_lrs);
    CHECK_FALSE(read_lambda_lr_state(g, "other.").has_value());
  }

  TEST_CASE(
      "a step stored as a whole float (PyTorch's layout) is accepted, a fractional one refused") {
    SafetensorsFile f;
    f.add("state.0.step", Array(12.f));
    f.add("state.0.exp_avg", Array{1.f});
    f.set_metadata("optimizer", "Adam");
    f.set_metadata("param_groups", R"([{"params":[0]}])");
    CHECK(read_optimizer_state(f).state.at(0).step == 12);
    SafetensorsFile g;
    g.add("state.0.step", Array(1.5f));
    g.set_metadata("optimizer", "Adam");
    g.set_metadata("param_groups", R"([{"params":[0]}])");
    CHECK_THROWS_WITH_AS(read_optimizer_state(g, "", "g"),
                         doctest::Contains("read_optimizer_state: 'g': InvalidCheckpoint: expected "
                                           "'state.0.step' to be a step count"),
                         CheckpointError);
  }

  TEST_CASE("hostile optimizer files are refused with a message naming the file and the problem") {
    const auto refused = [](SafetensorsFile f, const std::string& phrase) {
      try {
        read_optimizer_state(f, "", "o.safetensors");
        read_lambda_lr_state(f, "", "o.safetensors");
      } catch (const CheckpointError& e) {
        CHECK(e.kind == "InvalidCheckpoint");
        CHECK_MESSAGE(std::string(e.what()).find(phrase) != std::string::npos,
                      std::string(e.what()));
        CHECK_MESSAGE(
            std::string(e.what()).find("'o.safetensors': InvalidCheckpoint: ") != std::string::npos,
            std::string(e.what()));
        return;
      }
      FAIL("accepted: " << phrase);
    };
    const auto with = [](const std::string& groups, const std::string& sched = "") {
      SafetensorsFile f;
      f.set_metadata("optimizer", "Adam");
      if (!groups.empty()) f.set_metadata("param_groups", groups);
      if (!sched.empty()) f.set_metadata("lr_scheduler", sched);
      return f;
    };
    refused(SafetensorsFile(), "naming the optimizer's type, got none");
    refused(with(""), "expected __metadata__ 'param_groups'");
    refused(with("[{\"params\":[0]"), "got text that is not JSON");
    refused(with("{\"params\":[0]}"),
            "expected param_groups to be a JSON list of groups, got a object");
    refused(with("[1]"), "expected param_groups[0] to be a JSON object, got a number");
    refused(with("[{\"lr\":0.1}]"), "expected param_groups[0] to have \"params\"");
    refused(with("[{\"params\":[-1]}]"), "to be a list of parameter ids");
    refused(with("[{\"params\":[0.5]}]"), "to be a list of parameter ids");
    refused(with("[{\"params\":[0],\"lr\":null}]"),
            "param_groups[0].lr to be a number, true/false or a list of numbers, got null");
    refused(with("[{\"params\":[0],\"lr\":\"fast\"}]"), "got \"fast\"");
    refused(with("[{\"params\":[0],\"betas\":[0.9,\"x\"]}]"),
            "param_groups[0].betas to be a list of numbers");
    refused(with(std::string(5000, '[') + std::string(5000, ']')), "nested at most 3 deep");
    refused(with("[{\"params\":[0]}]", "[]"), "expected lr_scheduler to be a JSON object");
    refused(with("[{\"params\":[0]}]", "{\"base_lrs\":[1]}"),
            "last_epoch to be a 64-bit integer, got none");
    refused(with("[{\"params\":[0]}]", "{\"base_lrs\":[1],\"last_epoch\":1.5}"),
            "last_epoch to be a 64-bit integer, got 1.5");
    refused(with("[{\"params\":[0]}]", "{\"base_lrs\":[1],\"last_epoch\":9223372036854775808}"),
            "64-bit integer");
    refused(with("[{\"params\":[0]}]", "{\"base_lrs\":\"x\",\"last_epoch\":1}"),
            "base_lrs to be a list of numbers");
    SafetensorsFile stray = with("[{\"params\":[0]}]");
    stray.add("weights", Array{1.f});
    refused(
        stray,
        "expected only tensors named 'state.{id}.{name}' in an optimizer's state, got 'weights'");
    SafetensorsFile bad_id = with("[{\"params\":[0]}]");
    bad_id.add("state.+1.exp_avg", Array{1.f});
    refused(bad_id, "with a decimal id, got 'state.+1.exp_avg'");
    SafetensorsFile no_name = with("[{\"params\":[0]}]");
    no_name.add("state.0.", Array{1.f});
    refused(no_name, "with a decimal id, got 'state.0.'");
    SafetensorsFile int_state = with("[{\"params\":[0]}]");
    int_state.add("state.0.exp_avg", IndexArray{1});
    CHECK_THROWS_WITH_AS(read_optimizer_state(int_state),
                         doctest::Contains("'state.0.exp_avg' to hold floating-point data"),
                         TypeError);
  }

  TEST_CASE(
      "load_optimizer refuses another optimizer's file or a missing scheduler, changing nothing") {
    const auto dir = scratch_dir("ckpt_optimizer_refused");
    manual_seed(3);
    ToyRun run(1, 2);
    run.train(2);
    const Snapshot before(run);
    const std::string sgd_path = (dir / "sgd.safetensors").string(),
                      plain = (dir / "plain.safetensors").string();
    optim::SGD sgd(run.model.parameters(), optim::SGDOptions(0.1));
    save_optimizer(sgd, sgd_path);
    CHECK_THROWS_WITH_AS(
        load_optimizer(run.adam, sgd_path),
        doctest::Contains("expected the state dict of an optimizer of type 'Adam', got 'SGD'"),
        ValueError);
    save_optimizer(run.adam, plain);  // without the scheduler
    CHECK_THROWS_WITH_AS(
        load_optimizer(run.adam, plain, &run.sched),
        doctest::Contains("expected __metadata__ 'lr_scheduler' for the scheduler given, got none"),
        CheckpointError);
    // The scheduler refuses (it is loaded first): the optimizer is left as it was.
    optim::OptimizerState other = run.adam.state_dict();
    other.param_groups[0].options["lr"] = 0.25;
    const optim::LambdaLRState two_groups{9, {1.0, 2.0}};
    SafetensorsFile f;
    add_optimizer_state(f, other, &two_groups);
    save_safetensors(plain, f);
    CHECK_THROWS_WITH_AS(load_optimizer(run.adam, plain, &run.sched),
                         doctest::Contains("expected 1 base_lrs"), ValueError);
    CHECK(Snapshot(run) == before);
    CHECK(run.adam.options(0).lr() != 0.25);
  }

  TEST_CASE(
      "when the optimizer refuses after its scheduler was loaded, the scheduler is put back") {
    const auto dir = scratch_dir("ckpt_scheduler_put_back");
    manual_seed(3);
    ToyRun run(1, 2);
    run.train(2);
    const Snapshot before(run);
    optim::OptimizerState other = run.adam.state_dict();
    other.param_groups[0].options["eps"] = -1.0;  // refused by Adam's checks
    const optim::LambdaLRState later{40, {1.0}};  // a valid scheduler state
    SafetensorsFile f;
    add_optimizer_state(f, other, &later);
    const std::string path = (dir / "optim.safetensors").string();
    save_safetensors(path, f);
    CHECK_THROWS_AS(load_optimizer(run.adam, path, &run.sched), ValueError);
    CHECK(run.sched.last_epoch() == 2);
    CHECK(Snapshot(run) == before);
  }

  // ---- everything for an exact resume -----------------------------------------------------------

  TEST_CASE(
      "exact resume: N steps, save, a fresh run loads and trains M more, bit-identical to N + M in "
      "one go") {
    const auto dir = scratch_dir("ckpt_exact_resume");
    const std::string path = (dir / "run.safetensors").string();
    constexpr int N = 7, M = 6;
    for (const bool sparse : {false, true}) {
      CAPTURE(sparse);
      manual_seed(11);  // the default generator drives dropout
      ToyRun whole(1, 2, sparse);
      whole.train(N + M);
      const std::string default_after = default_generator()->state();

      manual_seed(11);
      ToyRun first(1, 2, sparse);
      first.train(N);
      first.ckpt.save(path, {first.steps_done, first.steps_done * 4, {{"first_loss", "2.5"}}});

      manual_seed(12345);  // another process: other seeds everywhere
      ToyRun resumed(77, 78, sparse);
      CHECK_FALSE(same_state(resumed.model.state_dict(), whole.model.state_dict()));
      const TrainingProgress progress = resumed.ckpt.load(path);
      CHECK(progress.step == N);
      CHECK(progress.data_position == 4 * N);
      CHECK(progress.extra == std::map<std::string, std::string>{{"first_loss", "2.5"}});
      CHECK(resumed.sched.last_epoch() == N);
      resumed.train(M);

      CHECK(same_state(resumed.model.state_dict(), whole.model.state_dict()));
      CHECK(same_optimizer_state(resumed.adam.state_dict(), whole.adam.state_dict()));
      if (sparse)
        CHECK(same_optimizer_state(resumed.sparse_adam->state_dict(),
                                   whole.sparse_adam->state_dict()));
      CHECK(resumed.sched.get_last_lr() == whole.sched.get_last_lr());
      CHECK(resumed.data->state() == whole.data->state());
      CHECK(default_generator()->state() == default_after);
    }
  }

  TEST_CASE(
      "a resume that forgets the dropout or data generator is not exact (why generators are "
      "saved)") {
    const auto dir = scratch_dir("ckpt_inexact_resume");
    const std::string path = (dir / "run.safetensors").string();
    manual_seed(11);
    ToyRun whole(1, 2);
    whole.train(6);
    manual_seed(11);
    ToyRun first(1, 2);
    first.train(3);
    first.ckpt.save(path, {3});
    manual_seed(11);
    ToyRun resumed(1, 2);
    resumed.ckpt.load(path);
    SUBCASE("dropout stream restarted") { manual_seed(11); }
    SUBCASE("data stream restarted") { resumed.data->manual_seed(2); }
    resumed.train(3);
    CHECK_FALSE(same_state(resumed.model.state_dict(), whole.model.state_dict()));
  }

  TEST_CASE(
      "the training file holds the model under model., the optimizer under optim.0. and readable "
      "metadata") {
    manual_seed(5);
    ToyRun run(1, 2);
    run.train(2);
    const SafetensorsFile f = run.ckpt.to_file({2, 8});
    CHECK(f.has_tensor("model.embed.lut.weight"));
    CHECK(f.has_tensor("model.pos.pe"));
    CHECK(f.has_tensor("model.out.bias"));
    CHECK(f.to_int64("optim.0.state.0.step")() == 2);
    CHECK(f.has_tensor("optim.0.state.2.exp_avg_sq"));
    CHECK(f.metadata_value("tapegrad.checkpoint") == "training");
    CHECK(f.metadata_value("optim.0.optimizer") == "Adam");
    CHECK(f.metadata_value("optim.0.lr_scheduler") == R"({"base_lrs":[1.0],"last_epoch":2})");
    CHECK(f.metadata_value("generator.default") == default_generator()->state());
    CHECK(f.metadata_value("generator.data") == run.data->state());
    CHECK(f.metadata_value("progress.step") == "2");
    CHECK(f.metadata_value("progress.data_position") == "8");
    // The model part alone loads into a model, from the same file.
    const auto dir = scratch_dir("ckpt_training_layout");
    save_safetensors((dir / "run.safetensors").string(), f);
    ToyModel other(std::make_shared<Generator>(9), false);
    load(other, (dir / "run.safetensors").string());
    CHECK(same_state(other.state_dict(), run.model.state_dict()));
    CHECK(nn::diff_state_dicts(run.model.state_dict(),
                               load_state_dict((dir / "run.safetensors").string()))
              .identical());
  }

  TEST_CASE(
      "a refused training checkpoint leaves model, optimizer, scheduler and generators untouched") {
    const auto dir = scratch_dir("ckpt_training_refused");
    const std::string path = (dir / "run.safetensors").string();
    manual_seed(21);
    ToyRun saved(1, 2);
    saved.train(3);
    const SafetensorsFile good = saved.ckpt.to_file({3});

    manual_seed(22);
    ToyRun run(5, 6);
    run.train(2);
    const Snapshot before(run);
    const auto refused_with = [&](const SafetensorsFile& f, const std::string& phrase) {
      save_safetensors(path, f);
      const std::string bytes = read_bytes(path);
      try {
        run.ckpt.load(path);
        FAIL("accepted a file that should be refused: " << phrase);
      } catch (const std::exception& e) {
        CHECK_MESSAGE(std::string(e.what()).find(phrase) != std::string::npos,
                      std::string(e.what()));
      }
      CHECK(Snapshot(run) == before);
      CHECK(read_bytes(path) == bytes);
    };
    SUBCASE("a model file, not a training checkpoint") {
      save(saved.model, path);
      CHECK_THROWS_WITH_AS(run.ckpt.load(path), doctest::Contains("expected a training checkpoint"),
                           CheckpointError);
      CHECK(Snapshot(run) == before);
    }
    SUBCASE("a truncated file") {
      save_safetensors(path, good);
      const std::string bytes = read_bytes(path);
      write_bytes(path, bytes.substr(0, bytes.size() / 2));
      CHECK_THROWS_AS(run.ckpt.load(path), CheckpointError);
      CHECK(Snapshot(run) == before);
    }
    SUBCASE("a model of another shape") {
      ToyRun wide(1, 2);
      SafetensorsFile f = wide.ckpt.to_file({3});
      SafetensorsFile g;
      for (const TensorRecord& r : f.tensors())
        if (r.name == "model.out.bias")
          g.add(r.name, Array{1.f, 2.f});
        else
          g.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
      for (const auto& [k, v] : f.metadata()) g.set_metadata(k, v);
      refused_with(g, "size mismatch for out.bias");
    }
    SUBCASE("another optimizer (refused after the model was loaded: the model is put back)") {
      SafetensorsFile f = good;
      f.set_metadata("optim.0.optimizer", "AdamW");
      refused_with(f, "expected the state dict of an optimizer of type 'Adam', got 'AdamW'");
    }
    SUBCASE("a state tensor of the wrong shape (the model is put back)") {
      SafetensorsFile g;
      for (const TensorRecord& r : good.tensors())
        if (r.name == "optim.0.state.1.exp_avg")
          g.add(r.name, Array{1.f, 2.f});
        else
          g.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
      for (const auto& [k, v] : good.metadata()) g.set_metadata(k, v);
      refused_with(g, "optimizer state for param 1");
    }
    SUBCASE("a scheduler that refuses after model and optimizer were loaded (both are put back)") {
      SafetensorsFile f = good;
      f.set_metadata("optim.0.lr_scheduler", R"({"base_lrs":[1.0,1.0],"last_epoch":3})");
      refused_with(f, "expected 1 base_lrs");
    }
    SUBCASE("damaged generator state") {
      SafetensorsFile f = good;
      f.set_metadata("generator.data", "not a generator");
      refused_with(f, "expected the state of generator 'data', got text it cannot use");
    }
    SUBCASE("a generator missing, or one more than tracked") {
      ToyRun other(1, 2);
      SafetensorsFile f = other.ckpt.to_file({3});
      SafetensorsFile g;
      for (const TensorRecord& r : f.tensors())
        g.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
      for (const auto& [k, v] : f.metadata())
        if (k != "generator.data") g.set_metadata(k, v);
      refused_with(g, "expected the state of generator 'data', got none");
      f.set_metadata("generator.shuffle", Generator(3).state());
      refused_with(f, "got the state of generator 'shuffle'");
    }
    SUBCASE("an optimizer more than tracked, or a scheduler missing") {
      ToyRun two(1, 2, /*sparse=*/true);
      refused_with(two.ckpt.to_file({3}), "expected state for 1 optimizer(s), as this run tracks");
      SafetensorsFile f = good;
      SafetensorsFile g;
      for (const TensorRecord& r : f.tensors())
        g.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
      for (const auto& [k, v] : f.metadata())
        if (k != "optim.0.lr_scheduler") g.set_metadata(k, v);
      refused_with(
          g, "expected a scheduler state for optimizer 0 (Adam), as this run tracks, got none");
    }
    SUBCASE("progress that is not an integer") {
      SafetensorsFile f = good;
      f.set_metadata("progress.step", "12abc");
      refused_with(f, "expected __metadata__ 'progress.step' to be an integer, got '12abc'");
    }
    SUBCASE("a stray tensor") {
      SafetensorsFile f = good;
      f.add("weights", Array{1.f});
      refused_with(f, "expected tensors named 'model...' or 'optim.{k}...', got 'weights'");
    }
  }

  TEST_CASE(
      "a training checkpoint whose progress, step counts and scheduler disagree is refused, "
      "changing nothing") {
    const auto dir = scratch_dir("ckpt_inconsistent");
    const std::string path = (dir / "run.safetensors").string();
    manual_seed(21);
    ToyRun saved(1, 2);
    saved.train(4);
    const SafetensorsFile good = saved.ckpt.to_file({4, 16});
    manual_seed(22);
    ToyRun run(5, 6);
    run.train(2);
    const Snapshot before(run);
    // Saved with fresh checksums: only the cross-checks can tell.
    const auto refused_with = [&](const SafetensorsFile& f, const std::string& phrase) {
      save_safetensors(path, f);
      CHECK_THROWS_WITH_AS(run.ckpt.load(path), doctest::Contains(phrase.c_str()), CheckpointError);
      CHECK(Snapshot(run) == before);
    };
    const auto with_tensor = [&](const std::string& name, auto value) {
      SafetensorsFile f;
      for (const TensorRecord& r : good.tensors())
        if (r.name == name)
          f.add(r.name, value);
        else
          f.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
      for (const auto& [k, v] : good.metadata()) f.set_metadata(k, v);
      return f;
    };
    const auto with_entry = [&](const std::string& key, const std::string& value) {
      SafetensorsFile f = good;
      f.set_metadata(key, value);
      return f;
    };
    for (const std::string step : {"0", "2", "5", "25"}) {
      CAPTURE(step);
      refused_with(with_entry("progress.step", step),
                   "InvalidCheckpoint: expected the step count of every parameter of optimizer 0 "
                   "(Adam) to equal progress.step, " +
                       step + " (the optimizer steps the run took), got 4 for parameter 0");
    }
    refused_with(with_entry("progress.step", "-1"),
                 "expected progress.step and progress.data_position to be counts (>= 0), got -1 "
                 "and 16");
    refused_with(with_entry("progress.data_position", "-3"), "got 4 and -3");
    for (const std::string text : {"4abc", "4.0", " 4", "+4", "0x4", ""})
      refused_with(with_entry("progress.step", text),
                   "expected __metadata__ 'progress.step' to be an integer, got '" + text + "'");
    // One parameter's step count among the others'.
    refused_with(
        with_tensor("optim.0.state.1.step", IndexArray(std::int64_t{7})),
        "equal progress.step, 4 (the optimizer steps the run took), got 7 for parameter 1");
    refused_with(with_tensor("optim.0.state.2.step", IndexArray(std::int64_t{3})),
                 "got 3 for parameter 2; a run where some parameters miss a gradient at some steps "
                 "calls require_equal_steps(false)");
    // A scheduler that took more steps than the optimizer, or a negative number.
    for (const std::string epoch : {"5", "1000000", "-1"})
      refused_with(
          with_entry("optim.0.lr_scheduler", R"({"base_lrs":[1.0],"last_epoch":)" + epoch + "}"),
          "expected the scheduler of optimizer 0 to have taken between 0 and 4 steps "
          "(progress.step: at most one per optimizer step), got last_epoch " +
              epoch);
    // Weights that are not finite: an all-NaN projection with a valid checksum.
    Array nan_weight = xt::full_like(good.to_float("model.out.weight"), std::nanf(""));
    refused_with(with_tensor("model.out.weight", nan_weight),
                 "expected the parameter 'out.weight' to hold finite values, got nan at position "
                 "(0, 0); the run that saved it diverged, or the file was edited");
    Array inf_bias = good.to_float("model.out.bias");
    inf_bias(3) = -std::numeric_limits<float>::infinity();
    refused_with(with_tensor("model.out.bias", inf_bias),
                 "'out.bias' to hold finite values, got -inf at position (3)");
    // A buffer may hold anything (a causal mask holds -inf); a scheduler stepped per epoch, less
    // often than the optimizer, is a run's choice.
    Array pe = good.to_float("model.pos.pe");
    pe(0, 0, 1) = -std::numeric_limits<float>::infinity();
    save_safetensors(path, with_tensor("model.pos.pe", pe));
    CHECK(run.ckpt.load(path).step == 4);
    save_safetensors(path,
                     with_entry("optim.0.lr_scheduler", R"({"base_lrs":[1.0],"last_epoch":1})"));
    CHECK(run.ckpt.load(path).step == 4);
    CHECK(run.sched.last_epoch() == 1);
  }

  TEST_CASE(
      "require_equal_steps(false) accepts step counts that fell behind, never ahead of "
      "progress.step") {
    const auto dir = scratch_dir("ckpt_unequal_steps");
    const std::string path = (dir / "run.safetensors").string();
    manual_seed(21);
    ToyRun run(1, 2);
    run.train(3);
    // The output bias misses its gradient at the fourth step: its count falls behind, as PyTorch's.
    optim::OptimizerState state = run.adam.state_dict();
    state.state.at(1).step = 2;
    run.adam.load_state_dict(state);
    CHECK_THROWS_WITH_AS(run.ckpt.save(path, {3}),
                         doctest::Contains("TrainingCheckpoint::save: expected the step count of "
                                           "every parameter of optimizer 0 (Adam) to equal "
                                           "progress.step, 3 (the optimizer steps the run took), "
                                           "got 2 for parameter 1"),
                         ValueError);
    CHECK_FALSE(std::filesystem::exists(path));
    run.ckpt.require_equal_steps(false);
    run.ckpt.save(path, {3});
    CHECK(run.ckpt.load(path).step == 3);
    // Ahead of progress.step is refused either way, on save and on load.
    CHECK_THROWS_WITH_AS(run.ckpt.save(path, {1}),
                         doctest::Contains("to be at most progress.step, 1"), ValueError);
    CHECK_THROWS_WITH_AS(run.ckpt.save(path, {-1}),
                         doctest::Contains("expected progress.step and progress.data_position to "
                                           "be counts (>= 0), got -1 and 0"),
                         ValueError);
    SafetensorsFile f = load_safetensors(path);
    f.set_metadata("progress.step", "2");
    save_safetensors(path, f);
    CHECK_THROWS_WITH_AS(run.ckpt.load(path),
                         doctest::Contains("to be at most progress.step, 2 (the optimizer steps "
                                           "the run took), got 3 for parameter 0"),
                         CheckpointError);
  }

  TEST_CASE("add_generator and add_optimizer refuse empty, duplicate and null entries") {
    nn::Linear lin(2, 2);
    optim::Adam adam(lin.parameters());
    TrainingCheckpoint ckpt(lin, adam);
    CHECK_THROWS_WITH_AS(ckpt.add_generator("", std::make_shared<Generator>()),
                         doctest::Contains("non-empty name"), ValueError);
    CHECK_THROWS_WITH_AS(ckpt.add_generator("default", std::make_shared<Generator>()),
                         doctest::Contains("the name of the default generator"), ValueError);
    CHECK_THROWS_WITH_AS(ckpt.add_generator("data", nullptr),
                         doctest::Contains("got a null pointer"), ValueError);
    ckpt.add_generator("data", std::make_shared<Generator>());
    CHECK_THROWS_WITH_AS(ckpt.add_generator("data", std::make_shared<Generator>()),
                         doctest::Contains("already tracked"), ValueError);
    CHECK_THROWS_WITH_AS(ckpt.add_optimizer(adam), doctest::Contains("expected a new optimizer"),
                         ValueError);
  }

  // ---- Python reads tapegrad's files ---------------------------------------------------------------

  TEST_CASE("NumPy reads a tapegrad model checkpoint with a few lines, ties included") {
    if (!tapegrad::testing::python_with_numpy()) {
      MESSAGE("skipped: /usr/bin/python3 with numpy is not available");
      return;
    }
    const auto dir = scratch_dir("ckpt_numpy");
    TiedTutorialModel m(4);
    save(m, (dir / "model.safetensors").string());
    // A reader a user could write: header, data, ties from __metadata__; each tensor saved as .npy
    // for tapegrad to compare. With the safetensors package installed, it must agree too.
    write_bytes(dir / "read.py", R"PY(
import json, struct, sys
import numpy as np
path, out = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
n, = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
meta = header.pop("__metadata__", {})
base = 8 + n
state = {}
for name, e in header.items():
    b, end = e["data_offsets"]
    assert e["dtype"] == "F32", e
    state[name] = np.frombuffer(data[base + b:base + end], dtype="<f4").reshape(e["shape"])
for key, value in meta.items():
    if key not in state and value in state:
        state[key] = state[value]
assert meta["format"] == "pt" and meta["framework"] == "tapegrad", meta
for name, a in state.items():
    np.save(out + "/" + name + ".npy", a)
try:
    from safetensors.numpy import load_file
except ImportError:
    print("safetensors package: not installed")
else:
    loaded = load_file(path)
    for name, a in loaded.items():
        assert np.array_equal(a, state[name]), name
    print("safetensors package: agrees on", len(loaded), "tensors")
print(" ".join(sorted(state)))
)PY");
    const std::string cmd = "/usr/bin/python3 " + (dir / "read.py").string() + " " +
                            (dir / "model.safetensors").string() + " " + dir.string() + " > " +
                            (dir / "out.txt").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    const std::string said = read_bytes(dir / "out.txt");
    REQUIRE_MESSAGE(rc == 0, "python said: " << said);
    MESSAGE("python: " << said);
    CHECK(said.find("generator.proj.weight src_embed.0.lut.weight src_embed.1.pe") !=
          std::string::npos);
    const nn::StateDict sd = m.state_dict();
    for (const std::string& key : sd.keys())
      CHECK_MESSAGE(bit_equal(load_npy((dir / (key + ".npy")).string()), sd.at(key)), key);
  }

  // ---- a training process killed at random moments -------------------------------------------------

  namespace {
  // Runs tests/tools/resumable_training with `args`; returns its pid (stdout and stderr to `log`).
  // Everything the child needs is prepared before fork(): between fork and exec a child of a
  // threaded process may only make system calls (no malloc).
  pid_t spawn(const std::vector<std::string>& args, const std::filesystem::path& log) {
    std::string exe = TAPEGRAD_RESUMABLE_TRAINING, log_path = log.string();
    std::vector<std::string> strings = args;
    std::vector<char*> argv{exe.data()};
    for (std::string& a : strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = {"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"};
    for (char** e = environ; *e != nullptr; ++e)
      if (std::strncmp(*e, "OPENBLAS_NUM_THREADS=", 21) != 0 &&
          std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0)
        env_strings.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);

    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execve(exe.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    return pid;
  }

  // Waits for `pid`; returns the exit status, or -signal when it was killed.
  int wait_for(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

  // Polls `pid` for up to `delay`; kills it with SIGKILL if it is still running then. Returns its
  // status as wait_for does.
  int kill_after(pid_t pid, std::chrono::microseconds delay) {
    const auto deadline = std::chrono::steady_clock::now() + delay;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, SIGKILL);
    return wait_for(pid);
  }
  }  // namespace

  TEST_CASE(
      "a training process killed with SIGKILL at random moments resumes to bit-identical final "
      "weights") {
    const auto dir = scratch_dir("ckpt_sigkill");
    const std::string steps = "120", every = "3";
    const auto ckpt = dir / "run.safetensors", log = dir / "log.txt";

    // The uninterrupted run, timed: the kills below land within its duration.
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(wait_for(spawn(
                {"--checkpoint", (dir / "straight.safetensors").string(), "--final",
                 (dir / "straight_final.safetensors").string(), "--steps", steps, "--every", every},
                log)) == 0);
    const auto duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - t0);
    const std::string expected = read_bytes(dir / "straight_final.safetensors");
    REQUIRE(!expected.empty());

    const std::vector<std::string> run = {
        "--checkpoint", ckpt.string(), "--final", (dir / "final.safetensors").string(),
        "--steps",      steps,         "--every", every};
    // 1. Deterministic crashes: the process kills itself (SIGKILL) right after step 20, which is
    //    between two checkpoints (18 and 21), and again after step 64.
    for (const std::string at : {"20", "64"}) {
      std::vector<std::string> args = run;
      args.insert(args.end(), {"--die-after-step", at});
      CHECK(wait_for(spawn(args, log)) == -SIGKILL);
      const SafetensorsFile f = load_safetensors(ckpt.string());
      CHECK(f.metadata_value("progress.step") == std::to_string(std::stoi(at) / 3 * 3));
    }
    CHECK(wait_for(spawn(run, log)) == 0);  // resume until done
    CHECK(read_bytes(dir / "final.safetensors") == expected);
    std::filesystem::remove(ckpt);
    std::filesystem::remove(dir / "final.safetensors");

    // 2. Kills at seeded random moments, including mid-save. Whatever moment a kill hits, the
    //    checkpoint on disk is whole (old or new) and the run, restarted until it finishes, ends with
    //    the same weights. Each finished run is checked, then the next starts from scratch.
    std::mt19937_64 rng(20240611);
    int killed = 0, finished = 0;
    for (int round = 0; round < 12; ++round) {
      const std::chrono::microseconds delay(
          std::uniform_int_distribution<std::int64_t>(0, duration.count())(rng));
      const int status = kill_after(spawn(run, log), delay);
      CHECK((status == 0 || status == -SIGKILL));
      if (std::filesystem::exists(ckpt)) CHECK_NOTHROW(load_safetensors(ckpt.string()));
      if (status == -SIGKILL) {
        ++killed;
        continue;
      }
      ++finished;
      CHECK(read_bytes(dir / "final.safetensors") == expected);
      std::filesystem::remove(ckpt);
      std::filesystem::remove(dir / "final.safetensors");
    }
    CHECK(wait_for(spawn(run, log)) == 0);  // the last run, resumed until done
    CHECK(read_bytes(dir / "final.safetensors") == expected);
    MESSAGE("uninterrupted run " << duration.count() / 1000 << " ms; of 12 random kills " << killed
                                 << " hit a running process, " << finished
                                 << " came after it had finished");
    const std::string said = read_bytes(log);
    CHECK(said.find("resumed from step 18") != std::string::npos);
    CHECK(said.find("resumed from step 63") != std::string::npos);
    // Only the checkpoints and killed writers' hidden temporaries are left.
    for (const std::string& name : folder_listing(dir))
      CHECK_MESSAGE((name.rfind(".run.safetensors.tmp-", 0) == 0 ||
                     name.rfind(".final.safetensors.tmp-", 0) == 0 || name == "run.safetensors" ||
                     name == "final.safetensors" || name == "straight.safetensors" ||
                     name == "straight_final.safetensors" || name == "log.txt"),
                    name);
  }

  TEST_CASE(
      "the resumable program refuses a damaged checkpoint with a message and a non-zero status, "
      "touching nothing") {
    const auto dir = scratch_dir("ckpt_program_damaged");
    const auto ckpt = dir / "run.safetensors", log = dir / "log.txt";
    write_bytes(ckpt, le64(1000) + "{not json");
    const int status =
        wait_for(spawn({"--checkpoint", ckpt.string(), "--final",
                        (dir / "final.safetensors").string(), "--steps", "6", "--every", "3"},
                       log));
    CHECK(status == 1);
    CHECK(read_bytes(ckpt) == le64(1000) + "{not json");
    CHECK_FALSE(std::filesystem::exists(dir / "final.safetensors"));
    const std::string said = read_bytes(log);
    CHECK_MESSAGE(said.find("cannot resume from") != std::string::npos, said);
    CHECK_MESSAGE(said.find("InvalidHeaderLength") != std::string::npos, said);
  }

}  // TEST_SUITE
