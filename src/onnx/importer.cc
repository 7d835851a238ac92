#include "onnx/importer.h"

#include <fcntl.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "ir/error.h"
#include "onnx/inference_guards.h"
#include "onnx/loop_shapes.h"
#include "onnx/opset_upgrade.h"
#include "onnx/ort_qoperators.h"
#include "onnx/provenance.h"
#include "onnx/qlinear_lowering.h"
#include "onnx/quant_params.h"
#include "onnx/tensor_proto.h"
#include "onnx/widen_half.h"

namespace nnfuse {

namespace {

constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 17;

struct Ctx {
  std::string label;  // the file name, for errors
  std::string base_dir;
  Graph* g;
};

[[noreturn]] void bad(const Ctx& c, const std::string& what) {
  fail(ErrorKind::kInvalidModel, c.label, ": ", what);
}

void apply_type(const Ctx& c, const onnx::TypeProto& tp, Value* v) {
  if (tp.value_case() == onnx::TypeProto::VALUE_NOT_SET) return;
  if (!tp.has_tensor_type()) {
    fail(ErrorKind::kUnsupported, c.label, ": value '", v->name(),
         "' is not a tensor (sequence, map and optional values are not supported)");
  }
  const auto& tt = tp.tensor_type();
  if (tt.has_elem_type() && tt.elem_type() != 0) v->set_dtype(dtype_from_onnx(tt.elem_type()));
  if (tt.has_shape()) {
    Shape s;
    s.has_rank = true;
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) bad(c, "value '" + v->name() + "' has a negative dimension");
        dim.value = d.dim_value();
      } else if (d.has_dim_param()) {
        dim.param = d.dim_param();
      }
      s.dims.push_back(dim);
    }
    v->set_shape(std::move(s));
  }
}

Attribute convert_attribute(const Ctx& c, const Node& node, const onnx::AttributeProto& a) {
  Attribute r;
  std::string label = c.label + ": " + node.describe() + " attribute '" + a.name() + "'";
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::FLOAT:
      r.kind = Attribute::Kind::kFloat;
      r.f = a.f();
      break;
    case A::INT:
      r.kind = Attribute::Kind::kInt;
      r.i = a.i();
      break;
    case A::STRING:
      r.kind = Attribute::Kind::kString;
      r.s = a.s();
      break;
    case A::TENSOR:
      r.kind = Attribute::Kind::kTensor;
      r.t = tensor_from_proto(a.t(), c.base_dir, label);
      break;
    case A::FLOATS:
      r.kind = Attribute::Kind::kFloats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      r.kind = Attribute::Kind::kInts;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      r.kind = Attribute::Kind::kStrings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    default:
      fail(ErrorKind::kUnsupported, label, ": attribute type ", A::AttributeType_Name(a.type()),
           " is not supported");
  }
  return r;
}

void check_opsets(const Ctx& c, const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import()) {
    std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
    c.g->opsets[d] = o.version();
    if (d.empty()) {
      if (o.version() < kMinOpset || o.version() > kMaxOpset) {
        fail(ErrorKind::kUnsupported, c.label, ": opset ", o.version(),
             " of the default ONNX domain is not supported (nnfuse supports ", kMinOpset, " to ",
             kMaxOpset, ")");
      }
    }
  }
}

// The values of the graphs enclosing a subgraph, innermost first: a subgraph reads them by name.
struct Scope {
  const Graph* g;
  const Scope* parent;
  int depth = 0;  // 0 for the model's graph
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      if (const Value* v = s->g->find_value(name)) return v;
    }
    return nullptr;
  }
};

std::shared_ptr<const Graph> build_subgraph(const Ctx& c, onnx::GraphProto& gp, const Scope& outer,
                                            const std::string& where,
                                            std::vector<std::string>* captures);

// Builds `g` from `gp`. For a subgraph (`outer` given), names no value of `gp` defines but an
// enclosing graph does are captured: made values of `g` and listed in `captures`, in the order
// they are first read.
void build_body(const Ctx& c, onnx::GraphProto& gp, Graph& g, const Scope* outer,
                std::vector<std::string>* captures) {
  const std::string in_graph = outer ? " in subgraph '" + gp.name() + "'" : "";
  std::map<std::string, const onnx::TypeProto*> types;
  for (const auto& vi : gp.value_info()) types[vi.name()] = &vi.type();
  for (const auto& vi : gp.output()) types[vi.name()] = &vi.type();

  for (auto& init : *gp.mutable_initializer()) {
    if (init.name().empty()) bad(c, "an initializer" + in_graph + " has no name");
    if (g.find_value(init.name())) bad(c, "initializer '" + init.name() + "' is defined twice");
    Value* v = g.add_value(init.name());
    v->set_constant(
        take_tensor_from_proto(init, c.base_dir, c.label + ": initializer '" + init.name() + "'"));
    onnx::TensorProto().Swap(&init);  // its bytes are freed now, not with the whole model
  }
  for (const auto& in : gp.input()) {
    if (Value* v = g.find_value(in.name())) {
      if (!v->is_constant()) bad(c, "graph input '" + in.name() + "' is listed twice");
      continue;  // an initializer listed as input (IR < 4): a constant
    }
    if (in.name().empty()) bad(c, "a graph input" + in_graph + " has no name");
    Value* v = g.add_value(in.name());
    apply_type(c, in.type(), v);
    // A subgraph's inputs may leave their types to the node that runs it.
    if (v->dtype() == DType::kUndefined && !outer)
      bad(c, "graph input '" + in.name() + "' has no element type");
    g.add_input(v);
  }

  // Names this graph defines: anything else a node reads comes from an enclosing graph.
  std::set<std::string> local;
  for (const auto& np : gp.node()) {
    for (const auto& o : np.output()) local.insert(o);
  }
  auto resolve = [&](const std::string& name) -> Value* {
    if (Value* v = g.find_value(name)) return v;
    if (outer && !local.count(name)) {
      if (const Value* o = outer->find(name)) {
        captures->push_back(name);
        return g.add_value(name, o->dtype(), o->shape());
      }
    }
    // Producers may come later in a mis-ordered file; make the value now, sort later.
    return g.add_value(name);
  };

  std::set<std::string> node_names;
  int index = 0;
  const Scope here{&g, outer, outer ? outer->depth + 1 : 0};
  for (auto& np : *gp.mutable_node()) {
    ++index;
    std::string name = np.name();
    if (name.empty() || node_names.count(name)) {
      std::string stem = (name.empty() ? np.op_type() : name) + "_" + std::to_string(index);
      name = stem;
      for (int k = 1; node_names.count(name); ++k) name = stem + "_" + std::to_string(k);
    }
    node_names.insert(name);
    std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
    if (np.op_type().empty()) bad(c, "node '" + name + "' has no op type");

    // Subgraphs first: the values they capture become this node's last inputs.
    std::map<std::string, std::shared_ptr<const Graph>> subgraphs;
    std::vector<std::string> node_captures;
    for (auto& a : *np.mutable_attribute()) {
      if (a.type() != onnx::AttributeProto::GRAPH) continue;
      std::vector<std::string> caps;
      subgraphs[a.name()] =
          build_subgraph(c, *a.mutable_g(), here,
                         np.op_type() + " '" + name + "' attribute '" + a.name() + "'", &caps);
      for (const auto& k : caps) {
        if (std::find(node_captures.begin(), node_captures.end(), k) == node_captures.end())
          node_captures.push_back(k);
      }
    }
    // Every subgraph of the node takes every capture, in one order.
    for (auto& [attr, sub] : subgraphs) {
      auto* body = const_cast<Graph*>(sub.get());
      for (const auto& k : node_captures) {
        Value* v = body->find_value(k);
        if (v && v->is_graph_input()) continue;
        if (!v) {
          const Value* o = here.find(k);
          v = body->add_value(k, o ? o->dtype() : DType::kUndefined,
                              o ? o->shape() : Shape::unknown());
        }
      }
      // Inputs: the formal ones, then the captures in the node's order.
      for (const auto& k : node_captures) body->add_input(body->find_value(k));
      body->num_captures = node_captures.size();
    }

    std::vector<Value*> ins;
    for (const auto& i : np.input()) ins.push_back(i.empty() ? nullptr : resolve(i));
    for (const auto& k : node_captures) ins.push_back(resolve(k));
    std::vector<Value*> outs;
    for (const auto& o : np.output()) {
      if (o.empty()) {
        outs.push_back(nullptr);
        continue;
      }
      Value* v = g.find_value(o);
      if (!v) v = g.add_value(o);
      auto t = types.find(o);
      if (t != types.end()) apply_type(c, *t->second, v);
      outs.push_back(v);
    }
    Node* n = g.add_node(np.op_type(), name, ins, outs, domain);
    for (const auto& a : np.attribute()) {
      if (a.name().empty()) bad(c, n->describe() + " has an attribute without a name");
      if (a.type() == onnx::AttributeProto::GRAPH) {
        Attribute r;
        r.kind = Attribute::Kind::kGraph;
        r.g = subgraphs[a.name()];
        n->set_attr(a.name(), std::move(r));
        continue;
      }
      n->set_attr(a.name(), convert_attribute(c, *n, a));
    }
    std::string pass;
    std::vector<std::string> from;
    if (parse_provenance_doc(np.doc_string(), &pass, &from)) n->set_provenance(from, pass);
  }

  for (const auto& out : gp.output()) {
    Value* v = g.find_value(out.name());
    if (!v && outer && outer->find(out.name())) v = resolve(out.name());
    if (!v) bad(c, "graph output '" + out.name() + "'" + in_graph + " is not produced by any node");
    apply_type(c, out.type(), v);
    g.add_output(v);
  }
  for (Value* v : g.values()) {
    if (!v->producer() && !v->is_constant() && !v->is_graph_input() &&
        !(captures &&
          std::find(captures->begin(), captures->end(), v->name()) != captures->end())) {
      std::string reader = v->uses().empty() ? "the graph" : v->uses()[0].node->describe();
      bad(c, reader + in_graph + " reads '" + v->name() +
                 "', which no node, input or initializer defines");
    }
  }
  g.topological_sort();
}

std::shared_ptr<const Graph> build_subgraph(const Ctx& c, onnx::GraphProto& gp, const Scope& outer,
                                            const std::string& where,
                                            std::vector<std::string>* captures) {
  // Each level is a recursion of the importer, the checker and the kernels that run it.
  constexpr int kMaxDepth = 16;
  if (outer.depth + 1 > kMaxDepth) {
    fail(ErrorKind::kUnsupported, c.label, ": subgraphs nest more than ", kMaxDepth, " deep (at ",
         where, ")");
  }
  auto g = std::make_shared<Graph>();
  g->name = gp.name().empty() ? where : gp.name();
  g->opsets = c.g->opsets;
  try {
    build_body(c, gp, *g, &outer, captures);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidModel && e.kind() != ErrorKind::kUnsupported) throw;
    fail(e.kind(), std::string(e.what()), " (in the subgraph of ", where, ")");
  }
  return g;
}

void build_graph(const Ctx& c, onnx::ModelProto& m) {
  Graph& g = *c.g;
  g.name = m.graph().name();
  build_body(c, *m.mutable_graph(), g, nullptr, nullptr);
}

}  // namespace

namespace {

// Sets the dims of the named graph inputs and forgets every other recorded shape (value_info
// and output dims were computed for the old input shapes), so inference redoes them.
void override_input_shapes(onnx::ModelProto& m,
                           const std::map<std::string, std::vector<int64_t>>& shapes,
                           const std::string& label) {
  for (const auto& [name, dims] : shapes) {
    onnx::ValueInfoProto* in = nullptr;
    for (auto& i : *m.mutable_graph()->mutable_input()) {
      if (i.name() == name) in = &i;
    }
    if (!in) fail(ErrorKind::kInvalidArgument, label, ": the model has no input '", name, "'");
    auto* t = in->mutable_type()->mutable_tensor_type();
    if (t->shape().dim_size() != static_cast<int>(dims.size())) {
      fail(ErrorKind::kInvalidArgument, label, ": input '", name, "' has rank ",
           t->shape().dim_size(), ", the shape given has ", dims.size(), " dims");
    }
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] < 1) {
        fail(ErrorKind::kInvalidArgument, label, ": input '", name, "': dim ", k,
             " must be positive, got ", dims[k]);
      }
      t->mutable_shape()->mutable_dim(static_cast<int>(k))->set_dim_value(dims[k]);
    }
  }
  m.mutable_graph()->clear_value_info();
  for (auto& o : *m.mutable_graph()->mutable_output()) {
    if (o.type().has_tensor_type()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  }
}

void check_parsed(const onnx::ModelProto& m, const std::string& label);

void parse_model(const char* bytes, size_t size, const std::string& label, onnx::ModelProto& m) {
  if (size == 0) fail(ErrorKind::kInvalidModel, label, ": the file is empty");
  if (size > static_cast<size_t>(INT_MAX)) {
    fail(ErrorKind::kInvalidModel, label,
         ": the model is larger than 2 GiB; keep its weights in external data");
  }
  if (!m.ParseFromArray(bytes, static_cast<int>(size))) {
    fail(ErrorKind::kInvalidModel, label,
         ": not a valid ONNX model (the protobuf could not be parsed; is the file truncated?)");
  }
  check_parsed(m, label);
}

void check_parsed(const onnx::ModelProto& m, const std::string& label) {
  if (!m.has_graph())
    fail(ErrorKind::kInvalidModel, label, ": not an ONNX model (it has no graph)");
  if (m.ir_version() <= 0) fail(ErrorKind::kInvalidModel, label, ": the model has no IR version");
}

// Checks every node against its schema at the model's opsets.
void check_nodes(const onnx::ModelProto& m, const std::string& base_dir, const std::string& label) {
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(m.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (const auto& o : m.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
    ctx.set_opset_imports(opsets);
    if (!base_dir.empty()) ctx.set_model_dir(base_dir);
    // Nodes are checked against their schemas; value infos are not, since exporters often
    // leave graph outputs without a shape, which is valid for running.
    onnx::checker::LexicalScopeContext lex;
    for (const auto& i : m.graph().input()) lex.add(i.name());
    for (const auto& i : m.graph().initializer()) lex.add(i.name());
    for (const auto& n : m.graph().node()) {
      onnx::checker::check_node(n, ctx, lex);
      for (const auto& o : n.output()) lex.add(o);
    }
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    fail(ErrorKind::kInvalidModel, label, ": the ONNX checker rejects the model: ", msg);
  }
}

// Imports a parsed model; its initializers' data is released as each becomes a tensor, so the
// weights are never held twice.
std::unique_ptr<Graph> import_model(onnx::ModelProto& m, const std::string& base_dir,
                                    const std::string& label, const ImportOptions& opts) {
  auto g = std::make_unique<Graph>();
  Ctx c{label, base_dir, g.get()};
  check_names_defined(m, label);
  check_inputs_typed(m, label);
  install_inference_guards();
  if (const int64_t v = default_opset(m); v >= 1 && v < kMinOpset) {
    check_nodes(m, base_dir, label);  // the model as written, before it is converted
    for (const auto& n : m.graph().node()) {
      // Scan-8 scans a batch of sequences (sequence_lens first); the converter gives Scan-9
      // nodes whose inputs no longer match the model's.
      if (v < 9 && n.op_type() == "Scan" && (n.domain().empty() || n.domain() == "ai.onnx")) {
        fail(ErrorKind::kUnsupported, label, ": Scan node '", n.name(),
             "': Scan of opset 8 (batched, with sequence_lens) is not supported; export the "
             "model at opset 9 or later");
      }
    }
    upgrade_opset(m, kMinOpset, label);
  }
  check_opsets(c, m);
  check_nodes(m, base_dir, label);
  lower_ort_quantized_ops(m, label);
  if (!opts.input_shapes.empty()) override_input_shapes(m, opts.input_shapes, label);
  relax_loop_carried_shapes(*m.mutable_graph());
  if (opts.infer_shapes) {
    try {
      onnx::ShapeInferenceOptions so(/*check_type=*/false, /*strict=*/0, /*data_prop=*/true);
      take_guard_refusal();
      onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), so);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
      fail(ErrorKind::kInvalidModel, label, ": ONNX shape inference failed: ", msg);
    }
    if (std::string refusal = take_guard_refusal(); !refusal.empty()) {
      fail(ErrorKind::kInvalidModel, label, ": ", refusal);
    }
  }
  build_graph(c, m);
  widen_half_precision(*g);
  check_quantization_params(*g, label);
  lower_8bit_max_pool(*g);
  lower_qlinear_ops(*g);
  return g;
}

// Parses the model straight from the file through protobuf's buffered stream: neither the
// file's bytes nor a copy of them stay in memory beside the parsed model.
void parse_model_file(const std::string& path, onnx::ModelProto& m) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::kInvalidModel, path, ": cannot open the file");
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  const size_t size = stat_ok ? static_cast<size_t>(st.st_size) : 0;
  bool parsed = false;
  if (stat_ok && size > 0 && size <= static_cast<size_t>(INT_MAX)) {
    parsed = m.ParseFromFileDescriptor(fd);
  }
  ::close(fd);
  if (!stat_ok) fail(ErrorKind::kInvalidModel, path, ": cannot read the file");
  if (size == 0) fail(ErrorKind::kInvalidModel, path, ": the file is empty");
  if (size > static_cast<size_t>(INT_MAX)) {
    fail(ErrorKind::kInvalidModel, path,
         ": the model is larger than 2 GiB; keep its weights in external data");
  }
  if (!parsed) {
    fail(ErrorKind::kInvalidModel, path,
         ": not a valid ONNX model (the protobuf could not be parsed; is the file truncated?)");
  }
  check_parsed(m, path);
}

}  // namespace

std::unique_ptr<Graph> load_onnx_from_string(const std::string& bytes, const std::string& base_dir,
                                             const std::string& label, const ImportOptions& opts) {
  onnx::ModelProto m;
  parse_model(bytes.data(), bytes.size(), label, m);
  return import_model(m, base_dir, label, opts);
}

std::unique_ptr<Graph> load_onnx(const std::string& path, const ImportOptions& opts) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(ErrorKind::kInvalidModel, path, ": no such file");
  if (fs::is_directory(path, ec)) fail(ErrorKind::kInvalidModel, path, ": is a directory");
  std::string dir = fs::absolute(path, ec).parent_path().string();
  onnx::ModelProto m;
  parse_model_file(path, m);
  return import_model(m, dir, path, opts);
}

}  // namespace nnfuse
