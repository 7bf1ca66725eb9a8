// tests/core/test_autocast.cpp: autocast::bf16 (core/autocast.hpp): bfloat16 rounding (to nearest,
// ties to even, NaN and infinities kept); inside a scope a product is the float32 sum of its
// operands rounded to bfloat16, on the reference engine to the bit and on oneDNN's bf16 kernels
// within the bound that summing in another order allows; backward's products are bf16 products
// too; outside a scope nothing changes, bit for bit. A whole GPT step in bf16:
// tests/transformer/test_gpt_engines.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <tapegrad/autograd/tape.hpp>
#include <tapegrad/core.hpp>
#include <tapegrad/ops/activation.hpp>
#include <tapegrad/ops/matmul.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using autocast::round_to_bf16;
using autocast::to_bf16;

namespace {

float bits(std::uint32_t u) { return std::bit_cast<float>(u); }

// C = bf16(A) bf16(B) summed in float32 in k order (what the reference engine computes), and the
// bound a sum in another order stays within: 2 K 2^-24 sum_k |a_ik b_kj| per element.
void rounded_product(const Array& a, const Array& b, Array& c, Array& bound) {
  const std::size_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  c = Array::from_shape({M, N});
  bound = Array::from_shape({M, N});
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      float s = 0.0f;
      double mag = 0.0;
      for (std::size_t k = 0; k < K; ++k) {
        const float p = round_to_bf16(a(i, k)) * round_to_bf16(b(k, j));
        s += p;
        mag += std::abs(double(p));
      }
      c(i, j) = s;
      bound(i, j) = float(2.0 * double(K) * std::ldexp(1.0, -24) * mag + 1e-30);
    }
}
}  // namespace

TEST_CASE("bfloat16 rounds to nearest, ties to even, and keeps NaN and the infinities") {
  CHECK(to_bf16(1.0f) == 0x3f80);
  CHECK(to_bf16(-2.0f) == 0xc000);
  CHECK(to_bf16(bits(0x3f808000)) == 0x3f80);  // halfway, to the even 0x3f80
  CHECK(to_bf16(bits(0x3f818000)) == 0x3f82);  // halfway, to the even 0x3f82
  CHECK(to_bf16(bits(0x3f808001)) == 0x3f81);  // above halfway: up
  CHECK(to_bf16(bits(0x3f807fff)) == 0x3f80);  // below halfway: down
  CHECK(to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // beyond bf16's largest: inf
  CHECK(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(round_to_bf16(bits(0x7f800001))));  // a NaN whose payload would round to inf
  CHECK(round_to_bf16(3.14159265f) == 3.140625f);
  CHECK(round_to_bf16(1e-40f) > 0.0f);  // subnormals are kept, with bfloat16's 7 bits
  CHECK(std::abs(round_to_bf16(1e-40f) - 1e-40f) <= std::ldexp(1.0f, -134));  // half a step
  CHECK(autocast::from_bf16(0x4049) == 3.140625f);
}

TEST_CASE(
    "inside autocast::bf16 a product sums bf16 operands in float32, and outside nothing changes") {
  const testing::GemmEngineScope restore;
  Generator gen(3);
  const Tensor a = Tensor(randn({19, 70}, &gen)), b = Tensor(randn({70, 23}, &gen));
  Array want, bound;
  rounded_product(a.data(), b.data(), want, bound);
  const Array fp32 = ops::matmul(a, b).data();
  CHECK_FALSE(autocast::bf16_enabled());
  {
    autocast::bf16 mixed;
    CHECK(autocast::bf16_enabled());
    set_gemm_engine(GemmEngine::reference);  // the definition: the same sums in the same order
    CHECK(testing::bit_equal(ops::matmul(a, b).data(), want));
    for (const GemmEngine engine : available_gemm_engines()) {
      CAPTURE(to_string(engine));
      set_gemm_engine(engine);
      const Array got = ops::matmul(a, b).data();
      std::size_t outside = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        outside += std::abs(got.data()[i] - want.data()[i]) > bound.data()[i];
      CHECK(outside == 0);
    }
    CHECK_FALSE(testing::bit_equal(want, fp32));  // the rounding is real
  }
  CHECK_FALSE(autocast::bf16_enabled());
  set_gemm_engine(restore.saved);
  CHECK(testing::bit_equal(ops::matmul(a, b).data(), fp32));  // and gone with the scope
}

TEST_CASE("backward's products round their operands too, and gradients stay float32 tensors") {
  const testing::GemmEngineScope restore;
  set_gemm_engine(GemmEngine::reference);
  Generator gen(4);
  Parameter w(randn({6, 9}, &gen));
  const Tensor x = Tensor(randn({5, 9}, &gen), /*requires_grad=*/true);
  const Array g = randn({5, 6}, &gen);
  {
    autocast::bf16 mixed;
    const Tensor y = ops::linear(x, w, Tensor());
    ops::sum(y * Tensor(g)).backward();
  }
  // dW = g^T x and dx = g W, each with bf16 operands
  Array want, bound;
  Array gt = Array::from_shape({6, 5});
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 6; ++j) gt(j, i) = g(i, j);
  rounded_product(gt, x.data(), want, bound);
  CHECK(testing::all_close(w.grad(), want, 1e-6, 1e-6));
  rounded_product(g, w.data(), want, bound);
  CHECK(testing::all_close(x.grad(), want, 1e-6, 1e-6));
}

TEST_CASE(
    "a product big enough for oneDNN's bf16 kernels stays within the bound, whatever the "
    "thread count") {
  // 2^20 multiply-adds or more go to oneDNN (smaller ones take the float32 engine): 130 x 100 x 90
  // is 1.17 million. Linear's product too, which reads its weight transposed.
  const testing::GemmEngineScope restore;
  const int threads = get_num_threads();
  Generator gen(5);
  const Tensor a = Tensor(randn({130, 90}, &gen)), b = Tensor(randn({90, 100}, &gen));
  const Tensor w = Tensor(randn({100, 90}, &gen));  // linear(a, w) = a w^T
  Array wt = Array::from_shape({90, 100});
  for (std::size_t i = 0; i < 90; ++i)
    for (std::size_t j = 0; j < 100; ++j) wt(i, j) = w.data()(j, i);
  Array want, bound;
  for (const GemmEngine engine : available_gemm_engines()) {
    CAPTURE(to_string(engine));
    set_gemm_engine(engine);
    for (const bool linear : {false, true}) {
      rounded_product(a.data(), linear ? wt : b.data(), want, bound);
      std::vector<Array> results;
      for (const int n : {1, 2, 3}) {
        set_num_threads(n);
        autocast::bf16 mixed;
        results.push_back(linear ? ops::linear(a, w, Tensor()).data() : ops::matmul(a, b).data());
      }
      set_num_threads(threads);
      std::size_t outside = 0;
      for (std::size_t i = 0; i < want.size(); ++i)
        outside += std::abs(results[0].data()[i] - want.data()[i]) > bound.data()[i];
      CHECK(outside == 0);
      CHECK(testing::bit_equal(results[0], results[1]));  // 1 thread and 2: the same bits
      CHECK(testing::bit_equal(results[0], results[2]));  // and 3
    }
  }
}

TEST_CASE("oneDNN's bf16 products are kept for the 256 most recently used shapes, no more") {
  // A sampler's growing cache, or any loop over new shapes, would otherwise keep a built product
  // for every shape it ever saw. 300 shapes (64, k) @ (k, 256), k = 64 .. 363: over 2^20
  // multiply-adds each, and 300 shapes whatever the blocks the product is cut into.
  const testing::GemmEngineScope restore;
  const auto engines = available_gemm_engines();
  const bool onednn =
      std::find(engines.begin(), engines.end(), GemmEngine::onednn) != engines.end();
  set_gemm_engine(GemmEngine::openblas);  // (oneDNN multiplies every bf16 product but reference's)
  Generator gen(7);
  for (std::size_t k = 64; k < 364; ++k) {
    const Tensor a = Tensor(randn({64, k}, &gen)), b = Tensor(randn({k, 256}, &gen));
    autocast::bf16 mixed;
    const Tensor c = ops::matmul(a, b);
    if (k == 64 || k == 363) {  // the product is still right: an element against its sum
      double want = 0.0;
      for (std::size_t i = 0; i < k; ++i)
        want += double(round_to_bf16(a.data()(63, i))) * double(round_to_bf16(b.data()(i, 255)));
      CHECK(c.data()(63, 255) == doctest::Approx(want).epsilon(1e-4));
    }
  }
  // oneDNN builds no bf16 product on a CPU without AVX-512 (or ONEDNN_MAX_CPU_ISA=AVX2): none kept.
  const std::size_t kept = autocast::bf16_products_kept();
  CHECK(kept <= 256u);
  if (onednn && kept > 0) CHECK(kept == 256u);
  if (!onednn) CHECK(kept == 0u);
}

TEST_CASE(
    "a bf16 weight gradient summed over many tokens has the same bits at 1, 2 and 3 threads") {
  // dW = dY^T X sums over every token of the batch: a long K and a small output, the shape for
  // which a library would be most tempted to split K across threads (and so sum in another order).
  const testing::GemmEngineScope restore;
  const int threads = get_num_threads();
  Generator gen(11);
  const Tensor dy_t = Tensor(randn({48, 16384}, &gen)), x = Tensor(randn({16384, 40}, &gen));
  for (const GemmEngine engine : available_gemm_engines()) {
    CAPTURE(to_string(engine));
    set_gemm_engine(engine);
    std::vector<Array> results;
    for (const int n : {1, 2, 3}) {
      set_num_threads(n);
      autocast::bf16 mixed;
      results.push_back(ops::matmul(dy_t, x).data());
    }
    set_num_threads(threads);
    CHECK(testing::bit_equal(results[0], results[1]));
    CHECK(testing::bit_equal(results[0], results[2]));
  }
}

TEST_CASE("a weight is rounded once per scope, and a change in place is never served stale") {
  // Inside a scope, Linear's weight (a leaf) is rounded on first use and its copy kept, as
  // PyTorch's autocast keeps a weight's cast. The copy must follow the weight: an in-place write
  // (a version bump) or new storage within the same scope gives the product of the new values.
  Generator gen(13);
  const Tensor x = Tensor(randn({128, 96}, &gen));  // 128 x 96 x 100: over 2^20 multiply-adds
  const Tensor w = Tensor(randn({100, 96}, &gen), true);
  const auto fresh =
      [&](const Tensor& weight) {  // a product of these values, in a scope of its own
        autocast::bf16 mixed;
        return ops::linear(x, Tensor(weight.data())).data();  // a new leaf: nothing kept for it yet
      };
  autocast::bf16 mixed;
  const Array first = ops::linear(x, w, Tensor()).data();
  CHECK(testing::bit_equal(ops::linear(x, w, Tensor()).data(), first));  // served from the copy
  w.mutable_data()(3, 5) += 1.0f;  // in place: the version goes up
  const Array after_write = ops::linear(x, w, Tensor()).data();
  CHECK_FALSE(testing::bit_equal(after_write, first));
  CHECK(testing::bit_equal(after_write, fresh(w)));
  w.mutable_data() = randn({100, 96}, &gen);  // new storage
  CHECK(testing::bit_equal(ops::linear(x, w, Tensor()).data(), fresh(w)));
  // A weight that is no leaf (computed in the step) is rounded at every product, the same bits.
  const Tensor computed = w * 1.0f;
  CHECK(testing::bit_equal(ops::linear(x, computed, Tensor()).data(), fresh(w)));
}

TEST_CASE("inside a scope a Linear keeps its input in bf16, not the float32 tensor, for dW") {
  // As PyTorch's autocast saves the bf16 cast it multiplied: the product rounds x anyway, so the
  // gradient has the same bits, and the tape no longer holds x's float32 values.
  const testing::GemmEngineScope restore;
  set_gemm_engine(GemmEngine::reference);
  Generator gen(21);
  const Array x0 = randn({5, 9}, &gen);
  const Array g = randn({5, 6}, &gen);
  for (const bool in_scope : {false, true}) {
    CAPTURE(in_scope);
    Parameter w(randn({6, 9}, &gen));
    Parameter p(x0);
    std::optional<autocast::bf16> mixed;
    if (in_scope) mixed.emplace();
    Tensor x = ops::add(p, Tensor(Array(xt::zeros<float>({5, 9}))));  // an op's output
    const Tensor loss = ops::sum(ops::linear(x, w, Tensor()) * Tensor(g));
    x = Tensor();
    const autograd::Tape tape = autograd::tape_of(loss);
    const autograd::TapeEntry& linear = tape.entries()[2];  // sum, mul, linear, add
    REQUIRE(linear.op == "linear");
    CHECK(linear.inputs[0].values_kept == !in_scope);
    loss.backward();
    Array gt = Array::from_shape({6, 5});
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 6; ++j) gt(j, i) = g(i, j);
    Array want, bound;
    if (in_scope) {
      rounded_product(gt, x0, want, bound);
      CHECK(testing::bit_equal(w.grad(), want));  // the reference engine: to the bit
    } else {
      Array exact = xt::zeros<float>({6, 9});  // g^T x0 in float32, by hand
      for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = 0; j < 9; ++j)
          for (std::size_t r = 0; r < 5; ++r) exact(i, j) += gt(i, r) * x0(r, j);
      CHECK(testing::all_close(w.grad(), exact, 1e-5, 1e-5));
    }
  }
}

TEST_CASE("inside a scope a Linear's product reads the bf16 copy it keeps, with the same bits") {
  // x is rounded once: the product reads the copy kept for dW rather than rounding x again, and dW
  // reads it as it is. A copy read in the wrong layout, or stale, would change the output, which
  // must have the bits of a product that keeps nothing (no recording). dW stays within the bound
  // of the rounded operands' product. 300 rows make dW's product (40 x 96 x 300 multiply-adds) big
  // enough for oneDNN's kernels on the default engine; the reference engine takes the other path.
  const testing::GemmEngineScope restore;
  Generator gen(24);
  const Array x0 = randn({300, 96}, &gen), g = randn({300, 40}, &gen);
  for (const GemmEngine engine : {restore.saved, GemmEngine::reference}) {
    CAPTURE(int(engine));
    set_gemm_engine(engine);
    Parameter w(randn({40, 96}, &gen));
    autocast::bf16 mixed;
    const Tensor x(x0, true);
    const Tensor y = ops::linear(x, w, Tensor());
    Tensor y_alone;
    {
      autograd::NoGradGuard no_grad;
      y_alone = ops::linear(Tensor(x0), w, Tensor());
    }
    CHECK(testing::bit_equal(y.data(), y_alone.data()));
    y.backward(g);
    Array gt = Array::from_shape({40, 300});
    for (std::size_t i = 0; i < 300; ++i)
      for (std::size_t j = 0; j < 40; ++j) gt(j, i) = g(i, j);
    Array want, bound;
    rounded_product(gt, x0, want, bound);
    CHECK(xt::all(xt::abs(w.grad() - want) <= bound));
  }
}

TEST_CASE("inside a scope lora_linear's dA reads the bf16 copy of its adapter input") {
  // dA = dH^T bf16(xd), dH = s bf16(dy) bf16(B): on the reference engine, each a float32 sum in k
  // order (alpha applied after the sum), to the bit. On the default engine dA's product (8 x 128 x
  // 1024 multiply-adds) runs on oneDNN, and dH's own bf16 rounding may differ from the reference's
  // in the last place: within 2^-7 of the magnitude of dA's terms.
  const testing::GemmEngineScope restore;
  constexpr std::size_t N = 1024, in_f = 128, out_f = 40, r = 8;
  constexpr float s = 2.0f;
  Generator gen(25);
  const Array x0 = randn({N, in_f}, &gen), dy = randn({N, out_f}, &gen);
  const Array b0 = randn({out_f, r}, &gen), a0 = randn({r, in_f}, &gen);
  Array want = xt::zeros<float>({r, in_f}), magnitude = xt::zeros<float>({r, in_f});
  Array dh = Array::from_shape({N, r});
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < r; ++k) {
      float sum = 0.0f;
      for (std::size_t o = 0; o < out_f; ++o)
        sum += round_to_bf16(dy(n, o)) * round_to_bf16(b0(o, k));
      dh(n, k) = s * sum;
    }
  for (std::size_t k = 0; k < r; ++k)
    for (std::size_t i = 0; i < in_f; ++i) {
      float sum = 0.0f;
      for (std::size_t n = 0; n < N; ++n) {
        const float p = round_to_bf16(dh(n, k)) * round_to_bf16(x0(n, i));
        sum += p;
        magnitude(k, i) += std::abs(p);
      }
      want(k, i) = sum;
    }
  for (const GemmEngine engine : {GemmEngine::reference, restore.saved}) {
    CAPTURE(int(engine));
    set_gemm_engine(engine);
    const Tensor weight(randn({out_f, in_f}, &gen)), x(x0);  // frozen base, as LoRA trains it
    Parameter lora_a(a0), lora_b(b0);
    {
      autocast::bf16 mixed;
      ops::lora_linear(x, weight, Tensor(), x, lora_a, lora_b, s).backward(dy);
    }
    if (engine == GemmEngine::reference)
      CHECK(testing::bit_equal(lora_a.grad(), want));
    else
      CHECK(xt::all(xt::abs(lora_a.grad() - want) <= std::ldexp(1.0f, -7) * magnitude + 1e-30f));
  }
}

TEST_CASE("inside a scope, an input written in place after the forward does not change dW") {
  // Backward reads the bf16 copy, made when the forward ran; outside a scope, backward would read
  // x itself, and the write is refused as usual (PyTorch's autocast behaves the same way).
  Generator gen(22);
  const Tensor x(randn({4, 8}, &gen));
  const Array x_then = x.data();
  Parameter w(randn({3, 8}, &gen));
  Parameter w2(w.data());
  {
    autocast::bf16 mixed;
    const Tensor loss = ops::sum(ops::linear(x, w, Tensor()));
    x.mutable_data() += 1.0f;
    loss.backward();
    const Tensor again = ops::sum(ops::linear(Tensor(x_then), w2, Tensor()));
    again.backward();
  }
  CHECK(testing::bit_equal(w.grad(), w2.grad()));
  const Tensor loss = ops::sum(ops::linear(x, w, Tensor()));
  x.mutable_data() += 1.0f;
  CHECK_THROWS_AS(loss.backward(), AutogradError);
}

TEST_CASE(
    "inside a scope swiglu keeps gate and up in bf16, its gradients those of the rounded values") {
  Generator gen(23);
  const Array g0 = randn({3, 7}, &gen), u0 = randn({3, 7}, &gen), dy = randn({3, 7}, &gen);
  Tensor g(g0, true), u(u0, true);
  {
    autocast::bf16 mixed;
    ops::swiglu(g, u).backward(dy);
  }
  Array g16 = g0, u16 = u0;
  for (float& v : g16) v = round_to_bf16(v);
  for (float& v : u16) v = round_to_bf16(v);
  Tensor gr(g16, true), ur(u16, true);
  ops::swiglu(gr, ur).backward(dy);  // outside a scope: float32 throughout
  CHECK(testing::bit_equal(g.grad(), gr.grad()));
  CHECK(testing::bit_equal(u.grad(), ur.grad()));
}
