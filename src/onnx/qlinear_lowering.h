// QLinearConv and QLinearMatMul imported as the QDQ form that states the same arithmetic:
//   QLinearConv(x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, B)
//     == QuantizeLinear(Conv(DequantizeLinear(x), DequantizeLinear(w, axis 0),
//                            Cast<float>(B) * x_scale * w_scale), y_scale, y_zero)
//   QLinearMatMul(a, ..., b, ..., y_scale, y_zero)
//     == QuantizeLinear(MatMul(DequantizeLinear(a), DequantizeLinear(b, last axis)), ...)
// as ONNX Runtime's QOperator ops are (ort_qoperators.h), so the quantization fusions serve the
// QOperator form too: the conv runs on the float kernels with the quantization as its epilogue
// (ConvQuantizeFusionPass). Each output then lies within one quantization step of the integer
// arithmetic (a float sum in another order can cross a rounding boundary), the bound `verify`
// states. No exact integer kernel here beats the float32 one: without VNNI the exact 16-bit
// multiply-add runs at the float32 FMA rate, and the integer conv gathers and requantizes besides
// (docs/supported-ops.md, Quantized models).
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace nnfuse {

// Rewrites every QLinearConv and QLinearMatMul of `g` with its required inputs present and a
// scale of `a` that is one value (QLinearMatMul); returns the number rewritten. Runs after the
// quantization parameters were checked (quant_params.h), so the refusals name the original node.
size_t lower_qlinear_ops(Graph& g);

}  // namespace nnfuse
