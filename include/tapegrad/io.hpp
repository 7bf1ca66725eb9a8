// include/tapegrad/io.hpp: the umbrella header of tapegrad::io: safetensors and .npy files, and the
// training checkpoint (a model, its optimizer and schedule, the generators and the progress in one
// file). It links tapegrad::nn and tapegrad::optim, whose state it saves.
#pragma once

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/io/npy.hpp"
#include "tapegrad/io/checkpoint.hpp"
#include "tapegrad/io/file_identity.hpp"
#include "tapegrad/io/folder_lock.hpp"
