// The pattern DSL and matcher. A pattern is a small DAG written declaratively; the matcher
// walks the graph. For example, GELU's erf form:
//
//   Pat x = any("x");
//   Pat gelu = x * 0.5f * (erf(any_of({x / kSqrt2, x * kInvSqrt2})) + 1.0f);
//
// matches x * 0.5 * (1 + erf(x / sqrt(2))) with either operand order of each Mul and Add
// (commutative ops are tried both ways), either spelling of the division, and the same value
// bound to every use of `x` (a DAG, not a tree).
#pragma once

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse::pattern {

struct PatNode;
class Match;

// A handle to a pattern node. Cheap to copy; patterns share sub-patterns.
class Pat {
 public:
  Pat() = default;
  explicit Pat(std::shared_ptr<PatNode> n) : n_(std::move(n)) {}
  PatNode* get() const { return n_.get(); }
  bool valid() const { return n_ != nullptr; }

  // Constraints, checked when the pattern node binds a value. Each returns a copy of the
  // pattern with the constraint added; `why` names the constraint in rejection reasons.
  Pat where(std::function<bool(const Value&)> pred, std::string why) const;
  // Constraint on the producing node (attributes, number of inputs...).
  Pat where_node(std::function<bool(const Node&)> pred, std::string why) const;
  Pat dtype(DType t) const;
  Pat rank(int64_t r) const;
  // Give the pattern node a name (for Match lookups by name and in reasons).
  Pat named(std::string name) const;

 private:
  std::shared_ptr<PatNode> n_;
};

// Leaves.
Pat any(std::string name = "");       // any value
Pat constant(std::string name = "");  // a value known when compiling (initializer or Constant)
// A constant whose elements all equal v within tol (|x - v| <= tol * max(1, |v|)).
Pat scalar(float v, float tol = 1e-5f, std::string name = "");

// A node of `op_type` (default domain) whose first inputs match `inputs` in order. Extra
// inputs of the node beyond those listed are allowed only when `exact_inputs` is false.
// Commutative ops (Add, Mul, Max, Min, Sum, Equal, And, Or, Xor) with two inputs are tried
// in both orders. Output 0 of the node is the matched value unless `output` says otherwise.
Pat op(const std::string& op_type, std::vector<Pat> inputs, bool exact_inputs = true,
       int output = 0);
// Like op() but the node may have any inputs at all (only the op type is checked).
Pat op_any_inputs(const std::string& op_type);
// Like op() for a node of another domain (e.g. nnfuse's fused ops in "ai.nnfuse").
Pat op_in(const std::string& domain, const std::string& op_type, std::vector<Pat> inputs,
          bool exact_inputs = true, int output = 0);
// The first alternative that matches wins.
Pat any_of(std::vector<Pat> alternatives);
// `p`, possibly behind a chain of pass-through ops (default: Cast, Identity): "the same value
// through any of these". An op passes on its first input when its other inputs are constants
// (a Reshape to a constant shape, an Unsqueeze of constant axes); a Cast only when it keeps the
// element type (a float->float Cast).
Pat through(Pat p, std::set<std::string> ops = {"Cast", "Identity"});
// An optional input of an op pattern: matches an omitted input (binding nothing: Match
// returns nullptr for its names) or one that matches `p`. Trailing optional inputs may be
// missing from the node altogether.
Pat optional(Pat p);
// A pattern node matched by C++ code (a native constraint): `fn` looks at the value and, when
// it matches, returns "" with `out` filled (the nodes it covers, which join the match's nodes,
// and whatever the rewrite reads back with Match::native), else the reason it does not match.
struct NativeResult {
  std::vector<Node*> nodes;
  std::any data;
};
Pat native(std::string name, std::function<std::string(Value*, NativeResult&)> fn);
// A repeated sub-pattern: a tree of `op_type` nodes (default domain, two inputs each, any shape
// of tree) whose every leaf matches `leaf` on its own (each leaf binds its own names). The
// leaves' matches, left to right, are Match::repeats(name); the tree's nodes join the match.
Pat tree(std::string name, const std::string& op_type, Pat leaf);

// Arithmetic builds op() patterns; floats become scalar() constants.
Pat operator+(Pat a, Pat b);
Pat operator-(Pat a, Pat b);
Pat operator*(Pat a, Pat b);
Pat operator/(Pat a, Pat b);
Pat operator+(Pat a, float b);
Pat operator+(float a, Pat b);
Pat operator-(Pat a, float b);
Pat operator-(float a, Pat b);
Pat operator*(Pat a, float b);
Pat operator*(float a, Pat b);
Pat operator/(Pat a, float b);
Pat operator/(float a, Pat b);
Pat erf(Pat x);
Pat sqrt(Pat x);
Pat tanh(Pat x);
Pat sigmoid(Pat x);
Pat relu(Pat x);
Pat pow(Pat x, Pat y);
Pat pow(Pat x, float y);

// The result of a successful match.
class Match {
 public:
  // The value bound to a pattern node (nullptr if that node was not part of the taken path,
  // e.g. an alternative of any_of that did not match).
  Value* operator[](const Pat& p) const;
  Value* value(const std::string& name) const;  // by Pat::named / any(name)
  // The node that produced the value bound to op pattern `p`.
  Node* node(const Pat& p) const;
  Node* node(const std::string& name) const;
  // The node matched by the pattern's root (its output 0 is the pattern's value).
  Node* root() const { return root_; }
  // Every graph node matched by an op pattern, in topological order of the graph.
  const std::vector<Node*>& nodes() const { return nodes_; }
  // Names of the matched nodes, in the same order (for provenance).
  std::vector<std::string> node_names() const;
  // What native(name) found, or nullptr when it was not part of the taken path.
  const NativeResult* native(const std::string& name) const;
  // The leaves' matches of tree(name), left to right (empty when not part of the taken path).
  const std::vector<Match>& repeats(const std::string& name) const;

 private:
  friend class Matcher;
  std::map<const PatNode*, Value*> values_;
  std::map<const PatNode*, Node*> producers_;
  std::map<std::string, const PatNode*> names_;
  std::map<const PatNode*, NativeResult> natives_;
  std::map<const PatNode*, std::vector<Match>> repeats_;
  std::vector<Node*> nodes_;
  Node* root_ = nullptr;
};

// Tries `root` at graph node `n` (whose output is the candidate for the pattern's value).
// On failure, `why` (when given) receives the reason of the deepest failure, e.g.
// "node 'mul_3': input 1 is not the constant 0.5".
std::optional<Match> match_at(const Graph& g, const Pat& root, Node* n, std::string* why = nullptr);

// False when `root` cannot match at `n` by `n`'s op type alone (a cheap test before match_at).
bool may_match_at(const Pat& root, const Node* n);

// Every match of `root` in the graph, trying nodes in reverse topological order (so the
// largest chains are found from their last node). Matches may overlap; the caller decides.
std::vector<Match> find_all(const Graph& g, const Pat& root);

// The value of a constant (initializer or Constant node output), or nullptr.
const Tensor* constant_value(const Value* v);

// A Slice with constant starts/ends (steps 1) on one axis of a static-shape input (what chunk()
// exports; the importer leaves its output shape unknown when the bounds came from Shape), its
// bounds clamped into [0, dim] as Slice clamps them.
struct SliceRange {
  Value* src = nullptr;
  int64_t axis = 0, start = 0, end = 0;
};
std::optional<SliceRange> slice_range(const Node* n);

}  // namespace nnfuse::pattern
