// The graph IR. A Graph owns Values and Nodes; Nodes are kept in topological order.
// Every Value knows its producer and its uses, so passes can walk both ways. A Node of a
// fused op records its provenance: the original nodes it replaced and the rule that did it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/dtype.h"
#include "ir/tensor.h"
#include "ops/op.h"

namespace nnfuse {

// True for the default ONNX domain ("" or its alias "ai.onnx").
inline bool is_default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

class Graph;
class Node;

// One dimension: a known size, or unknown (value < 0) with an optional symbolic name.
struct Dim {
  int64_t value = -1;
  std::string param;
  bool known() const { return value >= 0; }
  bool operator==(const Dim&) const = default;
};

struct Shape {
  bool has_rank = false;
  std::vector<Dim> dims;

  static Shape unknown() { return {}; }
  static Shape of(const Dims& d);
  bool fully_known() const;
  Dims static_dims() const;  // requires fully_known()
  std::string str() const;   // "[1, 3, batch, ?]" or "?"
  bool operator==(const Shape&) const = default;
};

struct Use {
  Node* node;
  int input_index;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  void set_dtype(DType t) { dtype_ = t; }
  void set_shape(Shape s) { shape_ = std::move(s); }

  Node* producer() const { return producer_; }
  const std::vector<Use>& uses() const { return uses_; }

  bool is_constant() const { return constant_.defined(); }
  const Tensor& constant() const { return constant_; }
  void set_constant(Tensor t);
  // Drops the constant's data (its dtype and shape stay): for a runtime whose kernels hold
  // their own copies, so that the weights are held once.
  void release_constant() { constant_ = Tensor(); }

  bool is_graph_input() const { return is_input_; }
  bool is_graph_output() const { return is_output_; }

 private:
  friend class Graph;
  friend class Node;
  size_t slot_ = 0;  // index in the graph's value table
  std::string name_;
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  Node* producer_ = nullptr;
  std::vector<Use> uses_;
  Tensor constant_;
  bool is_input_ = false;
  bool is_output_ = false;
};

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kGraph };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  // A subgraph (If's branches, Loop's and Scan's bodies), shared by copies of the node.
  std::shared_ptr<const Graph> g;
};
const char* attribute_kind_name(Attribute::Kind k);

class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  // The op's identity (ops/op.h), from its domain and op type: Op::kUnknown for an op nnfuse does
  // not know.
  Op op() const { return op_; }
  bool is(Op op) const { return op_ == op; }
  // Inputs may hold nullptr for an omitted optional input.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  // Replaces input i, keeping use lists consistent.
  void set_input(size_t i, Value* v);
  // The node's place in the graph's order: smaller for earlier nodes (not contiguous).
  size_t position() const { return slot_; }

  const std::map<std::string, Attribute>& attrs() const { return attrs_; }
  bool has_attr(const std::string& n) const { return attrs_.count(n) != 0; }
  void set_attr(const std::string& n, Attribute a) { attrs_[n] = std::move(a); }
  // Typed getters; the fallback is returned when absent, an error when the kind differs.
  int64_t attr_int(const std::string& n, int64_t fallback) const;
  float attr_float(const std::string& n, float fallback) const;
  std::string attr_string(const std::string& n, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& n, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& n, std::vector<float> fallback = {}) const;
  const Attribute* find_attr(const std::string& n) const;

  // Provenance of fused nodes: which original nodes this one replaced, and which pass.
  const std::vector<std::string>& fused_from() const { return fused_from_; }
  const std::string& fused_by() const { return fused_by_; }
  void set_provenance(std::vector<std::string> from, std::string by) {
    fused_from_ = std::move(from);
    fused_by_ = std::move(by);
  }

  // "Conv 'conv1'" for error messages.
  std::string describe() const;

 private:
  friend class Graph;
  Graph* graph_ = nullptr;
  size_t slot_ = 0;  // index in the graph's node table, which is in topological order
  std::string name_, op_type_, domain_;
  Op op_ = Op::kUnknown;
  std::vector<Value*> inputs_, outputs_;
  std::map<std::string, Attribute> attrs_;
  std::vector<std::string> fused_from_;
  std::string fused_by_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  // Opset version per domain ("" is the default ONNX domain).
  std::map<std::string, int64_t> opsets;
  // For a subgraph: its last `num_captures` inputs are the values of enclosing graphs it reads
  // by name (outer-scope values), which its node receives as its last `num_captures` inputs, so
  // that every value a node reads is one of its inputs. Every subgraph of one node captures the
  // same values in the same order.
  size_t num_captures = 0;
  int64_t opset(const std::string& domain = "") const;

  // Creates a value; throws if the name is taken.
  Value* add_value(const std::string& name, DType dtype = DType::kUndefined,
                   Shape shape = Shape::unknown());
  Value* find_value(const std::string& name) const;
  // A fresh value name starting with `stem`.
  std::string unique_value_name(const std::string& stem) const;

  // Appends a node (callers keep topological order or call topological_sort()).
  Node* add_node(const std::string& op_type, const std::string& name,
                 const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                 const std::string& domain = "");
  // Removes `old` and adds the new node in its place in the order (a fused node standing where
  // the last node it replaces stood); the order is re-sorted only if that place breaks it.
  Node* replace_node(Node* old, const std::string& op_type, const std::string& name,
                     const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                     const std::string& domain = "");
  // Removes a node; its outputs lose their producer (and must be unused or rewired).
  void remove_node(Node* n);
  // True when `n` is a node of this graph (it is not dereferenced).
  bool contains(const Node* n) const { return live_nodes_.count(n) != 0; }
  // The same, cheaper where `slot` is where `n` was last seen (its position(), unless the
  // nodes were reordered since): a node still in that slot needs no lookup.
  bool contains(const Node* n, size_t slot) const {
    return (slot < nodes_.size() && nodes_[slot].get() == n) || contains(n);
  }
  // Removes values with no producer, no uses, that are not graph inputs/outputs.
  void remove_dead_values();
  // Removes `v` if it is dead in that sense (the cheap form of the above for one value).
  void remove_if_dead(Value* v);
  void rename_node(Node* n, const std::string& name);
  // A node name no node of the graph has, starting with `stem`.
  std::string unique_node_name(const std::string& stem) const;
  // Redirects every use of `from` (and graph-output status) to `to`.
  void replace_all_uses(Value* from, Value* to);

  void add_input(Value* v);
  void add_output(Value* v);
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // Graph inputs that are not constants: what a caller must feed.
  std::vector<Value*> runtime_inputs() const;

  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return live_nodes_.size(); }
  std::vector<Value*> values() const;

  // Reorders nodes topologically (stable for already ordered graphs); throws on a cycle.
  void topological_sort();
  // Whether the node order is known to be topological: adding a node whose outputs already
  // have readers, or an input edge from a later node, clears it; topological_sort() sets it.
  bool is_sorted() const { return sorted_; }
  void ensure_sorted() {
    if (!sorted_) topological_sort();
  }
  // Nodes added since a mark: a rewrite loop re-examines only what a rewrite made.
  size_t added_mark() const { return added_base_ + added_.size(); }
  std::vector<Node*> added_since(size_t mark) const;

 private:
  friend class Node;
  Node* place_node(std::unique_ptr<Node> n, size_t slot, const std::vector<Value*>& inputs,
                   const std::vector<Value*>& outputs);
  void unlink_node(Node* n);
  void compact();

  // Removed nodes and values leave an empty slot, so removal is O(1) and positions stay put
  // while a pass rewrites; remove_dead_values() and topological_sort() compact the tables.
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  size_t dead_nodes_ = 0, dead_values_ = 0;
  std::unordered_set<const Node*> live_nodes_;
  std::unordered_map<std::string, size_t> node_names_;  // name -> nodes with it
  std::map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_, outputs_;
  bool sorted_ = true;
  std::vector<const Node*> added_;  // nodes added (possibly removed since), from added_base_ on
  size_t added_base_ = 0;
};

// Checks the structural invariants (unique names, producers and use lists consistent,
// topological order, graph outputs produced); throws kInternal naming the first violation.
void verify_graph(const Graph& g);

// Readable text form, one node per line, for `nnfuse info --graph` and debugging.
std::string graph_to_text(const Graph& g);

}  // namespace nnfuse
