// tests/autograd/test_engine.cpp: who owns the graph, and what backward does with it.
// The first cases are the classic learner mistakes with the graph, each with what PyTorch 1.13
// does for the same program (scripts/golden/autograd.py prints it).
#include <doctest/doctest.h>

#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

namespace {
constexpr const char* kSecondTime =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.";

// The number of the entry that produced t.
std::uint64_t seq_of(const Tensor& t) { return autograd::tape_of(t).entries().at(0).seq; }
}  // namespace

TEST_SUITE("autograd.engine") {
  TEST_CASE(
      "a second backward through an intermediate is refused, naming the freed entry, before "
      "anything runs") {
    // PyTorch: RuntimeError "Trying to backward through the graph a second time ..."
    Tensor w(Array{1.f, 2.f, 3.f}, true);
    Tensor h = ops::mul(w, w);
    const std::uint64_t mul = seq_of(h);
    ops::sum(h).backward();
    CHECK(all_close(w.grad(), Array{2.f, 4.f, 6.f}));
    Tensor again = ops::sum(ops::mul(h, 3.0));
    std::ostringstream expected;
    expected << kSecondTime << " | backward: 'mul' (entry #" << mul
             << ") was freed by an earlier backward()";
    CHECK_THROWS_WITH_AS(again.backward(), expected.str().c_str(), AutogradError);
    CHECK(all_close(w.grad(), Array{2.f, 4.f, 6.f}));  // nothing of the refused backward ran
    CHECK(autograd::tape_of(again).size() == 3);       // and its own entries are still there
  }

  TEST_CASE(
      "state carried across steps without detach() is refused, and with retain_graph the gradient "
      "is 4") {
    // s = w * 1; sum(s).backward(); sum(s * w).backward(): the RNN hidden state a learner forgets to
    // detach. PyTorch raises; with retain_graph=True on the first backward it gives 4 for w = 2.
    SUBCASE("without retain_graph") {
      Tensor w(Array{2.f}, true);
      Tensor s = ops::mul(w, 1.0);
      ops::sum(s).backward();
      w.zero_grad();
      CHECK_THROWS_WITH_AS(ops::sum(ops::mul(s, w)).backward(), doctest::Contains(kSecondTime),
                           AutogradError);
      CHECK_FALSE(w.has_grad());
    }
    SUBCASE("with retain_graph") {
      Tensor w(Array{2.f}, true);
      Tensor s = ops::mul(w, 1.0);
      ops::sum(s).backward(/*retain_graph=*/true);
      w.zero_grad();
      ops::sum(ops::mul(s, w)).backward();
      CHECK(w.grad()(0) == 4.f);
    }
    SUBCASE("with detach(), the fix") {
      Tensor w(Array{2.f}, true);
      Tensor s = ops::mul(w, 1.0);
      ops::sum(s).backward();
      w.zero_grad();
      ops::sum(ops::mul(s.detach(), w)).backward();
      CHECK(w.grad()(0) == 2.f);
    }
  }

  TEST_CASE(
      "an evaluation loop without NoGradGuard keeps nothing: 10,000 dropped outputs leave no "
      "entry") {
    // PyTorch: 20,000 Linear(256, 256) forwards grow the process by 0.1 MiB; the graph dies with its output.
    Parameter weight(xt::ones<float>({16, 16})), bias(xt::zeros<float>({16}));  // a Linear's
    Tensor x(xt::ones<float>({4, 16}));
    const std::size_t before = autograd::live_entries();
    for (int i = 0; i < 10000; ++i) {
      Tensor y = ops::tanh(ops::linear(x, weight, bias));
      REQUIRE(autograd::live_entries() == before + 2);
    }
    CHECK(autograd::live_entries() == before);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("two independent graphs are backpropagated one after the other") {
    // PyTorch: w.grad == [5, 7]
    Tensor w(Array{1.f, 2.f}, true);
    Tensor la = ops::sum(ops::mul(w, w));
    Tensor lb = ops::sum(ops::mul(w, 3.0));
    la.backward();
    lb.backward();
    CHECK(all_close(w.grad(), Array{5.f, 7.f}));
  }

  TEST_CASE("two losses sharing an intermediate: the second backward is refused, as in PyTorch") {
    Tensor w(Array{1.f, 2.f}, true);
    Tensor h = ops::mul(w, w);
    Tensor la = ops::sum(h);
    Tensor lb = ops::sum(ops::mul(h, 2.0));
    la.backward();
    CHECK_THROWS_WITH_AS(lb.backward(), doctest::Contains("'mul' (entry #"), AutogradError);
    SUBCASE("retain_graph on the first makes both work") {
      Tensor h2 = ops::mul(w, w);
      w.zero_grad();
      ops::sum(h2).backward(/*retain_graph=*/true);
      ops::sum(ops::mul(h2, 2.0)).backward();
      CHECK(all_close(w.grad(), Array{6.f, 12.f}));
    }
  }

  TEST_CASE("a graph built on one thread is backpropagated on another") {
    // PyTorch: [2, 4]
    Tensor w(Array{1.f, 2.f}, true);
    Tensor loss = ops::sum(ops::mul(w, w));
    std::thread worker([&] { loss.backward(); });
    worker.join();
    CHECK(all_close(w.grad(), Array{2.f, 4.f}));
    CHECK(autograd::tape().empty());
  }

  TEST_CASE(
      "entries recorded on another thread are on that thread's tape, and die with their outputs "
      "there") {
    Tensor w(Array{1.f, 2.f}, true);
    const std::size_t before = autograd::live_entries();
    std::size_t seen_there = 0;
    Tensor kept;
    std::thread worker([&] {
      kept = ops::sum(ops::mul(w, w));
      seen_there = autograd::tape().size();
    });
    worker.join();
    CHECK(seen_there == 2);
    CHECK(autograd::tape().empty());  // not on this thread's tape
    CHECK(autograd::live_entries() == before + 2);
    kept.backward();
    kept = Tensor();  // the entries die here, on this thread
    CHECK(autograd::live_entries() == before);
  }

  TEST_CASE("a Buffer cannot become a Parameter, so an optimizer cannot train it") {
    // optim::Adam adam({Parameter(pos.pe)}, ...) compiled through Parameter(const Tensor&) and
    // trained the positional encoding. It does not compile any more.
    static_assert(!std::is_constructible_v<Parameter, const Buffer&>);
    static_assert(!std::is_constructible_v<Parameter, Buffer&>);
    static_assert(!std::is_convertible_v<Buffer, Parameter>);
    static_assert(std::is_constructible_v<Parameter, const Tensor&>);  // a plain tensor still may
    const Buffer pe(xt::ones<float>({1, 8, 4}));  // as a PositionalEncoding's pe
    Parameter copy(Array(pe.data()));              // what a user who means it writes
    CHECK(copy.requires_grad());
    CHECK(pe.data().data() != copy.data().data());
  }

  TEST_CASE("a long chain of entries is freed and backpropagated without deep recursion") {
    Tensor w(Array{1.f}, true);
    const std::size_t before = autograd::live_entries();
    {
      Tensor y = w;
      for (int i = 0; i < 200000; ++i) y = ops::add(y, 0.0);
      CHECK(autograd::live_entries() == before + 200000);
    }  // 200,000 entries freed in a loop, not a recursion
    CHECK(autograd::live_entries() == before);
    Tensor y = w;
    for (int i = 0; i < 200000; ++i) y = ops::mul(y, 1.0);
    ops::sum(y).backward();
    CHECK(w.grad()(0) == 1.f);
  }

  TEST_CASE("an op that saves its own output frees its entry when the output dies") {
    // The output owns its entry, so an entry that kept its output would keep both alive for ever.
    // record() saves the output as a detached share; closures capture y.detach().
    Tensor x(Array{{0.5f, -1.f}, {2.f, 0.25f}}, true);
    Generator gen(0);
    const std::vector<std::pair<const char*, std::function<Tensor()>>> ops_list = {
        {"exp", [&] { return ops::exp(x); }},
        {"sqrt", [&] { return ops::sqrt(ops::mul(x, x)); }},
        {"tanh", [&] { return ops::tanh(x); }},
        {"relu", [&] { return ops::relu(x); }},
        {"sigmoid", [&] { return ops::sigmoid(x); }},
        {"softmax", [&] { return ops::softmax(x, -1); }},
        {"log_softmax", [&] { return ops::log_softmax(x, -1); }},
        {"log", [&] { return ops::log(ops::exp(x)); }},
        {"pow", [&] { return ops::pow(x, 3.0); }},
        {"div", [&] { return ops::div(x, ops::add(ops::mul(x, x), 1.0)); }},
        {"matmul", [&] { return ops::matmul(x, x); }},
        {"max", [&] { return ops::max(x, 1); }},
        {"mean", [&] { return ops::mean(x, 0); }},
        {"transpose", [&] { return ops::transpose(x, 0, 1); }},
        {"reshape", [&] { return ops::reshape(x, {4}); }},
        {"slice", [&] { return ops::slice(x, 1, 0, 1); }},
        {"cat",
         [&] {
           return ops::cat({x, x}, 0);
         }},
        {"clone", [&] { return x.clone(); }},
        {"dropout", [&] { return ops::dropout(x, 0.5, true, gen); }},
        {"layer_norm", [&] { return ops::layer_norm(x, {2}); }},
        {"cross_entropy",
         [&] {
           return ops::cross_entropy(x, IndexArray{0, 1});
         }},
        {"embedding",
         [&] {
           return ops::embedding(IndexArray{1, 0}, x);
         }},
    };
    for (const auto& [name, make] : ops_list) {
      CAPTURE(name);
      const std::size_t before = autograd::live_entries();
      {
        Tensor y = make();
        REQUIRE(autograd::live_entries() > before);
      }
      CHECK(autograd::live_entries() == before);
      {
        Tensor y = make();
        ops::sum(y).backward();  // and after a backward too
      }
      CHECK(autograd::live_entries() == before);
      x.zero_grad();
    }
  }

  TEST_CASE(
      "detach() shares the data, not the graph: a kept detached output keeps no entry alive") {
    Tensor w(Array{1.f, 2.f}, true);
    const std::size_t before = autograd::live_entries();
    std::vector<Tensor> kept;
    for (int i = 0; i < 100; ++i) kept.push_back(ops::sum(ops::mul(w, w)).detach());  // a loss log
    CHECK(autograd::live_entries() == before);
    CHECK(kept[99].item() == 5.f);
  }

  TEST_CASE("a closure that adds into a tensor its op did not record is refused, naming both") {
    Tensor w(Array{1.f}, true);
    Tensor hidden = ops::mul(w, 2.0);  // an intermediate the op below forgets to list
    Tensor x(Array{3.f}, true);
    Tensor y(Array{6.f});
    autograd::record("forgetful", y, {x}, {}, [x, hidden](Array dy) {
      x.accumulate_grad(dy, "forgetful");
      hidden.accumulate_grad(std::move(dy), "forgetful");
    });
    CHECK_THROWS_WITH_AS(y.backward(Array{1.f}),
                         doctest::Contains("forgetful: added a gradient into the output of 'mul'"),
                         AutogradError);
  }

  TEST_CASE("record refuses an output that is one of its inputs or was already recorded") {
    Tensor x(Array{1.f}, true);
    CHECK_THROWS_WITH_AS(autograd::record("self", x, {x}, {}, [](Array) {}),
                         doctest::Contains("must record on the new tensor it computed"),
                         AutogradError);
    Tensor y = ops::mul(x, 2.0);
    CHECK_THROWS_WITH_AS(autograd::record("twice", y, {x}, {}, [](Array) {}),
                         doctest::Contains("'twice' must record on the new tensor it computed"),
                         AutogradError);
  }

  TEST_CASE(
      "a post-accumulate hook runs once per backward, after every entry adding into the leaf has "
      "run") {
    Tensor w(Array{1.f, 2.f}, true);
    std::vector<Array> seen;
    const std::size_t id =
        w.register_post_accumulate_grad_hook([&](const Tensor& t) { seen.push_back(t.grad()); });
    Tensor loss = ops::sum(ops::add(ops::mul(w, w), ops::mul(w, 3.0)));  // w feeds two entries
    loss.backward();
    REQUIRE(seen.size() == 1);
    CHECK(all_close(seen[0], Array{5.f, 7.f}));  // the whole gradient, 2w + 3
    ops::sum(ops::mul(w, 2.0)).backward();
    REQUIRE(seen.size() == 2);
    CHECK(all_close(seen[1], Array{7.f, 9.f}));
    w.remove_hook(id);
    ops::sum(w).backward();
    CHECK(seen.size() == 2);
    CHECK_THROWS_WITH_AS(w.remove_hook(id), doctest::Contains("has no hook with id"), ValueError);
    Tensor y = ops::mul(w, 2.0);
    CHECK_THROWS_WITH_AS(y.register_post_accumulate_grad_hook([](const Tensor&) {}),
                         doctest::Contains("cannot be registered on non-leaf tensors"),
                         AutogradError);
  }

  TEST_CASE("a post-accumulate hook does not run for a leaf the backward gave no gradient") {
    Tensor a(Array{1.f}, true), b(Array{1.f}, true);
    int calls = 0;
    b.register_post_accumulate_grad_hook([&](const Tensor&) { ++calls; });
    ops::sum(ops::mul(a, 2.0)).backward();
    CHECK(calls == 0);
    ops::sum(ops::mul(a, b)).backward();
    CHECK(calls == 1);
  }

  TEST_CASE("a queued callback runs once, after the whole backward, in the order queued") {
    Tensor a(Array{1.f}, true), b(Array{2.f}, true);
    std::vector<std::string> events;
    a.register_post_accumulate_grad_hook([&](const Tensor&) {
      events.push_back("hook a");
      autograd::queue_callback([&] {
        events.push_back("first: b has its gradient " + std::to_string(b.grad()(0)));
        autograd::queue_callback([&] { events.push_back("queued by a callback"); });
      });
      autograd::queue_callback([&] { events.push_back("second"); });
    });
    b.register_post_accumulate_grad_hook([&](const Tensor&) { events.push_back("hook b"); });
    // a is used by the newest entry, b by the oldest: a's hook fires before b's gradient exists.
    Tensor loss = ops::sum(ops::mul(ops::mul(b, 3.0), a));
    loss.backward();
    const std::vector<std::string> expected{
        "hook a", "hook b", "first: b has its gradient 3.000000", "second", "queued by a callback"};
    CHECK(events == expected);
    events.clear();
    ops::sum(ops::mul(b, 2.0)).backward();  // a is not reached: nothing queued, nothing runs
    CHECK(events == std::vector<std::string>{"hook b"});
  }

  TEST_CASE("a callback queued for a leaf used as its own loss runs too") {
    Tensor w(Array{1.f}, true);
    int runs = 0;
    w.register_post_accumulate_grad_hook(
        [&](const Tensor&) { autograd::queue_callback([&] { ++runs; }); });
    w.backward();
    CHECK(runs == 1);
  }

  TEST_CASE("queue_callback outside a backward is refused with PyTorch's text") {
    CHECK_THROWS_WITH_AS(
        autograd::queue_callback([] {}),
        doctest::Contains("Final callbacks can only be installed during backward pass."),
        AutogradError);
    CHECK_THROWS_WITH_AS(autograd::queue_callback(nullptr),
                         doctest::Contains("expected a callable"), ValueError);
  }

  TEST_CASE("a backward that throws drops its queued callbacks") {
    Tensor a(Array{1.f}, true), w(Array{1.f}, true);
    int runs = 0;
    a.register_post_accumulate_grad_hook(
        [&](const Tensor&) { autograd::queue_callback([&] { ++runs; }); });
    Tensor y = ops::mul(w, 2.0);
    Tensor z(Array{0.f});
    autograd::record("throws", z, {y}, {}, [](Array) { fail<ValueError>("throws: on purpose"); });
    Tensor loss = ops::sum(ops::add(ops::mul(a, 1.0), z));  // a's hook fires, then 'throws' runs
    CHECK_THROWS_AS(loss.backward(), ValueError);
    CHECK(runs == 0);
    ops::sum(ops::mul(a, 1.0)).backward();  // the next backward runs only its own callback
    CHECK(runs == 1);
  }

  TEST_CASE("an entry whose output received no gradient does not run and is not consumed") {
    Tensor w(Array{1.f}, true);
    Tensor unused = ops::mul(w, 2.0);
    Tensor y(Array{0.f});
    autograd::record("ignores_its_input", y, {unused}, {}, [](Array) {});  // sends nothing back
    ops::sum(y).backward();
    CHECK_FALSE(w.has_grad());
    ops::sum(ops::mul(unused, 1.0)).backward();  // unused's entry did not run: still usable
    CHECK(w.grad()(0) == 2.f);
  }

}  // TEST_SUITE
