#include "onnx/exporter.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <memory>

#include "ir/atomic_file.h"
#include "ir/error.h"
#include "onnx/ort_export.h"
#include "onnx/provenance.h"
#include "onnx/tensor_proto.h"

namespace nnfuse {

namespace {

constexpr int64_t kIrVersion = 8;

}  // namespace

void value_info_to_proto(const Value* v, onnx::ValueInfoProto* vi) {
  vi->set_name(v->name());
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(v->dtype()));
  if (!v->shape().has_rank) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : v->shape().dims) {
    auto* dp = shape->add_dim();
    if (d.known()) {
      dp->set_dim_value(d.value);
    } else if (!d.param.empty()) {
      dp->set_dim_param(d.param);
    }
  }
}

namespace {

void set_type(const Value* v, onnx::ValueInfoProto* vi) { value_info_to_proto(v, vi); }

}  // namespace

ExportFormat export_format_from_name(const std::string& name) {
  if (name == "nnfuse") return ExportFormat::kNnfuse;
  if (name == "ort") return ExportFormat::kOrt;
  fail(ErrorKind::kInvalidArgument, "unknown export format '", name, "' (expected nnfuse or ort)");
}

void attribute_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto* p) {
  using A = onnx::AttributeProto;
  p->set_name(name);
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      p->set_type(A::FLOAT);
      p->set_f(a.f);
      break;
    case Attribute::Kind::kInt:
      p->set_type(A::INT);
      p->set_i(a.i);
      break;
    case Attribute::Kind::kString:
      p->set_type(A::STRING);
      p->set_s(a.s);
      break;
    case Attribute::Kind::kTensor:
      p->set_type(A::TENSOR);
      tensor_to_proto(a.t, "", p->mutable_t());
      break;
    case Attribute::Kind::kFloats:
      p->set_type(A::FLOATS);
      for (float f : a.floats) p->add_floats(f);
      break;
    case Attribute::Kind::kInts:
      p->set_type(A::INTS);
      for (int64_t i : a.ints) p->add_ints(i);
      break;
    case Attribute::Kind::kStrings:
      p->set_type(A::STRINGS);
      for (const auto& s : a.strings) p->add_strings(s);
      break;
    case Attribute::Kind::kGraph:
      // Written by node_to_proto, which knows the node's captured inputs.
      fail(ErrorKind::kInternal, "attribute '", name, "': a subgraph is written with its node");
  }
}

namespace {

// A value's type, or only its name where its element type is unknown (a subgraph's inputs may
// leave their types to the node that runs it).
void declare(const Value* v, onnx::ValueInfoProto* vi) {
  if (v->dtype() == DType::kUndefined) {
    vi->set_name(v->name());
  } else {
    set_type(v, vi);
  }
}

// The inputs a node's subgraphs capture (the node's last inputs), 0 without subgraphs.
size_t num_captures(const Node& n) {
  for (const auto& [k, a] : n.attrs()) {
    if (a.kind == Attribute::Kind::kGraph && a.g) return a.g->num_captures;
  }
  return 0;
}

void node_to_proto(const Node& n, onnx::NodeProto* np);

// A subgraph as ONNX writes it: it reads the outer values it captures by name, so its capture
// inputs are dropped, and an Identity renames an outer value whose name changed since import.
void subgraph_to_proto(const Graph& body, const Node& owner, onnx::GraphProto* gp) {
  gp->set_name(body.name);
  const size_t formal = body.inputs().size() - body.num_captures;
  for (size_t i = 0; i < formal; ++i) declare(body.inputs()[i], gp->add_input());
  for (const Value* v : body.values()) {
    if (v->is_constant()) tensor_to_proto(v->constant(), v->name(), gp->add_initializer());
  }
  const size_t first = owner.num_inputs() - body.num_captures;
  for (size_t k = 0; k < body.num_captures; ++k) {
    const Value* inner = body.inputs()[formal + k];
    const Value* outer = owner.input(first + k);
    if (!outer || outer->name() == inner->name()) continue;
    onnx::NodeProto* np = gp->add_node();
    np->set_name(inner->name() + "/capture");
    np->set_op_type("Identity");
    np->add_input(outer->name());
    np->add_output(inner->name());
  }
  for (const Node* n : body.nodes()) {
    node_to_proto(*n, gp->add_node());
    for (const Value* v : n->outputs()) {
      if (v && !v->is_graph_output() && v->dtype() != DType::kUndefined) {
        set_type(v, gp->add_value_info());
      }
    }
  }
  for (const Value* v : body.outputs()) declare(v, gp->add_output());
}

void node_to_proto(const Node& n, onnx::NodeProto* np) {
  np->set_name(n.name());
  np->set_op_type(n.op_type());
  if (!n.domain().empty()) np->set_domain(n.domain());
  const size_t ins = n.num_inputs() - num_captures(n);
  for (size_t i = 0; i < ins; ++i) np->add_input(n.input(i) ? n.input(i)->name() : "");
  for (const Value* v : n.outputs()) np->add_output(v ? v->name() : "");
  for (const auto& [k, a] : n.attrs()) {
    if (a.kind == Attribute::Kind::kGraph) {
      onnx::AttributeProto* p = np->add_attribute();
      p->set_name(k);
      p->set_type(onnx::AttributeProto::GRAPH);
      subgraph_to_proto(*a.g, n, p->mutable_g());
      continue;
    }
    attribute_to_proto(k, a, np->add_attribute());
  }
  if (!n.fused_by().empty()) {
    // Provenance travels in the doc string (attributes would fail the schema check of
    // standard ops), so dumps of an exported model stay explainable.
    np->set_doc_string(provenance_doc(n.fused_by(), n.fused_from()));
  }
}

}  // namespace

void graph_to_model(const Graph& g, onnx::ModelProto* m, ExportFormat format) {
  m->Clear();
  m->set_ir_version(kIrVersion);
  m->set_producer_name("nnfuse");
  m->set_producer_version("0.1.0");
  onnx::GraphProto* gp = m->mutable_graph();
  gp->set_name(g.name.empty() ? "nnfuse" : g.name);
  for (const Value* v : g.runtime_inputs()) set_type(v, gp->add_input());
  for (const Value* v : g.values()) {
    if (v->is_constant()) tensor_to_proto(v->constant(), v->name(), gp->add_initializer());
  }
  std::unique_ptr<OrtLowering> ort;
  if (format == ExportFormat::kOrt) ort = std::make_unique<OrtLowering>(g, gp);
  for (const Node* n : g.nodes()) {
    if (ort && ort->absorbed(*n)) continue;
    if (ort && (n->domain() == kFusedDomain || ort->claims(*n))) {
      const int before = gp->node_size();
      ort->lower(*n);
      for (int i = before; i < gp->node_size(); ++i) {
        if (!n->fused_by().empty()) {
          gp->mutable_node(i)->set_doc_string(provenance_doc(n->fused_by(), n->fused_from()));
        }
      }
      for (const Value* v : n->outputs()) ort->declare(v);
      continue;
    }
    node_to_proto(*n, gp->add_node());
    for (const Value* v : n->outputs()) {
      if (v && !v->is_graph_output() && v->dtype() != DType::kUndefined) {
        set_type(v, gp->add_value_info());
      }
    }
  }
  for (const Value* v : g.outputs()) set_type(v, gp->add_output());
  // The opsets: the graph's (the default domain's as the ORT lowering wrote it), and version 1
  // of every other domain a node uses.
  std::map<std::string, int64_t> opsets = g.opsets;
  if (ort) {
    opsets[""] = ort->opset();
    opsets.erase(kFusedDomain);
  }
  for (const onnx::NodeProto& np : gp->node()) {
    if (!np.domain().empty() && !opsets.count(np.domain())) opsets[np.domain()] = 1;
  }
  for (auto& [d, v] : opsets) {
    auto* o = m->add_opset_import();
    o->set_domain(d);
    o->set_version(v);
  }
}

std::string export_onnx_string(const Graph& g, ExportFormat format) {
  onnx::ModelProto m;
  graph_to_model(g, &m, format);
  std::string out;
  if (!m.SerializeToString(&out)) {
    fail(ErrorKind::kUnsupported, "the model is too large to serialize as one protobuf (2 GiB)");
  }
  return out;
}

void save_onnx(const Graph& g, const std::string& path, ExportFormat format) {
  onnx::ModelProto m;
  graph_to_model(g, &m, format);
  if (m.ByteSizeLong() > static_cast<size_t>(INT32_MAX)) {
    fail(ErrorKind::kUnsupported, "the model is too large to serialize as one protobuf (2 GiB)");
  }
  // Straight to the file (no second in-memory copy of the weights), whole or not at all.
  write_file_atomically(path, "the model", [&](std::ostream& f) {
    if (!m.SerializeToOstream(&f)) {
      fail(ErrorKind::kInvalidArgument, "failed writing the model '", path, "'");
    }
  });
}

}  // namespace nnfuse
