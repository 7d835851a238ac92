// MatMulNBits's weights (ops/quant.h): the geometry its attributes and inputs state, checked,
// and the dequantization of one column of W, shared by the reference kernel and the CPU one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace nnfuse::ref {

struct NBits {
  int64_t k = 0, n = 0, bits = 4, block = 0;
  int64_t blocks = 0;    // ceil(k / block)
  int64_t blob = 0;      // bytes per block: block * bits / 8
  int64_t zero_row = 0;  // bytes of packed zero points per column: ceil(blocks * bits / 8)
};

// The geometry of `node`, or why it is not one nnfuse runs ("" when it is): bits 2, 4 or 8,
// block_size a power of two of at least 16, K and N positive, no g_idx, and the shapes of B,
// scales, zero points and bias (as far as `shape_of(input)` knows them) matching.
std::string nbits_geometry(const Node& node,
                           const std::function<std::optional<Dims>(size_t)>& shape_of, NBits* g);
// The same with the shapes the node's input values have statically (at load, when planning).
std::string nbits_geometry(const Node& node, NBits* g);

// Where the zero points come from.
struct NBitsZeros {
  const uint8_t* packed = nullptr;  // uint8 zero points, packed per column
  const float* real = nullptr;      // float zero points, one per block
};

// The zero point of block j of column `col`, as a float.
inline float nbits_zero(const NBits& g, const NBitsZeros& zeros, int64_t col, int64_t j) {
  if (zeros.packed) {
    const int64_t bit = j * g.bits;
    return static_cast<float>((zeros.packed[col * g.zero_row + bit / 8] >> (bit % 8)) &
                              ((1 << g.bits) - 1));
  }
  if (zeros.real) return zeros.real[col * g.blocks + j];
  return static_cast<float>(1 << (g.bits - 1));
}

// Column `col` of W (K floats): (code - zero point) * scale, in float32 as ONNX Runtime's
// kernels dequantize, the zero point 2^(bits - 1) when none is given.
void dequantize_nbits_column(const NBits& g, int64_t col, const uint8_t* b, const float* scales,
                             const NBitsZeros& zeros, float* out);

}  // namespace nnfuse::ref
