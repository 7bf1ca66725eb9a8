// src/core/cpu.cpp
//
// Which kernel set runs (cpu.hpp): the CPU's features, read once through CPUID, and the set in use,
// chosen at the first call of cpu_capability() and kept in one atomic that every op reads when it
// picks its kernels (src/core/dispatch.hpp).
// The x86 sets exist in the library when CMake compiled them (TAPEGRAD_X86_KERNEL_SETS); a build
// for another architecture has reference and baseline only.
#include "tapegrad/core/cpu.hpp"

#include <array>
#include <sstream>

#include "dispatch.hpp"
#include "env_choice.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad {

namespace {

constexpr std::array<std::string_view, 4> kNames = {"reference", "baseline", "avx2", "avx512"};

// What the CPU and the operating system support (libgcc's __builtin_cpu_supports checks that the
// OS saves the AVX and AVX-512 registers, too). avx2 is x86-64-v3 and avx512 x86-64-v4: the
// -march levels those sets are compiled for, so every feature those levels let the compiler use.
bool cpu_can_run(CpuCapability c) {
  switch (c) {
    case CpuCapability::reference:
    case CpuCapability::baseline: return true;
#if defined(TAPEGRAD_X86_KERNEL_SETS)
    case CpuCapability::avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    case CpuCapability::avx512:
      return cpu_can_run(CpuCapability::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
    default: return false;
  }
}

int index_of(std::string_view name) {  // -1: not a set's name
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<int>(i);
  return -1;
}

std::string names(const std::vector<CpuCapability>& sets) {
  std::string out;
  for (CpuCapability c : sets) out += (out.empty() ? "" : ", ") + std::string(to_string(c));
  return out;
}

detail::EnvChoice current;  // chosen by the first cpu_capability() call

CpuCapability choose() {
  const std::vector<CpuCapability> sets = available_cpu_capabilities();
  const detail::ForcedChoice forced = detail::forced_by_env("TAPEGRAD_CPU_CAPABILITY", kNames);
  if (forced.index < 0) return sets.back();
  detail::check_cpu_can_run(static_cast<CpuCapability>(forced.index), sets, forced.where);
  return static_cast<CpuCapability>(forced.index);
}

}  // namespace

namespace detail {
void check_cpu_can_run(CpuCapability wanted, const std::vector<CpuCapability>& available,
                       const std::string& where) {
  for (CpuCapability c : available)
    if (c == wanted) return;
  fail<ValueError>(where, ": expected a kernel set this CPU and build can run (", names(available),
                   "), got ", to_string(wanted),
                   "; unset TAPEGRAD_CPU_CAPABILITY to let tapegrad choose the best one");
}

}  // namespace detail

std::string_view to_string(CpuCapability capability) {
  return kNames.at(static_cast<std::size_t>(capability));
}

CpuCapability cpu_capability_from_string(std::string_view name) {
  const int i = index_of(name);
  check<ValueError>(i >= 0, "cpu_capability_from_string: expected ", detail::one_of(kNames),
                    ", got '", name, "'");
  return static_cast<CpuCapability>(i);
}

std::vector<CpuCapability> available_cpu_capabilities() {
  std::vector<CpuCapability> sets;
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (cpu_can_run(static_cast<CpuCapability>(i))) sets.push_back(static_cast<CpuCapability>(i));
  return sets;
}

CpuCapability cpu_capability() {
  // a refused TAPEGRAD_CPU_CAPABILITY throws here, at every use
  return static_cast<CpuCapability>(current.get([] { return static_cast<int>(choose()); }));
}

void set_cpu_capability(CpuCapability capability) {
  detail::check_cpu_can_run(capability, available_cpu_capabilities(), "set_cpu_capability");
  current.set(static_cast<int>(capability));
}

}  // namespace tapegrad
