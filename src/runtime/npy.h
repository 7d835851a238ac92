// NumPy .npy files (format 1.0-3.0, little-endian, C order) for tensors in and out.
#pragma once

#include <istream>
#include <string>

#include "ir/tensor.h"

namespace nnfuse {

// Throws kInvalidInput naming the file on anything it cannot read exactly.
Tensor load_npy(const std::string& path);
// The same from a stream (seekable); `label` names it in errors.
Tensor read_npy(std::istream& in, const std::string& label);
void save_npy(const std::string& path, const Tensor& t);

// Reads a tensor from .npy or ONNX TensorProto .pb, chosen by the file's content.
Tensor load_tensor_file(const std::string& path);

}  // namespace nnfuse
