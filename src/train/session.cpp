// src/train/session.cpp: MPI when mpirun started the program, rank 0's console, stop signals
// (train/session.hpp).
#include "tapegrad/train/session.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>

#ifdef TAPEGRAD_TRAIN_MPI
#include "tapegrad/distributed/process_group.hpp"
#endif

namespace tapegrad::train {

struct Session::Impl {
#ifdef TAPEGRAD_TRAIN_MPI
  std::optional<distributed::Environment> mpi;
#endif
};

Session::Session(int& argc, char**& argv) : impl_(std::make_unique<Impl>()) {
#ifdef TAPEGRAD_TRAIN_MPI
  if (distributed::launched_by_mpirun()) {
    impl_->mpi.emplace(argc, argv);
    rank_ = distributed::rank();
    world_ = distributed::world_size();
  }
#else
  (void)argc, (void)argv;
#endif
  if (rank_ != 0) {
    std::cout.flush();
    std::cout.rdbuf(nullptr);
    if (!std::freopen("/dev/null", "w", stdout)) std::fclose(stdout);
  }
  in_place_ = world_ == 1 && ::isatty(::fileno(stdout)) != 0;
}

Session::~Session() = default;

int Session::run(const std::string& program, const std::function<int()>& body) {
#ifdef TAPEGRAD_TRAIN_MPI
  if (world_ > 1) {
    try {
      return body();
    } catch (const std::exception& e) {
      distributed::abort(program + ": " + e.what(), 2);
    }
  }
#else
  (void)program;
#endif
  return body();
}

bool Session::has_mpi() {
#ifdef TAPEGRAD_TRAIN_MPI
  return true;
#else
  return false;
#endif
}

}  // namespace tapegrad::train
