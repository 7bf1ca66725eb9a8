// tests/distributed/test_data_parallel.cpp: DistributedDataParallel's promises, checked on every
// rank at once: rank 0's model everywhere at construction, averaged gradients after backward
// (dense all-reduced in buckets, row-sparse gathered), unused parameters, no_sync, mismatched
// models refused, identical bits on every rank after every step, and N ranks with batch B
// training the same model as one process with batch N*B.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <tapegrad/distributed.hpp>
#include <tapegrad/tapegrad.hpp>

#include "helpers.hpp"
#include "models.hpp"

using namespace tapegrad;
using namespace ddp_test;
using distributed::DistributedDataParallel;
using distributed::DistributedDataParallelOptions;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
int N() { return distributed::world_size(); }
int R() { return distributed::rank(); }

// This rank's batch of 4 for a test that needs one: rows that differ between ranks.
IndexArray my_batch(const IndexArray& data) {
  std::vector<std::int64_t> idx;
  for (int i = 0; i < 4; ++i) idx.push_back(4 * R() + i);
  return rows(data, idx, 0, 4);
}

// Every parameter's gradient, densified (an absent one as an empty array).
std::vector<Array> gradients(const nn::Module& m) {
  std::vector<Array> g;
  for (const Parameter& p : m.parameters()) g.push_back(p.has_grad() ? p.grad_dense() : Array());
  return g;
}
}  // namespace

TEST_SUITE("distributed.data_parallel") {
  TEST_CASE("construction gives every rank rank 0's parameters and buffers") {
    TinyLM model(TinyOptions{},
                 /*seed=*/100 + static_cast<std::uint64_t>(R()));      // each rank its own init
    model.pos->pe.mutable_data()(0, 1, 1) += static_cast<float>(R());  // and its own buffer
    const std::vector<std::uint64_t> before =
        distributed::all_gather(distributed::fingerprint(model));
    if (N() > 1) CHECK(before[0] != before[1]);  // the ranks start apart
    const std::uint64_t rank0 = before[0];
    DistributedDataParallel ddp(model);
    CHECK(distributed::fingerprint(model) == rank0);
    distributed::expect_in_sync(model);
  }

  TEST_CASE("after backward every gradient is the average of the ranks' gradients") {
    const IndexArray data = make_dataset(16, 8, 16, 1);
    TinyLM model(TinyOptions{}, 7), reference(TinyOptions{}, 7);
    DistributedDataParallel ddp(model);
    loss_of(reference, my_batch(data)).backward();  // this rank's own gradient
    std::vector<Array> expected = gradients(reference);
    for (Array& g : expected) distributed::all_reduce(g, distributed::ReduceOp::average);
    loss_of(model, my_batch(data)).backward();  // averaged by the hooks
    const std::vector<Array> got = gradients(model);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(all_close(got[i], expected[i], 1e-7, 1e-6));
      // With one or two ranks it is the same bits: x * 0.5 is exact, so x/2 + y/2 rounds as (x + y) / 2.
      if (N() <= 2) CHECK(bit_equal(got[i], expected[i]));
    }
    const distributed::SyncStats& s = ddp.last_step();
    CHECK(s.steps == 1);
    CHECK(s.buckets == 1);  // 1.5 KiB of gradients: one bucket
    CHECK(s.buckets_started_in_backward == 1);
    CHECK(s.bytes ==
          (16 * 8 + 8 * 8 + 8 + 16 * 8 + 16 + 5) * sizeof(float));  // 5 gradients + a flag each
    CHECK(s.exposed_seconds >= 0.0);
  }

  TEST_CASE(
      "buckets hold the parameters in reverse order: the first up to its own cap, then "
      "bucket_cap_mb") {
    TinyLM model(TinyOptions{}, 7);
    // Bytes: out.bias 64, out.weight 512, hidden.bias 32, hidden.weight 256, embed.lut.weight 512.
    // A bucket closes once it reaches its cap: 100 bytes for the first, then 250.
    DistributedDataParallel ddp(model, DistributedDataParallelOptions()
                                           .first_bucket_cap_mb(100.0 / (1024 * 1024))
                                           .bucket_cap_mb(250.0 / (1024 * 1024)));
    const auto& b = ddp.buckets();
    REQUIRE(b.size() == 3);
    CHECK(b[0].params == std::vector<std::string>{"out.bias", "out.weight"});
    CHECK(b[1].params == std::vector<std::string>{"hidden.bias", "hidden.weight"});
    CHECK(b[2].params == std::vector<std::string>{"embed.lut.weight"});
    CHECK(b[0].numel == 16 + 128);
    CHECK_FALSE(b[2].sparse);
    // Default caps (25 MiB, first 1 MiB): everything in one bucket, still in reverse order.
    TinyLM other(TinyOptions{}, 7);
    DistributedDataParallel whole(other);
    REQUIRE(whole.buckets().size() == 1);
    CHECK(whole.buckets()[0].params == std::vector<std::string>{"out.bias", "out.weight",
                                                                "hidden.bias", "hidden.weight",
                                                                "embed.lut.weight"});
    CHECK_THROWS_WITH_AS(
        DistributedDataParallel(other, DistributedDataParallelOptions().bucket_cap_mb(0)),
        doctest::Contains("expected bucket sizes > 0 MiB, got bucket_cap_mb 0"), ValueError);
  }

  TEST_CASE("a bucket starts during backward as soon as its gradients are complete, in order") {
    const IndexArray data = make_dataset(16, 8, 16, 1);
    TinyLM model(TinyOptions{}, 7);
    DistributedDataParallel ddp(model, DistributedDataParallelOptions()
                                           .first_bucket_cap_mb(100.0 / (1024 * 1024))
                                           .bucket_cap_mb(250.0 / (1024 * 1024)));
    loss_of(model, my_batch(data)).backward();
    CHECK(ddp.last_step().buckets == 3);
    CHECK(ddp.last_step().buckets_started_in_backward ==
          3);  // each started by its last gradient's hook
    // Without the hidden layer, bucket 1 never completes in backward: it starts at the end, and
    // bucket 2 (the embedding, complete long before) waits for it, so that every rank starts the
    // buckets in the same order.
    model.zero_grad();
    loss_of(model, my_batch(data), /*use_hidden=*/false).backward();
    CHECK(ddp.last_step().buckets == 3);
    CHECK(ddp.last_step().buckets_started_in_backward == 1);
    CHECK_FALSE(model.hidden->weight.has_grad());  // no rank used it: no gradient, as PyTorch
    CHECK(model.out->weight.has_grad());
    CHECK(ddp.total().steps == 2);
  }

  TEST_CASE("a parameter only some ranks used gets the average over all ranks") {
    if (N() < 2) return;
    const IndexArray data = make_dataset(16, 8, 16, 1);
    TinyLM model(TinyOptions{}, 7), reference(TinyOptions{}, 7);
    DistributedDataParallel ddp(model);
    const bool use_hidden = R() == 0;  // rank 0 uses it, the others do not
    loss_of(reference, my_batch(data), use_hidden).backward();
    Array expected = reference.hidden->weight.has_grad() ? reference.hidden->weight.grad()
                                                         : xt::zeros<float>({8, 8});
    distributed::all_reduce(expected, distributed::ReduceOp::average);
    loss_of(model, my_batch(data), use_hidden).backward();
    REQUIRE(model.hidden->weight.has_grad());
    CHECK(all_close(model.hidden->weight.grad(), expected, 1e-7, 1e-6));
    distributed::expect_in_sync(model);
  }

  TEST_CASE("row-sparse gradients are gathered from every rank, not densified") {
    const IndexArray data = make_dataset(16, 8, 16, 1);
    TinyOptions o;
    o.sparse = true;
    TinyLM model(o, 7), reference(o, 7);
    DistributedDataParallel ddp(model);
    REQUIRE(ddp.buckets().size() == 2);  // the dense parameters, then the embedding alone
    CHECK(ddp.buckets()[1].sparse);
    CHECK(ddp.buckets()[1].params == std::vector<std::string>{"embed.lut.weight"});
    loss_of(reference, my_batch(data)).backward();
    const std::size_t my_rows = reference.embed->lut->weight.sparse_grad().nnz_rows();
    Array expected = reference.embed->lut->weight.grad_dense();
    distributed::all_reduce(expected, distributed::ReduceOp::average);
    loss_of(model, my_batch(data)).backward();
    const Parameter& w = model.embed->lut->weight;
    REQUIRE(w.grad_is_sparse());
    CHECK(w.sparse_grad().nnz_rows() == static_cast<std::size_t>(distributed::all_reduce(
                                            static_cast<double>(my_rows))));  // every rank's rows
    CHECK(all_close(w.grad_dense(), expected, 1e-7, 1e-6));
    // SparseAdam for the embedding and Adam for the rest keep the ranks identical.
    optim::SparseAdam sparse_adam({w}, optim::SparseAdamOptions(1e-2));
    std::vector<Parameter> dense{model.hidden->weight, model.hidden->bias, model.out->weight,
                                 model.out->bias};
    optim::Adam adam(dense, optim::AdamOptions(1e-2));
    for (int step = 0; step < 5; ++step) {
      if (step > 0) loss_of(model, my_batch(data)).backward();
      sparse_adam.step();
      adam.step();
      sparse_adam.zero_grad();
      adam.zero_grad();
      distributed::expect_in_sync(model);
    }
  }

  TEST_CASE(
      "under no_sync gradients accumulate on each rank, and the next backward averages the sum") {
    const IndexArray data = make_dataset(16, 8, 16, 1);
    TinyLM model(TinyOptions{}, 7), reference(TinyOptions{}, 7);
    DistributedDataParallel ddp(model);
    loss_of(reference, my_batch(data)).backward();
    const Array local = reference.out->weight.grad();  // this rank's first micro-batch
    loss_of(reference, my_batch(data)).backward();     // and the second, summed
    Array expected = reference.out->weight.grad();
    distributed::all_reduce(expected, distributed::ReduceOp::average);
    {
      auto guard = ddp.no_sync();
      loss_of(model, my_batch(data)).backward();
      CHECK(bit_equal(model.out->weight.grad(), local));  // this rank's own, not averaged
    }
    CHECK(ddp.total().steps == 0);  // nothing was sent
    loss_of(model, my_batch(data)).backward();
    CHECK(ddp.total().steps == 1);
    CHECK(all_close(model.out->weight.grad(), expected, 1e-7, 1e-6));
  }

  TEST_CASE("a rank whose module differs is refused on every rank, naming what differs") {
    if (N() < 2) return;
    TinyOptions o;
    o.extra = R() == 1;
    TinyLM model(o, 7);
    CHECK_THROWS_WITH_AS(
        DistributedDataParallel{model},
        doctest::Contains("DistributedDataParallel(TinyLM): expected the same parameters and "
                          "buffers on every rank (every rank must build the same model), got: rank "
                          "1 has a parameter 'extra' (3,) that rank 0 does not have"),
        distributed::DistributedError);
    TinyOptions wider;
    wider.hidden_out = R() == 1 ? 9 : 8;
    TinyLM other(wider, 7);
    CHECK_THROWS_WITH_AS(
        DistributedDataParallel{other},
        doctest::Contains("parameter 'hidden.weight' is (8, 8) on rank 0 but (9, 8) on rank 1"),
        distributed::DistributedError);
    distributed::barrier();  // the ranks are still in step
  }

  TEST_CASE(
      "every rank holds the same bits after every step, and check_in_sync catches a rank that "
      "diverged") {
    const IndexArray data = make_dataset(16, 8, 16, 1);
    TinyLM model(TinyOptions{}, 100 + static_cast<std::uint64_t>(R()));
    DistributedDataParallel ddp(model, DistributedDataParallelOptions().check_in_sync(true));
    optim::Adam adam(model.parameters(), optim::AdamOptions(1e-2));
    for (int step = 0; step < 10; ++step) {
      loss_of(model, my_batch(data)).backward();  // check_in_sync compares them here
      adam.step();
      adam.zero_grad();
      const std::vector<std::uint64_t> prints =
          distributed::all_gather(distributed::fingerprint(model));
      for (std::uint64_t p : prints) CHECK(p == prints[0]);
    }
    if (N() < 2) return;
    if (R() == 1) model.out->bias.mutable_data()(3) += 1e-6f;  // a change only rank 1 makes
    CHECK_THROWS_WITH_AS(
        loss_of(model, my_batch(data)).backward(),
        doctest::Contains(
            "check_in_sync): expected every rank to hold the same bits, got parameter 'out.bias' "
            "(and perhaps others) different from rank 0's on rank 1"),
        InvariantError);
  }

  TEST_CASE("N ranks with batch B train the same model as one process with batch N*B") {
    // 100 Adam steps on a global batch of 8: each rank takes its 8 / N rows of the sampler's global
    // batch, and the reference, trained by each rank alone, takes all 8. The losses agree to 1e-5
    // relative, but not to the bit: one process sums the 8 rows' gradients in one matrix product,
    // N ranks sum 8 / N rows each and then add the N partial means in the all-reduce; float addition
    // is not associative, so the last bits differ, and Adam carries the difference along. With one
    // rank DDP changes nothing (its average is x * 1.0): the same bits.
    const std::int64_t global_batch = 8, steps = 100;
    const std::int64_t B = distributed::local_batch_size(global_batch, N());
    const IndexArray data = make_dataset(64, 8, 16, 3);
    TinyLM model(TinyOptions{}, 11), reference(TinyOptions{}, 11);
    DistributedDataParallel ddp(model);
    optim::Adam adam(model.parameters(), optim::AdamOptions(1e-2));
    optim::Adam reference_adam(reference.parameters(), optim::AdamOptions(1e-2));
    distributed::DistributedSampler sampler(64, distributed::DistributedSamplerOptions().seed(5));
    distributed::DistributedSampler whole(
        64, distributed::DistributedSamplerOptions().seed(5).num_replicas(1).rank(0));
    const std::int64_t per_epoch = 64 / global_batch;
    double worst = 0.0;
    bool identical = true;
    for (std::int64_t step = 0; step < steps; ++step) {
      const std::int64_t epoch = step / per_epoch, k = step % per_epoch;
      sampler.set_epoch(epoch);
      whole.set_epoch(epoch);
      Tensor loss =
          loss_of(model, rows(data, sampler.indices(), std::size_t(k * B), std::size_t(B)));
      loss.backward();
      adam.step();
      adam.zero_grad();
      const double ddp_loss =
          distributed::all_reduce(static_cast<double>(loss.item()), distributed::ReduceOp::average);
      Tensor ref_loss = loss_of(
          reference,
          rows(data, whole.indices(), std::size_t(k * global_batch), std::size_t(global_batch)));
      ref_loss.backward();
      reference_adam.step();
      reference_adam.zero_grad();
      worst = std::max(worst, std::abs(ddp_loss - ref_loss.item()) / std::abs(ref_loss.item()));
      identical = identical && static_cast<float>(ddp_loss) == ref_loss.item();
    }
    MESSAGE("largest relative difference of the loss over ", steps, " steps on ", N(),
            " rank(s): ", worst);
    CHECK(worst < 1e-5);
    if (N() == 1) CHECK(identical);
    distributed::expect_in_sync(model);
  }

  TEST_CASE("a run is reproducible bit for bit") {
    const IndexArray data = make_dataset(16, 8, 16, 1);
    std::vector<std::uint64_t> prints;
    for (int run = 0; run < 2; ++run) {
      TinyLM model(TinyOptions{}, 7);
      DistributedDataParallel ddp(model);
      optim::Adam adam(model.parameters(), optim::AdamOptions(1e-2));
      for (int step = 0; step < 20; ++step) {
        loss_of(model, my_batch(data)).backward();
        adam.step();
        adam.zero_grad();
      }
      prints.push_back(distributed::fingerprint(model));
    }
    CHECK(prints[0] == prints[1]);
  }

  TEST_CASE(
      "after a backward that threw while averaging, the next one says the ranks are out of step") {
    const IndexArray data = make_dataset(16, 8, 16, 1);
    TinyLM model(TinyOptions{}, 7);
    DistributedDataParallel ddp(model);
    // An op recorded before the model's forward runs last in backward: after every hook has fired.
    Tensor w(Array{1.0f}, true), z(Array{0.0f});
    autograd::record("fails", z, {w}, {}, [](Array) { fail<ValueError>("fails: on purpose"); });
    Tensor loss = ops::add(loss_of(model, my_batch(data)), ops::sum(z));
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("fails: on purpose"), ValueError);
    CHECK_THROWS_WITH_AS(
        loss_of(model, my_batch(data)).backward(),
        doctest::Contains("DistributedDataParallel(TinyLM): an earlier backward failed while its "
                          "gradients were being synchronised (a backward() threw after some of its "
                          "gradients had started to be averaged); the ranks are no longer in step"),
        distributed::DistributedError);
  }

  TEST_CASE("a module can be wrapped only once at a time") {
    TinyLM model(TinyOptions{}, 7);
    {
      DistributedDataParallel ddp(model);
      CHECK_THROWS_WITH_AS(DistributedDataParallel{model}, doctest::Contains("is already wrapped"),
                           distributed::DistributedError);
    }
    DistributedDataParallel again(model);  // once the first is gone, it can be wrapped again
  }
}  // TEST_SUITE
