// tests/io/test_optimizer_values.cpp: optimizer state that no run can produce, or that a diverged
// run left, is refused when a checkpoint is loaded — a negative or non-finite second moment
// (exp_avg_sq, max_exp_avg_sq), a non-finite first moment or momentum buffer, a negative or
// fractional step count — with a CheckpointError naming the key, and nothing changed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "scratch.hpp"

using namespace tapegrad;
using namespace tapegrad::io;
using tapegrad::testing::scratch_dir;

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(),
                kInf = std::numeric_limits<float>::infinity();

// Linear(3, 2) and AMSGrad after one step: every state tensor exists.
struct Run {
  Run() {
    for (const Parameter& p : model.parameters()) p.set_grad(xt::ones<float>(p.shape()));
    adam.step();
    adam.zero_grad();
  }
  nn::Linear model{nn::LinearOptions(3, 2), std::make_shared<Generator>(1)};
  optim::Adam adam{model.parameters(), optim::AdamOptions(0.1).amsgrad(true)};
};

// `file` with tensor `name` left out and `add` called to put a replacement in.
SafetensorsFile replaced(const SafetensorsFile& file, const std::string& name,
                         const std::function<void(SafetensorsFile&)>& add) {
  SafetensorsFile f;
  for (const TensorRecord& r : file.tensors())
    if (r.name != name) f.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
  add(f);
  for (const auto& [k, v] : file.metadata()) f.set_metadata(k, v);
  return f;
}

// The optimizer's file with its tensor `key` replaced by `value`.
SafetensorsFile with_state(const Run& run, const std::string& key, const Array& value) {
  SafetensorsFile good;
  add_optimizer_state(good, run.adam.state_dict());
  return replaced(good, key, [&](SafetensorsFile& f) { f.add(key, value); });
}

// The CheckpointError reading `f` throws, with its kind checked.
std::string refusal(const SafetensorsFile& f, const std::string& prefix = "") {
  try {
    read_optimizer_state(f, prefix, "o.safetensors");
  } catch (const CheckpointError& e) {
    CHECK(e.kind == "InvalidCheckpoint");
    return e.what();
  }
  FAIL("accepted");
  return "";
}
}  // namespace

TEST_SUITE("io.optimizer_values") {
  TEST_CASE(
      "a negative or non-finite second moment is refused, naming the key, the value and where") {
    const Run run;
    const Array v = *run.adam.state_dict().state.at(0).find("exp_avg_sq");  // shape (2, 3)
    for (const std::string key : {"state.0.exp_avg_sq", "state.0.max_exp_avg_sq"})
      for (const float bad : {-1e-30f, -2.5f, kNaN, kInf, -kInf}) {
        CAPTURE(key);
        CAPTURE(bad);
        Array value = v;
        value(1, 2) = bad;
        const std::string what = refusal(with_state(run, key, value));
        CHECK_MESSAGE(
            what.find("read_optimizer_state: 'o.safetensors': InvalidCheckpoint: expected '" + key +
                      "' to hold a second moment (finite values >= 0), got ") == 0,
            what);
        CHECK_MESSAGE(what.find(" at position (1, 2)") != std::string::npos, what);
      }
    // Zeros (a parameter whose gradient was always 0) and -0 are moments a run can hold.
    CHECK_NOTHROW(read_optimizer_state(
        with_state(run, "state.0.exp_avg_sq", Array{{0.f, -0.f, 0.f}, {1.f, 2.f, 3.f}})));
  }

  TEST_CASE(
      "a non-finite first moment or momentum buffer is refused, naming the key, the value and "
      "where") {
    const Run run;
    for (const float bad : {kNaN, kInf, -kInf}) {
      CAPTURE(bad);
      Array value{{-1.f, 0.f, 2.f}, {0.f, 0.f, 0.f}};
      value(0, 1) = bad;
      const std::string what = refusal(with_state(run, "state.0.exp_avg", value));
      CHECK_MESSAGE(what.find("read_optimizer_state: 'o.safetensors': InvalidCheckpoint: expected "
                              "'state.0.exp_avg' to hold a moment (finite values), got ") == 0,
                    what);
      CHECK_MESSAGE(what.find(" at position (0, 1)") != std::string::npos, what);
    }
    // Negative values are what a first moment holds for negative gradients.
    CHECK_NOTHROW(read_optimizer_state(
        with_state(run, "state.0.exp_avg", Array{{-1.f, -0.f, 1e30f}, {0.f, 0.f, -3.f}})));
    // SGD's momentum buffer, the same.
    nn::Linear model{nn::LinearOptions(3, 2), std::make_shared<Generator>(1)};
    optim::SGD sgd(model.parameters(), optim::SGDOptions(0.1).momentum(0.9));
    for (const Parameter& p : model.parameters()) p.set_grad(xt::ones<float>(p.shape()));
    sgd.step();
    SafetensorsFile good;
    add_optimizer_state(good, sgd.state_dict());
    CHECK_NOTHROW(read_optimizer_state(good));
    const SafetensorsFile bad = replaced(good, "state.1.momentum_buffer", [](SafetensorsFile& f) {
      f.add("state.1.momentum_buffer", Array{0.5f, kNaN});
    });
    CHECK_MESSAGE(refusal(bad).find("expected 'state.1.momentum_buffer' to hold a moment (finite "
                                    "values), got nan at position (1)") != std::string::npos,
                  refusal(bad));
  }

  TEST_CASE("a negative, fractional or non-finite step count is refused, naming the key") {
    const Run run;
    struct Case {
      std::string name;
      SafetensorsFile file;
      std::string got;
    };
    const auto with_step = [&](Dtype dtype, double x) {
      SafetensorsFile good;
      add_optimizer_state(good, run.adam.state_dict());
      return replaced(good, "state.0.step", [&](SafetensorsFile& g) {
        if (dtype == Dtype::I64) g.add("state.0.step", IndexArray(static_cast<std::int64_t>(x)));
        if (dtype == Dtype::F32) g.add("state.0.step", Array(static_cast<float>(x)));
        if (dtype == Dtype::F64) {
          std::vector<std::uint8_t> bytes(8);
          std::memcpy(bytes.data(), &x, 8);
          g.add_raw("state.0.step", Dtype::F64, {}, bytes);
        }
      });
    };
    for (const Case& c : {Case{"I64 -1", with_step(Dtype::I64, -1), "got -1"},
                          Case{"F32 -1", with_step(Dtype::F32, -1), "got -1"},
                          Case{"F64 2.5", with_step(Dtype::F64, 2.5), "got 2.5"},
                          Case{"F32 NaN", with_step(Dtype::F32, std::nan("")), "got nan"},
                          Case{"F64 inf", with_step(Dtype::F64, HUGE_VAL), "got inf"},
                          Case{"F64 2^63", with_step(Dtype::F64, 0x1p63), "got 9.223372037e+18"}}) {
      CAPTURE(c.name);
      const std::string what = refusal(c.file);
      CHECK_MESSAGE(what.find("expected 'state.0.step' to be a step count (a whole number >= 0), " +
                              c.got) != std::string::npos,
                    what);
    }
    CHECK(read_optimizer_state(with_step(Dtype::F64, 7)).state.at(0).step == 7);
    CHECK(read_optimizer_state(with_step(Dtype::I64, 0)).state.at(0).step == 0);
  }

  TEST_CASE(
      "load_optimizer and TrainingCheckpoint::load refuse such values with the file's key, "
      "changing nothing") {
    const auto dir = scratch_dir("optimizer_values");
    Run run;
    const optim::OptimizerState before = run.adam.state_dict();
    Array v = *before.state.at(1).find("exp_avg_sq");
    v(0) = -1.f;
    const std::string path = (dir / "optim.safetensors").string();
    save_safetensors(path, with_state(run, "state.1.exp_avg_sq", v));
    CHECK_THROWS_WITH_AS(
        load_optimizer(run.adam, path),
        doctest::Contains(
            ("load_optimizer: '" + path +
             "': InvalidCheckpoint: expected 'state.1.exp_avg_sq' to hold a second moment")
                .c_str()),
        CheckpointError);
    // In a training checkpoint the key carries the optimizer's prefix.
    TrainingCheckpoint ckpt(run.model, run.adam);
    const SafetensorsFile bad =
        replaced(ckpt.to_file({1}), "optim.0.state.1.exp_avg_sq",
                 [&](SafetensorsFile& f) { f.add("optim.0.state.1.exp_avg_sq", v); });
    const std::string run_path = (dir / "run.safetensors").string();
    save_safetensors(run_path, bad);
    const nn::StateDict model_before = run.model.state_dict();
    CHECK_THROWS_WITH_AS(ckpt.load(run_path),
                         doctest::Contains("expected 'optim.0.state.1.exp_avg_sq' to hold a second "
                                           "moment (finite values >= 0), got -1 at position (0)"),
                         CheckpointError);
    const optim::OptimizerState after = run.adam.state_dict();
    CHECK(after.state.at(1).step == before.state.at(1).step);
    CHECK(*after.state.at(1).find("exp_avg_sq") == *before.state.at(1).find("exp_avg_sq"));
    CHECK(nn::diff_state_dicts(model_before, run.model.state_dict()).identical());
  }

}  // TEST_SUITE
