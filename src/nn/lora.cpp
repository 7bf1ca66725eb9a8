// src/nn/lora.cpp: LoRA's options, and adapters added to and merged into a whole model
// (nn/lora.hpp). One layer's adapter is Linear's (linear.cpp: add_lora, forward, merge_lora).
#include "tapegrad/nn/lora.hpp"

#include <cmath>
#include <set>

#include "tapegrad/nn/linear.hpp"

namespace tapegrad::nn {

double LoRAOptions::scaling() const {
  // PEFT's update_layer: lora_alpha / r, or lora_alpha / math.sqrt(r) with use_rslora.
  const double r = static_cast<double>(r_);
  return use_rslora_ ? lora_alpha_ / std::sqrt(r) : lora_alpha_ / r;
}

void validate(const LoRAOptions& options) {
  check<ValueError>(options.r() >= 1,
                    "`r` should be a positive integer value but the value passed is ", options.r(),
                    " | LoRAOptions: expected r >= 1, got ", options.r());
  check<ValueError>(std::isfinite(options.lora_alpha()) && options.lora_alpha() > 0,
                    "LoRAOptions: expected a finite lora_alpha > 0, got ",
                    py_float(options.lora_alpha()));
  check<ValueError>(
      options.lora_dropout() >= 0.0 && options.lora_dropout() <= 1.0,
      "dropout probability has to be between 0 and 1, but got ", py_float(options.lora_dropout()),
      " | LoRAOptions: expected lora_dropout in [0, 1], got ", py_float(options.lora_dropout()));
}

bool matches_target(const std::string& path, const std::string& target) {
  return !target.empty() &&
         (path == target || (path.size() > target.size() && path.ends_with(target) &&
                             path[path.size() - target.size() - 1] == '.'));
}

std::vector<std::string> add_lora(Module& model, const std::vector<std::string>& target_modules,
                                  const LoRAOptions& options,
                                  std::shared_ptr<Generator> generator) {
  validate(options);
  check<ValueError>(!target_modules.empty(),
                    "add_lora: expected at least one target module (\"q_proj\", \"v_proj\", ...), "
                    "got none");
  // Every target is checked, and every layer found, before any adapter is added.
  std::vector<std::pair<std::string, Linear*>> targets;
  std::set<std::string> linear_names;  // the last component of every Linear's path, for hints
  std::vector<bool> matched(target_modules.size(), false);
  for (const auto& [path, module] : model.named_modules()) {
    auto* linear = dynamic_cast<Linear*>(module);
    if (linear != nullptr) {
      const std::size_t dot = path.rfind('.');
      if (!path.ends_with("lora_A") && !path.ends_with("lora_B"))
        linear_names.insert(dot == std::string::npos ? path : path.substr(dot + 1));
    }
    bool wanted = false;
    for (std::size_t t = 0; t < target_modules.size(); ++t)
      if (matches_target(path, target_modules[t])) matched[t] = wanted = true;
    if (!wanted) continue;
    if (linear == nullptr) {
      std::string target;
      for (std::size_t t = 0; t < target_modules.size(); ++t)
        if (target.empty() && matches_target(path, target_modules[t])) target = target_modules[t];
      fail<ValueError>("add_lora: expected target modules that are Linears, got ",
                       module->context(), " (matching '", target,
                       "'); name its Linears instead, by the end of their paths");
    }
    if (path.ends_with(".lora_A") || path.ends_with(".lora_B"))
      fail<ValueError>("add_lora: target '", path,
                       "' is an adapter's own matrix, expected a base model's Linear");
    if (linear->has_lora())
      fail<ValueError>("add_lora: expected Linears without an adapter, got '", path,
                       "', which has one (r ", linear->lora_options().r(),
                       "); merge_lora() first, or start from the base model");
    targets.emplace_back(path, linear);
  }
  for (std::size_t t = 0; t < target_modules.size(); ++t) {
    if (matched[t]) continue;
    std::string names;
    for (const std::string& n : linear_names) names += (names.empty() ? "" : ", ") + n;
    fail<ValueError>("add_lora: target module '", target_modules[t],
                     "' matches no module of the model; expected a name its Linears' paths end "
                     "with: ",
                     names.empty() ? std::string("(the model has no Linear)") : names);
  }
  model.requires_grad_(false);  // PEFT's bias "none": only the adapters train
  const std::shared_ptr<Generator> gen = generator ? std::move(generator) : default_generator();
  std::vector<std::string> paths;
  for (auto& [path, linear] : targets) {
    linear->add_lora(options, gen);
    paths.push_back(path);
  }
  return paths;
}

std::vector<std::pair<std::string, const Linear*>> lora_layers(const Module& model) {
  std::vector<std::pair<std::string, const Linear*>> out;
  for (const auto& [path, module] : model.named_modules())
    if (const auto* linear = dynamic_cast<const Linear*>(module); linear && linear->has_lora())
      out.emplace_back(path, linear);
  return out;
}

std::vector<std::pair<std::string, Linear*>> lora_layers(Module& model) {
  std::vector<std::pair<std::string, Linear*>> out;
  for (const auto& [path, layer] : lora_layers(std::as_const(model)))
    out.emplace_back(path, const_cast<Linear*>(layer));  // we hold the model non-const
  return out;
}

std::size_t merge_lora(Module& model) {
  const auto layers = lora_layers(model);
  for (const auto& [path, layer] : layers) layer->merge_lora();
  return layers.size();
}

}  // namespace tapegrad::nn
