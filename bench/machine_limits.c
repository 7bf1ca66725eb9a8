/* bench/machine_limits.c: what this machine can do at best, measured in the same run as the
 * benchmarks, so that bench/compare can quote tapegrad's figures as a fraction of it:
 *
 *   triad   a[i] = b[i] + s * c[i] over three arrays of 64 Mi floats (256 MiB each, far beyond any
 *           cache), STREAM's convention: 12 bytes counted per element (the write-allocate read of
 *           a[i] is not counted). The bandwidth ceiling of W3 (Adam) and W4 (embedding).
 *   sgemm   OpenBLAS's cblas_sgemm, C = A B, square 1024: 2 N^3 flops. The ceiling of W5.
 *   w5gemm3 the three products of W5's forward and backward (C = A B, dA = G B^T, dB = A^T G).
 *
 * Each at 1 and 2 threads (OpenMP threads for the triad, openblas_set_num_threads for sgemm);
 * medians of 10 runs after a warm-up. One line per figure:
 *     LIMIT triad threads=1 median_GBps=... best_GBps=...
 *     LIMIT sgemm N=1024 threads=1 median_GFLOPs=... best_GFLOPs=...
 *
 * Build (bench/compare does it): gcc -O3 -march=native -fopenmp machine_limits.c -o machine_limits
 *     -I/usr/include/x86_64-linux-gnu/openblas-pthread -lopenblas -lm
 */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int);

enum { REPS = 10 };

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

/* Sorts t[0..n) and returns its median. */
static double median(double* t, int n) {
  qsort(t, (size_t)n, sizeof *t, by_value);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* A separate function, so that each timed call is one whole pass. */
__attribute__((noinline)) static void triad(float* restrict a, const float* restrict b,
                                            const float* restrict c, float s, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

static void measure_triad(int threads) {
  const long n = 1L << 26;
  float* a = aligned_alloc(64, (size_t)n * sizeof(float));
  float* b = aligned_alloc(64, (size_t)n * sizeof(float));
  float* c = aligned_alloc(64, (size_t)n * sizeof(float));
  if (!a || !b || !c) {
    fprintf(stderr, "machine_limits: out of memory for the triad arrays\n");
    exit(1);
  }
  omp_set_num_threads(threads);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) { /* first touch by the threads that will use the pages */
    a[i] = 1.0f;
    b[i] = 2.0f;
    c[i] = 0.5f;
  }
  triad(a, b, c, 3.0f, n); /* warm-up */
  double t[REPS];
  for (int r = 0; r < REPS; ++r) {
    const double start = seconds_now();
    triad(a, b, c, 3.0f, n);
    t[r] = seconds_now() - start;
  }
  const double bytes = 12.0 * (double)n, med = median(t, REPS);
  printf("LIMIT triad threads=%d median_GBps=%.2f best_GBps=%.2f median_ms=%.3f check=%g\n",
         threads, bytes / med * 1e-9, bytes / t[0] * 1e-9, med * 1e3, (double)a[n / 2]);
  free(a);
  free(b);
  free(c);
}

static void measure_sgemm(int threads) {
  const int N = 1024;
  const size_t count = (size_t)N * N;
  float *A = malloc(count * sizeof(float)), *B = malloc(count * sizeof(float)),
        *C = malloc(count * sizeof(float));
  float *G = malloc(count * sizeof(float)), *dA = malloc(count * sizeof(float)),
        *dB = malloc(count * sizeof(float));
  if (!A || !B || !C || !G || !dA || !dB) {
    fprintf(stderr, "machine_limits: out of memory for the matrices\n");
    exit(1);
  }
  unsigned state = 12345u; /* any values in [-0.5, 0.5) will do */
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    A[i] = (float)(state >> 8) * 0x1.0p-24f - 0.5f;
    state = state * 1664525u + 1013904223u;
    B[i] = (float)(state >> 8) * 0x1.0p-24f - 0.5f;
    state = state * 1664525u + 1013904223u;
    G[i] = (float)(state >> 8) * 0x1.0p-24f - 0.5f;
  }
  openblas_set_num_threads(threads);
  double t[REPS], t3[REPS];
  for (int r = -2; r < REPS; ++r) { /* two warm-up calls */
    const double start = seconds_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, A, N, B, N, 0.0f, C, N);
    if (r >= 0) t[r] = seconds_now() - start;
  }
  for (int r = -1; r < REPS; ++r) {
    const double start = seconds_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, A, N, B, N, 0.0f, C, N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0f, G, N, B, N, 0.0f, dA, N);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, N, N, 1.0f, A, N, G, N, 0.0f, dB, N);
    if (r >= 0) t3[r] = seconds_now() - start;
  }
  const double flops = 2.0 * N * (double)N * N, med = median(t, REPS), med3 = median(t3, REPS);
  printf("LIMIT sgemm N=%d threads=%d median_GFLOPs=%.2f best_GFLOPs=%.2f median_ms=%.3f\n", N,
         threads, flops / med * 1e-9, flops / t[0] * 1e-9, med * 1e3);
  printf(
      "LIMIT w5gemm3 N=%d threads=%d median_GFLOPs=%.2f best_GFLOPs=%.2f median_ms=%.3f check=%g\n",
      N, threads, 3 * flops / med3 * 1e-9, 3 * flops / t3[0] * 1e-9, med3 * 1e3,
      (double)(C[7] + dA[3] + dB[5]));
  free(A);
  free(B);
  free(C);
  free(G);
  free(dA);
  free(dB);
}

int main(int argc, char** argv) {
  int max_threads = argc > 1 ? atoi(argv[1]) : 2;
  if (max_threads < 1) max_threads = 1;
  printf("# machine_limits: %d processors, OpenBLAS %s, core %s\n", omp_get_num_procs(),
         openblas_get_config(), openblas_get_corename());
  fflush(stdout);
  for (int threads = 1; threads <= max_threads; ++threads) {
    measure_triad(threads);
    measure_sgemm(threads);
    fflush(stdout);
  }
  return 0;
}
