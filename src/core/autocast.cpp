// src/core/autocast.cpp: the autocast::bf16 scope, a per-thread depth (core/autocast.hpp).
#include "tapegrad/core/autocast.hpp"

#include "bf16_saved.hpp"
#include "gemm_bf16.hpp"

namespace tapegrad::autocast {

namespace {
thread_local int depth = 0;
}

bf16::bf16() { ++depth; }
bf16::~bf16() {
  if (--depth != 0) return;
  detail::drop_rounded_weights();  // a weight's copy lasts as long as the scope
  detail::drop_saved_in_bf16();    // and so does the last activation copy's sharing
}
bool bf16_enabled() { return depth > 0; }

}  // namespace tapegrad::autocast
