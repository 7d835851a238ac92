// What nnfuse knows of ONNX's own ops beyond their schemas (libonnx defines them): the class
// automatic fusion groups them by, whether each is a compute op (`--strict`), whether it is
// expensive per element, and the FLOPs of the products.
#pragma once

#include "ops/def.h"
#include "ops/window.h"

namespace nnfuse::ops {

// Typed builders of the ONNX ops fusion rules write (a Conv with folded weights, a pool with a
// Pad folded into its pads, views and gathers).
struct Conv {
  Value* x = nullptr;
  Value* w = nullptr;
  Value* b = nullptr;
  ConvAttrs conv = {};
  NodeSpec spec() const;
};
struct Pool {
  Op op = Op::kMaxPool;  // MaxPool or AveragePool
  Value* x = nullptr;
  PoolAttrs pool = {};
  NodeSpec spec() const;
};
struct Gather {
  Value* data = nullptr;
  Value* indices = nullptr;
  int64_t axis = 0;
  NodeSpec spec() const;
};
struct Transpose {
  Value* x = nullptr;
  std::optional<Dims> perm = {};  // unset: reversed
  // A Transpose node's input and perm.
  static Transpose of(const Node& n);
  NodeSpec spec() const;
};
// A Reduce* node: its axes an input (`axes`, from opset 13 for ReduceSum, 18 for the others) or
// the attribute (`axes_attr`, before).
struct Reduce {
  Op op = Op::kReduceSum;
  Value* x = nullptr;
  Value* axes = nullptr;
  std::optional<Dims> axes_attr = {};
  std::optional<int64_t> keepdims = {};
  NodeSpec spec() const;
};
struct Reshape {
  Value* x = nullptr;
  Value* shape = nullptr;
  NodeSpec spec() const;
};

// The traits of an op of ONNX's default domain, or nullptr where nnfuse lists none (then it is
// opaque, not a compute op).
const OpTraits* onnx_traits(Op op);

}  // namespace nnfuse::ops
