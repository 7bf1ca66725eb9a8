// src/core/gemm_engine.cpp: the engine of every matrix product (gemm_engine.hpp), chosen once from
// TAPEGRAD_GEMM and kept, as the kernel set is (cpu.cpp; both through env_choice.hpp).
#include "tapegrad/core/gemm_engine.hpp"

#include <array>
#include <string>

#include "env_choice.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad {

namespace {
constexpr std::array<std::string_view, 3> kNames = {"openblas", "onednn", "reference"};

std::string names(const std::vector<GemmEngine>& engines) {
  std::string out;
  for (const GemmEngine e : engines) out += (out.empty() ? "" : ", ") + std::string(to_string(e));
  return out;
}

void check_available(GemmEngine engine, const std::string& where) {
  for (const GemmEngine e : available_gemm_engines())
    if (e == engine) return;
  fail<ValueError>(where, ": expected an engine this build has (", names(available_gemm_engines()),
                   "), got ", to_string(engine),
                   ": tapegrad was built without oneDNN (install libdnnl-dev, or run "
                   "scripts/setup.sh, and configure again)");
}

GemmEngine choose() {
  const detail::ForcedChoice forced = detail::forced_by_env("TAPEGRAD_GEMM", kNames);
  if (forced.index < 0) return GemmEngine::openblas;
  check_available(static_cast<GemmEngine>(forced.index), forced.where);
  return static_cast<GemmEngine>(forced.index);
}

detail::EnvChoice current;  // chosen by the first product
}  // namespace

std::string_view to_string(GemmEngine engine) {
  return kNames.at(static_cast<std::size_t>(engine));
}

std::vector<GemmEngine> available_gemm_engines() {
#ifdef TAPEGRAD_ONEDNN
  return {GemmEngine::openblas, GemmEngine::onednn, GemmEngine::reference};
#else
  return {GemmEngine::openblas, GemmEngine::reference};
#endif
}

GemmEngine gemm_engine() {
  // a refused TAPEGRAD_GEMM throws here, at every product
  return static_cast<GemmEngine>(current.get([] { return static_cast<int>(choose()); }));
}

void set_gemm_engine(GemmEngine engine) {
  check_available(engine, "set_gemm_engine");
  current.set(static_cast<int>(engine));
}

}  // namespace tapegrad
