// tests/docs/test_training.cpp: the example of docs/training.md ("Your model in the trainer"),
// run: a tiny GPT trained by train::Trainer on a token stream held in memory, its loss falling and
// its checkpoints written. The page's ```cpp block names this file, and the excerpt check holds
// its lines to the ones below.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/train.hpp>

#include "../test_files.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

TEST_SUITE("docs.training") {
  TEST_CASE("the page's trainer example trains a model of one's own and saves it") {
    const std::filesystem::path out = testing::fresh_folder("docs", "training");
    auto model_generator = std::make_shared<Generator>(1),
         data_generator = std::make_shared<Generator>(2);
    tt::GPT model(tt::GPTConfig(11, 8).n_layer(1).n_head(2).n_embd(16), model_generator);
    optim::AdamW optimizer(model.parameters(), optim::AdamWOptions(1e-2));
    optim::LambdaLR schedule(optimizer, [](std::int64_t) { return 1.0; });
    train::TokenStream train_tokens, val_tokens;  // a sequence that counts 0 .. 10 again and again
    for (int i = 0; i < 400; ++i)
      train_tokens.ids.push_back(i % 11), val_tokens.ids.push_back((i + 3) % 11);
    const train::Validation validation = train::fixed_windows(val_tokens, 8, 16, 4, /*seed=*/5);

    train::Trainer trainer(model, optimizer, &schedule,
                           train::TrainerOptions().steps(40).eval_every(10).out(out.string()));
    trainer.track("model", model_generator);  // every random stream the run draws from
    train::Task task{[&](const data::Batch& b) { return model.loss(b.x, b.y); }};
    train::RandomWindows batches(train_tokens, /*T=*/8, /*B=*/4, data_generator);
    const train::Run run = trainer.fit(task, batches, validation);

    CHECK(run.step == 40);
    CHECK(run.val_history.back().second < 0.5f * run.val_history.front().second);
    CHECK(std::filesystem::exists(out / "last.safetensors"));
    CHECK(std::filesystem::exists(out / "best.safetensors"));
  }
}
