#include "onnx/qlinear_lowering.h"

#include <map>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace nnfuse {
namespace {

constexpr size_t kX = 0, kXScale = 1, kXZero = 2, kW = 3, kWScale = 4, kWZero = 5, kYScale = 6,
                 kYZero = 7, kBias = 8;

int64_t numel_or(const Value* v, int64_t unknown) {
  if (!v || !v->shape().fully_known()) return unknown;
  int64_t n = 1;
  for (int64_t d : v->shape().static_dims()) n *= d;
  return n;
}

// Builds the float form of one node in its place.
class Lowered {
 public:
  Lowered(Graph& g, Node* n)
      : g_(g), name_(n->name()), ins_(n->inputs()), attrs_(n->attrs()), y_(n->output(0)) {
    g.remove_node(n);
  }

  Value* in(size_t i) const { return i < ins_.size() ? ins_[i] : nullptr; }

  Value* value(const std::string& what, DType t, const Shape& s) {
    return g_.add_value(g_.unique_value_name(name_ + "/" + what), t, s);
  }
  Value* node(const std::string& op, const std::string& what, std::vector<Value*> ins, Value* out,
              std::map<std::string, Attribute> attrs = {}) {
    Node* p =
        g_.add_node(op, what.empty() ? name_ : g_.unique_node_name(name_ + "/" + what), ins, {out});
    for (auto& [k, a] : attrs) p->set_attr(k, std::move(a));
    return out;
  }
  // DequantizeLinear of input i with its scale and zero point, along `axis` when per axis.
  Value* dequantize(size_t i, size_t scale, size_t zero, int64_t axis = -1) {
    std::map<std::string, Attribute> attrs;
    if (axis >= 0) attrs["axis"] = attr_int(axis);
    std::vector<Value*> ins{in(i), in(scale)};
    if (in(zero)) ins.push_back(in(zero));
    return node("DequantizeLinear", "dequantize_" + in(i)->name(), ins,
                value("dequantized", DType::kFloat32, in(i)->shape()), attrs);
  }
  void quantize(Value* yf) {
    node("QuantizeLinear", "quantize", {yf, in(kYScale), in(kYZero)}, y_);
  }

  const std::map<std::string, Attribute>& attrs() const { return attrs_; }
  Value* y() const { return y_; }

 private:
  Graph& g_;
  const std::string name_;
  const std::vector<Value*> ins_;
  const std::map<std::string, Attribute> attrs_;
  Value* y_;
};

// The node's required inputs are present and its scales of known length: x's (a's) one value.
bool lowers(const Node* n) {
  for (size_t i = kX; i <= kYZero; ++i) {
    if (!n->input(i)) return false;
  }
  if (n->num_outputs() < 1 || !n->output(0)) return false;
  if (numel_or(n->input(kXScale), -1) != 1 || numel_or(n->input(kWScale), -1) < 1) return false;
  // Per column of b needs b's rank for the axis.
  return !n->is(Op::kQLinearMatMul) || numel_or(n->input(kWScale), -1) == 1 ||
         n->input(kW)->shape().has_rank;
}

void lower_conv(Graph& g, Node* n) {
  Lowered l(g, n);
  const bool per_channel = numel_or(l.in(kWScale), 1) > 1;
  Value* x = l.dequantize(kX, kXScale, kXZero);
  Value* w = l.dequantize(kW, kWScale, kWZero, per_channel ? 0 : -1);
  std::vector<Value*> ins{x, w};
  if (Value* b = l.in(kBias)) {
    // B is int32 of scale x_scale * w_scale and zero point 0.
    const Shape s = b->shape();
    Value* bf = l.node("Cast", "bias_float", {b}, l.value("bias_float", DType::kFloat32, s),
                       {{"to", attr_int(static_cast<int64_t>(DType::kFloat32))}});
    Value* scale = l.node("Mul", "bias_scale", {l.in(kXScale), l.in(kWScale)},
                          l.value("bias_scale", DType::kFloat32, l.in(kWScale)->shape()));
    ins.push_back(l.node("Mul", "bias", {bf, scale}, l.value("bias", DType::kFloat32, s)));
  }
  Value* yf = l.node("Conv", "", ins, l.value("float", DType::kFloat32, l.y()->shape()), l.attrs());
  l.quantize(yf);
}

void lower_matmul(Graph& g, Node* n) {
  const int64_t b_rank = static_cast<int64_t>(n->input(kW)->shape().dims.size());
  const bool per_column = numel_or(n->input(kWScale), 1) > 1;
  Lowered l(g, n);
  Value* a = l.dequantize(kX, kXScale, kXZero);
  Value* b = l.dequantize(kW, kWScale, kWZero, per_column ? b_rank - 1 : -1);
  l.quantize(l.node("MatMul", "", {a, b}, l.value("float", DType::kFloat32, l.y()->shape())));
}

}  // namespace

size_t lower_qlinear_ops(Graph& g) {
  size_t rewritten = 0;
  for (Node* n : g.nodes()) {
    if (!(n->is(Op::kQLinearConv) || n->is(Op::kQLinearMatMul)) || !lowers(n)) continue;
    if (n->is(Op::kQLinearConv)) {
      lower_conv(g, n);
    } else {
      lower_matmul(g, n);
    }
    ++rewritten;
  }
  if (rewritten) g.topological_sort();
  return rewritten;
}

}  // namespace nnfuse
