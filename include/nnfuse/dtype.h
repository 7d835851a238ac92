// Element types, numbered as ONNX's TensorProto.DataType so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nnfuse {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// Size of one element in bytes; 0 for kUndefined and kString.
size_t dtype_size(DType t);
// Short lower-case name as numpy spells it ("float32", "int64", "bool", ...).
std::string dtype_name(DType t);
// The ONNX data type number, validated: throws kInvalidModel for numbers outside the enum.
DType dtype_from_onnx(int32_t onnx_type);
inline int32_t dtype_to_onnx(DType t) { return static_cast<int32_t>(t); }
bool dtype_is_float(DType t);
bool dtype_is_integer(DType t);

// Maps a C++ type to its DType.
template <typename T>
struct DTypeOf;
#define NNFUSE_DTYPE_OF(T, D)         \
  template <>                         \
  struct DTypeOf<T> {                 \
    static constexpr DType value = D; \
  };
NNFUSE_DTYPE_OF(float, DType::kFloat32)
NNFUSE_DTYPE_OF(double, DType::kFloat64)
NNFUSE_DTYPE_OF(int8_t, DType::kInt8)
NNFUSE_DTYPE_OF(uint8_t, DType::kUInt8)
NNFUSE_DTYPE_OF(int16_t, DType::kInt16)
NNFUSE_DTYPE_OF(uint16_t, DType::kUInt16)
NNFUSE_DTYPE_OF(int32_t, DType::kInt32)
NNFUSE_DTYPE_OF(uint32_t, DType::kUInt32)
NNFUSE_DTYPE_OF(int64_t, DType::kInt64)
NNFUSE_DTYPE_OF(uint64_t, DType::kUInt64)
NNFUSE_DTYPE_OF(bool, DType::kBool)
#undef NNFUSE_DTYPE_OF

}  // namespace nnfuse
