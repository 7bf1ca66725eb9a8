// src/io/json_text.hpp (private to the library)
//
// The JSON texts that optimizer and scheduler checkpoints keep in "__metadata__" (SPEC 2.13.5):
//     "param_groups": [{"betas":[0.9,0.98],"eps":1e-09,"lr":0.001,...,"params":[0,1]}]
//     "lr_scheduler": {"base_lrs":[1.0],"last_epoch":40}
// Implemented in src/io/safetensors.cpp, the one file that includes nlohmann/json. Numbers are
// written with the shortest text that reads back as the same double, so a resumed run uses exactly
// the saved rates; NaN and infinities (which JSON lacks) are the strings "NaN", "Infinity",
// "-Infinity". The readers take hostile text: anything but the layout above is a CheckpointError
// (kind "InvalidCheckpoint") whose message starts with `where`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/optim/lr_scheduler.hpp"
#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::io::json_text {

std::string param_groups_to_json(const std::vector<optim::ParamGroupState>& groups);
std::vector<optim::ParamGroupState> param_groups_from_json(std::string_view text, const std::string& where);

std::string lambda_lr_to_json(const optim::LambdaLRState& state);
optim::LambdaLRState lambda_lr_from_json(std::string_view text, const std::string& where);

}  // namespace tapegrad::io::json_text
