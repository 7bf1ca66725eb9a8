// include/tapegrad/train.hpp: the umbrella header of tapegrad::train, the training loop any Module
// reuses: Trainer (validation, checkpoints, exact resume, ranks, the profiler, the loss picture),
// the batches of a language model, and the Session a training program opens first.
#pragma once

#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/session.hpp"
#include "tapegrad/train/stop_signals.hpp"
#include "tapegrad/train/trainer.hpp"
#include "tapegrad/train/windows.hpp"
