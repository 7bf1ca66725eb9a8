// src/nn/skip_init.cpp: SkipInitGuard (nn/skip_init.hpp), a per-thread depth.
#include "tapegrad/nn/skip_init.hpp"

namespace tapegrad::nn {

namespace {
thread_local int skip_depth = 0;
}

SkipInitGuard::SkipInitGuard() { ++skip_depth; }
SkipInitGuard::~SkipInitGuard() { --skip_depth; }
bool init_skipped() { return skip_depth > 0; }

}  // namespace tapegrad::nn
