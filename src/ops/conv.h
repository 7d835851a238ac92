// The convolution ops of nnfuse's domain, run by the conv kernels as oneDNN post-ops or the
// project's own kernels:
//   FusedConv(X, W, B?, Sum?)           = act(Conv(X, W, B) [+ Sum])
//   FusedConv(X, W, B?, -, X2, W2, B2?) = act(Conv(X, W, B) + Conv(X2, W2, B2)): the residual a
//                                         second convolution computes (a ResBlock's projected
//                                         skip connection), its attributes prefixed "skip_"
//   ScaledConv(X, S, W, B?, Sum?)       = act(Conv(X * S, W, B) [+ Sum]), S [N or 1, C, 1, 1]
//   FusedConvSplit(X, W, B?)            = Split(act(Conv(X, W, B)), axis 1, split): the outputs
//                                         of convolutions of one X side by side
//   FusedConvPool(X, W, B?, Sum?)       = MaxPool(FusedConv(X, W, B, Sum)), the pool's attributes
//                                         prefixed "pool_"
// Each carries the Conv's own attributes as the model had them and the epilogue activation
// (ops/activation.h). The residual Sum has the convolution's output shape.
#pragma once

#include <optional>

#include "ops/activation.h"
#include "ops/window.h"

namespace nnfuse::ops {

// Input positions.
namespace fused_conv {
inline constexpr size_t kX = 0, kW = 1, kB = 2, kSum = 3, kSkipX = 4, kSkipW = 5, kSkipB = 6;
inline constexpr char kSkipPrefix[] = "skip_";
// True when the FusedConv computes its residual with a second convolution.
inline bool has_skip_conv(const Node& n) { return n.num_inputs() > kSkipX && n.input(kSkipX); }
}  // namespace fused_conv
namespace scaled_conv {
inline constexpr size_t kX = 0, kScale = 1, kW = 2, kB = 3, kSum = 4;
}
namespace fused_conv_pool {
inline constexpr char kPoolPrefix[] = "pool_";
}

struct FusedConv {
  Value* x = nullptr;
  Value* w = nullptr;
  Value* b = nullptr;
  Value* sum = nullptr;
  ConvAttrs conv = {};
  Activation act = {};
  // The skip convolution computing the residual (then `sum` is absent).
  struct Skip {
    Value* x = nullptr;
    Value* w = nullptr;
    Value* b = nullptr;
    ConvAttrs conv = {};
  };
  std::optional<Skip> skip = {};

  // A FusedConv node's values and attributes (to rebuild it changed), or a Conv's (no
  // activation).
  static FusedConv of(const Node& n);
  NodeSpec spec() const;
};

struct ScaledConv {
  Value* x = nullptr;
  Value* scale = nullptr;
  Value* w = nullptr;
  Value* b = nullptr;
  Value* sum = nullptr;
  ConvAttrs conv = {};
  Activation act = {};
  NodeSpec spec() const;
};

struct FusedConvSplit {
  Value* x = nullptr;
  Value* w = nullptr;
  Value* b = nullptr;
  ConvAttrs conv = {};
  Activation act = {};
  Dims split = {};  // output channels per output
  NodeSpec spec() const;
};

struct FusedConvPool {
  FusedConv conv = {};  // no skip convolution
  PoolAttrs pool = {};
  NodeSpec spec() const;
};

// The pool part's attributes of a FusedConvPool.
inline PoolAttrs pool_of(const Node& fused) {
  return PoolAttrs::of(fused, fused_conv_pool::kPoolPrefix);
}

void append_conv_defs(std::vector<OpDef>& t);

// FLOPs of a convolution of node `n` whose weight is input `w_at` (ONNX's Conv and
// ConvTranspose too: ops/onnx_ops.cc).
int64_t conv_flops(const Node& n, size_t w_at);

}  // namespace nnfuse::ops
