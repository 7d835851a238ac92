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

namespace nnfuse::ref {

inline constexpr char kSkipAttrPrefix[] = "skip_";
inline constexpr size_t kSkipInput = 4;  // X2; W2 and B2 follow

// True when `fused` (a FusedConv) computes its residual with a second convolution.
inline bool has_skip_conv(const Node& fused) {
  return fused.num_inputs() > kSkipInput && fused.input(kSkipInput) != nullptr;
}

// A one-node graph holding the second convolution of `fused`: a Conv with its skip_ attributes
// (without the prefix), reading values of the shapes and types of inputs 4 to 6 (constants
// are not copied) and writing one of the fused node's output type and shape: what the conv
// kernels take to compute geometry and run.
struct SkipPart {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};
SkipPart skip_part(const Node& fused);

// The skip_ attributes of a Conv node (for a rewrite building the fused node).
void add_skip_attrs(const Node& conv, std::map<std::string, Attribute>& attrs);

}  // namespace nnfuse::ref
