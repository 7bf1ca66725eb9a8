// tests/capability_guard.hpp: puts the kernel set in use back when a test that switches sets ends,
// so that the tests after it run on the set they expect. Shared by every *_kernels test.
#pragma once

#include <tapegrad/core/cpu.hpp>

namespace tapegrad::testing {

/// Puts the set in use back when the test ends.
struct CapabilityGuard {
  CpuCapability saved = cpu_capability();
  ~CapabilityGuard() { set_cpu_capability(saved); }
};

}  // namespace tapegrad::testing
