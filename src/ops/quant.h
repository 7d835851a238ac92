// nnfuse's quantized ops (nnfuse's domain):
//
//   MatMulIntegerToFloat(A, B, A_scale, B_scale, A_zero_point?, B_zero_point?, Bias?) -> Y
//       Y = act(float32(MatMulInteger(A, B, A_zero_point, B_zero_point)) * (A_scale * B_scale)
//               [+ Bias])
//     A dynamically quantized dense layer as ONNX Runtime's quantize_dynamic writes it
//     (MatMulInteger, Cast to float, Mul by the product of the scales, the bias Add), in one
//     kernel: the integer product, then the dequantization and the bias as it is stored. Every
//     step is the graph's own float32 arithmetic in its order (the int32 sum rounded to float32,
//     the scales' product in float32, one product, one sum), so the fused node computes the
//     unfused graph's numbers exactly. A and B are int8 or uint8 (B a constant [K, N]);
//     A_scale and A_zero_point are single values; B_scale and B_zero_point one value or one per
//     column of B; Bias one value per column. The epilogue activation (ops/activation.h), when
//     there is one, is applied last, as the fused dense layers apply theirs.
//
//   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?; K, N, bits, block_size) -> Y
//       Y = A x W^T [+ bias], W [N, K] with W[n, k] = (code(n, k) - zero(n, k / block_size))
//                                                    * scales[n, k / block_size]
//     ONNX Runtime's weight-only quantized dense layer (com.microsoft MatMulNBits, as its
//     MatMulNBitsQuantizer writes LLMs' layers), imported as nnfuse's op of the same inputs and
//     attributes: B is uint8 [N, ceil(K / block_size), block_size * bits / 8], the codes of
//     each block packed low bits first; scales [N, blocks] (or flat); zero_points absent (then
//     2^(bits - 1)), uint8 packed the same way per row, or float like scales. The weights stay
//     packed: the kernel dequantizes them as it reads them (kernels/ref/matmul_nbits.h).
#pragma once

#include "ops/activation.h"
#include "ops/def.h"

namespace nnfuse::ops {

namespace matmul_integer_to_float {
inline constexpr size_t kA = 0, kB = 1, kAScale = 2, kBScale = 3, kAZero = 4, kBZero = 5, kBias = 6;
}

namespace matmul_nbits {
inline constexpr size_t kA = 0, kB = 1, kScales = 2, kZeroPoints = 3, kGIdx = 4, kBias = 5;
}

struct MatMulIntegerToFloat {
  Value* a = nullptr;
  Value* b = nullptr;
  Value* a_scale = nullptr;
  Value* b_scale = nullptr;
  Value* a_zero = nullptr;  // optional
  Value* b_zero = nullptr;  // optional
  Value* bias = nullptr;    // optional
  Activation act = {};
  NodeSpec spec() const;
};

void append_quant_defs(std::vector<OpDef>& t);

}  // namespace nnfuse::ops
