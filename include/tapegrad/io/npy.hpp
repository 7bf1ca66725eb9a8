// include/tapegrad/io/npy.hpp
//
// NumPy's .npy format for looking at single tensors from Python:
//
//     io::save_npy("pe.npy", model.pos->pe);          // then, in Python: np.load("pe.npy")
//     Array a = io::load_npy("from_numpy.npy");
//
// save_npy writes float32 with xt::dump_npy, atomically (io::write_file_atomic). load_npy reads
// float32 or float64 (NumPy's default, converted to float32), C or Fortran order, and validates
// the whole file first: a short, damaged or hostile file gives CheckpointError, another dtype
// TypeError, both naming the file.
#pragma once

#include <string>
#include <string_view>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::io {

/// Writes the tensor's values (float32, C order) as a .npy file; replaces `path` atomically.
void save_npy(const std::string& path, const Tensor& tensor);
/// Reads a .npy file of '<f4' or '<f8' data into a float32 Array of the file's shape.
Array load_npy(const std::string& path);
/// load_npy on bytes already in memory; `source` names them in error messages.
Array parse_npy(std::string_view bytes, std::string_view source = "<memory>");

}  // namespace tapegrad::io
