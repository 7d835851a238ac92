// A FusedConv's residual computed by a second convolution in the same kernel (a ResBlock's
// projected skip connection):
//   FusedConv(X, W, B?, -, X2, W2, B2?) = act(Conv(X, W, B) + Conv(X2, W2, B2))
// Inputs 4 to 6 are the second convolution's; it carries its attributes with the prefix "skip_"
// (skip_strides, skip_pads, skip_dilations, skip_group, skip_kernel_shape, skip_auto_pad), and
// its output has the first convolution's shape. Input 3 (Sum) is then absent.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "ops/conv.h"

namespace nnfuse::ref {

// The op's attribute prefix and input positions (ops/conv.h).
inline constexpr const char* kSkipAttrPrefix = ops::fused_conv::kSkipPrefix;
inline constexpr size_t kSkipInput = ops::fused_conv::kSkipX;  // X2; W2 and B2 follow
using ops::fused_conv::has_skip_conv;

// A one-node graph holding the second convolution of `fused`: a Conv with its skip_ attributes
// (without the prefix), reading values of the shapes and types of inputs 4 to 6 (constants
// are not copied) and writing one of the fused node's output type and shape: what the conv
// kernels take to compute geometry and run.
struct SkipPart {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};
SkipPart skip_part(const Node& fused);

}  // namespace nnfuse::ref
