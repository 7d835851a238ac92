#include "ir/graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <sstream>

#include "ir/error.h"

namespace nnfuse {

Shape Shape::of(const Dims& d) {
  Shape s;
  s.has_rank = true;
  for (int64_t v : d) s.dims.push_back(Dim{v, ""});
  return s;
}

bool Shape::fully_known() const {
  if (!has_rank) return false;
  return std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.known(); });
}

Dims Shape::static_dims() const {
  Dims d;
  for (const Dim& x : dims) d.push_back(x.value);
  return d;
}

std::string Shape::str() const {
  if (!has_rank) return "?";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].known() ? std::to_string(dims[i].value)
                         : (dims[i].param.empty() ? "?" : dims[i].param);
  }
  return s + "]";
}

void Value::set_constant(Tensor t) {
  dtype_ = t.dtype();
  shape_ = Shape::of(t.shape());
  constant_ = std::move(t);
}

const char* attribute_kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kFloat:
      return "float";
    case Attribute::Kind::kInt:
      return "int";
    case Attribute::Kind::kString:
      return "string";
    case Attribute::Kind::kTensor:
      return "tensor";
    case Attribute::Kind::kFloats:
      return "floats";
    case Attribute::Kind::kInts:
      return "ints";
    case Attribute::Kind::kStrings:
      return "strings";
    case Attribute::Kind::kGraph:
      return "graph";
  }
  return "?";
}

void Node::set_input(size_t i, Value* v) {
  if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
  Value* old = inputs_[i];
  if (old) {
    auto& u = old->uses_;
    for (auto it = u.begin(); it != u.end(); ++it) {
      if (it->node == this && it->input_index == static_cast<int>(i)) {
        u.erase(it);
        break;
      }
    }
  }
  inputs_[i] = v;
  if (v) v->uses_.push_back(Use{this, static_cast<int>(i)});
  if (v && v->producer_ && graph_ && v->producer_->slot_ > slot_) graph_->sorted_ = false;
}

const Attribute* Node::find_attr(const std::string& n) const {
  auto it = attrs_.find(n);
  return it == attrs_.end() ? nullptr : &it->second;
}

namespace {
const Attribute* typed(const Node& node, const std::string& n, Attribute::Kind k) {
  const Attribute* a = node.find_attr(n);
  if (a && a->kind != k) {
    fail(ErrorKind::kInvalidModel, node.describe(), ": attribute '", n, "' should be ",
         attribute_kind_name(k), " but is ", attribute_kind_name(a->kind));
  }
  return a;
}
}  // namespace

int64_t Node::attr_int(const std::string& n, int64_t fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::kInt);
  return a ? a->i : fallback;
}
float Node::attr_float(const std::string& n, float fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::kFloat);
  return a ? a->f : fallback;
}
std::string Node::attr_string(const std::string& n, const std::string& fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::kString);
  return a ? a->s : fallback;
}
std::vector<int64_t> Node::attr_ints(const std::string& n, std::vector<int64_t> fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::kInts);
  return a ? a->ints : fallback;
}
std::vector<float> Node::attr_floats(const std::string& n, std::vector<float> fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::kFloats);
  return a ? a->floats : fallback;
}

std::string Node::describe() const { return op_type_ + " '" + name_ + "'"; }

int64_t Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain);
  return it == opsets.end() ? 0 : it->second;
}

Value* Graph::add_value(const std::string& name, DType dtype, Shape shape) {
  if (by_name_.count(name))
    fail(ErrorKind::kInvalidModel, "value name '", name, "' is defined twice");
  auto v = std::make_unique<Value>();
  v->name_ = name;
  v->dtype_ = dtype;
  v->shape_ = std::move(shape);
  Value* p = v.get();
  p->slot_ = values_.size();
  values_.push_back(std::move(v));
  by_name_[name] = p;
  return p;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::string Graph::unique_value_name(const std::string& stem) const {
  if (!by_name_.count(stem)) return stem;
  for (int i = 1;; ++i) {
    std::string n = stem + "_" + std::to_string(i);
    if (!by_name_.count(n)) return n;
  }
}

Node* Graph::place_node(std::unique_ptr<Node> n, size_t slot, const std::vector<Value*>& inputs,
                        const std::vector<Value*>& outputs) {
  Node* p = n.get();
  for (Value* o : outputs) {
    if (o && o->producer_) {
      fail(ErrorKind::kInvalidModel, "value '", o->name(), "' is produced by both ",
           o->producer_->describe(), " and ", p->describe());
    }
    if (o && (o->is_constant() || o->is_input_)) {
      fail(ErrorKind::kInvalidModel, p->describe(), " writes '", o->name(),
           "', which is a graph input or initializer");
    }
  }
  p->graph_ = this;
  p->slot_ = slot;
  nodes_[slot] = std::move(n);
  live_nodes_.insert(p);
  ++node_names_[p->name_];
  added_.push_back(p);
  for (size_t i = 0; i < inputs.size(); ++i) p->set_input(i, inputs[i]);
  for (Value* o : outputs) {
    if (o) {
      o->producer_ = p;
      for (const Use& u : o->uses_) sorted_ = sorted_ && u.node->slot_ > slot;
    }
    p->outputs_.push_back(o);
  }
  return p;
}

Node* Graph::add_node(const std::string& op_type, const std::string& name,
                      const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                      const std::string& domain) {
  auto n = std::make_unique<Node>();
  n->op_type_ = op_type;
  n->name_ = name;
  n->domain_ = domain;
  n->op_ = op_of(domain, op_type);
  nodes_.emplace_back();
  return place_node(std::move(n), nodes_.size() - 1, inputs, outputs);
}

Node* Graph::replace_node(Node* old, const std::string& op_type, const std::string& name,
                          const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                          const std::string& domain) {
  if (!contains(old)) fail(ErrorKind::kInternal, "replace_node: the node is not in the graph");
  const size_t slot = old->slot_;
  unlink_node(old);
  --dead_nodes_;  // the slot is taken again at once
  auto n = std::make_unique<Node>();
  n->op_type_ = op_type;
  n->name_ = name;
  n->domain_ = domain;
  n->op_ = op_of(domain, op_type);
  return place_node(std::move(n), slot, inputs, outputs);
}

void Graph::unlink_node(Node* n) {
  for (size_t i = 0; i < n->inputs_.size(); ++i) n->set_input(i, nullptr);
  for (Value* o : n->outputs_) {
    if (o && o->producer_ == n) o->producer_ = nullptr;
  }
  if (auto it = node_names_.find(n->name_); it != node_names_.end() && --it->second == 0) {
    node_names_.erase(it);
  }
  live_nodes_.erase(n);
  nodes_[n->slot_].reset();
  ++dead_nodes_;
}

void Graph::remove_node(Node* n) {
  if (!contains(n)) return;
  unlink_node(n);
}

std::vector<Node*> Graph::added_since(size_t mark) const {
  std::vector<Node*> r;
  if (mark < added_base_) return nodes();  // the log was cleared since: everything may be new
  for (size_t i = mark - added_base_; i < added_.size(); ++i) {
    if (contains(added_[i])) r.push_back(const_cast<Node*>(added_[i]));
  }
  return r;
}

void Graph::compact() {
  added_base_ += added_.size();
  added_.clear();
  size_t k = 0;
  for (auto& n : nodes_) {
    if (!n) continue;
    n->slot_ = k;
    nodes_[k++] = std::move(n);
  }
  nodes_.resize(k);
  dead_nodes_ = 0;
  k = 0;
  for (auto& v : values_) {
    if (!v) continue;
    v->slot_ = k;
    values_[k++] = std::move(v);
  }
  values_.resize(k);
  dead_values_ = 0;
}

void Graph::remove_dead_values() {
  for (auto& v : values_) {
    if (v && !v->producer_ && v->uses_.empty() && !v->is_input_ && !v->is_output_) {
      by_name_.erase(v->name_);
      v.reset();
      ++dead_values_;
    }
  }
  compact();
}

void Graph::remove_if_dead(Value* v) {
  if (!v || v->producer_ || !v->uses_.empty() || v->is_input_ || v->is_output_) return;
  if (v->slot_ >= values_.size() || values_[v->slot_].get() != v) return;
  by_name_.erase(v->name_);
  values_[v->slot_].reset();
  ++dead_values_;
}

void Graph::rename_node(Node* n, const std::string& name) {
  if (auto it = node_names_.find(n->name_); it != node_names_.end() && --it->second == 0) {
    node_names_.erase(it);
  }
  n->name_ = name;
  ++node_names_[name];
}

std::string Graph::unique_node_name(const std::string& stem) const {
  if (!node_names_.count(stem)) return stem;
  for (int i = 1;; ++i) {
    std::string n = stem + "_" + std::to_string(i);
    if (!node_names_.count(n)) return n;
  }
}

void Graph::replace_all_uses(Value* from, Value* to) {
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) u.node->set_input(static_cast<size_t>(u.input_index), to);
  for (Value*& o : outputs_) {
    if (o == from) {
      o = to;
      from->is_output_ = false;
      to->is_output_ = true;
    }
  }
}

void Graph::add_input(Value* v) {
  v->is_input_ = true;
  inputs_.push_back(v);
}

void Graph::add_output(Value* v) {
  v->is_output_ = true;
  outputs_.push_back(v);
}

std::vector<Value*> Graph::runtime_inputs() const {
  std::vector<Value*> r;
  for (Value* v : inputs_) {
    if (!v->is_constant()) r.push_back(v);
  }
  return r;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> r;
  r.reserve(live_nodes_.size());
  for (auto& n : nodes_) {
    if (n) r.push_back(n.get());
  }
  return r;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> r;
  r.reserve(values_.size() - dead_values_);
  for (auto& v : values_) {
    if (v) r.push_back(v.get());
  }
  return r;
}

void Graph::topological_sort() {
  // Kahn's algorithm, taking ready nodes in their current order so sorted graphs keep it.
  compact();
  const size_t n_nodes = nodes_.size();
  std::vector<size_t> pending(n_nodes, 0);
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n_nodes; ++i) {
    for (Value* v : nodes_[i]->inputs_) {
      if (v && v->producer_) ++pending[i];
    }
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(n_nodes);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    Node* n = nodes_[i].get();
    for (Value* o : n->outputs_) {
      if (!o) continue;
      for (const Use& u : o->uses_) {
        if (--pending[u.node->slot_] == 0) ready.push(u.node->slot_);
      }
    }
    sorted.push_back(std::move(nodes_[i]));
  }
  if (sorted.size() != n_nodes) {
    for (auto& n : nodes_) {
      if (n) fail(ErrorKind::kInvalidModel, "the graph has a cycle through ", n->describe());
    }
  }
  nodes_ = std::move(sorted);
  for (size_t i = 0; i < n_nodes; ++i) nodes_[i]->slot_ = i;
  sorted_ = true;
}

}  // namespace nnfuse
