// include/tapegrad/core/gemm_engine.hpp
//
// Which library multiplies the matrices. Every product of tapegrad (Linear, matmul,
// scaled_dot_product_attention's two products, forward and backward; the causal attention's small
// products are loops of its own) goes through one function, and that function calls one of three
// engines:
//
//   openblas   OpenBLAS's cblas_sgemm (the default): the library xtensor-blas links. It picks its
//              kernels ("core") by CPU, or as OPENBLAS_CORETYPE says; on a CPU it does not know it
//              falls back to old ones (docs/benchmarks.md).
//   onednn     oneDNN's dnnl_sgemm (Debian's libdnnl-dev, the library PyTorch uses for its CPU
//              kernels), when tapegrad was built with it: it picks its own instructions from the
//              CPU (AVX-512 where there is AVX-512), whatever OPENBLAS_CORETYPE says.
//   reference  plain loops, one float sum per element in k order: slow, defines what a product
//              is, and runs anywhere.
//
// The engines round differently (each sums in its own order), so results differ in the last bits
// between engines; within one engine and one thread count they are reproducible.
// Why openblas is the default: on the baby GPT (1 thread, AMD Zen 5) OpenBLAS on the kernels it
// picks for the CPU and oneDNN were within a few percent of each other (30.0 and 29.3 ms a step),
// and a default that changes every figure's last bits needs a clear win. Where OpenBLAS falls back
// to older kernels (forced to Haswell's there: 47.5 ms), oneDNN is 1.6 times as fast, and the
// fallback warning (cpu.hpp) names TAPEGRAD_GEMM=onednn beside OPENBLAS_CORETYPE.
// TAPEGRAD_GEMM=openblas|onednn|reference chooses the engine for a whole run (read at the first
// product); set_gemm_engine changes it in a program (a test comparing engines, say).
#pragma once

#include <string_view>
#include <vector>

namespace tapegrad {

enum class GemmEngine { openblas, onednn, reference };

/// The engine in use: TAPEGRAD_GEMM's, else openblas. A TAPEGRAD_GEMM that names no engine, or
/// onednn in a build without oneDNN, is a ValueError naming the variable and the choices.
GemmEngine gemm_engine();
/// Uses `engine` from now on; ValueError for onednn in a build without oneDNN.
void set_gemm_engine(GemmEngine engine);
/// The engines this build has: openblas and reference, and onednn when built with it.
std::vector<GemmEngine> available_gemm_engines();
std::string_view to_string(GemmEngine engine);  ///< "openblas", "onednn", "reference"

}  // namespace tapegrad
