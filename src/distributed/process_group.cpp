// src/distributed/process_group.cpp
//
// Opening and closing MPI, the job's size and this rank, and the three ways a broken job is made to
// end instead of hanging: timed waits, MPI_Abort from an Environment left by an exception, and a
// SIGTERM handler that tells the user why mpirun is stopping this rank (another one failed).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <thread>

#include "mpi.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::distributed {

namespace {
int environments = 0;       // live Environment objects (the first opens MPI, the last closes it)
bool opened_by_us = false;  // MPI_Init_thread was ours, so MPI_Finalize is too
int this_rank = -1, this_size = -1;
MPI_Comm collectives = MPI_COMM_NULL;
std::atomic<double> timeout_seconds{1800.0};

// What the SIGTERM handler writes. It may only call async-signal-safe functions, so the text is
// prepared beforehand: the header at init, the note by set_failure_note into the buffer that is
// not being read (two buffers, the index flipped once the new text is whole).
char sigterm_header[256];
std::size_t sigterm_header_len = 0;
char notes[2][448];
std::size_t note_len[2] = {0, 0};
std::atomic<int> current_note{-1};
std::atomic<bool> aborting{false};  // this rank called abort(): it has said why already

extern "C" void on_sigterm(int sig) {
  if (aborting.load()) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  ssize_t ignored = ::write(STDERR_FILENO, sigterm_header, sigterm_header_len);
  const int k = current_note.load();
  if (k >= 0) {
    ignored = ::write(STDERR_FILENO, "  ", 2);
    ignored = ::write(STDERR_FILENO, notes[k], note_len[k]);
    ignored = ::write(STDERR_FILENO, "\n", 1);
  }
  (void)ignored;
  ::signal(sig, SIG_DFL);  // then die of the signal, as mpirun expects
  ::raise(sig);
}

void install_sigterm_handler() {
  std::snprintf(sigterm_header, sizeof sigterm_header,
                "tapegrad.distributed: rank %d of %d (pid %d) stopped by SIGTERM: mpirun ends "
                "every rank when one fails; its own message says which rank and why.\n",
                this_rank, this_size, static_cast<int>(::getpid()));
  sigterm_header_len = std::strlen(sigterm_header);
  struct sigaction current {};
  ::sigaction(SIGTERM, nullptr, &current);
  if (current.sa_handler != SIG_DFL) return;  // the program has its own: leave it
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
}

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
  }
}

void open_mpi(int* argc, char*** argv) {
  if (environments++ > 0) return;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    --environments;
    fail<DistributedError>(
        "distributed::Environment: MPI was already closed in this process (MPI_Finalize); it "
        "cannot be opened twice: keep one Environment for the whole of main");
  }
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    // SERIALIZED: the training thread and this library's progress thread both call MPI, never at once.
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      --environments;
      fail<DistributedError>(
          "distributed::Environment: MPI_Init_thread failed; is this program started by mpirun?");
    }
    opened_by_us = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    if (opened_by_us) MPI_Finalize();
    opened_by_us = false;
    --environments;
    fail<DistributedError>("distributed::Environment: this MPI provides only ",
                           level_name(provided),
                           "; tapegrad needs MPI_THREAD_SERIALIZED (its gradient transfers run on "
                           "a thread of their own)");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors come back as codes
  MPI_Comm_rank(MPI_COMM_WORLD, &this_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &this_size);
  detail::check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &collectives), "distributed::Environment");
  install_sigterm_handler();
}

void close_mpi() {
  if (environments == 0 || --environments > 0) return;
  {
    std::lock_guard lock(detail::mpi_mutex());
    if (collectives != MPI_COMM_NULL) MPI_Comm_free(&collectives);
    if (opened_by_us) MPI_Finalize();
  }
  opened_by_us = false;
  this_rank = this_size = -1;
}
}  // namespace

// ---- detail -------------------------------------------------------------------------------------

namespace detail {

std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

void require_mpi(const char* where) {
  if (this_rank >= 0) return;
  fail<DistributedError>(
      where,
      ": MPI is not initialised; create a distributed::Environment at the top of main "
      "(distributed::Environment mpi(argc, argv);) and start the program with mpirun");
}

void check_mpi(int rc, const char* where) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail<DistributedError>(where, ": MPI failed: ", std::string(text, static_cast<std::size_t>(len)),
                         " (rank ", this_rank, " of ", this_size, ")");
}

void wait(MPI_Request& request, const char* where) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const double limit = timeout();
  for (long polls = 0;; ++polls) {
    int done = 0;
    {
      std::lock_guard lock(mpi_mutex());
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), where);
    }
    if (done) return;
    // Yield first (a reply from a rank on this machine comes within microseconds), then sleep:
    // a rank waiting long for a slower one must not take the core that one is computing on.
    if (polls < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (waited > limit)
      fail<DistributedError>(
          where, ": rank ", this_rank, " of ", this_size, " waited ", limit,
          " s for the other ranks (distributed::timeout()); one of them has died or is stuck, or "
          "they did not all call the same collectives in the same order");
  }
}

MPI_Comm duplicate_world(const char* where) {
  require_mpi(where);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mpi_mutex());
    check_mpi(MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request), where);
  }
  wait(request, where);
  return comm;
}

MPI_Comm collectives_comm(const char* where) {
  require_mpi(where);
  return collectives;
}

}  // namespace detail

// ---- the public functions -----------------------------------------------------------------------

Environment::Environment(int& argc, char**& argv) { open_mpi(&argc, &argv); }
Environment::Environment() { open_mpi(nullptr, nullptr); }

Environment::~Environment() {
  if (std::uncaught_exceptions() > 0 && this_size > 1)
    abort(
        "an exception is leaving the scope of distributed::Environment: ending the whole job "
        "(MPI_Abort) so that the other ranks do not wait for this one. To see its message here, "
        "catch it inside that scope and call distributed::abort(e.what())");
  close_mpi();
}

bool is_initialized() { return this_rank >= 0; }

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

int rank() {
  detail::require_mpi("distributed::rank");
  return this_rank;
}

int world_size() {
  detail::require_mpi("distributed::world_size");
  return this_size;
}

void barrier() {
  const char* where = "distributed::barrier";
  MPI_Comm comm = detail::collectives_comm(where);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(detail::mpi_mutex());
    detail::check_mpi(MPI_Ibarrier(comm, &request), where);
  }
  detail::wait(request, where);
}

void set_timeout(double seconds) {
  check<ValueError>(seconds > 0,
                    "distributed::set_timeout: expected a positive number of seconds, got ",
                    seconds);
  timeout_seconds = seconds;
}
double timeout() { return timeout_seconds.load(); }

void set_failure_note(const std::string& note) {
  const int next = current_note.load() == 0 ? 1 : 0;
  const std::size_t n = std::min(note.size(), sizeof notes[next] - 1);
  std::memcpy(notes[next], note.data(), n);
  notes[next][n] = '\0';
  note_len[next] = n;
  current_note.store(next);
}

void abort(const std::string& why, int code) {
  aborting = true;
  std::fprintf(stderr, "tapegrad.distributed: rank %d of %d: %s\n", this_rank, this_size,
               why.c_str());
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    // Wait a little for the progress thread to leave MPI; abort anyway if it does not.
    for (int i = 0; i < 100 && !detail::mpi_mutex().try_lock(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  std::_Exit(code);
}

}  // namespace tapegrad::distributed
