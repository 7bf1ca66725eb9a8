// src/core/gemm_engine.cpp: the engine of every matrix product (gemm_engine.hpp), chosen once from
// TAPEGRAD_GEMM and kept in an atomic, as the kernel set is (cpu.cpp).
#include "tapegrad/core/gemm_engine.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

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
  const char* forced = std::getenv("TAPEGRAD_GEMM");
  if (forced == nullptr || *forced == '\0') return GemmEngine::openblas;
  const std::string where = "TAPEGRAD_GEMM=" + std::string(forced);
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == forced) {
      check_available(static_cast<GemmEngine>(i), where);
      return static_cast<GemmEngine>(i);
    }
  fail<ValueError>(where, ": expected openblas, onednn or reference, got '", forced, "'");
}

std::atomic<int> current{-1};  // -1 until the first product chooses
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
  int e = current.load(std::memory_order_relaxed);
  if (e < 0) {  // the first product; a refused TAPEGRAD_GEMM throws here, every time
    int unset = -1;
    current.compare_exchange_strong(unset, static_cast<int>(choose()));
    e = current.load();
  }
  return static_cast<GemmEngine>(e);
}

void set_gemm_engine(GemmEngine engine) {
  check_available(engine, "set_gemm_engine");
  current.store(static_cast<int>(engine));
}

}  // namespace tapegrad
