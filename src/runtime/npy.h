// NumPy .npy files (format 1.0-3.0, little-endian, C order) for tensors in and out.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace nnfuse {

// Throws kInvalidInput naming the file on anything it cannot read exactly.
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

// Reads a tensor from .npy or ONNX TensorProto .pb, chosen by the file's content.
Tensor load_tensor_file(const std::string& path);

}  // namespace nnfuse
