// FusedConvPool (ai.nnfuse) = MaxPool(FusedConv(X, W, B?, Sum?)). The node carries FusedConv's
// attributes as they are and MaxPool's with the prefix "pool_" (pool_kernel_shape,
// pool_strides, pool_pads, pool_dilations, pool_ceil_mode, pool_auto_pad).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"

namespace nnfuse::ref {

inline constexpr char kPoolAttrPrefix[] = "pool_";

// The attributes of `fused` named `prefix`..., without the prefix: those of a part of a fused
// node (the pool of FusedConvPool, the skip convolution of FusedConv, conv_skip.h).
std::map<std::string, Attribute> part_attrs(const Node& fused, const std::string& prefix);

// A one-node graph holding the MaxPool part of `fused` (its pool_ attributes without the
// prefix), reading a value of `conv_shape` and writing one of unknown shape: what the pool
// kernels take to compute geometry and run.
struct PoolPart {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};
PoolPart pool_part(const Node& fused, const Dims& conv_shape);

}  // namespace nnfuse::ref
