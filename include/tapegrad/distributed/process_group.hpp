// include/tapegrad/distributed/process_group.hpp
//
// The processes of a data-parallel job, as MPI numbers them: world_size() processes, this one
// being rank() (0 .. world_size() - 1). `mpirun -np 2 ./train` starts two copies of the same
// program; each opens MPI once, at the top of main, and closes it at the end:
//
//     int main(int argc, char** argv) {
//       distributed::Environment mpi(argc, argv);        // MPI_Init_thread ... MPI_Finalize
//       if (distributed::rank() == 0) std::cout << distributed::world_size() << " ranks\n";
//
// Everything in tapegrad::distributed needs that: without it, each call throws DistributedError
// saying so. MPI is opened with MPI_THREAD_SERIALIZED (tapegrad's own calls, from the training
// thread and from the thread that moves gradients in the background, take one lock); a program
// that calls MPI itself from several threads opens MPI itself, with MPI_THREAD_MULTIPLE, first.
//
// When something goes wrong, the job must end, not hang: the other ranks would wait for ever in
// their next collective. So every wait has a timeout (30 minutes by default, as PyTorch's
// process groups), an Environment left by an exception aborts the whole job (MPI_Abort), and a
// rank that mpirun stops because another rank died says so on its way out (SIGTERM handler).
#pragma once

#include <stdexcept>
#include <string>

namespace tapegrad::distributed {

/// MPI is missing or was used wrongly, a collective timed out, or the ranks disagree (their
/// models, their arrays' sizes): the job cannot go on as one.
struct DistributedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Opens MPI for this process and closes it when destroyed (RAII, one per process). If MPI was
/// already open (the program called MPI_Init_thread itself), adopts it and leaves it open.
/// Destroyed while an exception unwinds the stack, it calls MPI_Abort instead of MPI_Finalize, so
/// that the other ranks are stopped instead of waiting for this one.
class Environment {
 public:
  Environment(int& argc, char**& argv);
  Environment();  ///< without the command line
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

/// Whether MPI is open (and not yet closed) in this process.
bool is_initialized();
/// Whether mpirun (or another MPI launcher: Open MPI's, PMI's or PMIx's variables are set) started
/// this process. A program that also runs alone opens MPI only then: MPI_Init without a launcher
/// would start a helper daemon for nothing.
bool launched_by_mpirun();
/// This process's number in the job, 0 .. world_size() - 1.
int rank();
/// How many processes the job has.
int world_size();
/// Returns once every rank has called it.
void barrier();

/// How long any wait of tapegrad::distributed may last before it gives up with DistributedError
/// (another rank has died or is stuck). Default 1800 s, PyTorch's default process-group timeout.
void set_timeout(double seconds);
double timeout();

/// A line the SIGTERM handler prints after its own, e.g. "last checkpoint: run.safetensors, written
/// after step 40": what the user needs to know when mpirun ends the job because a rank died.
/// At most 400 characters are kept; safe to call every step.
void set_failure_note(const std::string& note);

/// Prints "tapegrad.distributed: rank R of N: <why>" to stderr and ends the whole job with
/// MPI_Abort (exit status `code` from mpirun).
[[noreturn]] void abort(const std::string& why, int code = 1);

}  // namespace tapegrad::distributed
