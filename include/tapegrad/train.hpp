// include/tapegrad/train.hpp: the umbrella header of tapegrad::train, the training loop any Module
// reuses: Trainer (validation, checkpoints, exact resume, ranks, the profiler, the loss picture),
// the batches of a language model, the Session a training program opens first; and the GPT on
// text from start to end (run_gpt), which examples/gpt/gpt.cpp is the flags of.
#pragma once

#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/session.hpp"
#include "tapegrad/train/stop_signals.hpp"
#include "tapegrad/train/run_folder.hpp"
#include "tapegrad/train/trainer.hpp"
#include "tapegrad/train/windows.hpp"
#include "tapegrad/train/pictures.hpp"
#include "tapegrad/train/text_data.hpp"
#include "tapegrad/train/gpt_model.hpp"
#include "tapegrad/train/gpt_run.hpp"
