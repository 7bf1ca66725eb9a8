// bench/process_memory.hpp: the resident memory of this process, as the memory benchmarks read it
// (Linux's /proc/self/status), and the reset of its peak mark. On failure the program says why,
// prefixed with its name, and exits 2.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace bench {

// A value of /proc/self/status ("VmRSS:   123456 kB"), in bytes.
inline double status_bytes(const std::string& program, const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream fields(line.substr(key.size() + 1));
      double kb = 0;
      fields >> kb;
      return kb * 1024.0;
    }
  std::cerr << program << ": /proc/self/status has no " << key << "\n";
  std::exit(2);
}

// Resets VmHWM to the current resident size (Linux 4.0 and later).
inline void reset_peak(const std::string& program) {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY);
  if (fd < 0 || ::write(fd, "5", 1) != 1) {
    std::perror((program + ": cannot reset the peak RSS through /proc/self/clear_refs").c_str());
    std::exit(2);
  }
  ::close(fd);
}

}  // namespace bench
