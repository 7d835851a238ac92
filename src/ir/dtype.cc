#include "ir/dtype.h"

#include "ir/error.h"

namespace nnfuse {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 4;
    case DType::kUInt8:
      return 1;
    case DType::kInt8:
      return 1;
    case DType::kUInt16:
      return 2;
    case DType::kInt16:
      return 2;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kFloat16:
      return 2;
    case DType::kFloat64:
      return 8;
    case DType::kUInt32:
      return 4;
    case DType::kUInt64:
      return 8;
    case DType::kComplex64:
      return 8;
    case DType::kComplex128:
      return 16;
    case DType::kBFloat16:
      return 2;
    case DType::kString:
    case DType::kUndefined:
      return 0;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kString:
      return "string";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat64:
      return "float64";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kComplex64:
      return "complex64";
    case DType::kComplex128:
      return "complex128";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kUndefined:
      return "undefined";
  }
  return "undefined";
}

DType dtype_from_onnx(int32_t onnx_type) {
  if (onnx_type < 0 || onnx_type > 16) {
    fail(ErrorKind::kInvalidModel, "unknown ONNX element type ", onnx_type);
  }
  return static_cast<DType>(onnx_type);
}

bool dtype_is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

}  // namespace nnfuse
