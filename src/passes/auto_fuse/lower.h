// Lowering a set of graph nodes (an automatic-fusion region or a user rule's chain) to the
// code generator's region (codegen/codegen.h): each ONNX op becomes a few codegen ops, scalar
// constants become literals, every other value the nodes read becomes a region input.
//
// Lowerable ops: Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean (n-ary), Relu, Neg, Abs, Exp,
// Log, Sqrt, Tanh, Sigmoid, Erf, Reciprocal, Softplus, LeakyRelu, HardSigmoid, HardSwish, Clip
// (constant bounds), Identity, and ReduceSum/ReduceMean/ReduceMax/ReduceMin over the last axis
// (at most one), all on float32 values of static shape.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "codegen/codegen.h"
#include "ir/graph.h"

namespace nnfuse {

struct LoweredRegion {
  codegen::Region region;
  std::vector<Value*> inputs;  // the graph value behind each region input
  Value* output = nullptr;     // the root's output: the region's value
};

// True when the op (default domain) has a lowering at all; user rules may name only these.
bool lowerable_op(Op op);
// The lowerable op types, sorted (for error messages).
const std::vector<std::string>& lowerable_op_types();

// True for a value lowering writes as a literal (a float32 scalar constant), not an input.
bool becomes_literal(const Value& v);

// Why `node` cannot be part of a generated kernel ("" when it can): op type and domain,
// float32 static shapes, constant attributes-as-inputs, last-axis reductions.
std::string lowering_blocker(const Node& node, int64_t opset);

// Lowers `nodes` (topological order; the last is the root, whose single output is the only
// value used outside the set) or returns why it cannot.
std::variant<LoweredRegion, std::string> lower_region(const std::vector<Node*>& nodes,
                                                      int64_t opset);

}  // namespace nnfuse
