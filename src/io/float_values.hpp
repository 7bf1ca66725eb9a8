// src/io/float_values.hpp (private to the library)
//
// How the loaders get a tensor's float32 values out of a SafetensorsFile they have read: when
// the file is theirs to consume, the values are MOVED out (an F32 tensor's array is handed on as
// it is, no copy), so that loading a checkpoint holds its data once; otherwise, or when an alias
// shares the tensor (another part of the file may still read it), they are copied.
#pragma once

#include <string>
#include <unordered_set>

#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

class FloatValues {
 public:
  /// `owned`: the same file, when the caller may consume it; null to copy.
  FloatValues(const SafetensorsFile& file, SafetensorsFile* owned) : file_(file), owned_(owned) {
    if (owned_ != nullptr)
      for (const auto& [alias, target] : file.aliases()) shared_.insert(target);
  }
  /// The values of tensor (or alias) `name`, as SafetensorsFile::to_float gives them.
  Array operator()(const std::string& name) const {
    if (owned_ != nullptr && file_.has_tensor(name) && !shared_.contains(name))
      return owned_->take_float(name);
    return file_.to_float(name);
  }

 private:
  const SafetensorsFile& file_;
  SafetensorsFile* owned_;
  std::unordered_set<std::string> shared_;  // tensors some alias names
};

}  // namespace tapegrad::io
