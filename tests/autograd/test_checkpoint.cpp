// tests/autograd/test_checkpoint.cpp: autograd::checkpoint (torch.utils.checkpoint with
// use_reentrant=False): the values and gradients of the plain run bit for bit, dropout included;
// only the checkpoint's entry is kept; parameters fn captures get their gradients; it nests, sits
// inside a larger graph, survives retain_graph, just runs under NoGradGuard, and refuses misuse.
// (The GPT's and the Llama's blocks under it: tests/transformer/test_recompute.cpp.)
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::input;

namespace {

// A small block: tanh(x w1 + b), dropped (its seed drawn from `gen`), then projected by w2.
struct Block {
  Block() : w1(input({4, 6}, 11)), b(input({6}, 12)), w2(input({6, 4}, 13)) {}
  Tensor operator()(const Tensor& x, Generator& gen) const {
    const Tensor h = ops::tanh(ops::matmul(x, w1) + b);
    return ops::matmul(ops::dropout(h, 0.3, true, gen), w2);
  }
  std::vector<Tensor> parameters() const { return {w1, b, w2}; }
  Tensor w1, b, w2;  // leaves that require grad, captured by fn, never passed as inputs
};

std::vector<Array> grads(const std::vector<Tensor>& ts) {
  std::vector<Array> g;
  for (const Tensor& t : ts) g.push_back(t.grad());
  return g;
}

bool all_bit_equal(const std::vector<Array>& a, const std::vector<Array>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!bit_equal(a[i], b[i])) return false;
  return true;
}

std::size_t count_op(const autograd::Tape& tape, const std::string& op) {
  std::size_t n = 0;
  for (const auto& e : tape.entries()) n += e.op == op;
  return n;
}

// loss = sum(block(block(x0) * x0)) with x0 = 2 a: an input computed before the checkpoints and
// used after them too, so its gradient comes from inside and outside.
struct TwoBlocks {
  Tensor a = input({3, 4}, 1);
  Block first, second;
  Tensor loss(bool recompute, Generator& gen) const {
    const Tensor x0 = a * 2.0;
    const auto run = [&gen](const Block& blk) {
      return [&gen, &blk](const std::vector<Tensor>& in) { return blk(in[0], gen); };
    };
    const Tensor h = recompute ? autograd::checkpoint(run(first), {x0}) : first(x0, gen);
    const Tensor x1 = h * x0;
    const Tensor y = recompute ? autograd::checkpoint(run(second), {x1}) : second(x1, gen);
    return ops::sum(y * y);
  }
  std::vector<Tensor> leaves() const {
    std::vector<Tensor> all{a};
    for (const Block* blk : {&first, &second})
      for (const Tensor& p : blk->parameters()) all.push_back(p);
    return all;
  }
};

}  // namespace

TEST_SUITE("autograd.checkpoint") {
  TEST_CASE("the loss and every gradient are the plain run's bit for bit, dropout included") {
    TwoBlocks plain, ckpt;
    Generator g_plain(7), g_ckpt(7);
    const Tensor l_plain = plain.loss(false, g_plain), l_ckpt = ckpt.loss(true, g_ckpt);
    CHECK(bit_equal(l_plain.data(), l_ckpt.data()));
    l_plain.backward();
    l_ckpt.backward();
    CHECK(all_bit_equal(grads(plain.leaves()), grads(ckpt.leaves())));
    // The recompute took the forward's streams again: the generator drew once per dropout.
    CHECK(g_plain.next_u64() == g_ckpt.next_u64());
  }

  TEST_CASE("only the checkpoint's entry is kept between forward and backward") {
    TwoBlocks ckpt;
    Generator gen(7);
    const std::size_t before = autograd::live_entries();
    const Tensor loss = ckpt.loss(true, gen);
    const autograd::Tape tape = autograd::tape_of(loss);
    CHECK(count_op(tape, "checkpoint") == 2);
    CHECK(count_op(tape, "tanh") == 0);  // fn's ops left with fn's graph
    CHECK(count_op(tape, "dropout") == 0);
    // mul (x0), checkpoint, mul (x1), checkpoint, mul (y * y), sum.
    CHECK(autograd::live_entries() - before == 6);
    // Replay order: sum, mul, checkpoint, mul, checkpoint, mul. The first checkpoint's inputs
    // are x0 and the three parameters fn captured.
    const autograd::TapeEntry& first = tape.entries()[tape.size() - 2];
    CHECK(first.op == "checkpoint");
    CHECK(first.inputs.size() == 4);
    loss.backward();
    CHECK(autograd::live_entries() - before == 1);  // consumed: the loss's own, until it dies
  }

  TEST_CASE("the gradient matches finite differences") {
    const Tensor w = input({3, 3}, 21);
    const GradcheckResult r = gradcheck(
        [&w](const std::vector<Tensor>& in) {
          return autograd::checkpoint(
              [&w](const std::vector<Tensor>& x) { return ops::tanh(ops::matmul(x[0], w)) * x[1]; },
              {in[0], in[1]});
        },
        {input({2, 3}, 22), input({2, 3}, 23)});
    CHECK_MESSAGE(r.ok, r);
  }

  TEST_CASE("parameters fn captures get their gradients, even when no input requires grad") {
    const Block plain, blk;
    const Tensor x = input({3, 4}, 5, /*requires_grad=*/false);
    Generator g1(3), g2(3);
    ops::sum(plain(x, g1)).backward();
    const Tensor y = autograd::checkpoint(
        [&](const std::vector<Tensor>& in) { return blk(in[0], g2); }, {x});
    CHECK(y.requires_grad());
    ops::sum(y).backward();
    CHECK(all_bit_equal(grads(blk.parameters()), grads(plain.parameters())));
    CHECK(!x.has_grad());
  }

  TEST_CASE("checkpoints nest, their dropout masks equal, the gradients the plain run's") {
    const Block inner_plain, outer_plain, inner, outer;
    const Tensor x_plain = input({3, 4}, 8), x_ckpt = input({3, 4}, 8);
    Generator g_plain(9), g_ckpt(9);
    ops::sum(outer_plain(inner_plain(x_plain, g_plain), g_plain)).backward();
    const Tensor y = autograd::checkpoint(
        [&](const std::vector<Tensor>& in) {
          const Tensor h = autograd::checkpoint(
              [&](const std::vector<Tensor>& v) { return inner(v[0], g_ckpt); }, {in[0]});
          return outer(h, g_ckpt);
        },
        {x_ckpt});
    CHECK(autograd::tape_of(y).size() == 1);  // the outer checkpoint holds everything
    ops::sum(y).backward();
    CHECK(all_bit_equal(grads(inner.parameters()), grads(inner_plain.parameters())));
    CHECK(all_bit_equal(grads(outer.parameters()), grads(outer_plain.parameters())));
    CHECK(bit_equal(x_plain.grad(), x_ckpt.grad()));
    CHECK(g_plain.next_u64() == g_ckpt.next_u64());
  }

  TEST_CASE("with retain_graph, a second backward runs fn again and adds the same gradients") {
    TwoBlocks plain, ckpt;
    Generator g_plain(4), g_ckpt(4);
    const Tensor l_plain = plain.loss(false, g_plain), l_ckpt = ckpt.loss(true, g_ckpt);
    l_plain.backward(/*retain_graph=*/true);
    l_plain.backward();
    l_ckpt.backward(/*retain_graph=*/true);
    l_ckpt.backward();
    CHECK(all_bit_equal(grads(plain.leaves()), grads(ckpt.leaves())));
  }

  TEST_CASE("an input also used outside, between its making and the checkpoint, gets all of it") {
    // x's entry must run once, after both x * 3 and the checkpoint added into x's gradient: the
    // recompute's backward stops at x and leaves it to the backward that reached it.
    const auto loss = [](const Tensor& a, const Tensor& w, bool recompute) {
      const Tensor x = ops::tanh(a);
      const Tensor z = x * 3.0;
      const auto fn = [&w](const std::vector<Tensor>& in) { return ops::matmul(in[0], w); };
      const Tensor y = recompute ? autograd::checkpoint(fn, {x}) : fn({x});
      return ops::sum(y * z);
    };
    const Tensor a_plain = input({2, 3}, 40), a_ckpt = input({2, 3}, 40);
    const Tensor w_plain = input({3, 3}, 41), w_ckpt = input({3, 3}, 41);
    loss(a_plain, w_plain, false).backward();
    loss(a_ckpt, w_ckpt, true).backward();
    CHECK(bit_equal(a_plain.grad(), a_ckpt.grad()));
    CHECK(bit_equal(w_plain.grad(), w_ckpt.grad()));
  }

  TEST_CASE("an intermediate fn captures instead of taking it as an input gets its gradient") {
    const Tensor a_plain = input({2, 3}, 30), a_ckpt = input({2, 3}, 30);
    const Tensor w_plain = input({3, 3}, 31), w_ckpt = input({3, 3}, 31);
    const Tensor h_plain = ops::tanh(a_plain), h_ckpt = ops::tanh(a_ckpt);
    ops::sum(ops::matmul(h_plain, w_plain) * h_plain).backward();
    const Tensor y = autograd::checkpoint(
        [&](const std::vector<Tensor>&) { return ops::matmul(h_ckpt, w_ckpt) * h_ckpt; }, {});
    ops::sum(y).backward();
    CHECK(bit_equal(a_plain.grad(), a_ckpt.grad()));
    CHECK(bit_equal(w_plain.grad(), w_ckpt.grad()));
  }

  TEST_CASE("a parameter's post-accumulate hook fires once, with its whole gradient") {
    Block blk;
    Generator gen(2);
    int fired = 0;
    Array seen;
    blk.w1.register_post_accumulate_grad_hook([&](const Tensor& t) {
      ++fired;
      seen = t.grad();
    });
    const Tensor x = input({3, 4}, 6);
    const Tensor y = autograd::checkpoint(
        [&](const std::vector<Tensor>& in) {
          return blk(in[0], gen) + ops::matmul(ops::matmul(in[0], blk.w1), blk.w2);
        },
        {x});
    ops::sum(ops::matmul(y, blk.w1.detach()) + ops::matmul(x, blk.w1)).backward();
    CHECK(fired == 1);
    CHECK(bit_equal(seen, blk.w1.grad()));
  }

  TEST_CASE("under autocast::bf16 the recompute rounds as the forward did") {
    TwoBlocks plain, ckpt;
    Generator g_plain(5), g_ckpt(5);
    {
      autocast::bf16 mixed;
      plain.loss(false, g_plain).backward();
      ckpt.loss(true, g_ckpt).backward();
    }
    CHECK(all_bit_equal(grads(plain.leaves()), grads(ckpt.leaves())));
    SUBCASE("a float32 forward is not recomputed in bf16") {
      Generator gen(5);
      TwoBlocks other;
      const Tensor loss = other.loss(true, gen);
      autocast::bf16 mixed;
      CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("expected the recompute to run as "
                                                              "the forward did, in float32"),
                           AutogradError);
    }
  }

  TEST_CASE("under NoGradGuard it just runs fn") {
    Block blk;
    Generator g1(1), g2(1);
    const Tensor x = input({3, 4}, 3);
    autograd::NoGradGuard no_grad;
    const std::size_t before = autograd::live_entries();
    const Tensor y = autograd::checkpoint(
        [&](const std::vector<Tensor>& in) { return blk(in[0], g1); }, {x});
    CHECK(!y.requires_grad());
    CHECK(autograd::live_entries() == before);
    CHECK(bit_equal(y.data(), blk(x, g2).data()));
  }

  TEST_CASE("a result that depends on nothing that requires grad is returned as is") {
    // PyTorch's checkpoint (use_reentrant=False) records nothing then; backward is refused.
    const Tensor x = input({2, 2}, 1, /*requires_grad=*/false);
    const Tensor y = autograd::checkpoint(
        [](const std::vector<Tensor>& in) { return ops::tanh(in[0]); }, {x});
    CHECK(!y.requires_grad());
    CHECK_THROWS_WITH_AS(ops::sum(y).backward(),
                         doctest::Contains("element 0 of tensors does not require grad"),
                         AutogradError);
  }

  TEST_CASE("fn may return its input: the gradient passes through") {
    const Tensor x = input({2, 2}, 1);
    const Tensor y = autograd::checkpoint([](const std::vector<Tensor>& in) { return in[0]; }, {x});
    ops::sum(y * 3.0).backward();
    CHECK(bit_equal(x.grad(), xt::full_like(x.data(), 3.0f)));
  }

  TEST_CASE("misuse is refused, naming what is wrong") {
    const Tensor x = input({2, 3}, 1);
    const auto tanh = [](const std::vector<Tensor>& in) { return ops::tanh(in[0]); };
    SUBCASE("an empty function, an empty input, an empty result") {
      CHECK_THROWS_WITH_AS(autograd::checkpoint(nullptr, {x}),
                           "checkpoint: expected a function, got an empty one", ValueError);
      CHECK_THROWS_WITH_AS(autograd::checkpoint(tanh, {x, Tensor()}),
                           doctest::Contains("got an empty handle at input 1"), ValueError);
      CHECK_THROWS_WITH_AS(
          autograd::checkpoint([](const std::vector<Tensor>&) { return Tensor(); }, {x}),
          "checkpoint: expected fn to return a tensor, got an empty handle", ValueError);
    }
    SUBCASE("fn writing its input in place") {
      const Tensor h = x * 1.0;
      CHECK_THROWS_WITH_AS(autograd::checkpoint(
                               [](const std::vector<Tensor>& in) {
                                 return ops::dropout(in[0], 0.5, true, ops::DropoutStream{1, 0},
                                                     /*inplace=*/true);
                               },
                               {h}),
                           doctest::Contains("checkpoint: fn wrote input 0"), AutogradError);
    }
    SUBCASE("a parameter written in place between forward and backward") {
      const Tensor w = input({3, 3}, 2);
      const Tensor y = autograd::checkpoint(
          [&w](const std::vector<Tensor>& in) { return ops::matmul(in[0], w); }, {x});
      w.mutable_data()(0, 0) += 1.0f;
      CHECK_THROWS_WITH_AS(ops::sum(y).backward(),
                           doctest::Contains("modified by an inplace operation | checkpoint (entry"),
                           AutogradError);
    }
    SUBCASE("fn computing something else when run again") {
      int runs = 0;
      const Tensor y = autograd::checkpoint(
          [&runs](const std::vector<Tensor>& in) {
            return ++runs == 1 ? ops::tanh(in[0]) : ops::tanh(ops::sum(in[0], 0));
          },
          {x});
      CHECK_THROWS_WITH_AS(ops::sum(y).backward(),
                           doctest::Contains("Recomputed values for the following tensors have "
                                             "different metadata than during the forward pass."),
                           AutogradError);
      CHECK(!x.has_grad());
    }
    SUBCASE("fn taking other random streams when run again") {
      int runs = 0;
      Generator gen(1);
      const Tensor y = autograd::checkpoint(
          [&](const std::vector<Tensor>& in) {
            return ++runs == 1 ? ops::dropout(in[0], 0.5, true, gen) : ops::tanh(in[0]);
          },
          {x});
      CHECK_THROWS_WITH_AS(ops::sum(y).backward(),
                           doctest::Contains("the recompute of fn took 0 random streams, its "
                                             "forward 1"),
                           AutogradError);
    }
  }
}  // TEST_SUITE
