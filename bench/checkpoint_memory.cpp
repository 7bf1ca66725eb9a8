// bench/checkpoint_memory.cpp: how much memory a checkpoint save or load takes beyond what the
// model (and optimizer) already hold. A program, not a test: it prints figures.
//
//     build/bench/checkpoint_memory [--mb 200] [--dir /tmp]
//
// It builds a model whose state is about --mb megabytes (one large embedding table plus a stack
// of Linear layers, so that both one big tensor and many small ones are in the file), then runs
// each operation in a child process of its own (fork: the child starts with the model and
// nothing else, so memory an earlier operation freed but kept cannot hide a later one's peak).
// The child returns free heap memory to the system (malloc_trim), resets the kernel's peak-RSS
// mark (writing 5 to /proc/self/clear_refs), reads the resident size, runs the operation, and
// reads the peak (VmHWM in /proc/self/status). The figure is peak minus resident before, in MB
// and as a multiple of the file's size:
//
//     io::save   file 200.0 MB  extra peak 201.3 MB  1.01x
//
// Operations: io::save / io::load of the model; save_optimizer / load_optimizer of Adam's state
// and TrainingCheckpoint save / load of model and Adam (after one step, so the moments exist
// before the load as in a resumed run), the model built a half or a third as large so that each
// file is about --mb; and io::load_safetensors of a 2 GiB file (sparse: no disk space) whose
// header is refused, which must not cost its size.
#include <fcntl.h>
#include <sys/stat.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "process_memory.hpp"

using namespace tapegrad;

namespace {

double status_bytes(const std::string& key) {
  return bench::status_bytes("checkpoint_memory", key);
}
void reset_peak() { bench::reset_peak("checkpoint_memory"); }

// Runs `op` in a child process and prints the peak resident memory it added, against the size of
// `file`. Exits if the child fails.
void measure(const std::string& label, const std::string& file, const std::function<void()>& op) {
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("checkpoint_memory: fork");
    std::exit(2);
  }
  if (child == 0) {
    try {
      ::malloc_trim(0);
      reset_peak();
      const double before = status_bytes("VmRSS");
      op();
      const double peak = status_bytes("VmHWM");
      const double size = static_cast<double>(std::filesystem::file_size(file));
      std::printf("%-26s file %7.1f MB  extra peak %7.1f MB  %5.2fx the file\n", label.c_str(),
                  size / 1e6, (peak - before) / 1e6, (peak - before) / size);
      std::fflush(stdout);
      ::_exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "checkpoint_memory: %s: %s\n", label.c_str(), e.what());
      ::_exit(1);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(1);
}

// About `bytes` of float32 parameters: half in one Embedding table, half in Linear(1000, 1000)s.
class BigModel : public nn::Module {
 public:
  explicit BigModel(double bytes) {
    const auto floats = static_cast<std::int64_t>(bytes / 4.0);
    const std::int64_t rows = std::max<std::int64_t>(1, floats / 2 / 1000);
    table = register_module("table", std::make_shared<nn::Embedding>(rows, 1000));
    layers = register_module("layers", std::make_shared<nn::ModuleList>());
    for (std::int64_t k = 0; k < std::max<std::int64_t>(1, floats / 2 / 1'001'000); ++k)
      layers->push_back(std::make_shared<nn::Linear>(1000, 1000));
  }
  std::shared_ptr<nn::Embedding> table;
  std::shared_ptr<nn::ModuleList> layers;
};

}  // namespace

int main(int argc, char** argv) {
  double mb = 200;
  std::string dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mb")
      mb = std::atof(argv[i + 1]);
    else if (flag == "--dir")
      dir = argv[i + 1];
    else {
      std::cerr << "usage: checkpoint_memory [--mb 200] [--dir /tmp]\n";
      return 2;
    }
  }
  const std::string model_path = dir + "/checkpoint_memory_model.safetensors";
  const std::string run_path = dir + "/checkpoint_memory_run.safetensors";
  {
    BigModel model(mb * 1e6);
    measure("io::save (model)", model_path, [&] { io::save(model, model_path); });
    measure("io::load (model)", model_path, [&] { io::load(model, model_path); });
  }
  const std::string optim_path = dir + "/checkpoint_memory_optim.safetensors";
  {
    BigModel model(mb * 1e6 / 2.0);  // Adam's two moments: about mb
    optim::Adam adam(model.parameters(), optim::AdamOptions(1e-3));
    for (const Parameter& p : model.parameters()) p.set_grad(xt::ones<float>(p.shape()));
    adam.step();  // the moments exist, as in a run that resumes
    adam.zero_grad();
    measure("io::save_optimizer", optim_path, [&] { io::save_optimizer(adam, optim_path); });
    measure("io::load_optimizer", optim_path, [&] { io::load_optimizer(adam, optim_path); });
  }
  {
    BigModel model(mb * 1e6 / 3.0);  // parameters + Adam's two moments: about mb in all
    optim::Adam adam(model.parameters(), optim::AdamOptions(1e-3));
    for (const Parameter& p : model.parameters()) p.set_grad(xt::ones<float>(p.shape()));
    adam.step();
    adam.zero_grad();
    io::TrainingCheckpoint ckpt(model, adam);
    measure("TrainingCheckpoint::save", run_path, [&] { ckpt.save(run_path, {1}); });
    measure("TrainingCheckpoint::load", run_path, [&] { ckpt.load(run_path); });
  }
  // 2 GiB whose 8-byte length announces a 2 GiB header (over the 100 MB limit): refused at once.
  const std::string huge_path = dir + "/checkpoint_memory_huge.safetensors";
  {
    const std::uint64_t size = std::uint64_t{1} << 31, n = size - 8;
    const int fd = ::open(huge_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, &n, 8) != 8 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      std::perror("checkpoint_memory: cannot make the 2 GiB file");
      return 2;
    }
    ::close(fd);
    measure("load_safetensors (bad header)", huge_path, [&] {
      try {
        io::load_safetensors(huge_path);
      } catch (const CheckpointError& e) {
        std::printf("  refused: %.60s...\n", e.what());
      }
    });
  }
  std::filesystem::remove(huge_path);
  std::filesystem::remove(optim_path);
  std::filesystem::remove(model_path);
  std::filesystem::remove(run_path);
  return 0;
}
