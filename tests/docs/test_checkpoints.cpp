// tests/docs/test_checkpoints.cpp: the examples of docs/checkpoints.md ("The API in four
// examples"), run. Each ```cpp block of that page names this file, and the excerpt check
// (tests/tools/check_excerpts.cpp) holds its lines to the ones below; each test case runs its
// example in a fresh folder of its own, so that the example's file names are the page's.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "../io/scratch.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;

namespace {

// The test case's own folder as the working directory while alive.
struct InScratch {
  explicit InScratch(const std::string& name) : in(tapegrad::testing::scratch_dir(name)) {}
  tapegrad::testing::InFolder in;
};

// What a stream prints from construction to release() (the examples print to std::cout and
// std::cerr; doctest's own reports are not caught, since the checks come after release()).
class Captured {
 public:
  explicit Captured(std::ostream& os) : os_(os), old_(os.rdbuf(text_.rdbuf())) {}
  ~Captured() { release(); }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;
  /// Gives the stream back its own buffer; returns what was printed.
  std::string release() {
    if (old_ != nullptr) os_.rdbuf(old_);
    old_ = nullptr;
    return text_.str();
  }

 private:
  std::ostream& os_;
  std::ostringstream text_;
  std::streambuf* old_;
};

// One step of the examples' training: a batch from `gen`, backward, the optimizer, the schedule.
void one_training_step(nn::Linear& model, optim::Optimizer& opt, optim::LambdaLR& sched,
                       Generator* gen) {
  Tensor y = model.forward(Tensor(randn({2, 4}, gen)));
  ops::sum(y * y).backward();
  opt.step();
  opt.zero_grad();
  sched.step();
}

// The third example: a run of `steps` steps, from step 0 or resumed from run.safetensors, saving
// after every step. Returns the model's weight at the end.
Array run(bool resuming, std::int64_t steps) {
  manual_seed(resuming ? 99 : 0);  // a resumed run's fresh objects start elsewhere
  nn::Linear model(4, 3);
  optim::Adam opt(model.parameters(), optim::AdamOptions(1.0).betas({0.9, 0.98}).eps(1e-9));
  optim::LambdaLR sched(opt, [](std::int64_t e) { return optim::noam(e, 16, 1.0, 40); });
  auto data_gen = std::make_shared<Generator>(1234);      // draws the batches
  io::TrainingCheckpoint ckpt(model, opt, &sched);
  ckpt.add_generator("data", data_gen);
  std::int64_t step = resuming ? ckpt.load("run.safetensors").step : 0;
  for (; step < steps; ++step) {
    one_training_step(model, opt, sched, data_gen.get());
    ckpt.save("run.safetensors", {step + 1});             // io::TrainingProgress: steps done
  }
  return model.weight.data();
}

}  // namespace

TEST_SUITE("docs.checkpoints") {
  TEST_CASE("a model's weights: saved, loaded strictly and loosely, compared") {
    InScratch here("docs_checkpoints_weights");
    manual_seed(0);
    nn::Linear model(4, 3), other_model(4, 3);
    Captured out(std::cout);
    io::save(model, "model.safetensors");
    nn::IncompatibleKeys keys = io::load(other_model, "model.safetensors");          // strict
    nn::IncompatibleKeys loose = io::load(other_model, "model.safetensors", false);  // reports keys
    std::cout << nn::diff_state_dicts(model.state_dict(), io::load_state_dict("model.safetensors"));
    const std::string printed = out.release();
    CHECK(keys.missing_keys.empty());
    CHECK(keys.unexpected_keys.empty());
    CHECK(loose.missing_keys.empty());
    CHECK(loose.unexpected_keys.empty());
    CHECK(bit_equal(other_model.weight.data(), model.weight.data()));
    CHECK(bit_equal(other_model.bias.data(), model.bias.data()));
    CHECK(printed.find("max |a - b| per key:") != std::string::npos);
    CHECK(nn::diff_state_dicts(model.state_dict(), io::load_state_dict("model.safetensors"))
              .identical());
  }

  TEST_CASE("an optimizer and its schedule, in a file of their own") {
    InScratch here("docs_checkpoints_optimizer");
    manual_seed(0);
    nn::Linear model(4, 3);
    Generator data(1);
    optim::Adam opt(model.parameters(), optim::AdamOptions(1.0).betas({0.9, 0.98}).eps(1e-9));
    optim::LambdaLR sched(opt, [](std::int64_t e) { return optim::noam(e, 16, 1.0, 40); });
    one_training_step(model, opt, sched, &data);  // moments and a step count to save
    const optim::OptimizerState saved = opt.state_dict();
    io::save_optimizer(opt, "optim.safetensors", &sched);   // moments, step counts, groups, schedule
    one_training_step(model, opt, sched, &data);  // both move on
    REQUIRE(sched.last_epoch() == 2);
    io::load_optimizer(opt, "optim.safetensors", &sched);   // the scheduler is optional both ways
    CHECK(sched.last_epoch() == 1);
    const optim::OptimizerState loaded = opt.state_dict();
    for (std::size_t id : {std::size_t{0}, std::size_t{1}}) {  // weight, bias
      CHECK(loaded.state.at(id).step == saved.state.at(id).step);
      CHECK(bit_equal(*loaded.state.at(id).find("exp_avg"), *saved.state.at(id).find("exp_avg")));
      CHECK(bit_equal(*loaded.state.at(id).find("exp_avg_sq"),
                      *saved.state.at(id).find("exp_avg_sq")));
    }
  }

  TEST_CASE("a whole run: stopped, resumed, bit for bit the run that did not stop") {
    InScratch here("docs_checkpoints_run");
    const Array straight = run(false, 5);
    run(false, 3);  // stops after 3 steps, its checkpoint on disk
    const Array resumed = run(true, 5);
    CHECK(bit_equal(resumed, straight));
  }

  TEST_CASE("named arrays: a safetensors file, its tie and its metadata") {
    InScratch here("docs_checkpoints_arrays");
    io::SafetensorsFile f;
    f.add("embed.weight", Array{{0.5f, -1.f}, {2.f, 3.f}});   // an Array is stored as F32
    f.add("state.0.step", IndexArray(std::int64_t{7}));       // an IndexArray as I64
    f.add_alias("head.weight", "embed.weight");               // a tied tensor: stored once
    f.set_metadata("note", "hello");
    io::save_safetensors("arrays.safetensors", f);

    const io::SafetensorsFile g = io::load_safetensors("arrays.safetensors");
    Array w = g.to_float("head.weight");                      // F32, F64, F16, BF16 -> float32
    std::int64_t s = g.to_int64("state.0.step")();
    CHECK(bit_equal(w, Array{{0.5f, -1.f}, {2.f, 3.f}}));
    CHECK(s == 7);
    CHECK(std::filesystem::file_size("arrays.safetensors") == 488);  // the bytes the page shows
  }

  TEST_CASE("a damaged file is a CheckpointError naming the check that failed") {
    InScratch here("docs_checkpoints_errors");
    manual_seed(0);
    nn::Linear model(4, 3);
    io::save(model, "model.safetensors");
    std::string bytes = tapegrad::testing::read_bytes("model.safetensors");
    bytes.back() ^= 0x10;  // the last byte of the last tensor's data
    tapegrad::testing::write_bytes("model.safetensors", bytes);
    const Array before = model.weight.data();
    std::string kind;
    Captured err(std::cerr);
    try {
      io::load(model, "model.safetensors");
    } catch (const CheckpointError& e) {   // e.kind: "ChecksumMismatch", "IoError", ...
      kind = e.kind;
      std::cerr << e.what() << '\n';
    }
    const std::string printed = err.release();
    CHECK(kind == "ChecksumMismatch");
    CHECK(printed.find("'model.safetensors'") != std::string::npos);
    CHECK(bit_equal(model.weight.data(), before));  // refused: nothing changed
  }
}
