// bench/sgemm_peak.cpp: the machine's matrix-multiply limit, OpenBLAS's sgemm on large square
// matrices, at a given thread count (OpenBLAS's own threads). bench/gpt_compare divides each side's
// model FLOPs per second by it (the MFU) in the same run.
//
//     sgemm_peak --threads 1          ->  sgemm_peak threads=1 gflops=... n=2048 core=Zen
//     sgemm_peak --threads 1 --bf16   ->  the same products inside an autocast::bf16 scope
//
// C = A B for n = 512, 1024, 2048 (row-major, float32); each size is timed for at least 0.3 s after
// a warm-up, and the best size's median is the peak. `core` is the kernel set OpenBLAS chose for
// this CPU (OPENBLAS_CORETYPE overrides it), which must be the same on both sides of a comparison.
// With --bf16 the products are tapegrad's matmul inside an autocast::bf16 scope (oneDNN's bf16
// kernels where tapegrad was built with oneDNN, operand rounding included): the peak a --bf16
// run's MFU is read against.
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

extern "C" char* openblas_get_corename(void);

int main(int argc, char** argv) {
  int threads = 1;
  bool bf16 = false, bad = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (flag == "--bf16")
      bf16 = true;
    else
      bad = true;
  }
  if (threads < 1 || bad) {
    std::fprintf(stderr, "usage: sgemm_peak [--threads N] [--bf16]\n");
    return 2;
  }
  openblas_set_num_threads(threads);
  tapegrad::set_num_threads(threads);
  double best = 0.0;
  std::size_t best_n = 0;
  for (const std::size_t n : {std::size_t{512}, std::size_t{1024}, std::size_t{2048}}) {
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (std::size_t i = 0; i < n * n; ++i) a[i] = float(i % 7) * 0.1f, b[i] = float(i % 5) * 0.1f;
    tapegrad::Array xa = tapegrad::Array::from_shape({n, n}), xb = xa;
    std::copy(a.begin(), a.end(), xa.begin());
    std::copy(b.begin(), b.end(), xb.begin());
    const tapegrad::Tensor ta(std::move(xa)), tb(std::move(xb));
    auto run = [&] {
      if (bf16) {
        tapegrad::autograd::NoGradGuard no_grad;
        tapegrad::autocast::bf16 mixed;
        c[0] = tapegrad::ops::matmul(ta, tb).data()(0, 0);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f,
                    a.data(), int(n), b.data(), int(n), 0.0f, c.data(), int(n));
      }
    };
    run();
    std::vector<double> seconds;
    const double start = bench::now_seconds();
    while (seconds.size() < 5 || bench::now_seconds() - start < 0.3) {
      const double t0 = bench::now_seconds();
      run();
      seconds.push_back(bench::now_seconds() - t0);
    }
    const double gflops =
        2.0 * double(n) * double(n) * double(n) / bench::stats(seconds).median * 1e-9;
    if (gflops > best) best = gflops, best_n = n;
  }
  std::printf("sgemm_peak threads=%d gflops=%.2f n=%zu core=%s precision=%s\n", threads, best,
              best_n, openblas_get_corename(), bf16 ? "bf16" : "fp32");
  return 0;
}
