// include/tapegrad/train/session.hpp
//
// What a training program sets up once, first thing in main, and keeps until it returns:
//
//     int main(int argc, char** argv) {
//       train::Session session(argc, argv);   // MPI under mpirun, rank 0's console
//       return session.run("train", [&] {
//         ...
//         train::Run run = trainer.fit(task, batches, validation);
//         return run.stopped_by ? 128 + run.stopped_by : 0;
//       });
//     }
//
//   * MPI, when mpirun started the program (distributed::Environment), and nothing when it runs
//     alone: the same program trains on one process or on several.
//   * The console: rank 0 speaks for the job. The other ranks' standard output goes to
//     /dev/null (their warnings and errors, on standard error, still show).
//
// Ctrl-C is the Trainer's: from its first step on, the first SIGINT or SIGTERM saves and stops
// after the current step (stop_signals.hpp); before that there is nothing to save, and a signal
// ends the program at once, as usual.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace tapegrad::train {

class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// This process's rank and the number of ranks (0 and 1 without mpirun).
  int rank() const { return rank_; }
  int world() const { return world_; }
  /// Whether progress lines are rewritten in place (\r): on a terminal, with one rank.
  bool in_place() const { return in_place_; }
  /// Whether this build of tapegrad can train on several processes (it found MPI).
  static bool has_mpi();
  /// Runs the program's body. On several ranks an error on one must end them all and say why:
  /// an exception is printed as "PROGRAM: <what>" and the whole job ends (MPI_Abort, exit 2).
  /// On one process the exception goes on to the caller (examples' checked_main prints it).
  int run(const std::string& program, const std::function<int()>& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, world_ = 1;
  bool in_place_ = false;
};

}  // namespace tapegrad::train
