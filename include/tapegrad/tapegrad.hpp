// include/tapegrad/tapegrad.hpp: the umbrella header for users and examples.
#pragma once

#include "tapegrad/errors.hpp"
#include "tapegrad/tensor.hpp"
#include "tapegrad/row_sparse.hpp"
#include "tapegrad/parameter.hpp"
#include "tapegrad/random.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/ops/broadcast.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/reduce.hpp"
#include "tapegrad/ops/shape.hpp"
#include "tapegrad/ops/matmul.hpp"
#include "tapegrad/ops/softmax.hpp"
#include "tapegrad/ops/loss.hpp"
#include "tapegrad/ops/embedding.hpp"
#include "tapegrad/ops/dropout.hpp"
