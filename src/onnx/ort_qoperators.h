// ONNX Runtime's quantized operators (domain com.microsoft, as its quantize_static writes the
// QOperator form and its quantize_dynamic its fused dense layers) imported as the standard ONNX
// ops that state the same arithmetic: each becomes DequantizeLinear on its 8-bit inputs, the float
// op, and QuantizeLinear to its output's scale and zero point (QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool,
// QGemm), or the dynamic form ONNX writes (DynamicQuantizeMatMul, MatMulIntegerToFloat), and
// com.microsoft's QuantizeLinear/DequantizeLinear are the default domain's. MatMulNBits, a
// weight-only quantized dense layer, becomes nnfuse's op of the same name (ops/quant.h). The graph
// is then one quantized form, the QDQ one, and every quantization fusion applies to both.
#pragma once

#include <string>

#include "ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace nnfuse {

// Rewrites the com.microsoft quantized nodes of `m`'s graph in place, before shape inference.
// Returns the number of nodes rewritten; fails naming the node when one is given in a form the
// rewrite cannot state (an 8-bit output whose type no input names).
size_t lower_ort_quantized_ops(onnx::ModelProto& m, const std::string& label);

// MaxPool over an 8-bit tensor (ONNX allows it from opset 12) as DequantizeLinear with scale 1
// and zero point 0, MaxPool in float32, and QuantizeLinear back: exact, since every 8-bit value
// is a float32 and the maximum picks one of them. Returns the number of nodes rewritten.
size_t lower_8bit_max_pool(Graph& g);

}  // namespace nnfuse
