// FusedConvPool (ai.nnfuse) = MaxPool(FusedConv(X, W, B?, Sum?)). The node carries FusedConv's
// attributes as they are and MaxPool's with the prefix "pool_" (pool_kernel_shape,
// pool_strides, pool_pads, pool_dilations, pool_ceil_mode, pool_auto_pad).
#pragma once

#include <memory>

#include "ir/graph.h"

namespace nnfuse::ref {

inline constexpr char kPoolAttrPrefix[] = "pool_";

// A one-node graph holding the MaxPool part of `fused` (its pool_ attributes without the
// prefix), reading a value of `conv_shape` and writing one of unknown shape: what the pool
// kernels take to compute geometry and run.
struct PoolPart {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};
PoolPart pool_part(const Node& fused, const Dims& conv_shape);

}  // namespace nnfuse::ref
