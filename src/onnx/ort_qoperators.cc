#include "onnx/ort_qoperators.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <vector>

#include "ir/error.h"
#include "ops/op.h"

namespace nnfuse {
namespace {

using NodeList = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

class Lowering {
 public:
  Lowering(onnx::GraphProto& g, const std::string& label) : g_(g), label_(label) {
    for (const auto& i : g.initializer()) {
      names_.insert(i.name());
      inits_[i.name()] = &i;
    }
    for (const auto& i : g.input()) names_.insert(i.name());
    for (const auto& n : g.node()) {
      names_.insert(n.name());
      for (const auto& o : n.output()) names_.insert(o);
    }
  }

  size_t run() {
    NodeList nodes;
    nodes.Swap(g_.mutable_node());
    size_t rewritten = 0;
    for (auto& n : nodes) {
      n_ = &n;
      if (n.domain() != "com.microsoft" || !lower(n)) {
        *out_.Add() = std::move(n);
        continue;
      }
      ++rewritten;
    }
    g_.mutable_node()->Swap(&out_);
    return rewritten;
  }

 private:
  // The name of input `i`, or "" when absent.
  std::string in(size_t i) const {
    return static_cast<int>(i) < n_->input_size() ? n_->input(static_cast<int>(i)) : "";
  }
  std::string who() const { return label_ + ": " + n_->op_type() + " node '" + n_->name() + "'"; }
  std::string fresh(const std::string& stem) {
    std::string s = stem;
    for (int k = 1; names_.count(s); ++k) s = stem + "_" + std::to_string(k);
    names_.insert(s);
    return s;
  }
  // A node of the default domain named after the node it comes from.
  onnx::NodeProto& add(const std::string& op, const std::vector<std::string>& ins,
                       const std::vector<std::string>& outs) {
    onnx::NodeProto& p = *out_.Add();
    p.set_op_type(op);
    p.set_name(fresh(n_->name() + "/" + op));
    for (const auto& i : ins) p.add_input(i);
    for (const auto& o : outs) p.add_output(o);
    return p;
  }
  std::string value(const std::string& what) { return fresh(n_->name() + "/" + what); }

  // DequantizeLinear of x; zp may be "" (zero).
  std::string dq(const std::string& x, const std::string& scale, const std::string& zp) {
    std::string y = value("dequantized");
    std::vector<std::string> ins{x, scale};
    if (!zp.empty()) ins.push_back(zp);
    add("DequantizeLinear", ins, {y});
    return y;
  }
  // QuantizeLinear of x into `out`: the zero point names the 8-bit type, so when the node gives
  // none the first of `typed` (zero points of its inputs, initializers) gives it, as zero.
  void q(const std::string& x, const std::string& scale, std::string zp, const std::string& out,
         const std::vector<std::string>& typed) {
    if (zp.empty()) {
      for (const auto& t : typed) {
        auto it = inits_.find(t);
        if (t.empty() || it == inits_.end()) continue;
        zp = zero_like(*it->second);
        break;
      }
    }
    if (zp.empty()) {
      fail(ErrorKind::kUnsupported, who(),
           ": the output has no zero point and no input's zero point is a constant giving its "
           "8-bit type");
    }
    add("QuantizeLinear", {x, scale, zp}, {out});
  }
  std::string zero_like(const onnx::TensorProto& t) {
    onnx::TensorProto& z = *g_.add_initializer();
    z.set_name(value("zero_point"));
    z.set_data_type(t.data_type());
    z.add_int32_data(0);
    inits_[z.name()] = &z;
    return z.name();
  }
  std::string float_const(float v) {
    onnx::TensorProto& c = *g_.add_initializer();
    c.set_name(value("constant"));
    c.set_data_type(onnx::TensorProto::FLOAT);
    c.add_float_data(v);
    inits_[c.name()] = &c;
    return c.name();
  }
  const onnx::AttributeProto* attr(const std::string& name) const {
    for (const auto& a : n_->attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t attr_i(const std::string& name, int64_t d) const {
    const auto* a = attr(name);
    return a ? a->i() : d;
  }
  // Copies the node's attributes but those in `skip` onto p.
  void copy_attrs(onnx::NodeProto& p, const std::set<std::string>& skip) const {
    for (const auto& a : n_->attribute()) {
      if (!skip.count(a.name())) *p.add_attribute() = a;
    }
  }
  // Fails naming the first of the required inputs `k` that the node lacks.
  void need_inputs(std::initializer_list<size_t> k) const {
    for (size_t i : k) {
      if (in(i).empty())
        fail(ErrorKind::kInvalidModel, who(), ": required input ", i, " is missing");
    }
  }
  const std::string& output() const {
    if (n_->output_size() < 1 || n_->output(0).empty()) {
      fail(ErrorKind::kInvalidModel, who(), ": has no output");
    }
    return n_->output(0);
  }

  // The com.microsoft op each form takes, and the standard op it states.
  using Form = void (Lowering::*)(const std::string&);
  static const std::map<std::string, std::pair<Form, std::string>>& forms() {
    static const std::map<std::string, std::pair<Form, std::string>> t = {
        {"QuantizeLinear", {&Lowering::default_domain, ""}},
        {"DequantizeLinear", {&Lowering::default_domain, ""}},
        {"QLinearAdd", {&Lowering::binary, "Add"}},
        {"QLinearMul", {&Lowering::binary, "Mul"}},
        {"QLinearSigmoid", {&Lowering::unary, "Sigmoid"}},
        {"QLinearLeakyRelu", {&Lowering::unary, "LeakyRelu"}},
        {"QLinearGlobalAveragePool", {&Lowering::global_pool, "GlobalAveragePool"}},
        {"QLinearAveragePool", {&Lowering::window_pool, "AveragePool"}},
        {"QLinearConcat", {&Lowering::concat, "Concat"}},
        {"QGemm", {&Lowering::qgemm, "Gemm"}},
        {"DynamicQuantizeMatMul", {&Lowering::dense, "DynamicQuantizeLinear"}},
        {"MatMulIntegerToFloat", {&Lowering::dense, ""}},
        {"MatMulNBits", {&Lowering::own_domain, ""}},
    };
    return t;
  }

  bool lower(const onnx::NodeProto& n) {
    auto it = forms().find(n.op_type());
    if (it == forms().end()) return false;
    (this->*it->second.first)(it->second.second);
    return true;
  }

  // An op nnfuse has of its own, with the same inputs and attributes (MatMulNBits).
  void own_domain(const std::string&) {
    onnx::NodeProto& p = *out_.Add();
    p = *n_;
    p.set_domain(kFusedDomain);
  }
  void default_domain(const std::string&) {
    onnx::NodeProto& p = *out_.Add();
    p = *n_;
    p.clear_domain();
  }
  // QLinearAdd, QLinearMul.
  void binary(const std::string& op) {
    need_inputs({0, 1, 3, 4, 6});
    std::string a = dq(in(0), in(1), in(2)), b = dq(in(3), in(4), in(5));
    std::string c = value("float");
    add(op, {a, b}, {c});
    q(c, in(6), in(7), output(), {in(2), in(5)});
  }
  // QLinearSigmoid, QLinearLeakyRelu (its alpha).
  void unary(const std::string& op) {
    need_inputs({0, 1, 3});
    std::string x = dq(in(0), in(1), in(2)), y = value("float");
    onnx::NodeProto& p = add(op, {x}, {y});
    copy_attrs(p, {});
    q(y, in(3), in(4), output(), {in(2)});
  }
  // QLinearGlobalAveragePool, QLinearAveragePool; channels_last through Transposes.
  void global_pool(const std::string& op) { pool(op, true); }
  void window_pool(const std::string& op) { pool(op, false); }
  void pool(const std::string& op, bool global) {
    need_inputs({0, 1, 3});
    const bool last = attr_i("channels_last", 0) != 0;
    if (last && global) {
      fail(ErrorKind::kUnsupported, who(),
           ": channels_last=1 is not supported (the input's rank is not known here)");
    }
    std::string x = dq(in(0), in(1), in(2));
    std::vector<int64_t> to_first, to_last;
    if (last) {
      const auto* k = attr("kernel_shape");
      const int64_t rank = (k ? k->ints_size() : 0) + 2;
      if (rank < 3) fail(ErrorKind::kInvalidModel, who(), ": has no kernel_shape");
      to_first = {0, rank - 1};
      to_last = {0};
      for (int64_t d = 1; d < rank - 1; ++d) to_first.push_back(d);
      for (int64_t d = 2; d < rank; ++d) to_last.push_back(d);
      to_last.push_back(1);
      std::string t = value("channels_first");
      set_ints(add("Transpose", {x}, {t}), "perm", to_first);
      x = t;
    }
    std::string y = value("pooled");
    copy_attrs(add(op, {x}, {y}), {"channels_last"});
    if (last) {
      std::string t = value("channels_last");
      set_ints(add("Transpose", {y}, {t}), "perm", to_last);
      y = t;
    }
    q(y, in(3), in(4), output(), {in(2)});
  }
  // QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) triples.
  void concat(const std::string& op) {
    const int k = n_->input_size();
    if (k < 5 || (k - 2) % 3 != 0) {
      fail(ErrorKind::kInvalidModel, who(),
           ": takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples; it has ", k,
           " inputs");
    }
    std::vector<std::string> parts, zps;
    for (int i = 2; i < k; i += 3) {
      parts.push_back(dq(n_->input(i), n_->input(i + 1), n_->input(i + 2)));
      zps.push_back(n_->input(i + 2));
    }
    std::string y = value("float");
    copy_attrs(add(op, parts, {y}), {});
    q(y, in(0), in(1), output(), zps);
  }
  // QGemm: its int32 C has zero point 0 and scale alpha * a_scale * b_scale; no y_scale means a
  // float output.
  void qgemm(const std::string& op) {
    need_inputs({0, 1, 3, 4});
    std::string a = dq(in(0), in(1), in(2)), b = dq_weights(in(3), in(4), in(5));
    std::vector<std::string> ins{a, b};
    if (!in(6).empty()) {
      std::string c = value("bias"), s = value("bias_scale"), cf = value("bias_float");
      set_int(add("Cast", {in(6)}, {c}), "to", onnx::TensorProto::FLOAT);
      add("Mul", {in(1), in(4)}, {s});
      if (const float alpha = attr_f("alpha", 1.0f); alpha != 1.0f) {
        std::string sa = value("bias_scale");
        add("Mul", {s, float_const(alpha)}, {sa});
        s = sa;
      }
      add("Mul", {c, s}, {cf});
      ins.push_back(cf);
    }
    const bool quantized = !in(7).empty();
    std::string y = quantized ? value("float") : output();
    copy_attrs(add(op, ins, {y}), {});
    if (quantized) q(y, in(7), in(8), output(), {in(2)});
  }
  // DynamicQuantizeMatMul (`quantize` names the op quantizing A at run time) and
  // MatMulIntegerToFloat: the integer product, Cast, times the scales' product, plus the bias.
  void dense(const std::string& quantize) {
    const bool dynamic = !quantize.empty();
    std::string a, a_scale, a_zp, b = in(1), b_scale, b_zp, bias;
    if (dynamic) {
      need_inputs({0, 1, 2});
      a = value("quantized"), a_scale = value("scale"), a_zp = value("zero_point");
      add(quantize, {in(0)}, {a, a_scale, a_zp});
      b_scale = in(2), b_zp = in(3), bias = in(4);
    } else {
      need_inputs({0, 1, 2, 3});
      a = in(0), a_scale = in(2), b_scale = in(3), a_zp = in(4), b_zp = in(5), bias = in(6);
    }
    std::string prod = value("integer_product"), f = value("float"), s = value("scale");
    add("MatMulInteger", {a, b, a_zp, b_zp}, {prod});
    set_int(add("Cast", {prod}, {f}), "to", onnx::TensorProto::FLOAT);
    add("Mul", {a_scale, b_scale}, {s});
    if (bias.empty()) {
      add("Mul", {f, s}, {output()});
    } else {
      std::string scaled = value("scaled");
      add("Mul", {f, s}, {scaled});
      add("Add", {scaled, bias}, {output()});
    }
  }

  // B's DequantizeLinear: per column when its scale is a constant of more than one value.
  std::string dq_weights(const std::string& b, const std::string& scale, const std::string& zp) {
    auto it = inits_.find(scale);
    int64_t count = 1;
    if (it != inits_.end()) {
      for (auto d : it->second->dims()) count *= d;
    }
    if (count == 1) return dq(b, scale, zp);
    std::string y = value("dequantized");
    onnx::NodeProto& p = add("DequantizeLinear", {b, scale, zp}, {y});
    set_int(p, "axis", attr_i("transB", 0) ? 0 : 1);
    return y;
  }
  float attr_f(const std::string& name, float d) const {
    const auto* a = attr(name);
    return a ? a->f() : d;
  }
  static void set_int(onnx::NodeProto& p, const std::string& name, int64_t v) {
    auto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void set_ints(onnx::NodeProto& p, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }

  onnx::GraphProto& g_;
  const std::string& label_;
  std::set<std::string> names_;
  std::map<std::string, const onnx::TensorProto*> inits_;
  NodeList out_;
  const onnx::NodeProto* n_ = nullptr;
};

bool is_8bit(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

}  // namespace

size_t lower_ort_quantized_ops(onnx::ModelProto& m, const std::string& label) {
  bool any = false;
  for (const auto& n : m.graph().node()) any = any || n.domain() == "com.microsoft";
  if (!any) return 0;
  const size_t rewritten = Lowering(*m.mutable_graph(), label).run();
  // Nodes now of nnfuse's domain need it imported (ONNX's inference refuses a domain that is
  // not).
  bool own = false, imported = false;
  for (const auto& n : m.graph().node()) own = own || n.domain() == kFusedDomain;
  for (const auto& o : m.opset_import()) imported = imported || o.domain() == kFusedDomain;
  if (own && !imported) {
    auto* o = m.add_opset_import();
    o->set_domain(kFusedDomain);
    o->set_version(1);
  }
  return rewritten;
}

size_t lower_8bit_max_pool(Graph& g) {
  size_t rewritten = 0;
  for (Node* n : std::vector<Node*>(g.nodes())) {
    if (!n->is(Op::kMaxPool) || !n->input(0) || !is_8bit(n->input(0)->dtype())) continue;
    // The Indices output would be the same; only the pooled values change type.
    if (n->num_outputs() > 1 && n->output(1)) continue;
    Value* x = n->input(0);
    Value* y = n->output(0);
    const DType t = x->dtype();
    auto constant = [&](Tensor v, const std::string& stem) {
      Value* c =
          g.add_value(g.unique_value_name(n->name() + "/" + stem), v.dtype(), Shape::of(v.shape()));
      c->set_constant(std::move(v));
      return c;
    };
    Value* one = constant(Tensor::scalar(1.0f), "scale");
    Value* zero = constant(
        t == DType::kUInt8 ? Tensor::scalar<uint8_t>(0) : Tensor::scalar<int8_t>(0), "zero_point");
    Value* xf =
        g.add_value(g.unique_value_name(x->name() + "/float32"), DType::kFloat32, x->shape());
    Value* yf =
        g.add_value(g.unique_value_name(y->name() + "/float32"), DType::kFloat32, y->shape());
    g.add_node("DequantizeLinear", g.unique_node_name(n->name() + "/widen"), {x, one, zero}, {xf});
    n->set_input(0, xf);
    std::vector<Value*> outs = n->outputs();
    outs[0] = yf;
    const std::string op = n->op_type(), name = n->name();
    const std::map<std::string, Attribute> attrs = n->attrs();
    std::vector<Value*> ins = n->inputs();
    Node* p = g.replace_node(n, op, name, ins, outs);
    for (const auto& [k, a] : attrs) p->set_attr(k, a);
    g.add_node("QuantizeLinear", g.unique_node_name(name + "/narrow"), {yf, one, zero}, {y});
    ++rewritten;
  }
  if (rewritten) g.topological_sort();
  return rewritten;
}

}  // namespace nnfuse
