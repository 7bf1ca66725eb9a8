// include/tapegrad/optim.hpp: the umbrella header of tapegrad::optim: SGD, Adam, AdamW,
// SparseAdam, the learning-rate schedules and gradient clipping. An optimizer sees Parameters, never
// a Module, so this layer links tapegrad::core only.
#pragma once

#include "tapegrad/optim/optimizer.hpp"
#include "tapegrad/optim/sgd.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/sparse_adam.hpp"
#include "tapegrad/optim/lr_scheduler.hpp"
#include "tapegrad/optim/clip_grad.hpp"
