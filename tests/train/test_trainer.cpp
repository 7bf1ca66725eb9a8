// tests/train/test_trainer.cpp: the training loop of tapegrad::train (train/trainer.hpp), on a tiny
// GPT with dropout: a run stopped and resumed ends on the bits of a run that never stopped
// (stop_after, a stop signal, a batch that cannot be read); gradient accumulation gives the large
// batch's step; the folder is locked; a checkpoint of another model is refused; options out of
// range are refused, naming them; recompute gives the bits of a run without it.
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <unistd.h>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/train.hpp>

#include "../helpers.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;
using tapegrad::testing::fresh_folder;

namespace {

constexpr std::size_t kT = 8, kB = 3;

// A stream with structure a GPT can learn: a walk that mostly steps by one.
train::TokenStream stream(std::size_t n, std::uint64_t seed) {
  Generator g(seed);
  train::TokenStream s;
  std::int64_t id = 0;
  for (std::size_t i = 0; i < n; ++i) {
    id = (id + (g.uniform_float() < 0.8f ? 1 : 5)) % 13;
    s.ids.push_back(id);
  }
  return s;
}

// One run of a tiny GPT: the model, its optimizer and schedule, its batches and its trainer,
// built alike from the same seeds however often it is built.
struct TinyRun {
  explicit TinyRun(train::TrainerOptions options, double dropout = 0.1, std::size_t B = kB,
                   double lr = 1e-2)
      : model_gen(std::make_shared<Generator>(1)),
        data_gen(std::make_shared<Generator>(2)),
        model(tt::GPTConfig(13, kT).n_layer(1).n_head(2).n_embd(8).dropout(dropout), model_gen),
        opt(model.parameters(), optim::AdamWOptions(lr)),
        sched(opt, [](std::int64_t e) { return 1.0 / (1.0 + 0.05 * double(e)); }),
        batches(stream(400, 3), kT, B, data_gen),
        validation(train::fixed_windows(stream(120, 4), kT, 6, kB, 5)),
        trainer(model, opt, &sched, std::move(options)) {
    trainer.track("model", model_gen);
    trainer.notes({{"test.model", "tiny"}});
  }
  train::Task task() {
    return {[this](const data::Batch& b) { return model.loss(b.x, b.y); }};
  }
  train::Run fit() { return trainer.fit(task(), batches, validation); }

  std::shared_ptr<Generator> model_gen, data_gen;
  tt::GPT model;
  optim::AdamW opt;
  optim::LambdaLR sched;
  train::RandomWindows batches;
  train::Validation validation;
  train::Trainer trainer;
};

train::TrainerOptions quiet(const std::filesystem::path& out, std::int64_t steps) {
  return train::TrainerOptions()
      .steps(steps)
      .eval_every(4)
      .out(out.string())
      .quiet(true)
      .pictures(false);
}

bool same_parameters(const nn::Module& a, const nn::Module& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  if (pa.size() != pb.size()) return false;
  for (std::size_t i = 0; i < pa.size(); ++i)
    if (pa[i].first != pb[i].first || !testing::bit_equal(pa[i].second.data(), pb[i].second.data()))
      return false;
  return true;
}

// A source that cannot read its `fail_at`-th batch (a token file that shrank under the run).
class FailingBatches : public train::Batches {
 public:
  FailingBatches(train::RandomWindows& inner, int fail_at) : inner_(inner), fail_at_(fail_at) {}
  data::Batch next() override {
    if (++calls_ == fail_at_) throw DataError("'corpus.tokens' shrank while training read it");
    return inner_.next();
  }
  std::vector<std::pair<std::string, std::shared_ptr<Generator>>> generators() const override {
    return inner_.generators();
  }

 private:
  train::RandomWindows& inner_;
  int fail_at_, calls_ = 0;
};

}  // namespace

TEST_SUITE("train.trainer") {
  TEST_CASE("a run stopped after a step and resumed ends on the bits of one that never stopped") {
    const auto dir = fresh_folder("train", "resume_to_the_bit");
    TinyRun whole(quiet(dir / "whole", 10).grad_accum(2));
    const train::Run w = whole.fit();
    CHECK(w.step == 10);
    CHECK(w.val_history.size() == 4);  // steps 0, 4, 8 and 10
    CHECK(w.val_history.back().second < w.val_history.front().second);

    {
      TinyRun first(quiet(dir / "parts", 10).grad_accum(2).stop_after(6));
      CHECK(first.fit().step == 6);
    }
    TinyRun second(quiet(dir / "parts", 10).grad_accum(2).resume(true));
    const train::Run r = second.fit();
    CHECK(r.step == 10);
    CHECK(same_parameters(whole.model, second.model));
    CHECK(r.train_losses == w.train_losses);  // the whole history, bit for bit
    CHECK(r.best_val == w.best_val);
  }

  TEST_CASE("gradient accumulation of K batches of B takes the step of one batch of K * B") {
    const auto dir = fresh_folder("train", "accumulation");
    // Without dropout the two runs see the same windows (K draws of B starts are the draws of
    // K * B) and differ only in the order of the sums.
    TinyRun accumulated(quiet(dir / "a", 5).grad_accum(2), /*dropout=*/0.0, kB);
    TinyRun large(quiet(dir / "b", 5), /*dropout=*/0.0, 2 * kB);
    accumulated.fit();
    large.fit();
    const auto pa = accumulated.model.named_parameters(), pb = large.model.named_parameters();
    for (std::size_t i = 0; i < pa.size(); ++i)
      CHECK_MESSAGE(testing::all_close(pa[i].second.data(), pb[i].second.data(), 1e-5, 1e-4),
                    pa[i].first);
  }

  TEST_CASE(
      "a stop signal finishes the step, saves it, and a resume ends on the uninterrupted bits") {
    const auto dir = fresh_folder("train", "stop_signal");
    TinyRun whole(quiet(dir / "whole", 9));
    whole.fit();

    train::StopSignals signals("test");
    std::optional<train::Run> stopped;
    {
      TinyRun first(quiet(dir / "parts", 9));
      int calls = 0;
      train::Task task = first.task();
      const auto loss = task.loss;
      task.loss = [&](const data::Batch& b) {
        if (first.model.is_training() && ++calls == 5) std::raise(SIGINT);  // during step 5
        return loss(b);
      };
      stopped = first.trainer.fit(task, first.batches, first.validation);
    }
    CHECK(stopped->stopped_by == SIGINT);
    CHECK(stopped->step == 5);  // step 5 finished, then the run stopped
    const io::SafetensorsFile last =
        io::load_safetensors((dir / "parts" / "last.safetensors").string());
    CHECK(*last.metadata_value("progress.step") == "5");
    train::StopSignals::clear();
    TinyRun second(quiet(dir / "parts", 9).resume(true));
    CHECK(second.fit().step == 9);
    CHECK(same_parameters(whole.model, second.model));
  }

  TEST_CASE("a batch that cannot be read saves the state before its step and rethrows") {
    const auto dir = fresh_folder("train", "unreadable_batch");
    TinyRun whole(quiet(dir / "whole", 8).grad_accum(2));
    whole.fit();

    {
      TinyRun first(quiet(dir / "parts", 8).grad_accum(2));
      FailingBatches failing(first.batches, /*fail_at=*/8);  // the 2nd batch of step 4
      CHECK_THROWS_WITH_AS(first.trainer.fit(first.task(), failing, first.validation),
                           doctest::Contains("'corpus.tokens' shrank"), DataError);
    }
    const io::SafetensorsFile last =
        io::load_safetensors((dir / "parts" / "last.safetensors").string());
    CHECK(*last.metadata_value("progress.step") == "3");
    TinyRun second(quiet(dir / "parts", 8).grad_accum(2).resume(true));
    CHECK(second.fit().step == 8);
    CHECK(same_parameters(whole.model, second.model));
  }

  TEST_CASE(
      "a second run on a locked folder is refused at once, naming the folder and the process") {
    const auto dir = fresh_folder("train", "locked");
    io::FolderLock other(dir.string(), "--out");
    TinyRun run(quiet(dir, 4));
    CHECK_THROWS_WITH_AS(run.fit(),
                         doctest::Contains(("--out: the folder '" + dir.string() +
                                            "' is in use by another run (process " +
                                            std::to_string(::getpid()) + " holds its lock)")
                                               .c_str()),
                         CheckpointError);
  }

  TEST_CASE("a resume refuses a checkpoint of another model, naming the note") {
    const auto dir = fresh_folder("train", "other_model");
    TinyRun(quiet(dir, 4)).fit();
    TinyRun other(quiet(dir, 8).resume(true));
    other.trainer.notes({{"test.model", "another"}});
    CHECK_THROWS_WITH_AS(
        other.fit(),
        doctest::Contains(("--resume: the run in '" + (dir / "last.safetensors").string() +
                           "' was made with another model")
                              .c_str()),
        ValueError);
  }

  TEST_CASE("best.safetensors is replaced only by a lower validation loss, across runs") {
    const auto dir = fresh_folder("train", "best");
    TinyRun(quiet(dir, 8)).fit();
    const std::string best = testing::bytes_of(dir / "best.safetensors");
    // A new run in the same folder with a learning rate too small to learn never beats it.
    TinyRun worse(quiet(dir, 4), 0.1, kB, /*lr=*/1e-9);
    const train::Run w = worse.fit();
    CHECK(w.best_val < w.val_history.back().second);  // the earlier run's, from best.safetensors
    CHECK(testing::bytes_of(dir / "best.safetensors") == best);
  }

  TEST_CASE("a run without validation batches saves last.safetensors, and never a best") {
    const auto dir = fresh_folder("train", "no_validation");
    TinyRun run(quiet(dir, 6));
    run.validation.batches.clear();
    const train::Run r = run.fit();
    CHECK(r.step == 6);
    CHECK(std::isnan(r.val_history.back().second));
    CHECK(std::filesystem::exists(dir / "last.safetensors"));
    CHECK_FALSE(std::filesystem::exists(dir / "best.safetensors"));
  }

  TEST_CASE("options out of range are refused, naming them") {
    auto refused = [](train::TrainerOptions o, const std::string& what) {
      TinyRun run(train::TrainerOptions().quiet(true));
      CHECK_THROWS_WITH_AS(train::Trainer(run.model, run.opt, &run.sched, o),
                           doctest::Contains(what.c_str()), ValueError);
    };
    refused(train::TrainerOptions().steps(0), "Trainer: expected steps >= 1, got 0");
    refused(train::TrainerOptions().grad_accum(0), "expected grad_accum >= 1, got 0");
    refused(train::TrainerOptions().eval_every(0), "expected eval_every >= 1, got 0");
    refused(train::TrainerOptions().clip(-1), "expected clip >= 0 (0: no clipping), got -1");
    refused(train::TrainerOptions().clip(NAN), "expected clip >= 0");
  }

  TEST_CASE("recompute trains to the bits of a run without it, dropout on") {
    const auto dir = fresh_folder("train", "recompute");
    TinyRun plain(quiet(dir / "plain", 6).grad_accum(2));
    TinyRun recomputed(quiet(dir / "recomputed", 6).grad_accum(2).recompute(true));
    CHECK(recomputed.model.recompute());
    const train::Run a = plain.fit(), b = recomputed.fit();
    CHECK(a.train_losses == b.train_losses);
    CHECK(a.val_history == b.val_history);
    CHECK(same_parameters(plain.model, recomputed.model));
  }

  TEST_CASE("recompute on a model that is no CausalLM is refused, naming the option") {
    TinyRun run(train::TrainerOptions().quiet(true));
    nn::Linear other(nn::LinearOptions(2, 2));
    CHECK_THROWS_WITH_AS(
        train::Trainer(other, run.opt, &run.sched, train::TrainerOptions().recompute(true)),
        doctest::Contains("Trainer: recompute: expected a model that recomputes its blocks"),
        ValueError);
  }
}
