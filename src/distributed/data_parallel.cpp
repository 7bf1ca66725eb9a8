// src/distributed/data_parallel.cpp
//
// DistributedDataParallel (data_parallel.hpp says what it promises). One training step, seen from
// here:
//
//   backward() runs, newest entry first ...
//     hook(p)            p's gradient is complete: copy it, divided by N, into its bucket's buffer
//     bucket complete?   start its MPI_Iallreduce (buckets start in order: bucket k waits for k-1)
//     ...                the progress thread moves the bytes while backward computes
//   finalize()           (queued on the engine by the first hook) start what is left, wait for
//                        every bucket (the exposed time), write each average back into p's .grad
//
// Each dense bucket's buffer ends with one flag per parameter (1 = this rank had a gradient):
// summed with the gradients, it tells every rank whether ANY rank had one, without a collective
// of its own. A row-sparse bucket exchanges its row counts (a tiny all-gather), then gathers every
// rank's ids and rows (MPI_Iallgatherv), in rank order, so every rank builds the same gradient.
#include "tapegrad/distributed/data_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <mutex>
#include <sstream>

#include "mpi.hpp"
#include "progress.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/distributed/collectives.hpp"
#include "tapegrad/distributed/process_group.hpp"
#include "tapegrad/nn/embedding.hpp"

namespace tapegrad::distributed {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A request's completion, as the progress thread reports it.
struct Completion {
  std::atomic<bool> done{false};
};

// One parameter in its bucket.
struct Slot {
  Parameter param;
  std::string name;
  std::size_t bucket = 0;
  std::size_t offset = 0;  // in the bucket's buffer (dense buckets)
  std::size_t position =
      0;  // among the bucket's slots: its flag is buffer[bucket.numel + position]
  std::size_t numel = 0;
  bool ready = false;  // its gradient is in the bucket, this round
  std::size_t hook = 0;
};

struct Bucket {
  std::vector<std::size_t> slots;
  std::size_t numel = 0;  // gradient elements, without the flags
  bool sparse = false;
  std::size_t pending = 0;  // slots not ready yet, this round
  bool launched = false;
  std::vector<float> buffer;            // dense: the gradients, then one flag per slot
  std::vector<Completion> completions;  // one per request this round
  std::size_t requests = 0;
  std::size_t bytes = 0;  // reduced this round
  // Row-sparse buckets (one parameter): this rank's part, then everyone's.
  enum class SparseMode { gather, dense_fallback, none } mode = SparseMode::gather;
  xt::xarray<std::int64_t> local_ids;
  std::vector<float> local_values;
  xt::xarray<std::int64_t> ids;
  Array values;
};

// A rank's description of its module, one line per tensor: "<kind> <name> <shape> <flags>".
struct TensorLine {
  std::string kind, name, rest;
};

std::string describe_module(const nn::Module& module,
                            const std::vector<const TensorImpl*>& sparse) {
  std::ostringstream os;
  for (const auto& [name, p] : module.named_parameters()) {
    const bool is_sparse = std::find(sparse.begin(), sparse.end(), p.impl()) != sparse.end();
    os << "parameter\t" << name << '\t' << str(p.shape())
       << (p.requires_grad() ? "" : ", requires_grad=False") << (is_sparse ? ", sparse=True" : "")
       << '\n';
  }
  for (const auto& [name, b] : module.named_buffers())
    os << "buffer\t" << name << '\t' << str(b.shape()) << '\n';
  return os.str();
}

std::vector<TensorLine> parse(const std::string& text) {
  std::vector<TensorLine> lines;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    const std::size_t a = line.find('\t'), b = line.find('\t', a + 1);
    lines.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return lines;
}

// What differs between rank 0's module and rank r's, in words; "" when nothing does.
std::string differences(const std::vector<TensorLine>& first, const std::vector<TensorLine>& other,
                        int r) {
  std::ostringstream os;
  auto find = [](const std::vector<TensorLine>& v, const TensorLine& t) {
    return std::find_if(v.begin(), v.end(),
                        [&](const TensorLine& u) { return u.kind == t.kind && u.name == t.name; });
  };
  std::size_t shown = 0;
  auto say = [&](const std::string& s) {
    if (shown++ < 4) os << (shown > 1 ? "; " : "") << s;
  };
  for (const TensorLine& t : other)
    if (find(first, t) == first.end())
      say("rank " + std::to_string(r) + " has a " + t.kind + " '" + t.name + "' " + t.rest +
          " that rank 0 does not have");
  for (const TensorLine& t : first) {
    const auto it = find(other, t);
    if (it == other.end())
      say("rank 0 has a " + t.kind + " '" + t.name + "' " + t.rest + " that rank " +
          std::to_string(r) + " does not have");
    else if (it->rest != t.rest)
      say(t.kind + " '" + t.name + "' is " + t.rest + " on rank 0 but " + it->rest + " on rank " +
          std::to_string(r));
  }
  if (shown == 0 && first.size() == other.size())
    for (std::size_t i = 0; i < first.size(); ++i)
      if (first[i].name != other[i].name) {
        say("rank " + std::to_string(r) +
            " registers the same tensors in another order (position " + std::to_string(i) + ": '" +
            first[i].name + "' on rank 0, '" + other[i].name + "' on rank " + std::to_string(r) +
            ")");
        break;
      }
  if (shown > 4) os << "; and " << shown - 4 << " more";
  return os.str();
}

// Every rank's text, in rank order (a collective on comm).
std::vector<std::string> gather_texts(const std::string& mine, MPI_Comm comm, int size,
                                      const char* where) {
  const auto length = static_cast<std::int64_t>(mine.size());
  const std::vector<std::int64_t> lengths = detail::all_gather(&length, 1, comm, where);
  std::vector<int> counts(static_cast<std::size_t>(size)),
      displacements(static_cast<std::size_t>(size));
  std::int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    counts[static_cast<std::size_t>(r)] = static_cast<int>(lengths[static_cast<std::size_t>(r)]);
    displacements[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<std::size_t>(r)];
  }
  check<DistributedError>(total < INT_MAX, where,
                          ": the modules' descriptions are too long to compare");
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(detail::mpi_mutex());
    detail::check_mpi(
        MPI_Iallgatherv(mine.data(), static_cast<int>(length), MPI_CHAR, all.data(), counts.data(),
                        displacements.data(), MPI_CHAR, comm, &request),
        where);
  }
  detail::wait(request, where);
  std::vector<std::string> texts;
  for (int r = 0; r < size; ++r)
    texts.push_back(all.substr(static_cast<std::size_t>(displacements[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
  return texts;
}

// The parameters that get a row-sparse gradient: the weights of Embeddings built with sparse.
std::vector<const TensorImpl*> sparse_parameters(nn::Module& module) {
  std::vector<const TensorImpl*> sparse;
  for (const auto& [name, m] : module.named_modules())
    if (const auto* e = dynamic_cast<const nn::Embedding*>(m);
        e != nullptr && e->options().sparse())
      sparse.push_back(e->weight.impl());
  return sparse;
}

// The modules a DistributedDataParallel wraps now: a second one would register a second set of
// hooks and average every gradient twice.
std::mutex wrapped_mutex;
std::vector<const nn::Module*> wrapped;

void broadcast_in_place(float* data, std::size_t n, MPI_Comm comm, const char* where) {
  constexpr std::size_t kPiece = std::size_t(1) << 30;
  for (std::size_t offset = 0; offset < n; offset += kPiece) {
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(detail::mpi_mutex());
      detail::check_mpi(MPI_Ibcast(data + offset, static_cast<int>(std::min(kPiece, n - offset)),
                                   MPI_FLOAT, 0, comm, &request),
                        where);
    }
    detail::wait(request, where);
  }
}
}  // namespace

// ---- the state behind the object --------------------------------------------------------------

struct DistributedDataParallel::State {
  std::string where;  // "DistributedDataParallel(ToyModel)"
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  float inv_size = 1.0f;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::vector<BucketInfo> info;
  std::unique_ptr<detail::Progress> progress;
  bool check_in_sync = false;
  nn::Module* module = nullptr;

  bool no_sync = false;
  bool round_active = false;
  std::size_t next_bucket = 0;
  std::string broken;  // why an earlier backward failed while synchronising
  Clock::time_point first_launch;
  bool launched_any = false;
  std::size_t started_in_backward = 0;
  SyncStats last, total;

  ~State() {
    // A backward that threw may have left buckets in flight: MPI still writes into their buffers
    // and uses the communicator until they complete, so wait for them (the other ranks started
    // the same ones). If they never complete (a rank that never joined), leak the buffers and the
    // communicator rather than let MPI write into freed memory.
    const bool drained = progress == nullptr || progress->drain(std::min(timeout(), 60.0));
    progress.reset();
    if (!drained) {
      new std::vector<Bucket>(std::move(buckets));  // deliberately never freed
      return;
    }
    if (comm != MPI_COMM_NULL && is_initialized()) {
      std::lock_guard lock(detail::mpi_mutex());
      MPI_Comm_free(&comm);
    }
  }

  void on_ready(std::size_t i);
  void copy_in(Slot& slot);
  void launch_ready(bool in_backward);
  void launch(Bucket& b);
  void launch_allreduce(Bucket& b);
  void launch_sparse(Bucket& b);
  void launch_sparse_dense(Bucket& b);
  void launch_sparse_gather(Bucket& b, std::int64_t mine, const std::vector<std::int64_t>& counts);
  void finalize();
  void reset_round();

  // construction, in its steps
  void check_same_tensors(const std::vector<const TensorImpl*>& sparse);
  void broadcast_states();
  void make_buckets(const DistributedDataParallelOptions& options,
                    const std::vector<const TensorImpl*>& sparse);
  void close_bucket(std::vector<std::size_t>& open, bool is_sparse);
  void install_hooks();
};

// Marks the state broken if the end-of-backward callback it belongs to is dropped without running.
struct FinalizeGuard {
  explicit FinalizeGuard(DistributedDataParallel::State& s) : state(s) {}
  ~FinalizeGuard();
  DistributedDataParallel::State& state;
  bool ran = false;
};

FinalizeGuard::~FinalizeGuard() {
  if (!ran && state.broken.empty())
    state.broken = "a backward() threw after some of its gradients had started to be averaged";
}

void DistributedDataParallel::State::copy_in(Slot& slot) {
  Bucket& b = buckets[slot.bucket];
  const Parameter& p = slot.param;
  if (b.sparse) return;  // launch_sparse sends the gradient as it is
  float* out = b.buffer.data() + slot.offset;
  const std::size_t flag = b.numel + slot.position;
  if (!p.has_grad()) {
    std::fill(out, out + slot.numel, 0.0f);
    b.buffer[flag] = 0.0f;
    return;
  }
  // Divided while copied, as PyTorch does (grad * (1 / N)): N = 2 halves exactly, and the sum of
  // the halves is the average.
  const Array dense = p.grad_is_sparse() ? p.grad_dense() : Array();
  const float* in = p.grad_is_sparse() ? dense.data() : p.grad().data();
  for (std::size_t k = 0; k < slot.numel; ++k) out[k] = in[k] * inv_size;
  b.buffer[flag] = 1.0f;
}

void DistributedDataParallel::State::on_ready(std::size_t i) {
  if (!broken.empty())
    fail<DistributedError>(
        where, ": an earlier backward failed while its gradients were being synchronised (", broken,
        "); the ranks are no longer in step: end the job");
  if (no_sync) return;
  try {
    if (!round_active) {
      // The first gradient of this backward: have the engine call finalize() at its end. If the
      // backward throws first, the engine drops the callback unrun, and the buckets already
      // started can never be matched up again: the guard, destroyed with it, says so.
      round_active = true;
      auto guard = std::make_shared<FinalizeGuard>(*this);
      autograd::queue_callback([this, guard] {
        guard->ran = true;
        try {
          finalize();
        } catch (const std::exception& e) {
          broken = e.what();
          throw;
        }
      });
    }
    Slot& slot = slots[i];
    if (slot.ready) return;
    copy_in(slot);
    slot.ready = true;
    if (--buckets[slot.bucket].pending == 0) launch_ready(/*in_backward=*/true);
  } catch (const std::exception& e) {
    broken = e.what();
    throw;
  }
}

void DistributedDataParallel::State::launch_ready(bool in_backward) {
  // In order, as PyTorch: every rank starts the same collectives in the same order.
  while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
    launch(buckets[next_bucket++]);
    if (in_backward) ++started_in_backward;
  }
}

void DistributedDataParallel::State::launch(Bucket& b) {
  if (!launched_any) {
    launched_any = true;
    first_launch = Clock::now();
  }
  b.launched = true;
  if (b.sparse) return launch_sparse(b);
  b.completions[0].done = false;
  launch_allreduce(b);
}

// One all-reduce (a sum) of b's buffer in place, started now; the progress thread sees it finish.
void DistributedDataParallel::State::launch_allreduce(Bucket& b) {
  b.requests = 1;
  b.bytes = b.buffer.size() * sizeof(float);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(detail::mpi_mutex());
    detail::check_mpi(
        MPI_Iallreduce(MPI_IN_PLACE, b.buffer.data(), static_cast<int>(b.buffer.size()), MPI_FLOAT,
                       MPI_SUM, comm, &request),
        where.c_str());
  }
  progress->add(request, &b.completions[0].done);
}

void DistributedDataParallel::State::launch_sparse(Bucket& b) {
  const Parameter& p = slots[b.slots.front()].param;
  // What this rank has: -2 no gradient, -1 a dense one, n >= 0 a row-sparse one of n rows.
  std::int64_t mine = -2;
  if (p.has_grad())
    mine = p.grad_is_sparse() ? static_cast<std::int64_t>(p.sparse_grad().nnz_rows()) : -1;
  // a few bytes, waited for at once: the rows' counts decide the sizes of what follows
  const std::vector<std::int64_t> counts = detail::all_gather(&mine, 1, comm, where.c_str());
  const bool any_dense = std::find(counts.begin(), counts.end(), -1) != counts.end();
  const bool any_grad =
      std::any_of(counts.begin(), counts.end(), [](std::int64_t c) { return c != -2; });
  for (Completion& c : b.completions) c.done = false;
  if (!any_grad) {  // no rank has a gradient: nothing to send
    b.mode = Bucket::SparseMode::none;
    b.requests = 0;
    return;
  }
  if (any_dense) return launch_sparse_dense(b);
  launch_sparse_gather(b, mine, counts);
}

// A rank turned this gradient dense (a dense gradient added to it): all-reduce it densely.
void DistributedDataParallel::State::launch_sparse_dense(Bucket& b) {
  const Slot& slot = slots[b.slots.front()];
  const Parameter& p = slot.param;
  b.mode = Bucket::SparseMode::dense_fallback;
  b.buffer.assign(slot.numel + 1, 0.0f);
  if (p.has_grad()) {
    const Array dense = p.grad_dense();
    for (std::size_t k = 0; k < slot.numel; ++k) b.buffer[k] = dense.data()[k] * inv_size;
    b.buffer[slot.numel] = 1.0f;
  }
  launch_allreduce(b);
}

// Every rank's ids, then every rank's rows (divided by N), in rank order. `mine` is this rank's
// row count (-2 none, -1 dense), `counts` every rank's.
void DistributedDataParallel::State::launch_sparse_gather(Bucket& b, std::int64_t mine,
                                                          const std::vector<std::int64_t>& counts) {
  const Slot& slot = slots[b.slots.front()];
  const Parameter& p = slot.param;
  const std::size_t dim = p.shape()[1];
  b.mode = Bucket::SparseMode::gather;
  const std::size_t n = mine > 0 ? static_cast<std::size_t>(mine) : 0;
  b.local_ids = xt::xarray<std::int64_t>::from_shape({n});
  b.local_values.resize(n * dim);
  if (n > 0) {
    const RowSparseGrad& g = p.sparse_grad();
    std::copy_n(g.indices.data(), n, b.local_ids.data());
    for (std::size_t k = 0; k < n * dim; ++k) b.local_values[k] = g.values.data()[k] * inv_size;
  }
  std::vector<int> id_counts(static_cast<std::size_t>(size)),
      id_displs(static_cast<std::size_t>(size));
  std::vector<int> value_counts(static_cast<std::size_t>(size)),
      value_displs(static_cast<std::size_t>(size));
  std::int64_t rows = 0;
  for (int r = 0; r < size; ++r) {
    const std::int64_t c = std::max<std::int64_t>(counts[static_cast<std::size_t>(r)], 0);
    check<DistributedError>((rows + c) * static_cast<std::int64_t>(dim) < INT_MAX, where,
                            ": the row-sparse gradient of '", slot.name,
                            "' has too many rows to gather at once");
    id_counts[static_cast<std::size_t>(r)] = static_cast<int>(c);
    id_displs[static_cast<std::size_t>(r)] = static_cast<int>(rows);
    value_counts[static_cast<std::size_t>(r)] =
        static_cast<int>(c * static_cast<std::int64_t>(dim));
    value_displs[static_cast<std::size_t>(r)] =
        static_cast<int>(rows * static_cast<std::int64_t>(dim));
    rows += c;
  }
  b.ids = xt::xarray<std::int64_t>::from_shape({static_cast<std::size_t>(rows)});
  b.values = Array::from_shape({static_cast<std::size_t>(rows), dim});
  b.requests = 2;
  b.bytes = static_cast<std::size_t>(rows) * (sizeof(std::int64_t) + dim * sizeof(float));
  MPI_Request ids_request = MPI_REQUEST_NULL, values_request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(detail::mpi_mutex());
    detail::check_mpi(
        MPI_Iallgatherv(b.local_ids.data(), static_cast<int>(n), MPI_INT64_T, b.ids.data(),
                        id_counts.data(), id_displs.data(), MPI_INT64_T, comm, &ids_request),
        where.c_str());
    detail::check_mpi(MPI_Iallgatherv(b.local_values.data(), static_cast<int>(n * dim), MPI_FLOAT,
                                      b.values.data(), value_counts.data(), value_displs.data(),
                                      MPI_FLOAT, comm, &values_request),
                      where.c_str());
  }
  progress->add(ids_request, &b.completions[0].done);
  progress->add(values_request, &b.completions[1].done);
}

void DistributedDataParallel::State::finalize() {
  const Clock::time_point start = Clock::now();
  // Gradients this rank did not produce (a parameter its forward did not use) count as zero:
  // their buckets start now, still in order, so that every rank starts the same collectives.
  for (std::size_t k = next_bucket; k < buckets.size(); ++k)
    for (std::size_t i : buckets[k].slots)
      if (!slots[i].ready) {
        copy_in(slots[i]);
        slots[i].ready = true;
        --buckets[k].pending;
      }
  launch_ready(/*in_backward=*/false);
  std::size_t bytes = 0;
  for (Bucket& b : buckets)
    for (std::size_t r = 0; r < b.requests; ++r)
      progress->wait(b.completions[r].done, where.c_str());
  const Clock::time_point done = Clock::now();

  // Write the averages back.
  for (Bucket& b : buckets) {
    bytes += b.bytes;
    if (b.sparse) {
      const Parameter& p = slots[b.slots.front()].param;
      if (b.mode == Bucket::SparseMode::none) continue;
      if (b.mode == Bucket::SparseMode::dense_fallback) {
        Array g = Array::from_shape(p.shape());
        std::copy_n(b.buffer.data(), g.size(), g.data());
        p.set_grad(std::move(g));
        continue;
      }
      p.zero_grad(/*set_to_none=*/true);
      p.accumulate_grad(RowSparseGrad{std::move(b.ids), std::move(b.values), p.shape()},
                        "DistributedDataParallel");
      continue;
    }
    for (std::size_t j = 0; j < b.slots.size(); ++j) {
      const Slot& slot = slots[b.slots[j]];
      if (b.buffer[b.numel + j] == 0.0f) {  // no rank had a gradient: keep none, as PyTorch
        slot.param.zero_grad(/*set_to_none=*/true);
        continue;
      }
      Array g = Array::from_shape(slot.param.shape());
      std::copy_n(b.buffer.data() + slot.offset, slot.numel, g.data());
      slot.param.set_grad(std::move(g));
    }
  }
  last.steps = 1;
  last.buckets = buckets.size();
  last.buckets_started_in_backward = started_in_backward;
  last.bytes = bytes;
  last.exposed_seconds = seconds_between(start, done);
  last.communication_seconds = launched_any ? seconds_between(first_launch, done) : 0.0;
  total.steps += 1;
  total.buckets += last.buckets;
  total.buckets_started_in_backward += last.buckets_started_in_backward;
  total.bytes += last.bytes;
  total.exposed_seconds += last.exposed_seconds;
  total.communication_seconds += last.communication_seconds;
  reset_round();
  if (check_in_sync) expect_in_sync(*module, where + " (check_in_sync)");
}

void DistributedDataParallel::State::reset_round() {
  for (Slot& s : slots) s.ready = false;
  for (Bucket& b : buckets) {
    b.pending = b.slots.size();
    b.launched = false;
    b.requests = 0;
    b.bytes = 0;
  }
  next_bucket = 0;
  round_active = false;
  launched_any = false;
  started_in_backward = 0;
}

// ---- construction --------------------------------------------------------------------------------

DistributedDataParallel::DistributedDataParallel(nn::Module& module,
                                                 DistributedDataParallelOptions options)
    : module_(module), options_(options), state_(std::make_unique<State>()) {
  State& s = *state_;
  s.where = "DistributedDataParallel(" + module.type_name() + ")";
  const char* where = s.where.c_str();
  detail::require_mpi(where);
  check<ValueError>(options.bucket_cap_mb() > 0 && options.first_bucket_cap_mb() > 0, where,
                    ": expected bucket sizes > 0 MiB, got bucket_cap_mb ", options.bucket_cap_mb(),
                    " and first_bucket_cap_mb ", options.first_bucket_cap_mb());
  {
    std::lock_guard lock(wrapped_mutex);
    check<DistributedError>(std::find(wrapped.begin(), wrapped.end(), &module) == wrapped.end(),
                            where,
                            ": this module is already wrapped by another DistributedDataParallel; "
                            "wrap it once (two would each average every gradient)");
  }
  s.module = &module;
  s.check_in_sync = options.check_in_sync();
  s.comm = detail::duplicate_world(where);
  s.rank = rank();
  s.size = world_size();
  s.inv_size = static_cast<float>(1.0 / s.size);

  const std::vector<const TensorImpl*> sparse = sparse_parameters(module);
  s.check_same_tensors(sparse);
  s.broadcast_states();
  s.make_buckets(options, sparse);
  s.install_hooks();
  std::lock_guard lock(wrapped_mutex);
  wrapped.push_back(&module);
}

// 1. Every rank must hold the same tensors: compare each rank's description with rank 0's.
void DistributedDataParallel::State::check_same_tensors(
    const std::vector<const TensorImpl*>& sparse) {
  const std::vector<std::string> texts =
      gather_texts(describe_module(*module, sparse), comm, size, where.c_str());
  const std::vector<TensorLine> first = parse(texts[0]);
  std::string problems;
  for (int r = 1; r < size; ++r) {
    const std::string d = differences(first, parse(texts[static_cast<std::size_t>(r)]), r);
    if (!d.empty()) problems += (problems.empty() ? "" : "; ") + d;
  }
  if (!problems.empty())
    fail<DistributedError>(where,
                           ": expected the same parameters and buffers on every rank (every rank "
                           "must build the same model), got: ",
                           problems);
}

// 2. Every rank starts from rank 0's values (PyTorch's _sync_module_states).
void DistributedDataParallel::State::broadcast_states() {
  for (const Parameter& p : module->parameters())
    broadcast_in_place(p.mutable_data().data(), p.numel(), comm, where.c_str());
  for (const Buffer& b : module->buffers())
    broadcast_in_place(b.mutable_data().data(), b.numel(), comm, where.c_str());
}

// 3. Buckets, in the reverse order of named_parameters(): roughly the order in which backward
// produces the gradients. A bucket is closed once it reaches its cap (so it may pass it by one
// parameter, as PyTorch's); a row-sparse parameter is a bucket of its own.
void DistributedDataParallel::State::make_buckets(const DistributedDataParallelOptions& options,
                                                  const std::vector<const TensorImpl*>& sparse) {
  const std::size_t first_cap =
      static_cast<std::size_t>(options.first_bucket_cap_mb() * 1024 * 1024);
  const std::size_t cap = static_cast<std::size_t>(options.bucket_cap_mb() * 1024 * 1024);
  const auto named = module->named_parameters();
  std::vector<std::size_t> open;  // the slots of the bucket being filled
  std::size_t open_bytes = 0;
  for (auto it = named.rbegin(); it != named.rend(); ++it) {
    const auto& [name, p] = *it;
    if (!p.requires_grad()) continue;  // frozen: never has a gradient to average
    Slot slot;
    slot.param = p;
    slot.name = name;
    slot.numel = p.numel();
    slots.push_back(std::move(slot));
    const std::size_t i = slots.size() - 1;
    if (std::find(sparse.begin(), sparse.end(), p.impl()) != sparse.end()) {
      if (!open.empty()) close_bucket(open, false);
      open.push_back(i);
      close_bucket(open, true);
      open_bytes = 0;
      continue;
    }
    open.push_back(i);
    open_bytes += p.numel() * sizeof(float);
    if (open_bytes >= (buckets.empty() ? first_cap : cap)) {
      close_bucket(open, false);
      open_bytes = 0;
    }
  }
  if (!open.empty()) close_bucket(open, false);
}

// Makes a bucket of the slots in `open` and empties it.
void DistributedDataParallel::State::close_bucket(std::vector<std::size_t>& open, bool is_sparse) {
  Bucket b;
  b.sparse = is_sparse;
  b.slots = open;
  BucketInfo bucket_info;
  bucket_info.sparse = is_sparse;
  for (std::size_t j = 0; j < open.size(); ++j) {
    Slot& slot = slots[open[j]];
    slot.bucket = buckets.size();
    slot.position = j;
    slot.offset = b.numel;
    b.numel += slot.numel;
    bucket_info.params.push_back(slot.name);
  }
  bucket_info.numel = b.numel;
  if (!is_sparse) {
    check<DistributedError>(b.numel + open.size() < static_cast<std::size_t>(INT_MAX), where,
                            ": a bucket of ", b.numel,
                            " elements is more than MPI can reduce at once; lower bucket_cap_mb");
    b.buffer.assign(b.numel + open.size(), 0.0f);
  }
  b.completions = std::vector<Completion>(is_sparse ? 2 : 1);
  b.pending = open.size();
  buckets.push_back(std::move(b));
  info.push_back(std::move(bucket_info));
  open.clear();
}

// 4. Each parameter's post-accumulate hook tells the state its gradient is ready.
void DistributedDataParallel::State::install_hooks() {
  progress = std::make_unique<detail::Progress>();
  for (std::size_t i = 0; i < slots.size(); ++i)
    slots[i].hook = slots[i].param.register_post_accumulate_grad_hook(
        [this, i](const Tensor&) { on_ready(i); });
}

DistributedDataParallel::~DistributedDataParallel() {
  for (const Slot& slot : state_->slots) slot.param.remove_hook(slot.hook);
  std::lock_guard lock(wrapped_mutex);
  wrapped.erase(std::find(wrapped.begin(), wrapped.end(), &module_));
}

const std::vector<BucketInfo>& DistributedDataParallel::buckets() const { return state_->info; }
const SyncStats& DistributedDataParallel::last_step() const { return state_->last; }
const SyncStats& DistributedDataParallel::total() const { return state_->total; }

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.state_->no_sync) {
  ddp_.state_->no_sync = true;
}
DistributedDataParallel::NoSync::~NoSync() { ddp_.state_->no_sync = previous_; }

// ---- fingerprints ----------------------------------------------------------------------------------

std::uint64_t fingerprint(const nn::Module& module) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the tensors' fingerprints
  auto mix = [&h](std::uint64_t v) {
    for (int k = 0; k < 8; ++k) {
      h ^= (v >> (8 * k)) & 0xffu;
      h *= 1099511628211ULL;
    }
  };
  for (const auto& [name, p] : module.named_parameters()) mix(tapegrad::fingerprint(p.data()));
  for (const auto& [name, b] : module.named_buffers()) mix(tapegrad::fingerprint(b.data()));
  return h;
}

void expect_in_sync(const nn::Module& module, const std::string& where) {
  std::vector<std::string> names;
  std::vector<std::uint64_t> mine;
  for (const auto& [name, p] : module.named_parameters()) {
    names.push_back("parameter '" + name + "'");
    mine.push_back(tapegrad::fingerprint(p.data()));
  }
  for (const auto& [name, b] : module.named_buffers()) {
    names.push_back("buffer '" + name + "'");
    mine.push_back(tapegrad::fingerprint(b.data()));
  }
  // First the counts must agree, then each fingerprint is compared with rank 0's.
  const std::vector<std::uint64_t> counts = all_gather(mine.size());
  for (std::size_t r = 1; r < counts.size(); ++r)
    if (counts[r] != counts[0])
      fail<InvariantError>(where, ": expected the same parameters and buffers on every rank, got ",
                           counts[0], " on rank 0 and ", counts[r], " on rank ", r);
  const char* what = "expect_in_sync";
  MPI_Comm comm = detail::collectives_comm(what);
  const std::vector<std::uint64_t> all = detail::all_gather(mine.data(), mine.size(), comm, what);
  std::size_t first = mine.size();  // the first tensor that differs anywhere
  std::vector<std::size_t> ranks;   // the ranks that differ from rank 0
  for (std::size_t r = 1; r < counts.size(); ++r)
    for (std::size_t t = 0; t < mine.size(); ++t)
      if (all[r * mine.size() + t] != all[t]) {
        first = std::min(first, t);
        if (ranks.empty() || ranks.back() != r) ranks.push_back(r);
      }
  if (ranks.empty()) return;
  std::ostringstream os;
  for (std::size_t k = 0; k < ranks.size(); ++k) os << (k ? ", " : "") << ranks[k];
  fail<InvariantError>(where, ": expected every rank to hold the same bits, got ", names[first],
                       " (and perhaps others) different from rank 0's on rank ", os.str(),
                       "; the ranks have diverged (did a rank step its optimizer on gradients that "
                       "were not averaged, or change the weights outside the training step?)");
}

}  // namespace tapegrad::distributed
