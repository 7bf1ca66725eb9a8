// src/io/optimizer_state.hpp (private to the library)
//
// An optimizer's state in a safetensors file, read with the caller's wording: the public
// read_optimizer_state / read_lambda_lr_state (checkpoint.hpp) say "read_optimizer_state:
// 'file'", load_optimizer and TrainingCheckpoint::load say who they are. `where` starts every
// message.
#pragma once

#include <optional>
#include <string>

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/optim/lr_scheduler.hpp"
#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::io {

/// The optimizer state stored under `prefix` (see add_optimizer_state). `owned`: the same file,
/// when the caller reads it once and the tensors may be moved out of it instead of copied.
optim::OptimizerState optimizer_state_from(const SafetensorsFile& file, SafetensorsFile* owned,
                                           const std::string& prefix, const std::string& where);
/// The scheduler state stored under `prefix`, or nullopt when there is none.
std::optional<optim::LambdaLRState> lambda_lr_state_from(const SafetensorsFile& file,
                                                         const std::string& prefix,
                                                         const std::string& where);

}  // namespace tapegrad::io
