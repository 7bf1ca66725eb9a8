// include/tapegrad/autograd/profiler.hpp
//
// Where the time of a training step goes, per op: turn a Profiler on around a few steps and print
// it. One table, like torch.profiler's key_averages():
//
//     {
//       autograd::Profiler prof;            // this thread's recorded ops are timed from here
//       for (int i = 0; i < 3; ++i) step(); // forward, backward, optimizer
//       std::cout << prof;                  // stops it and prints the table
//     }
//
// One row per op and direction (forward, backward): calls, total time, share of the profiled
// time, and for matrix products GFLOP/s (for other ops GB/s) with the percentage of the machine's
// peak; a product run inside an autocast::bf16 scope has a row of its own, "linear [bf16]",
// whose % peak is of the bf16 product's peak. A last row holds the time spent outside any
// recorded op (the optimizer, data, the engine's own walk), so the shares add up to 100 %.
//
// What is timed: a backward row is the time of the op's backward closures. A forward row is the
// time from the end of the previous event on this thread (the previous recorded op, the start of
// a module's forward, the end of a backward, or the Profiler's start) to the op's recording,
// which is the op's last step: that is the op's forward, plus whatever non-recorded work ran
// just before it (an op on tensors that need no gradient is counted in the next recorded op).
// Only ops that record are seen: profile training steps, not evaluation under NoGradGuard.
// Times are the process's CPU time (all its threads), not wall-clock time: a machine busy with
// other work does not inflate them; an op run on several threads counts each thread's time.
//
// Off, it costs one branch per op and one per entry in backward. docs/engine.md#the-profiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace tapegrad::autograd {

namespace detail {
struct ProfileData;  // src/autograd/profiler.cpp
}  // namespace detail

/// The machine's peak for the table's last column, on one thread: GFLOP/s of float matrix
/// products and GB/s of a streaming loop. 0 means "measure it" (measure_peak()).
struct MachinePeak {
  double gflops = 0;
  double gbytes_per_s = 0;
  double bf16_gflops = 0;  ///< the same product inside an autocast::bf16 scope ([bf16] rows)
};

/// Measures the peak once per process and remembers it: the best of a few 512x512x512 sgemms
/// (the BLAS tapegrad uses, as configured now) and of a few STREAM triads a[i] = b[i] + s * c[i]
/// over 3 x 32 MiB, counted as 12 bytes per element. Takes about a tenth of a second.
MachinePeak measure_peak();
/// The bf16 rows' peak, measured once per process when a table first has one: the same 512^3
/// product inside an autocast::bf16 scope (on oneDNN's bf16 kernels where tapegrad has them).
double measure_bf16_peak();

class Profiler {
 public:
  /// One aggregated row of the table.
  struct Row {
    std::string op;         ///< "matmul", "linear [bf16]" (in an autocast::bf16 scope), "(outside recorded ops)"
    bool backward = false;  ///< the op's backward closures, else its forward
    std::size_t calls = 0;
    double seconds = 0;
    double flops = 0;  ///< floating-point operations, for matrix products (else 0)
    double bytes = 0;  ///< bytes read and written at least once, for other ops but shape ops
  };

  /// Starts timing this thread's recorded ops. `peak`'s zero fields are measured when the table
  /// is first printed. Throws AutogradError if a Profiler is already on on this thread.
  explicit Profiler(MachinePeak peak = {});
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  /// Stops timing (the profiled time ends here); later calls do nothing.
  void stop();
  /// The rows, longest first, ending with the time outside recorded ops. Stops the profiler.
  std::vector<Row> rows();
  /// The profiled CPU time, start to stop (or to now while running), in seconds.
  double total_seconds() const;
  /// The table (stops the profiler; measures the peak if it was not given).
  std::string table();
  /// Whether a Profiler is on on this thread (none is, unless one was made).
  static bool enabled();

 private:
  std::unique_ptr<detail::ProfileData> data_;
};

/// Prints prof.table().
std::ostream& operator<<(std::ostream& os, Profiler& prof);

}  // namespace tapegrad::autograd
