#include "onnx/widen_half.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/half.h"

namespace nnfuse {
namespace {

// ONNX TensorProto element types.
constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10, kOnnxBFloat16 = 16;

bool onnx_type_is_half(int64_t t) { return t == kOnnxFloat16 || t == kOnnxBFloat16; }
int64_t onnx_type_of(DType t) { return t == DType::kBFloat16 ? kOnnxBFloat16 : kOnnxFloat16; }

template <typename H>
Tensor widen_tensor(const Tensor& t) {
  Tensor r(DType::kFloat32, t.shape());
  const H* src = t.data<H>();
  float* dst = r.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = half_to_float(src[i]);
  return r;
}

Tensor widen(const Tensor& t) {
  if (t.dtype() == DType::kFloat16) return widen_tensor<Float16>(t);
  if (t.dtype() == DType::kBFloat16) return widen_tensor<BFloat16>(t);
  return t;
}

// Cast(x, to) as a new node writing a new value named after `stem`.
Value* add_cast(Graph& g, Value* x, int64_t to, DType dtype, const std::string& stem) {
  Value* y = g.add_value(g.unique_value_name(stem), dtype, x->shape());
  Node* n = g.add_node("Cast", g.unique_node_name(stem), {x}, {y});
  n->set_attr("to", attr_int(to));
  return y;
}

// True when every reader of `v` is a Cast to float32 (none counts), as in a graph widened
// already: nothing to add.
bool read_as_float32_only(const Value* v) {
  return std::all_of(v->uses().begin(), v->uses().end(), [](const Use& u) {
    return u.node->is(Op::kCast) && u.node->attr_int("to", 0) == kOnnxFloat;
  });
}

bool any_half(const Graph& g) {
  for (const Value* v : g.values()) {
    if (dtype_is_half(v->dtype())) return true;
  }
  for (const Node* n : g.nodes()) {
    for (const auto& [name, a] : n->attrs()) {
      if (a.kind == Attribute::Kind::kTensor && a.t.defined() && dtype_is_half(a.t.dtype()))
        return true;
    }
  }
  return false;
}

}  // namespace

size_t widen_half_precision(Graph& g) {
  if (!any_half(g)) return 0;
  // Half types of each value before the rewrite: Casts and CastLikes to them keep rounding.
  std::set<const Value*> was_half;
  for (const Value* v : g.values()) {
    if (dtype_is_half(v->dtype())) was_half.insert(v);
  }
  size_t widened = 0;

  // A Cast to a half type stays, and its readers read it cast back to float32; CastLike to a
  // half-typed value becomes that Cast.
  for (Node* n : g.nodes()) {
    int64_t to = 0;
    if (n->is(Op::kCast)) {
      to = n->attr_int("to", 0);
    } else if (n->is(Op::kCastLike) && n->input(1) && was_half.count(n->input(1))) {
      to = onnx_type_of(n->input(1)->dtype());
      const std::string name = n->name();
      Value* x = n->input(0);
      Value* y = n->output(0);
      n = g.replace_node(n, "Cast", name, {x}, {y});
      n->set_attr("to", attr_int(to));
    }
    if (!onnx_type_is_half(to) || !n->output(0) || !n->input(0)) continue;
    Value* out = n->output(0);
    // `out` keeps its half type: it is the rounding the graph asked for.
    was_half.erase(out);
    std::vector<Use> uses = out->uses();
    if (read_as_float32_only(out)) continue;
    Value* wide = add_cast(g, out, kOnnxFloat, DType::kFloat32, out->name() + "/float32");
    for (const Use& u : uses) u.node->set_input(static_cast<size_t>(u.input_index), wide);
  }

  // Graph inputs keep their type; readers read a float32 copy.
  for (Value* in : std::vector<Value*>(g.inputs())) {
    if (!dtype_is_half(in->dtype()) || in->is_constant()) continue;
    was_half.erase(in);
    std::vector<Use> uses = in->uses();
    if (read_as_float32_only(in)) continue;
    Value* wide = add_cast(g, in, kOnnxFloat, DType::kFloat32, in->name() + "/float32");
    for (const Use& u : uses) u.node->set_input(static_cast<size_t>(u.input_index), wide);
  }

  // Graph outputs keep their type: their producer writes a float32 value, cast at the end.
  for (Value* out : std::vector<Value*>(g.outputs())) {
    if (!was_half.count(out) || out->is_graph_input() || !out->producer()) continue;
    Value* wide =
        g.add_value(g.unique_value_name(out->name() + "/float32"), DType::kFloat32, out->shape());
    Node* p = out->producer();
    std::vector<Value*> outs = p->outputs();
    for (auto& o : outs) {
      if (o == out) o = wide;
    }
    const std::vector<Value*> ins = p->inputs();
    const std::string op = p->op_type(), name = p->name(), domain = p->domain(), by = p->fused_by();
    const std::map<std::string, Attribute> attrs = p->attrs();
    const std::vector<std::string> from = p->fused_from();
    Node* q = g.replace_node(p, op, name, ins, outs, domain);
    for (const auto& [k, a] : attrs) q->set_attr(k, a);
    q->set_provenance(from, by);
    // Readers inside the graph read the float32 value.
    std::vector<Use> uses = out->uses();
    for (const Use& u : uses) u.node->set_input(static_cast<size_t>(u.input_index), wide);
    Node* c =
        g.add_node("Cast", g.unique_node_name(out->name() + "/to_output_type"), {wide}, {out});
    c->set_attr("to", attr_int(onnx_type_of(out->dtype())));
    was_half.erase(out);
    was_half.insert(wide);
  }

  // Every other half value and constant is float32 now.
  for (Value* v : g.values()) {
    if (!was_half.count(v)) continue;
    if (v->is_constant()) v->set_constant(widen(v->constant()));
    v->set_dtype(DType::kFloat32);
    ++widened;
  }
  // Attributes that make half values: constants and element-type choices.
  for (Node* n : g.nodes()) {
    std::vector<std::pair<std::string, Attribute>> changed;
    for (const auto& [name, a] : n->attrs()) {
      if (a.kind == Attribute::Kind::kTensor && a.t.defined() && dtype_is_half(a.t.dtype())) {
        Attribute w = a;
        w.t = widen(a.t);
        changed.emplace_back(name, std::move(w));
      } else if (a.kind == Attribute::Kind::kInt && onnx_type_is_half(a.i) &&
                 (name == "dtype" || name == "output_dtype")) {
        changed.emplace_back(name, attr_int(kOnnxFloat));
      }
    }
    for (auto& [name, a] : changed) n->set_attr(name, std::move(a));
  }
  g.topological_sort();
  return widened;
}

}  // namespace nnfuse
