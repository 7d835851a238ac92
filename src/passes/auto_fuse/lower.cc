#include "passes/auto_fuse/lower.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "passes/auto_fuse/op_class.h"

namespace nnfuse {

namespace {

using codegen::OpKind;
using Shape64 = std::vector<int64_t>;

const std::map<Op, OpKind>& unary_kinds() {
  static const std::map<Op, OpKind> m = {
      {Op::kRelu, OpKind::kRelu}, {Op::kNeg, OpKind::kNeg}, {Op::kAbs, OpKind::kAbs},
      {Op::kExp, OpKind::kExp},   {Op::kLog, OpKind::kLog}, {Op::kSqrt, OpKind::kSqrt},
      {Op::kTanh, OpKind::kTanh}, {Op::kErf, OpKind::kErf}, {Op::kSigmoid, OpKind::kSigmoid},
  };
  return m;
}

const std::map<Op, OpKind>& binary_kinds() {
  static const std::map<Op, OpKind> m = {
      {Op::kAdd, OpKind::kAdd}, {Op::kSub, OpKind::kSub}, {Op::kMul, OpKind::kMul},
      {Op::kDiv, OpKind::kDiv}, {Op::kPow, OpKind::kPow}, {Op::kMax, OpKind::kMax},
      {Op::kMin, OpKind::kMin}, {Op::kSum, OpKind::kAdd}, {Op::kMean, OpKind::kAdd},
  };
  return m;
}

const std::map<Op, OpKind>& reduce_kinds() {
  static const std::map<Op, OpKind> m = {
      {Op::kReduceSum, OpKind::kReduceSum},
      {Op::kReduceMean, OpKind::kReduceMean},
      {Op::kReduceMax, OpKind::kReduceMax},
      {Op::kReduceMin, OpKind::kReduceMin},
  };
  return m;
}

// Ops lowered to a few codegen ops by hand (see lower_node).
const std::vector<Op>& composite_ops() {
  static const std::vector<Op> v = {Op::kClip,      Op::kHardSigmoid, Op::kHardSwish, Op::kIdentity,
                                    Op::kLeakyRelu, Op::kReciprocal,  Op::kSoftplus};
  return v;
}

bool lowers_to_reduction(const Node& n) { return reduce_kinds().count(n.op()) != 0; }

bool is_float_static(const Value* v) {
  return v && v->dtype() == DType::kFloat32 && v->shape().fully_known();
}

Shape64 shape_of(const Value* v) {
  const Dims d = v->shape().static_dims();
  return Shape64(d.begin(), d.end());
}

// numpy broadcast of a and b, or false.
bool broadcast_into(Shape64& acc, const Shape64& s) {
  if (s.size() > acc.size()) acc.insert(acc.begin(), s.size() - acc.size(), 1);
  const size_t off = acc.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t& a = acc[off + i];
    if (s[i] == a || s[i] == 1) continue;
    if (a != 1) return false;
    a = s[i];
  }
  return true;
}

// Inputs of `node` that are data (not Reduce's axes).
size_t data_inputs(const Node& node) { return lowers_to_reduction(node) ? 1 : node.num_inputs(); }

bool constant_scalar(const Value* v, float* out) {
  if (!v || !v->is_constant() || v->dtype() != DType::kFloat32 || v->constant().numel() != 1) {
    return false;
  }
  *out = v->constant().data<float>()[0];
  return true;
}

class Lowerer {
 public:
  explicit Lowerer(int64_t opset) : opset_(opset) {}

  // The op index of graph value v (a member's output, a literal, or a region input).
  int value(Value* v) {
    auto it = ops_.find(v);
    if (it != ops_.end()) return it->second;
    float c = 0;
    int idx;
    if (constant_scalar(v, &c)) {
      idx = r_.add_const(c);
    } else {
      idx = r_.add_input(static_cast<int>(inputs_.size()));
      inputs_.push_back(v);
      r_.input_shapes.push_back(shape_of(v));
    }
    ops_[v] = idx;
    return idx;
  }

  int konst(float v) { return r_.add_const(v); }
  int un(OpKind k, int a) { return r_.add_unary(k, a); }
  int bin(OpKind k, int a, int b) { return r_.add_binary(k, a, b); }

  // max(min(x, hi), lo) as Clip does (min(max(x, lo), hi)).
  int clip(int x, float lo, float hi) {
    int y = x;
    if (lo != -std::numeric_limits<float>::infinity()) y = bin(OpKind::kMax, y, konst(lo));
    if (hi != std::numeric_limits<float>::infinity()) y = bin(OpKind::kMin, y, konst(hi));
    return y;
  }

  std::string lower_node(Node* n) {
    const Op op = n->op();
    const int x = value(n->input(0));
    int y = -1;
    if (auto u = unary_kinds().find(op); u != unary_kinds().end()) {
      y = un(u->second, x);
    } else if (auto b = binary_kinds().find(op); b != binary_kinds().end()) {
      y = x;
      for (size_t i = 1; i < n->num_inputs(); ++i) {
        float e = 0;
        if (op == Op::kPow && constant_scalar(n->input(i), &e) && (e == 2.0f || e == 1.0f)) {
          y = e == 2.0f ? bin(OpKind::kMul, x, x) : x;
          continue;
        }
        y = bin(b->second, y, value(n->input(i)));
      }
      if (op == Op::kMean) y = bin(OpKind::kDiv, y, konst(static_cast<float>(n->num_inputs())));
    } else if (auto red = reduce_kinds().find(op); red != reduce_kinds().end()) {
      y = r_.add_reduction(red->second, x);
    } else if (op == Op::kIdentity) {
      y = x;
    } else if (op == Op::kReciprocal) {
      y = bin(OpKind::kDiv, konst(1.0f), x);
    } else if (op == Op::kSoftplus) {
      // max(x, 0) + log(1 + exp(-|x|)): the reference's overflow-free form.
      const int e = un(OpKind::kExp, un(OpKind::kNeg, un(OpKind::kAbs, x)));
      y = bin(OpKind::kAdd, bin(OpKind::kMax, x, konst(0.0f)),
              un(OpKind::kLog, bin(OpKind::kAdd, konst(1.0f), e)));
    } else if (op == Op::kLeakyRelu) {
      const float a = n->attr_float("alpha", 0.01f);
      y = bin(OpKind::kAdd, bin(OpKind::kMax, x, konst(0.0f)),
              bin(OpKind::kMul, konst(a), bin(OpKind::kMin, x, konst(0.0f))));
    } else if (op == Op::kHardSigmoid || op == Op::kHardSwish) {
      const bool swish = op == Op::kHardSwish;
      const float a = swish ? 1.0f / 6.0f : n->attr_float("alpha", 0.2f);
      const float b = swish ? 0.5f : n->attr_float("beta", 0.5f);
      const int lin = bin(OpKind::kAdd, bin(OpKind::kMul, konst(a), x), konst(b));
      y = bin(OpKind::kMax, bin(OpKind::kMin, lin, konst(1.0f)), konst(0.0f));
      if (swish) y = bin(OpKind::kMul, x, y);
    } else if (op == Op::kClip) {
      float lo = -std::numeric_limits<float>::infinity();
      float hi = std::numeric_limits<float>::infinity();
      if (opset_ < 11) {
        lo = n->attr_float("min", lo);
        hi = n->attr_float("max", hi);
      } else {
        if (n->input(1) && !constant_scalar(n->input(1), &lo)) return "Clip min is not a constant";
        if (n->input(2) && !constant_scalar(n->input(2), &hi)) return "Clip max is not a constant";
      }
      y = clip(x, lo, hi);
    } else {
      return n->op_type() + " has no lowering";
    }
    ops_[n->output(0)] = y;
    return "";
  }

  int64_t opset_;
  codegen::Region r_;
  std::vector<Value*> inputs_;
  std::unordered_map<const Value*, int> ops_;
};

}  // namespace

bool becomes_literal(const Value& v) {
  float unused = 0;
  return constant_scalar(&v, &unused);
}

bool lowerable_op(Op op) {
  const std::vector<Op>& c = composite_ops();
  return unary_kinds().count(op) || binary_kinds().count(op) || reduce_kinds().count(op) ||
         std::find(c.begin(), c.end(), op) != c.end();
}

const std::vector<std::string>& lowerable_op_types() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> r;
    for (Op op : composite_ops()) r.emplace_back(op_name(op));
    for (const auto* m : {&unary_kinds(), &binary_kinds(), &reduce_kinds()}) {
      for (const auto& [k, _] : *m) r.emplace_back(op_name(k));
    }
    std::sort(r.begin(), r.end());
    return r;
  }();
  return v;
}

std::string lowering_blocker(const Node& node, int64_t opset) {
  if (!is_default_domain(node.domain())) {
    return "op domain '" + node.domain() + "' has no lowering";
  }
  if (!lowerable_op(node.op())) return node.op_type() + " has no lowering";
  if (node.num_outputs() != 1 || !is_float_static(node.output(0))) {
    return "the output is not one float32 value of static shape";
  }
  const size_t data = data_inputs(node);
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    const Value* v = node.input(i);
    if (!v) {
      if (i == 0) return "input 0 is missing";
      continue;
    }
    if (i >= data) {
      if (!v->is_constant()) return "the reduction axes are not a constant";
      continue;
    }
    if (!is_float_static(v)) return "input '" + v->name() + "' is not float32 of static shape";
  }
  if (lowers_to_reduction(node) && !is_last_axis_reduction(node, opset)) {
    return "the reduction is not over the last axis alone";
  }
  return "";
}

std::variant<LoweredRegion, std::string> lower_region(const std::vector<Node*>& nodes,
                                                      int64_t opset) {
  if (nodes.empty()) return std::string("no nodes");
  for (const Node* n : nodes) {
    if (std::string why = lowering_blocker(*n, opset); !why.empty()) {
      return n->describe() + ": " + why;
    }
  }
  Node* root = nodes.back();
  // The domain: every member's output, and every reduction's input, broadcast together.
  Shape64 dom;
  for (const Node* n : nodes) {
    if (!broadcast_into(dom, shape_of(n->output(0)))) {
      return n->describe() + ": shapes in the region do not broadcast together";
    }
    if (lowers_to_reduction(*n) && !broadcast_into(dom, shape_of(n->input(0)))) {
      return n->describe() + ": shapes in the region do not broadcast together";
    }
  }
  for (const Node* n : nodes) {
    if (!lowers_to_reduction(*n)) continue;
    const Shape64 in = shape_of(n->input(0));
    if (in.empty() || in.back() != dom.back()) {
      return n->describe() + ": reduces an axis that is not the region's last axis";
    }
    if (n != root && n->attr_int("keepdims", 1) == 0) {
      return n->describe() + ": keepdims=0 reduction inside a region";
    }
  }
  Lowerer l(opset);
  for (Node* n : nodes) {
    if (std::string why = l.lower_node(n); !why.empty()) return n->describe() + ": " + why;
  }
  LoweredRegion out;
  out.output = root->output(0);
  out.region = std::move(l.r_);
  out.region.output_shape = shape_of(out.output);
  out.region.output = l.ops_.at(out.output);
  if (dom != out.region.output_shape) out.region.domain_shape = dom;
  out.inputs = std::move(l.inputs_);
  if (std::string why = codegen::validate(out.region); !why.empty()) {
    return "region of " + root->describe() + " cannot be generated: " + why;
  }
  return out;
}

}  // namespace nnfuse
