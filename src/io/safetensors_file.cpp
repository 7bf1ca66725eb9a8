// src/io/safetensors_file.cpp: SafetensorsFile, the contents of one file in memory — tensors in
// order, tied aliases, string metadata — and the conversions of its tensors to float32 and
// int64 arrays. Names are checked as they are added, so a file that can be built can be written.
#include "tapegrad/io/safetensors.hpp"

#include <cstring>
#include <utility>

#include "checkpoint_errors.hpp"
#include "dtypes.hpp"
#include "tapegrad/core/sizes.hpp"
#include "../core/utf8.hpp"

namespace tapegrad::io {

void SafetensorsFile::check_new_name(const std::string& name, const char* what) const {
  check<ValueError>(tapegrad::detail::first_invalid_utf8(name) == std::string_view::npos,
                    "SafetensorsFile: expected a UTF-8 ", what, " name, got invalid bytes in ",
                    in_quotes(name));
  check<ValueError>(name != "__metadata__", "SafetensorsFile: expected a ", what,
                    " name other than '__metadata__', which the format reserves for metadata");
  check<ValueError>(!tensor_index_.contains(name) && !alias_target_.contains(name),
                    "SafetensorsFile: expected a new ", what, " name, got ", in_quotes(name),
                    ", which is already ", tensor_index_.contains(name) ? "a tensor" : "an alias");
}

std::span<const std::uint8_t> TensorRecord::bytes() const {
  const auto as_bytes = [](const auto& values) {
    return std::span(reinterpret_cast<const std::uint8_t*>(values.data()),
                     values.size() * sizeof(*values.data()));
  };
  if (const auto* a = std::get_if<Array>(&data_)) return as_bytes(*a);
  if (const auto* i = std::get_if<IndexArray>(&data_)) return as_bytes(*i);
  if (const auto* b = std::get_if<std::vector<std::uint8_t>>(&data_)) return *b;
  fail<ValueError>("SafetensorsFile: expected tensor ", in_quotes(name),
                   " to hold data, got none: take_float moved its values out");
}

// Adds a record whose name is new and whose data fits its dtype and shape.
void SafetensorsFile::store(TensorRecord record) {
  tensor_index_.emplace(record.name, tensors_.size());
  tensors_.push_back(std::move(record));
}

void SafetensorsFile::add_raw(std::string name, Dtype dtype, Shape shape,
                              std::vector<std::uint8_t> bytes) {
  check_new_name(name, "tensor");
  const auto expected = byte_count(shape, dtype_size(dtype));
  check<ValueError>(expected.has_value() && *expected == bytes.size(), "SafetensorsFile: expected ",
                    expected ? std::to_string(*expected) : std::string("an impossible number of"),
                    " bytes for tensor ", in_quotes(name), " (", dtype_name(dtype), ", shape ",
                    shape, "), got ", bytes.size());
  check<ValueError>(fits_in_strides(shape),
                    "SafetensorsFile: expected the non-zero dimensions of tensor ", in_quotes(name),
                    " to multiply to less than 2^63, got shape ", shape);
  TensorRecord r;
  r.name = std::move(name);
  r.dtype = dtype;
  r.shape = std::move(shape);
  const auto array_of = [&](auto values) {  // F32 and I64 are kept as add() keeps them
    if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  };
  if (dtype == Dtype::F32)
    r.data_ = array_of(Array::from_shape(r.shape));
  else if (dtype == Dtype::I64)
    r.data_ = array_of(IndexArray::from_shape(r.shape));
  else
    r.data_ = std::move(bytes);
  store(std::move(r));
}

void SafetensorsFile::add(std::string name, Array values) {
  check_new_name(name, "tensor");
  TensorRecord r;
  r.name = std::move(name);
  r.dtype = Dtype::F32;
  r.shape = values.shape();
  r.data_ = std::move(values);
  store(std::move(r));
}

void SafetensorsFile::add(std::string name, IndexArray values) {
  check_new_name(name, "tensor");
  TensorRecord r;
  r.name = std::move(name);
  r.dtype = Dtype::I64;
  r.shape = Shape(values.shape().begin(), values.shape().end());
  r.data_ = std::move(values);
  store(std::move(r));
}

void SafetensorsFile::add_alias(std::string alias, std::string target) {
  check_new_name(alias, "alias");
  check<ValueError>(
      tensor_index_.contains(target), "SafetensorsFile: expected the alias ", in_quotes(alias),
      " to name a tensor of the file, got ", in_quotes(target),
      alias_target_.contains(target) ? ", which is itself an alias" : ", which is not there");
  alias_target_.emplace(alias, target);
  aliases_.emplace_back(std::move(alias), std::move(target));
}

void SafetensorsFile::set_metadata(std::string key, std::string value) {
  check<ValueError>(tapegrad::detail::first_invalid_utf8(key) == std::string_view::npos &&
                        tapegrad::detail::first_invalid_utf8(value) == std::string_view::npos,
                    "SafetensorsFile: expected UTF-8 metadata, got invalid bytes in the entry ",
                    in_quotes(key));
  if (const auto it = metadata_index_.find(key); it != metadata_index_.end()) {
    metadata_[it->second].second = std::move(value);
    return;
  }
  metadata_index_.emplace(key, metadata_.size());
  metadata_.emplace_back(std::move(key), std::move(value));
}

bool SafetensorsFile::contains(std::string_view name) const {
  const std::string key(name);
  return tensor_index_.contains(key) || alias_target_.contains(key);
}

bool SafetensorsFile::has_tensor(std::string_view name) const {
  return tensor_index_.contains(std::string(name));
}

const TensorRecord& SafetensorsFile::record(std::string_view name) const {
  std::string key(name);
  if (auto a = alias_target_.find(key); a != alias_target_.end()) key = a->second;
  const auto it = tensor_index_.find(key);
  check<ValueError>(it != tensor_index_.end(), "SafetensorsFile: expected a tensor named ",
                    in_quotes(name), ", got no such tensor or alias among ", tensors_.size(),
                    " tensors and ", aliases_.size(), " aliases");
  return tensors_[it->second];
}

TensorRecord& SafetensorsFile::mutable_record(std::string_view name) {
  return const_cast<TensorRecord&>(std::as_const(*this).record(name));
}

namespace {
bool converts_to_float(Dtype d) {
  return d == Dtype::F32 || d == Dtype::F64 || d == Dtype::F16 || d == Dtype::BF16;
}

void check_float(const TensorRecord& r, std::string_view name) {
  check<TypeError>(converts_to_float(r.dtype), "load_safetensors: expected tensor ",
                   in_quotes(name), " to be a float tensor (F32, F64, F16 or BF16), got dtype ",
                   dtype_name(r.dtype), "; tapegrad converts only floating-point data to float32");
}
}  // namespace

Array SafetensorsFile::to_float(std::string_view name) const {
  const TensorRecord& r = record(name);
  check_float(r, name);
  const std::span<const std::uint8_t> bytes = r.bytes();
  Array out = Array::from_shape(r.shape);
  float* dst = out.data();
  const std::uint8_t* src = bytes.data();
  const std::size_t n = out.size();
  switch (r.dtype) {
    case Dtype::F32:
      if (n != 0) std::memcpy(dst, src, n * sizeof(float));
      break;
    case Dtype::F64:  // round to nearest; beyond float's range gives +-Inf (IEEE), as torch
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load_le<double>(src + 8 * i));
      break;
    case Dtype::F16:
      for (std::size_t i = 0; i < n; ++i)
        dst[i] = half_to_float(load_le<std::uint16_t>(src + 2 * i));
      break;
    default:  // BF16
      for (std::size_t i = 0; i < n; ++i)
        dst[i] = bfloat16_to_float(load_le<std::uint16_t>(src + 2 * i));
      break;
  }
  return out;
}

Array SafetensorsFile::take_float(std::string_view name) {
  TensorRecord& r = mutable_record(name);
  check_float(r, name);
  (void)r.bytes();  // a ValueError if taken already
  Array out;
  if (auto* a = std::get_if<Array>(&r.data_))
    out = std::move(*a);
  else
    out = to_float(name);
  r.data_ = std::monostate{};  // frees converted bytes too
  return out;
}

IndexArray SafetensorsFile::to_int64(std::string_view name) const {
  const TensorRecord& r = record(name);
  check<TypeError>(r.dtype == Dtype::I64, "load_safetensors: expected tensor ", in_quotes(name),
                   " to be an integer tensor of dtype I64, got dtype ", dtype_name(r.dtype));
  (void)r.bytes();                       // a ValueError if its data was taken
  return std::get<IndexArray>(r.data_);  // I64 is always kept as an IndexArray
}

std::optional<std::string> SafetensorsFile::metadata_value(std::string_view key) const {
  const auto it = metadata_index_.find(std::string(key));
  if (it == metadata_index_.end()) return std::nullopt;
  return metadata_[it->second].second;
}

}  // namespace tapegrad::io
