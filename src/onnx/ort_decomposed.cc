// The ONNX Runtime export of ops whose definitions decompose them into standard ops
// (ops::OrtForm::Kind::kDecomposed): the node alone in a graph of its own, decomposed there, and
// each node made written as it is, under fresh names for what it adds.
#include <map>
#include <set>

#include "ir/error.h"
#include "onnx/ort_export.h"

namespace nnfuse {

void OrtLowering::write_decomposed(const Node& n, const ops::OpDef& def) {
  Graph part;
  part.opsets = g_.opsets;
  // The node's own values, under their names: its constant inputs stay constants (the
  // decomposition may fold what it does to them), already written as the export's initializers.
  std::set<const Value*> own;
  auto copy = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    if (Value* known = part.find_value(v->name())) return known;
    Value* c = part.add_value(v->name(), v->dtype(), v->shape());
    if (v->is_constant()) c->set_constant(v->constant());
    own.insert(c);
    return c;
  };
  std::vector<Value*> ins, outs;
  for (const Value* v : n.inputs()) {
    ins.push_back(copy(v));
    if (ins.back() && !ins.back()->is_constant()) part.add_input(ins.back());
  }
  for (const Value* v : n.outputs()) outs.push_back(copy(v));
  Node* copy_of_n = part.add_node(n.op_type(), n.name(), ins, outs, n.domain());
  for (const auto& [k, a] : n.attrs()) copy_of_n->set_attr(k, a);
  for (Value* v : outs) {
    if (v) part.add_output(v);
  }
  def.ort.decompose(part, copy_of_n);
  // The values the decomposition added get names the export does not use yet; the node's own
  // inputs and outputs keep theirs.
  std::map<const Value*, std::string> names;
  auto name_of = [&](const Value* v) -> std::string {
    if (!v) return "";
    if (auto it = names.find(v); it != names.end()) return it->second;
    return names[v] = own.count(v)       ? v->name()
                      : v->is_constant() ? w_.constant(v->name(), v->constant())
                                         : w_.fresh(v->name());
  };
  for (const Node* m : part.nodes()) {
    if (is_own_op(m->op()) && !is_onnx_op(m->op())) {
      fail(ErrorKind::kInternal, n.describe(), ": its decomposition wrote ", m->describe(),
           ", an op of ", kFusedDomain);
    }
    std::vector<std::string> in, out;
    for (const Value* v : m->inputs()) in.push_back(name_of(v));
    for (const Value* v : m->outputs()) out.push_back(name_of(v));
    onnx::NodeProto* p = w_.node(m->op_type(), in, out, m->domain(), m->name());
    for (const auto& [k, a] : m->attrs()) ProtoWriter::set_attr(p, k, a);
    for (const Value* v : m->outputs()) {
      if (v && !v->is_graph_output() && v->shape().fully_known()) {
        declare_shape(name_of(v), v->dtype(), v->shape().static_dims());
      }
    }
  }
}

}  // namespace nnfuse
