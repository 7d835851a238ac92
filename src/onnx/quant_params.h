// The quantization parameters a model states, checked at import where they are constants: every
// scale positive and finite (a zero scale divides by zero, a negative one flips the order of the
// values), scales and zero points of one length, a per-axis length equal to the input's dim on
// its axis (or to the weights' output channels, a product's rows or columns), and a 32-bit
// DequantizeLinear's zero point 0 (ONNX states no other), and a MatMulNBits's geometry (bits,
// a block size that is a power of two, B, scales and zero points of the lengths its K, N and
// block size give). A model breaking one is refused,
// naming the node, instead of running to numbers that mean nothing.
#pragma once

#include <string>

#include "ir/graph.h"

namespace nnfuse {

// Fails (kInvalidModel, naming `label` and the node) at the first parameter out of its range.
void check_quantization_params(const Graph& g, const std::string& label);

}  // namespace nnfuse
