// src/transformer/gpt_parts.cpp: the registry of named GPT parts (transformer/gpt_parts.hpp).
#include "tapegrad/transformer/gpt_parts.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "tapegrad/core/errors.hpp"
#include "tapegrad/transformer/alibi.hpp"

namespace tapegrad::nn::transformer {

namespace {

// One kind of part: its names and factories, guarded by a mutex (a program may register from
// any thread, before it builds models on others).
template <class Factory>
class Registry {
 public:
  Registry(const char* kind, const char* function, std::map<std::string, Factory> built_in)
      : kind_(kind), function_(function), factories_(std::move(built_in)) {}

  void add(const std::string& name, Factory factory) {
    const bool well_formed =
        !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        });
    check<ValueError>(well_formed, function_,
                      ": expected a name of 1 to 64 characters of "
                      "[a-z0-9_-], got \"",
                      name.substr(0, 80), "\"");
    check<ValueError>(factory != nullptr, function_, "(\"", name, "\"): the factory is null");
    std::lock_guard<std::mutex> lock(mutex_);
    check<ValueError>(factories_.count(name) == 0, function_, ": the ", kind_, " \"", name,
                      "\" is registered already (a name means one part, so that a checkpoint "
                      "that names it means one model); choose another name");
    factories_.emplace(name, std::move(factory));
  }

  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, factory] : factories_) out.push_back(name);
    return out;
  }

  Factory get(const std::string& name, const std::string& where) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = factories_.find(name);
    if (it != factories_.end()) return it->second;
    std::string known;
    for (const auto& [n, factory] : factories_) known += (known.empty() ? "" : ", ") + n;
    fail<ValueError>(where, ": the ", kind_, " \"", name.substr(0, 80), "\" is not registered ",
                     "in this program (registered: ", known,
                     "); a program that builds a model "
                     "with a part of its own registers it first, by name, with ",
                     "tapegrad::nn::transformer::", function_, "(\"", name.substr(0, 80),
                     "\", factory) (docs/training.md)");
  }

 private:
  const char* kind_;
  const char* function_;
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
};

template <class M>
ModuleFactory module_factory() {
  return [](const GPTConfig& c, std::shared_ptr<Generator> generator) {
    return std::make_shared<M>(c, std::move(generator));
  };
}

Registry<AttentionFactory>& attentions() {
  static Registry<AttentionFactory> r(
      "attention", "register_attention",
      {{"causal",
        [](const GPTConfig& c, std::shared_ptr<Generator> generator) {
          return std::make_shared<CausalSelfAttention>(c, std::move(generator));
        }},
       {"alibi", [](const GPTConfig& c, std::shared_ptr<Generator> generator) {
          return std::make_shared<AlibiAttention>(c, std::move(generator));
        }}});
  return r;
}

Registry<ModuleFactory>& mlps() {
  static Registry<ModuleFactory> r("mlp", "register_mlp",
                                   {{"gelu", module_factory<MLP>()},
                                    {"relu_squared", module_factory<MLP>()},
                                    {"swiglu", module_factory<MLP>()}});
  return r;
}

Registry<ModuleFactory>& norms() {
  static Registry<ModuleFactory> r(
      "norm", "register_norm",
      {{"layernorm",
        [](const GPTConfig& c, std::shared_ptr<Generator>) {
          return std::make_shared<LayerNorm>(LayerNormOptions({c.n_embd()}).eps(c.norm_eps()));
        }},
       {"rmsnorm", [](const GPTConfig& c, std::shared_ptr<Generator>) {
          return std::make_shared<RMSNorm>(RMSNormOptions({c.n_embd()}).eps(c.norm_eps()));
        }}});
  return r;
}

}  // namespace

void register_attention(const std::string& name, AttentionFactory factory) {
  attentions().add(name, std::move(factory));
}
void register_mlp(const std::string& name, ModuleFactory factory) {
  mlps().add(name, std::move(factory));
}
void register_norm(const std::string& name, ModuleFactory factory) {
  norms().add(name, std::move(factory));
}

std::vector<std::string> registered_attentions() { return attentions().names(); }
std::vector<std::string> registered_mlps() { return mlps().names(); }
std::vector<std::string> registered_norms() { return norms().names(); }

AttentionFactory registered_attention(const std::string& name, const std::string& where) {
  return attentions().get(name, where);
}
ModuleFactory registered_mlp(const std::string& name, const std::string& where) {
  return mlps().get(name, where);
}
ModuleFactory registered_norm(const std::string& name, const std::string& where) {
  return norms().get(name, where);
}

}  // namespace tapegrad::nn::transformer
