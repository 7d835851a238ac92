// Conversion between ONNX TensorProto and Tensor, including external data.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace nnfuse {

// Reads a TensorProto's data: raw_data, the typed fields, or external data resolved against
// `base_dir` ("" refuses external data). A location that escapes `base_dir` is refused.
// `label` names the tensor in errors ("model.onnx: initializer 'w'").
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir,
                         const std::string& label);
// The same, taking over the proto's raw_data buffer instead of copying it where the bytes are
// the tensor's (raw_data of the right size): the proto is left without them. The importer reads
// initializers with it, so a weight is never held twice while the model loads.
Tensor take_tensor_from_proto(onnx::TensorProto& p, const std::string& base_dir,
                              const std::string& label);
// Writes `t` as raw_data (little-endian, as ONNX stores it).
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p);

// Reads a serialized TensorProto file (the ONNX test format, input_0.pb).
Tensor load_tensor_pb(const std::string& path, std::string* name = nullptr);
// The same from the file's bytes; `label` names them in errors.
Tensor parse_tensor_pb(const std::string& bytes, const std::string& label,
                       std::string* name = nullptr);

}  // namespace nnfuse
