// Convolutional blocks as single ops of nnfuse's domain:
//   ExpandDepthwise(X, W1, B1?, W2, B2?) = FusedConv(FusedConv(X, W1, B1), W2, B2): a convolution
//     (the "expansion", C -> E channels: an inverted residual's 1x1 expansion, or a stem conv)
//     and the depthwise k x k convolution reading it, each with its FusedConv attributes under a
//     prefix ("expand_", "depthwise_"); the expanded tensor never leaves the kernel.
//   SqueezeExcite(X, W1, B1?, W2, B2?) = FusedConv(FusedConv(GlobalAveragePool(X), W1, B1), W2,
//   B2):
//     a squeeze-and-excitation block's scale [N, C2, 1, 1] (attributes prefixed "squeeze_" and
//     "excite_"); with apply = 1 (C2 == C), X times that scale, of X's shape.
//   ScaleShift(X, Scale, Shift, X2, ..., Xn) = act(x * Scale[c] + Shift[c]) over dim 1: an
//     inference BatchNormalization folded into two vectors, with a Relu, LeakyRelu or Clip; inputs
//     from 3 on are further parts of X, which is then their concatenation along dim 1.
#pragma once

#include "ops/activation.h"
#include "ops/window.h"

namespace nnfuse::ops {

// A convolution inside a fused block: its Conv attributes and activation (a Conv's: none).
struct ConvPart {
  ConvAttrs conv = {};
  Activation act = {};
  // A Conv's or FusedConv's (n), or a fused node's part under `prefix`.
  static ConvPart of(const Node& n, const std::string& prefix = "");
  void write(Attrs& attrs, const std::string& prefix) const;
};

namespace expand_depthwise {
inline constexpr size_t kX = 0, kExpandW = 1, kExpandB = 2, kDepthwiseW = 3, kDepthwiseB = 4;
inline constexpr char kExpandPrefix[] = "expand_";
inline constexpr char kDepthwisePrefix[] = "depthwise_";
// "" when a convolution's attributes are an expansion's the op takes (the rule asks this of the
// Conv it fuses, the kernels of the fused node's part): ungrouped, undilated, explicit pads (not
// auto_pad), four of them non-negative, two positive strides; else why not.
std::string expansion_attrs_reason(const Node& conv);
// "" when a depthwise convolution (`dw`: a Conv, FusedConv or the depthwise part's node, with a
// weight of dims `w`, [E, 1, kh, kw]) has the geometry the op computes: 3x3 or 5x5, both strides
// 1 or both 2, padding k / 2 on every side, undilated, not auto-padded; else why not. The fusion
// pass fuses only blocks of this geometry, so none falls to the reference kernel.
std::string fast_depthwise_reason(const Node& dw, const Dims& w);
}  // namespace expand_depthwise
namespace squeeze_excite {
inline constexpr size_t kX = 0, kSqueezeW = 1, kSqueezeB = 2, kExciteW = 3, kExciteB = 4;
inline constexpr char kSqueezePrefix[] = "squeeze_";
inline constexpr char kExcitePrefix[] = "excite_";
// Whether the node's output is X times the scale (attribute apply = 1).
inline bool applies(const Node& n) { return n.attr_int("apply", 0) == 1; }
}  // namespace squeeze_excite
namespace scale_shift {
inline constexpr size_t kX = 0, kScale = 1, kShift = 2, kFirstPart = 3;
}

struct ExpandDepthwise {
  Value* x = nullptr;
  Value* w1 = nullptr;
  Value* b1 = nullptr;
  Value* w2 = nullptr;
  Value* b2 = nullptr;
  ConvPart expand = {}, depthwise = {};
  NodeSpec spec() const;
};

struct SqueezeExcite {
  Value* x = nullptr;
  Value* w1 = nullptr;
  Value* b1 = nullptr;
  Value* w2 = nullptr;
  Value* b2 = nullptr;
  ConvPart squeeze = {}, excite = {};
  bool apply = false;
  // A SqueezeExcite node's values and attributes.
  static SqueezeExcite of(const Node& n);
  NodeSpec spec() const;
};

struct ScaleShift {
  Value* x = nullptr;
  Value* scale = nullptr;
  Value* shift = nullptr;
  std::vector<Value*> more_parts;  // X2, ..., Xn: X is the concatenation of X and these
  Activation act = {};
  NodeSpec spec() const;
};

void append_conv_block_defs(std::vector<OpDef>& t);

}  // namespace nnfuse::ops
