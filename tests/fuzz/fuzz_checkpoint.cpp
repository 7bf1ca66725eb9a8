// tests/fuzz/fuzz_checkpoint.cpp: libFuzzer target for the checkpoint layer (scripts/fuzz.sh),
// everything io/checkpoint.hpp reads from a file after the safetensors reader accepted it: the
// training layout, optimizer state tensors, the JSON texts of param_groups and lr_scheduler,
// generator states and progress counters.
//
// Any bytes go in. A refusal may only be CheckpointError, StateDictError, TypeError or ValueError,
// and a refused load must leave the model, the optimizer, the scheduler and the generators exactly
// as they were; an accepted training checkpoint must be consistent (every step count equal to
// progress.step, the scheduler's last_epoch in [0, progress.step], weights and moments finite).
// Anything else (another exception, a crash, a leak, a sanitizer report, a half-applied load, an
// inconsistent state accepted) is a bug. Seeds: run with TAPEGRAD_FUZZ_WRITE_SEEDS=folder, the
// target writes valid files of each layout there, with and without checksums, and files holding
// values no run can produce or counters that disagree, and exits (scripts/fuzz.sh does this
// first).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;
using namespace tapegrad::io;

namespace {
void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_checkpoint: invariant broken: %s\n", what);
    std::abort();
  }
}

// A tiny run: Linear(3, 2), Adam with a LambdaLR, a data generator, the checkpoint tracking them.
struct Run {
  Run() { ckpt.add_generator("data", data); }
  void train(int steps) {
    for (int s = 0; s < steps; ++s) {
      for (const Parameter& p : model.parameters())
        p.set_grad(uniform(p.shape(), -1.0, 1.0, data.get()));
      adam.step();
      adam.zero_grad();
      sched.step();
    }
  }
  std::shared_ptr<Generator> data = std::make_shared<Generator>(1);
  nn::Linear model{nn::LinearOptions(3, 2), std::make_shared<Generator>(2)};
  optim::Adam adam{model.parameters(), optim::AdamOptions(0.1)};
  optim::LambdaLR sched{adam, [](std::int64_t e) { return 1.0 / (1.0 + double(e) * double(e)); }};
  TrainingCheckpoint ckpt{model, adam, &sched};
};

// Everything a load may change, as bytes and text, to compare before and after a refusal.
std::string fingerprint(const Run& r) {
  std::string s;
  for (const auto& [key, value] : r.model.state_dict())
    s.append(key).append(reinterpret_cast<const char*>(value.data()), value.size() * sizeof(float));
  const optim::OptimizerState o = r.adam.state_dict();
  for (const auto& [id, st] : o.state) {
    s += std::to_string(id) + ":" + std::to_string(st.step.value_or(-1));
    for (const auto& [name, value] : st.tensors)
      s.append(name).append(reinterpret_cast<const char*>(value.data()),
                            value.size() * sizeof(float));
  }
  for (const auto& [key, value] : o.param_groups.at(0).options)
    if (const auto* x = std::get_if<double>(&value))
      s.append(key).append(reinterpret_cast<const char*>(x), sizeof *x);
  s += std::to_string(r.sched.last_epoch());
  for (double lr : r.sched.get_last_lr()) s.append(reinterpret_cast<const char*>(&lr), sizeof lr);
  return s + r.data->state() + default_generator()->state();
}

// Runs `load` and says whether it succeeded. A refusal may only be one of the documented types.
template <class F>
bool attempt(F&& load) {
  try {
    load();
    return true;
  } catch (const CheckpointError&) {
  } catch (const StateDictError&) {
  } catch (const TypeError&) {
  } catch (const ValueError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_checkpoint: undocumented exception: %s\n", e.what());
    std::abort();
  }
  return false;
}

bool all_finite(const Array& a) {
  return std::all_of(a.begin(), a.end(), [](float x) { return std::isfinite(x); });
}

// What an accepted training checkpoint guarantees about the state it loaded.
void expect_consistent(const Run& r, std::int64_t step) {
  expect(step >= 0, "progress.step >= 0");
  for (const auto& [id, s] : r.adam.state_dict().state) {
    expect(s.step == step, "every step count equals progress.step");
    for (const auto& [name, value] : s.tensors) expect(all_finite(value), "moments are finite");
  }
  expect(r.sched.last_epoch() >= 0 && r.sched.last_epoch() <= step,
         "the scheduler took between 0 and progress.step steps");
  for (const Parameter& p : r.model.parameters())
    expect(all_finite(p.data()), "weights are finite");
}

void write_seed(const std::string& folder, const std::string& name, const std::string& bytes) {
  const std::string path = folder + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  expect(f != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() &&
             std::fclose(f) == 0,
         "the seed is written");
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* folder = std::getenv("TAPEGRAD_FUZZ_WRITE_SEEDS");
  if (folder == nullptr) return 0;
  Run run;
  run.train(3);
  write_seed(folder, "training",
             serialize_safetensors(run.ckpt.to_file({3, 12, {{"note", "seed"}}})));
  SafetensorsFile optimizer;
  const optim::LambdaLRState sched = run.sched.state_dict();
  add_optimizer_state(optimizer, run.adam.state_dict(), &sched);
  write_seed(folder, "optimizer", serialize_safetensors(optimizer));
  SafetensorsFile model;
  add_state_dict(model, run.model.state_dict());
  write_seed(folder, "model", serialize_safetensors(model));
  // The same three as save() writes them, with a CRC-32C per tensor in the metadata.
  run.ckpt.save(std::string(folder) + "/training_checked", {3, 12});
  save_optimizer(run.adam, std::string(folder) + "/optimizer_checked", &run.sched);
  save(run.model, std::string(folder) + "/model_checked");
  // Values no run can produce, which the loaders refuse (unchecked, so that mutations of the
  // data reach those checks instead of the checksums').
  const auto with_tensor = [&](const std::string& name,
                               const std::function<void(SafetensorsFile&)>& add) {
    SafetensorsFile f;
    for (const TensorRecord& r : optimizer.tensors())
      if (r.name != name) f.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
    add(f);
    for (const auto& [key, value] : optimizer.metadata()) f.set_metadata(key, value);
    return serialize_safetensors(f);
  };
  const Array v = optimizer.to_float("state.0.exp_avg_sq");
  write_seed(folder, "optimizer_negative_exp_avg_sq",
             with_tensor("state.0.exp_avg_sq", [&](SafetensorsFile& f) {
               f.add("state.0.exp_avg_sq", Array(v - 1.0f));
             }));
  write_seed(folder, "optimizer_nan_exp_avg_sq",
             with_tensor("state.0.exp_avg_sq", [&](SafetensorsFile& f) {
               Array nan = v;
               nan.flat(0) = std::nanf("");
               f.add("state.0.exp_avg_sq", std::move(nan));
             }));
  write_seed(folder, "optimizer_negative_step", with_tensor("state.0.step", [](SafetensorsFile& f) {
               f.add("state.0.step", IndexArray(std::int64_t{-2}));
             }));
  write_seed(
      folder, "optimizer_fractional_step",
      with_tensor("state.0.step", [](SafetensorsFile& f) { f.add("state.0.step", Array(2.5f)); }));
  write_seed(folder, "optimizer_nan_exp_avg",
             with_tensor("state.1.exp_avg", [](SafetensorsFile& f) {
               f.add("state.1.exp_avg", Array{std::nanf(""), 0.f});
             }));
  // Training checkpoints whose counters disagree, or whose weights are not finite.
  const SafetensorsFile training = run.ckpt.to_file({3, 12});
  const auto training_with = [&](const std::string& key, const std::string& value) {
    SafetensorsFile f = training;
    f.set_metadata(key, value);
    return serialize_safetensors(f);
  };
  write_seed(folder, "training_step_ahead", training_with("progress.step", "5"));
  write_seed(folder, "training_negative_step", training_with("progress.step", "-1"));
  write_seed(folder, "training_last_epoch_huge",
             training_with("optim.0.lr_scheduler", R"({"base_lrs":[0.1],"last_epoch":1000000})"));
  SafetensorsFile nan_weight;
  for (const TensorRecord& r : training.tensors())
    if (r.name == "model.weight")
      nan_weight.add(r.name, Array(xt::full_like(training.to_float(r.name), std::nanf(""))));
    else if (r.name == "optim.0.state.1.step")
      nan_weight.add(r.name, IndexArray(std::int64_t{2}));
    else
      nan_weight.add_raw(r.name, r.dtype, r.shape, {r.bytes().begin(), r.bytes().end()});
  for (const auto& [key, value] : training.metadata()) nan_weight.set_metadata(key, value);
  write_seed(folder, "training_nan_weight_step_behind", serialize_safetensors(nan_weight));
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  SafetensorsFile file;
  try {
    file = parse_safetensors(std::string_view(reinterpret_cast<const char*>(data), size),
                             "fuzz.safetensors");
  } catch (const CheckpointError&) {
    return 0;  // the reader's own target covers these
  }

  // The training layout: all or nothing.
  {
    Run run;
    run.train(1);
    const std::string before = fingerprint(run);
    std::int64_t step = -1;
    if (attempt([&] { step = run.ckpt.restore(file, "fuzz.safetensors").step; })) {
      expect_consistent(run, step);
      run.train(1);  // what was loaded is usable
    } else
      expect(fingerprint(run) == before, "a refused training checkpoint changes nothing");
  }
  // The optimizer layout, into an optimizer, then its scheduler.
  {
    Run run;
    std::string before = fingerprint(run);
    if (!attempt(
            [&] { run.adam.load_state_dict(read_optimizer_state(file, "", "fuzz.safetensors")); }))
      expect(fingerprint(run) == before, "a refused optimizer state changes nothing");
    before = fingerprint(run);
    if (!attempt([&] {
          if (const auto s = read_lambda_lr_state(file, "", "fuzz.safetensors"))
            run.sched.load_state_dict(*s);
        }))
      expect(fingerprint(run) == before, "a refused scheduler state changes nothing");
  }
  // The model layout, strict and not.
  for (const bool strict : {true, false}) {
    Run run;
    const std::string before = fingerprint(run);
    if (!attempt([&] { run.model.load_state_dict(read_state_dict(file), strict); }))
      expect(fingerprint(run) == before, "a refused model state changes nothing");
  }
  return 0;
}
