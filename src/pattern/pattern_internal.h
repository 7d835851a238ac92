// The representation behind Pat handles, shared by the DSL builders and the matcher.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pattern/pattern.h"

namespace nnfuse::pattern {

struct ValueCheck {
  std::function<bool(const Value&)> pred;
  std::string why;
  // Optional detail for the rejection reason ("it has rank 3").
  std::function<std::string(const Value&)> detail;
};

struct NodeCheck {
  std::function<bool(const Node&)> pred;
  std::string why;
};

struct PatNode {
  enum class Kind { kAny, kConstant, kScalar, kOp, kAnyOf, kThrough, kNative, kTree, kOptional };
  Kind kind = Kind::kAny;
  std::string name;

  float value = 0;  // kScalar
  float tol = 0;

  std::string op_type;      // kOp, kTree: its name, for reasons
  std::string domain;       // kOp: "" is the default ONNX domain
  Op op = Op::kUnknown;     // kOp, kTree: the op matched (of that domain)
  std::vector<Pat> inputs;  // kOp: inputs; kAnyOf: alternatives; kThrough, kTree: the inner one
  bool exact_inputs = true;
  int output = 0;

  std::set<Op> pass_ops;  // kThrough

  std::function<std::string(Value*, NativeResult&)> native;  // kNative

  std::vector<ValueCheck> value_checks;
  std::vector<NodeCheck> node_checks;

  // Pat::where and friends return copies; a copy binds as the node it was copied from, so
  // `x` and `x.rank(4)` in one pattern are the same variable.
  std::shared_ptr<const PatNode> origin;
  const PatNode* identity() const { return origin ? origin.get() : this; }
};

// True for ops whose two inputs may be swapped (the op's traits, ops/def.h).
bool is_commutative(Op op);

// Element i of a numeric tensor as double; nullopt for strings, complex and the like.
std::optional<double> element(const Tensor& t, int64_t i);

}  // namespace nnfuse::pattern
