// include/tapegrad/core.hpp: the umbrella header of tapegrad::core, the bottom layer: Tensor (a
// shared handle to a float32 array, its gradient and its version), Parameter and Buffer, the tape
// and backward(), gradcheck, and the differentiable ops. Every other layer builds on it; it knows
// none of them. A program that links tapegrad::core alone can train anything it writes by hand.
#pragma once

#include "tapegrad/errors.hpp"
#include "tapegrad/options.hpp"
#include "tapegrad/sizes.hpp"
#include "tapegrad/memory.hpp"
#include "tapegrad/threads.hpp"
#include "tapegrad/tensor.hpp"
#include "tapegrad/row_sparse.hpp"
#include "tapegrad/parameter.hpp"
#include "tapegrad/random.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/profiler.hpp"
#include "tapegrad/ops/broadcast.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/reduce.hpp"
#include "tapegrad/ops/shape.hpp"
#include "tapegrad/ops/matmul.hpp"
#include "tapegrad/ops/softmax.hpp"
#include "tapegrad/ops/loss.hpp"
#include "tapegrad/ops/embedding.hpp"
#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/ops/layer_norm.hpp"
#include "tapegrad/ops/rms_norm.hpp"
#include "tapegrad/ops/rotary.hpp"
#include "tapegrad/ops/attention.hpp"
#include "tapegrad/ops/causal_attention.hpp"
#include "tapegrad/ops/activation.hpp"
#include "tapegrad/ops/kl_div.hpp"
