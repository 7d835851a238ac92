// FusedConvPool (ai.nnfuse) = MaxPool(FusedConv(X, W, B?, Sum?)). The node carries FusedConv's
// attributes as they are and MaxPool's with the prefix "pool_" (pool_kernel_shape,
// pool_strides, pool_pads, pool_dilations, pool_ceil_mode, pool_auto_pad).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "kernels/ref/ref_kernels.h"
#include "ops/conv.h"

namespace nnfuse::ref {

inline constexpr const char* kPoolAttrPrefix = ops::fused_conv_pool::kPoolPrefix;

// The attributes of `fused` named `prefix`..., without the prefix: those of a part of a fused
// node (the pool of FusedConvPool, the skip convolution of FusedConv, conv_skip.h).
std::map<std::string, Attribute> part_attrs(const Node& fused, const std::string& prefix);

// The inputs of a convolution part graph (a one-node FusedConv of a fused node's part): `x`,
// then values named, typed and shaped as the fused node's inputs `first` and `first` + 1 (the
// part's weight and bias; omitted ones as nullptr, trailing ones dropped), added to `g` as its
// inputs. Constants are not copied.
std::vector<Value*> conv_part_inputs(Graph& g, Value* x, const Node& fused, size_t first);

// Runs the FusedConv reference kernel of `part` (made with conv_part_inputs) on `x` and the
// fused kernel's inputs `first` and `first` + 1.
Tensor run_conv_part(const KernelContext& ctx, const Node& part, const Tensor& x, size_t first);

// A one-node graph holding the MaxPool part of `fused` (its pool_ attributes without the
// prefix), reading a value of `conv_shape` and writing one of unknown shape: what the pool
// kernels take to compute geometry and run.
struct PoolPart {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};
PoolPart pool_part(const Node& fused, const Dims& conv_shape);

}  // namespace nnfuse::ref
