// ExpandDepthwise (ai.nnfuse): a convolution and the depthwise convolution after it, in one
// kernel:
//   ExpandDepthwise(X, W1, B1?, W2, B2?) = FusedConv(FusedConv(X, W1, B1), W2, B2)
// The first convolution (the "expansion", C -> E channels) is ungrouped and undilated, with
// explicit pads and any strides: an inverted residual's 1x1 expansion, or a network's stem (a
// 3x3 conv of stride 2 over the image) before its first depthwise conv. The second is a
// depthwise k x k (group = E, W2 [E, 1, k, k]), with any stride and symmetric padding. Each
// carries its FusedConv attributes (activation, activation_alpha, activation_beta and the Conv's
// own) with a prefix: "expand_" for the first, "depthwise_" for the second. The output is the
// depthwise convolution's [N, E, H', W']. The expanded [N, E, He, We] tensor (six times X in
// MobileNetV2's blocks) never leaves the kernel: it is computed a few rows ahead of the
// depthwise convolution that reads it.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"
#include "ops/conv_blocks.h"

namespace nnfuse::ref {

// The op's attribute prefixes and input positions (ops/conv_blocks.h).
inline constexpr const char* kExpandAttrPrefix = ops::expand_depthwise::kExpandPrefix;
inline constexpr const char* kDepthwiseAttrPrefix = ops::expand_depthwise::kDepthwisePrefix;
inline constexpr size_t kExpandWeight = ops::expand_depthwise::kExpandW;        // W1; B1 follows
inline constexpr size_t kDepthwiseWeight = ops::expand_depthwise::kDepthwiseW;  // W2; B2 follows

// A one-node graph holding one convolution of `fused` as a FusedConv: its attributes without the
// prefix, reading values named, typed and shaped as the fused node's (X or the expanded tensor,
// then that part's weight and bias; constants are not copied) and writing the expanded tensor or
// the fused node's output. What the kernels read the parts' geometry and activations from, and
// what the ONNX Runtime export writes.
struct ExpandDepthwisePart {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};
ExpandDepthwisePart expand_depthwise_part(const Node& fused, bool depthwise);

// "" when `fused` is an ExpandDepthwise its kernels can run: float32, a 4-D X, an expansion
// weight [E, C, kh, kw] and a depthwise weight [E, 1, k, k], biases of one value per output, the
// expansion ungrouped and undilated with explicit pads, the depthwise conv grouped by E and
// undilated, known activations; else why not.
std::string expand_depthwise_reason(const Node& fused);

// The geometry the op takes (ops/conv_blocks.h).
using ops::expand_depthwise::expansion_attrs_reason;
using ops::expand_depthwise::fast_depthwise_reason;

}  // namespace nnfuse::ref
