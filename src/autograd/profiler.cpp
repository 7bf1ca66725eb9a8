// src/autograd/profiler.cpp: autograd::Profiler (profiler.hpp). The engine calls three hooks,
// each behind one branch on this thread's active_profile: profile_forward at the end of every
// recording, profile_backward around every backward closure, profile_mark where a stretch that
// belongs to no op's forward ends (a backward) or a module's forward begins.
#include "tapegrad/autograd/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../core/gemm.hpp"
#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/autocast.hpp"
#include "tapegrad/core/threads.hpp"

namespace tapegrad::autograd {

namespace detail {

// The process's CPU time, all threads together (CLOCK_PROCESS_CPUTIME_ID). Unlike wall-clock
// time it leaves out the time the threads waited for a core, so a profile taken on a machine
// shared with other work still says where this program's work goes.
struct Clock {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock, duration>;
  static time_point now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return time_point(duration(std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec));
  }
};

struct ProfileData {
  std::map<std::pair<std::string, bool>, Profiler::Row> rows;  // by (op, backward)
  Clock::time_point start, stop, mark;
  bool running = true;
  MachinePeak peak;
  double inside = 0.0;  // seconds timed as rows since the innermost profile_backward began
};

namespace {
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
double numel(const Shape& s) {
  double n = 1;
  for (std::size_t d : s) n *= static_cast<double>(d);
  return n;
}

// The multiply-adds (x2) of an op's forward, for the ops that are matrix products: matmul and
// linear (2 n k per output element), the attentions' two products (causal: half of them).
double forward_flops(const EntryBase& e) {
  const std::string op = e.op;
  const double out = numel(e.output_shape);
  if ((op == "matmul" || op == "linear") && e.inputs.size() >= 2) {
    const Shape& a = e.inputs[0].shape();
    return a.empty() ? 0 : 2 * out * static_cast<double>(a.back());
  }
  if (op == "causal_self_attention" && e.output_shape.size() >= 2)  // 4 T T C / 2, per batch
    return 2 * out * static_cast<double>(e.output_shape[e.output_shape.size() - 2]);
  if (op == "scaled_dot_product_attention" && e.inputs.size() >= 3) {
    const Shape& k = e.inputs[1].shape();
    const double keys = k.size() >= 2 ? static_cast<double>(k[k.size() - 2]) : 0;
    return 2 * keys * (numel(e.inputs[0].shape()) + out);
  }
  return 0;
}

// Backward: one product per input gradient for matmul and linear, twice the forward for the
// attentions (four products against two).
double backward_flops(const EntryBase& e) {
  const double f = forward_flops(e);
  if (f == 0) return 0;
  const std::string op = e.op;
  if (op != "matmul" && op != "linear") return 2 * f;
  double n = 0;
  for (std::size_t i = 0; i < 2 && i < e.inputs.size(); ++i) n += e.inputs[i].requires_grad();
  return n * f;
}

// Shape ops whose cost is mostly bookkeeping (a reshape's backward moves no data): no rate.
bool is_shape_op(const std::string& op) {
  return op == "reshape" || op == "unsqueeze" || op == "transpose" || op == "permute" ||
         op == "slice";
}

// The bytes an op reads and writes at least once: forward, its inputs and its output; backward,
// the output's gradient, the saved tensors and the gradient of each input that requires grad.
double forward_bytes(const EntryBase& e) {
  double n = numel(e.output_shape);
  for (std::size_t i = 0; i < e.inputs.size(); ++i) n += numel(e.inputs[i].shape());
  return 4 * n;
}
double backward_bytes(const EntryBase& e) {
  double n = numel(e.output_shape);
  for (std::size_t i = 0; i < e.saved.size(); ++i) n += numel(e.saved[i].tensor.shape());
  for (std::size_t i = 0; i < e.inputs.size(); ++i)
    if (e.inputs[i].requires_grad()) n += numel(e.inputs[i].shape());
  return 4 * n;
}

// The row's name: the op's, marked " [bf16]" when its products ran with bfloat16 operands, which
// the ops whose products go through detail::gemm do inside an autocast::bf16 scope (the causal
// attention's are its own float32 loops, core/autocast.hpp).
std::string row_name(const EntryBase& e) {
  const std::string op = e.op;
  const bool gemm_op = op == "matmul" || op == "linear" || op == "scaled_dot_product_attention";
  return gemm_op && autocast::bf16_enabled() ? op + " [bf16]" : op;
}

void add(ProfileData& p, const EntryBase& e, bool backward, double seconds) {
  const std::string name = row_name(e);
  Profiler::Row& r = p.rows[{name, backward}];
  if (r.calls == 0) {
    r.op = name;
    r.backward = backward;
  }
  ++r.calls;
  r.seconds += seconds;
  const double flops = backward ? backward_flops(e) : forward_flops(e);
  r.flops += flops;
  if (flops == 0 && !is_shape_op(e.op)) r.bytes += backward ? backward_bytes(e) : forward_bytes(e);
}
}  // namespace

void profile_forward(const EntryBase& e) {
  ProfileData& p = *active_profile;
  const double seconds = seconds_between(p.mark, Clock::now());
  add(p, e, false, seconds);
  p.inside += seconds;
  p.mark = Clock::now();  // the bookkeeping above is nobody's forward
}

// A closure may itself run ops that are timed (checkpoint's recompute: a forward and a backward
// of its own); their time is theirs, so the closure's row gets what is left.
void profile_backward(EntryBase& e, Array&& doutput) {
  ProfileData& p = *active_profile;
  const double outer = std::exchange(p.inside, 0.0);
  const Clock::time_point t0 = Clock::now();
  e.run(std::move(doutput));
  const double seconds = seconds_between(t0, Clock::now());
  add(p, e, true, seconds - p.inside);  // before consume() clears the inputs
  p.inside = outer + seconds;
}

void profile_mark() { active_profile->mark = Clock::now(); }

}  // namespace detail

// ---- the machine's peak ------------------------------------------------------------------------

namespace {
template <class F>
double best_seconds(int runs, F f) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = detail::Clock::now();
    f();
    best = std::min(best, detail::seconds_between(t0, detail::Clock::now()));
  }
  return best;
}
}  // namespace

MachinePeak measure_peak() {
  static const MachinePeak peak = [] {
    const std::size_t n = 512, m = std::size_t{8} << 20;  // sgemm 512^3; triads of 3 x 32 MiB
    std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
    const double gemm = best_seconds(5, [&] {
      ::tapegrad::detail::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    });
    std::vector<float> x(m, 0.0f), y(m, 1.0f), z(m, 2.0f);
    const double triad = best_seconds(5, [&] {
      float* px = x.data();
      const float *py = y.data(), *pz = z.data();
      for (std::size_t i = 0; i < m; ++i) px[i] = py[i] + 0.5f * pz[i];
    });
    volatile float keep = c[0] + x[m / 2];  // the results are used: neither loop is dropped
    (void)keep;
    return MachinePeak{2.0 * double(n * n * n) / gemm / 1e9, 12.0 * double(m) / triad / 1e9};
  }();
  return peak;
}

double measure_bf16_peak() {
  static const double peak = [] {
    const std::size_t n = 512;
    std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
    autocast::bf16 mixed;
    const double gemm = best_seconds(5, [&] {
      ::tapegrad::detail::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    });
    volatile float keep = c[0];
    (void)keep;
    return 2.0 * double(n * n * n) / gemm / 1e9;
  }();
  return peak;
}

// ---- the Profiler ------------------------------------------------------------------------------

Profiler::Profiler(MachinePeak peak) : data_(std::make_unique<detail::ProfileData>()) {
  check<AutogradError>(detail::active_profile == nullptr,
                       "autograd::Profiler: a Profiler is already on on this thread; stop it (or "
                       "let it go out of scope) before starting another");
  data_->peak = peak;
  data_->start = data_->mark = detail::Clock::now();
  detail::active_profile = data_.get();
}

Profiler::~Profiler() { stop(); }

bool Profiler::enabled() { return detail::active_profile != nullptr; }

void Profiler::stop() {
  if (!data_->running) return;
  data_->stop = detail::Clock::now();
  data_->running = false;
  if (detail::active_profile == data_.get()) detail::active_profile = nullptr;
}

double Profiler::total_seconds() const {
  return detail::seconds_between(data_->start, data_->running ? detail::Clock::now() : data_->stop);
}

std::vector<Profiler::Row> Profiler::rows() {
  stop();
  std::vector<Row> rows;
  double timed = 0;
  for (const auto& [key, row] : data_->rows) {
    rows.push_back(row);
    timed += row.seconds;
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.op < b.op;
  });
  Row outside;
  outside.op = "(outside recorded ops)";
  outside.seconds = std::max(0.0, total_seconds() - timed);
  rows.push_back(outside);
  return rows;
}

std::string Profiler::table() {
  const std::vector<Row> all = rows();
  MachinePeak peak = data_->peak;
  if (peak.gflops <= 0 || peak.gbytes_per_s <= 0) {
    const MachinePeak measured = measure_peak();
    if (peak.gflops <= 0) peak.gflops = measured.gflops;
    if (peak.gbytes_per_s <= 0) peak.gbytes_per_s = measured.gbytes_per_s;
  }
  const auto is_bf16 = [](const Row& r) { return r.op.ends_with(" [bf16]"); };
  const bool any_bf16 = std::any_of(all.begin(), all.end(), is_bf16);
  if (any_bf16 && peak.bf16_gflops <= 0) peak.bf16_gflops = measure_bf16_peak();
  const double total = total_seconds();
  std::ostringstream os;
  char line[256];
  // The peak's sgemm runs on tapegrad's threads as the model's products do (detail::gemm
  // shares a product out over at most 2 of them); the triad is one loop on one thread.
  const int threads = get_num_threads();
  char bf16_peak[48] = "";
  if (any_bf16) std::snprintf(bf16_peak, sizeof bf16_peak, ", %.1f GFLOP/s (bf16)", peak.bf16_gflops);
  std::snprintf(line, sizeof line,
                "profile: %.3f ms of CPU time; peak %.1f GFLOP/s (sgemm)%s, %.1f GB/s (triad); "
                "%d thread%s\n",
                total * 1e3, peak.gflops, bf16_peak, peak.gbytes_per_s, threads,
                threads == 1 ? "" : "s");
  os << line;
  std::snprintf(line, sizeof line, "%-30s %-8s %7s %11s %7s %16s %7s\n", "op", "pass", "calls",
                "total ms", "share", "rate", "% peak");
  os << line;
  for (const Row& r : all) {
    char rate[32] = "-", share_of_peak[16] = "-";
    if (r.seconds > 0 && r.flops > 0) {
      std::snprintf(rate, sizeof rate, "%.1f GFLOP/s", r.flops / r.seconds / 1e9);
      const double of = is_bf16(r) ? peak.bf16_gflops : peak.gflops;
      std::snprintf(share_of_peak, sizeof share_of_peak, "%.0f %%",
                    100 * r.flops / r.seconds / 1e9 / of);
    } else if (r.seconds > 0 && r.bytes > 0) {
      std::snprintf(rate, sizeof rate, "%.1f GB/s", r.bytes / r.seconds / 1e9);
      std::snprintf(share_of_peak, sizeof share_of_peak, "%.0f %%",
                    100 * r.bytes / r.seconds / 1e9 / peak.gbytes_per_s);
    }
    const bool outside = r.calls == 0;
    std::snprintf(line, sizeof line, "%-30s %-8s %7s %11.3f %6.1f%% %16s %7s\n", r.op.c_str(),
                  outside ? "-" : (r.backward ? "backward" : "forward"),
                  outside ? "-" : std::to_string(r.calls).c_str(), r.seconds * 1e3,
                  total > 0 ? 100 * r.seconds / total : 0.0, rate, share_of_peak);
    os << line;
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, Profiler& prof) { return os << prof.table(); }

}  // namespace tapegrad::autograd
