// The DSL: building pattern nodes, their constraints, and reading a Match.
#include "pattern/pattern.h"

#include <utility>

#include "ir/error.h"
#include "ops/def.h"
#include "pattern/pattern_internal.h"

namespace nnfuse::pattern {

namespace {

Pat make(PatNode n) { return Pat(std::make_shared<PatNode>(std::move(n))); }

// A copy of `p`'s node that binds as `p` does.
std::shared_ptr<PatNode> copy_of(const std::shared_ptr<PatNode>& p) {
  if (!p) fail(ErrorKind::kInternal, "pattern: constraint added to an empty pattern");
  auto c = std::make_shared<PatNode>(*p);
  if (!c->origin) c->origin = p;
  return c;
}

void check_valid(const std::vector<Pat>& pats, const char* what) {
  for (const Pat& p : pats) {
    if (!p.valid()) fail(ErrorKind::kInternal, "pattern: ", what, " has an empty pattern");
  }
}

Pat unary(const char* op_type, Pat x) { return op(op_type, {std::move(x)}); }

}  // namespace

bool is_commutative(Op op) { return ops::traits_of(op).commutative; }

namespace {

// The op (domain, op_type) names; a pattern of an op nnfuse does not know could never match.
Op known_op(const std::string& domain, const std::string& op_type) {
  const Op op = op_of(domain, op_type);
  if (op == Op::kUnknown) {
    fail(ErrorKind::kInternal, "pattern: op ", op_type, " of domain '", domain,
         "' is not one nnfuse knows (ops/op_names.inc)");
  }
  return op;
}

}  // namespace

Pat Pat::where(std::function<bool(const Value&)> pred, std::string why) const {
  auto c = copy_of(n_);
  c->value_checks.push_back({std::move(pred), std::move(why), nullptr});
  return Pat(std::move(c));
}

Pat Pat::where_node(std::function<bool(const Node&)> pred, std::string why) const {
  auto c = copy_of(n_);
  c->node_checks.push_back({std::move(pred), std::move(why)});
  return Pat(std::move(c));
}

Pat Pat::dtype(DType t) const {
  auto c = copy_of(n_);
  c->value_checks.push_back({[t](const Value& v) { return v.dtype() == t; },
                             "dtype " + dtype_name(t),
                             [](const Value& v) { return "it is " + dtype_name(v.dtype()); }});
  return Pat(std::move(c));
}

Pat Pat::rank(int64_t r) const {
  auto c = copy_of(n_);
  c->value_checks.push_back({[r](const Value& v) {
                               return v.shape().has_rank &&
                                      static_cast<int64_t>(v.shape().dims.size()) == r;
                             },
                             "rank " + std::to_string(r),
                             [](const Value& v) -> std::string {
                               if (!v.shape().has_rank) return "its rank is unknown";
                               return "it has rank " + std::to_string(v.shape().dims.size());
                             }});
  return Pat(std::move(c));
}

Pat Pat::named(std::string name) const {
  auto c = copy_of(n_);
  c->name = std::move(name);
  return Pat(std::move(c));
}

Pat any(std::string name) {
  PatNode n;
  n.kind = PatNode::Kind::kAny;
  n.name = std::move(name);
  return make(std::move(n));
}

Pat constant(std::string name) {
  PatNode n;
  n.kind = PatNode::Kind::kConstant;
  n.name = std::move(name);
  return make(std::move(n));
}

Pat scalar(float v, float tol, std::string name) {
  PatNode n;
  n.kind = PatNode::Kind::kScalar;
  n.value = v;
  n.tol = tol;
  n.name = std::move(name);
  return make(std::move(n));
}

Pat op(const std::string& op_type, std::vector<Pat> inputs, bool exact_inputs, int output) {
  return op_in("", op_type, std::move(inputs), exact_inputs, output);
}

Pat op_any_inputs(const std::string& op_type) { return op(op_type, {}, false); }

Pat op_in(const std::string& domain, const std::string& op_type, std::vector<Pat> inputs,
          bool exact_inputs, int output) {
  check_valid(inputs, ("op " + op_type).c_str());
  if (output < 0) fail(ErrorKind::kInternal, "pattern: op ", op_type, " with output ", output);
  PatNode n;
  n.kind = PatNode::Kind::kOp;
  n.op_type = op_type;
  n.domain = is_default_domain(domain) ? "" : domain;
  n.op = known_op(n.domain, op_type);
  n.inputs = std::move(inputs);
  n.exact_inputs = exact_inputs;
  n.output = output;
  return make(std::move(n));
}

Pat any_of(std::vector<Pat> alternatives) {
  check_valid(alternatives, "any_of");
  if (alternatives.empty()) fail(ErrorKind::kInternal, "pattern: any_of without alternatives");
  PatNode n;
  n.kind = PatNode::Kind::kAnyOf;
  n.inputs = std::move(alternatives);
  return make(std::move(n));
}

Pat through(Pat p, std::set<std::string> ops) {
  check_valid({p}, "through");
  PatNode n;
  n.kind = PatNode::Kind::kThrough;
  n.inputs = {std::move(p)};
  for (const std::string& o : ops) n.pass_ops.insert(known_op("", o));
  return make(std::move(n));
}

Pat optional(Pat p) {
  check_valid({p}, "optional");
  PatNode n;
  n.kind = PatNode::Kind::kOptional;
  n.inputs = {std::move(p)};
  return make(std::move(n));
}

Pat native(std::string name, std::function<std::string(Value*, NativeResult&)> fn) {
  if (!fn) fail(ErrorKind::kInternal, "pattern: native without a function");
  PatNode n;
  n.kind = PatNode::Kind::kNative;
  n.name = std::move(name);
  n.native = std::move(fn);
  return make(std::move(n));
}

Pat tree(std::string name, const std::string& op_type, Pat leaf) {
  check_valid({leaf}, "tree");
  PatNode n;
  n.kind = PatNode::Kind::kTree;
  n.name = std::move(name);
  n.op_type = op_type;
  n.op = known_op("", op_type);
  n.inputs = {std::move(leaf)};
  return make(std::move(n));
}

Pat operator+(Pat a, Pat b) { return op("Add", {std::move(a), std::move(b)}); }
Pat operator-(Pat a, Pat b) { return op("Sub", {std::move(a), std::move(b)}); }
Pat operator*(Pat a, Pat b) { return op("Mul", {std::move(a), std::move(b)}); }
Pat operator/(Pat a, Pat b) { return op("Div", {std::move(a), std::move(b)}); }
Pat operator+(Pat a, float b) { return std::move(a) + scalar(b); }
Pat operator+(float a, Pat b) { return scalar(a) + std::move(b); }
Pat operator-(Pat a, float b) { return std::move(a) - scalar(b); }
Pat operator-(float a, Pat b) { return scalar(a) - std::move(b); }
Pat operator*(Pat a, float b) { return std::move(a) * scalar(b); }
Pat operator*(float a, Pat b) { return scalar(a) * std::move(b); }
Pat operator/(Pat a, float b) { return std::move(a) / scalar(b); }
Pat operator/(float a, Pat b) { return scalar(a) / std::move(b); }
Pat erf(Pat x) { return unary("Erf", std::move(x)); }
Pat sqrt(Pat x) { return unary("Sqrt", std::move(x)); }
Pat tanh(Pat x) { return unary("Tanh", std::move(x)); }
Pat sigmoid(Pat x) { return unary("Sigmoid", std::move(x)); }
Pat relu(Pat x) { return unary("Relu", std::move(x)); }
Pat pow(Pat x, Pat y) { return op("Pow", {std::move(x), std::move(y)}); }
Pat pow(Pat x, float y) { return pow(std::move(x), scalar(y)); }

Value* Match::operator[](const Pat& p) const {
  if (!p.valid()) return nullptr;
  auto it = values_.find(p.get()->identity());
  return it == values_.end() ? nullptr : it->second;
}

Value* Match::value(const std::string& name) const {
  auto it = names_.find(name);
  if (it == names_.end()) return nullptr;
  auto v = values_.find(it->second);
  return v == values_.end() ? nullptr : v->second;
}

Node* Match::node(const Pat& p) const {
  if (!p.valid()) return nullptr;
  auto it = producers_.find(p.get()->identity());
  return it == producers_.end() ? nullptr : it->second;
}

Node* Match::node(const std::string& name) const {
  auto it = names_.find(name);
  if (it == names_.end()) return nullptr;
  auto n = producers_.find(it->second);
  return n == producers_.end() ? nullptr : n->second;
}

const NativeResult* Match::native(const std::string& name) const {
  auto it = names_.find(name);
  if (it == names_.end()) return nullptr;
  auto r = natives_.find(it->second);
  return r == natives_.end() ? nullptr : &r->second;
}

const std::vector<Match>& Match::repeats(const std::string& name) const {
  static const std::vector<Match> none;
  auto it = names_.find(name);
  if (it == names_.end()) return none;
  auto r = repeats_.find(it->second);
  return r == repeats_.end() ? none : r->second;
}

std::vector<std::string> Match::node_names() const {
  std::vector<std::string> r;
  r.reserve(nodes_.size());
  for (const Node* n : nodes_) r.push_back(n->name());
  return r;
}

}  // namespace nnfuse::pattern
