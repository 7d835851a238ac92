// Op classes for automatic fusion, as TVM's OpPattern: what an op's data access looks like
// decides which neighbours it may share a generated kernel with. The grouping (grouping.h)
// puts elementwise, broadcast, injective and last-axis reduction ops into regions;
// out-elementwise-fusable ops (Conv, MatMul...) and opaque ops bound them.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace nnfuse {

enum class OpClass {
  kElementwise,        // output[i] = f(input[i]...), all inputs of the output's shape
  kBroadcast,          // elementwise whose operands broadcast (or whose shapes are not known)
  kInjective,          // each output element is one input element: Reshape, Transpose, Slice...
  kReduction,          // Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax (row reductions)
  kOutEltwiseFusable,  // Conv, ConvTranspose, MatMul, Gemm, pools, the ai.nnfuse Fused* ops
  kOpaque,             // anything else (norm kernels, data-dependent shapes, control flow...)
};

// "elementwise", "broadcast", "injective", "reduction", "out_eltwise_fusable", "opaque".
const char* op_class_name(OpClass c);

// The class of a node, from its op type and domain ("" and "ai.onnx" are ONNX, kFusedDomain is
// nnfuse's) and, for the n-ary elementwise ops, its inputs' static shapes: kElementwise when
// every input has the same fully known shape, kBroadcast otherwise. Unknown ops (and known op
// types in another domain) are kOpaque.
OpClass op_class(const Node& node);

// True when the class table names (op_type, domain) itself rather than defaulting to
// kOpaque; a test keeps every op with a reference kernel listed.
bool op_class_listed(const std::string& op_type, const std::string& domain);

// True for a kReduction node that reduces exactly the last axis of its (statically ranked)
// first input: Reduce* with axes {-1} (attribute or constant input), ArgMax/ArgMin with
// axis -1, Softmax/LogSoftmax/Hardmax along the last axis (before opset 13 they work on the
// input coerced to 2-D at `axis`, so only axis == rank - 1 is a last-axis reduction).
// `opset` is the default-domain opset of the graph.
bool is_last_axis_reduction(const Node& node, int64_t opset);

}  // namespace nnfuse
