// Per-node ONNX type and shape inference on the IR: each node's inputs are handed to the op's
// own inference function (libonnx's schemas) as TypeProtos, with the values of small constant
// inputs, through an InferenceContext over the IR; nothing is exported or imported again.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "onnx/exporter.h"
#include "onnx/tensor_proto.h"
#include "ops/def.h"
#include "shape/shape_inference.h"

namespace nnfuse::shape {

namespace {

// Constant inputs up to this size are given to inference functions as data (shape vectors,
// axes, pads, scales); larger ones (weights) only as types.
constexpr int64_t kMaxDataElements = 4096;

void to_type_proto(DType t, const Shape& s, onnx::TypeProto* tp) {
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t));
  if (!s.has_rank) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : s.dims) {
    auto* dp = shape->add_dim();
    if (d.known()) {
      dp->set_dim_value(d.value);
    } else if (!d.param.empty()) {
      dp->set_dim_param(d.param);
    }
  }
}

// How much a shape says: nothing, a rank, and each known dim.
int knowledge(const Shape& s) {
  if (!s.has_rank) return 0;
  int k = 1;
  for (const Dim& d : s.dims) k += d.known() ? 1 : 0;
  return k;
}

class NodeContext : public onnx::InferenceContext {
 public:
  explicit NodeContext(const Node& n) : outputs_(n.num_outputs()) {
    inputs_.resize(n.num_inputs());
    data_.resize(n.num_inputs());
    for (size_t i = 0; i < n.num_inputs(); ++i) {
      const Value* v = n.input(i);
      if (!v || v->dtype() == DType::kUndefined) continue;
      inputs_[i] = std::make_unique<onnx::TypeProto>();
      to_type_proto(v->dtype(), v->shape(), inputs_[i].get());
      if (v->is_constant() && v->constant().numel() <= kMaxDataElements) {
        data_[i] = std::make_unique<onnx::TensorProto>();
        tensor_to_proto(v->constant(), v->name(), data_[i].get());
      }
    }
    for (const auto& [name, a] : n.attrs()) {
      if (a.kind == Attribute::Kind::kGraph) continue;
      attribute_to_proto(name, a, &attrs_[name]);
    }
  }

  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : &it->second;
  }
  size_t getNumInputs() const override { return inputs_.size(); }
  const onnx::TypeProto* getInputType(size_t i) const override {
    return i < inputs_.size() ? inputs_[i].get() : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t i) const override {
    return i < data_.size() ? data_[i].get() : nullptr;
  }
  size_t getNumOutputs() const override { return outputs_.size(); }
  onnx::TypeProto* getOutputType(size_t i) override {
    return i < outputs_.size() ? &outputs_[i] : nullptr;
  }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override {
    return nullptr;
  }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }

  const onnx::TypeProto& output(size_t i) const { return outputs_[i]; }

 private:
  std::vector<std::unique_ptr<onnx::TypeProto>> inputs_;
  std::vector<std::unique_ptr<onnx::TensorProto>> data_;
  std::vector<onnx::TypeProto> outputs_;
  std::map<std::string, onnx::AttributeProto> attrs_;
};

// An op of nnfuse's domain: its definition's shape rule (ops/def.h), where it knows more.
bool infer_own_op(Node* n, const ops::OpDef& def) {
  std::vector<ops::OutputType> out;
  if (!def.infer || !def.infer(*n, out).empty()) return false;
  bool changed = false;
  for (size_t k = 0; k < n->num_outputs() && k < out.size(); ++k) {
    Value* o = n->output(k);
    if (!o) continue;
    if (o->dtype() == DType::kUndefined && out[k].dtype != DType::kUndefined) {
      o->set_dtype(out[k].dtype);
      changed = true;
    }
    if (knowledge(out[k].shape) > knowledge(o->shape())) {
      o->set_shape(std::move(out[k].shape));
      changed = true;
    }
  }
  return changed;
}

}  // namespace

bool infer_node(const Graph& g, Node* n) {
  if (const ops::OpDef* def = ops::def_of(*n)) return infer_own_op(n, *def);
  const std::string domain = is_default_domain(n->domain()) ? "" : n->domain();
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(n->op_type(), static_cast<int>(g.opset(domain)), domain);
  if (!schema || !schema->has_type_and_shape_inference_function()) return false;
  // Control flow: ONNX's inference of If/Loop/Scan needs its subgraphs' inferencer, which this
  // context does not give (their outputs keep the types the import inferred).
  for (const auto& [name, a] : n->attrs()) {
    if (a.kind == Attribute::Kind::kGraph) return false;
  }
  bool needed = false;
  for (const Value* o : n->outputs()) {
    needed = needed || (o && (!o->shape().fully_known() || o->dtype() == DType::kUndefined));
  }
  if (!needed) return false;
  NodeContext ctx(*n);
  try {
    schema->GetTypeAndShapeInferenceFunction()(ctx);
  } catch (const std::exception&) {
    return false;  // the inputs say too little (or contradict the op): keep what is known
  }
  bool changed = false;
  for (size_t k = 0; k < n->num_outputs(); ++k) {
    Value* o = n->output(k);
    const onnx::TypeProto& tp = ctx.output(k);
    if (!o || !tp.has_tensor_type()) continue;
    const auto& tt = tp.tensor_type();
    if (o->dtype() == DType::kUndefined && tt.elem_type() != 0) {
      o->set_dtype(dtype_from_onnx(tt.elem_type()));
      changed = true;
    }
    if (!tt.has_shape()) continue;
    Shape s;
    s.has_rank = true;
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value() && d.dim_value() >= 0) {
        dim.value = d.dim_value();
      } else if (d.has_dim_param()) {
        dim.param = d.dim_param();
      }
      s.dims.push_back(dim);
    }
    if (knowledge(s) > knowledge(o->shape())) {
      o->set_shape(std::move(s));
      changed = true;
    }
  }
  return changed;
}

SweepStats infer_and_fold(Graph& g) {
  SweepStats st;
  for (Node* n : g.nodes()) {
    if (fold_shape_of(g, n)) {
      ++st.folded;
      continue;
    }
    // Inferred first, so folding knows the size of what it would compute.
    const bool inferred = infer_node(g, n);
    if (fold_constant(g, n)) {
      ++st.folded;
    } else if (inferred) {
      ++st.inferred;
    }
  }
  g.remove_dead_values();
  return st;
}

std::string data_dependent_bound(const Node& n) {
  auto dims_of = [&](size_t i) -> std::optional<Dims> {
    const Value* v = i < n.num_inputs() ? n.input(i) : nullptr;
    if (!v || !v->shape().fully_known()) return std::nullopt;
    return v->shape().static_dims();
  };
  auto count = [](const Dims& d) {
    int64_t c = 1;
    for (int64_t x : d) c *= x;
    return c;
  };
  const auto x = dims_of(0);
  if (n.is(Op::kNonZero) || n.is(Op::kUnique)) {
    if (!x) return "";
    return "data-dependent: at most " + std::to_string(count(*x)) + " (the elements of its input)";
  }
  if (n.is(Op::kTopK)) {
    if (!x || x->empty()) return "";
    int64_t axis = n.attr_int("axis", -1);
    if (axis < 0) axis += static_cast<int64_t>(x->size());
    if (axis < 0 || axis >= static_cast<int64_t>(x->size())) return "";
    return "data-dependent k: at most " + std::to_string((*x)[static_cast<size_t>(axis)]) +
           " (its input's axis)";
  }
  if (n.is(Op::kCompress)) {
    if (!x) return "";
    const Attribute* a = n.find_attr("axis");
    int64_t limit = count(*x);
    if (a) {
      const int64_t axis = a->i < 0 ? a->i + static_cast<int64_t>(x->size()) : a->i;
      if (axis < 0 || axis >= static_cast<int64_t>(x->size())) return "";
      limit = (*x)[static_cast<size_t>(axis)];
    }
    return "data-dependent: at most " + std::to_string(limit) + " (the condition's length)";
  }
  if (n.is(Op::kNonMaxSuppression)) {
    const auto scores = dims_of(1);
    if (!scores || scores->size() != 3) return "";
    return "data-dependent: at most " + std::to_string(count(*scores)) +
           " boxes (batches x classes x boxes)";
  }
  return "";
}

ShapeCoverage shape_coverage(const Graph& g) {
  ShapeCoverage c;
  // Each value without a static shape is charged to the node where the loss started: its own
  // producer when that node's inputs are all static, else the origin of its first input that
  // is not. Values that are dynamic because a graph input is are nobody's loss.
  constexpr size_t kFromInput = SIZE_MAX;
  std::unordered_map<const Value*, size_t> origin;
  for (const Value* v : g.runtime_inputs()) {
    if (!v->shape().fully_known()) origin[v] = kFromInput;
  }
  for (const Node* n : g.nodes()) {
    const Value* unknown_in = nullptr;
    for (const Value* v : n->inputs()) {
      if (v && !v->shape().fully_known() && !unknown_in) unknown_in = v;
    }
    for (const Value* o : n->outputs()) {
      if (!o) continue;
      ++c.values;
      if (o->shape().fully_known()) continue;
      ++c.unknown;
      auto it = unknown_in ? origin.find(unknown_in) : origin.end();
      if (it == origin.end()) {
        origin[o] = c.lost.size();
        c.lost.push_back({n, o->name(), o->shape().str(), 0, data_dependent_bound(*n)});
      } else {
        origin[o] = it->second;
        if (it->second != kFromInput) ++c.lost[it->second].downstream;
      }
    }
  }
  return c;
}

}  // namespace nnfuse::shape
