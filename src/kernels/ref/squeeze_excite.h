// SqueezeExcite (ai.nnfuse): a squeeze-and-excitation block's scale, from the feature map to
// one value per channel, in one kernel:
//   SqueezeExcite(X, W1, B1?, W2, B2?) = FusedConv(FusedConv(GlobalAveragePool(X), W1, B1), W2, B2)
// Both convolutions are ungrouped, unpadded 1x1s on the pooled [N, C, 1, 1]: two products of one
// row per image. Each carries its FusedConv attributes (activation, activation_alpha,
// activation_beta and the Conv's own) with a prefix: "squeeze_" for the first (C -> C1, Relu or
// SiLU in torchvision's blocks), "excite_" for the second (C1 -> C2, Sigmoid or HardSigmoid).
// The output is [N, C2, 1, 1]; or, with the attribute apply = 1 (C2 == C), X times that scale,
// X's shape: the block's Mul in the same kernel, SqueezeExcite(X, ...) * X.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"
#include "ops/conv_blocks.h"

namespace nnfuse::ref {

// The op's attribute prefixes and input positions (ops/conv_blocks.h).
inline constexpr const char* kSqueezeAttrPrefix = ops::squeeze_excite::kSqueezePrefix;
inline constexpr const char* kExciteAttrPrefix = ops::squeeze_excite::kExcitePrefix;
inline constexpr size_t kSqueezeWeight = ops::squeeze_excite::kSqueezeW;  // W1; B1 follows
inline constexpr size_t kExciteWeight = ops::squeeze_excite::kExciteW;    // W2; B2 follows
inline constexpr char kApplyAttr[] = "apply";
inline bool squeeze_excite_applies(const Node& n) { return ops::squeeze_excite::applies(n); }

// A one-node graph holding one convolution of `fused` as a FusedConv: its attributes without
// the prefix, reading values named, typed and shaped as the fused node's (the pooled or squeezed
// input [N, C, 1, 1], then that part's weight and bias; constants are not copied) and writing
// [N, out, 1, 1]. `excite` picks the second convolution. What the kernels read the parts'
// activations from, and what the ONNX Runtime export writes.
struct SqueezeExcitePart {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};
SqueezeExcitePart squeeze_excite_part(const Node& fused, bool excite);

// "" when `fused` is a SqueezeExcite its kernels can run: float32, a 4-D X, 4-D 1x1 weights whose
// channels chain (C -> C1 -> C2), biases of one value per output, ungrouped unpadded parts with
// known activations; else why not.
std::string squeeze_excite_reason(const Node& fused);

}  // namespace nnfuse::ref
