// src/core/autocast.cpp: the autocast::bf16 scope, a per-thread depth (core/autocast.hpp).
#include "tapegrad/core/autocast.hpp"


namespace tapegrad::autocast {

namespace {
thread_local int depth = 0;
}

bf16::bf16() { ++depth; }
bf16::~bf16() { --depth; }
bool bf16_enabled() { return depth > 0; }

}  // namespace tapegrad::autocast
