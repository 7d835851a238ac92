// Helpers the quantized kernels share (cpu_quantize.cc, cpu_quant_matmul.cc, cpu_quant_conv.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {

// The 8-bit quantized types.
inline bool is_q8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

// A zero point (or other integer parameter) as the int32 values it holds.
inline std::vector<int32_t> int_values(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    v[static_cast<size_t>(i)] = static_cast<int32_t>(t.int_at(i));
  }
  return v;
}

// Whether input i is known at plan time to hold one value.
inline bool known_one_value(const NodeInfo& info, size_t i) {
  const std::optional<Dims> d = info.input_shape(i);
  return d && numel_of(*d, 0, d->size()) == 1;
}

}  // namespace nnfuse::cpu
