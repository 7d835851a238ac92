#include <sstream>

#include "ir/graph.h"

namespace nnfuse {

namespace {

std::string value_type(const Value* v) { return dtype_name(v->dtype()) + v->shape().str(); }

std::string attr_text(const Attribute& a) {
  std::ostringstream os;
  auto list = [&os](const auto& xs) {
    os << "[";
    for (size_t i = 0; i < xs.size(); ++i) os << (i ? ", " : "") << xs[i];
    os << "]";
  };
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      os << a.f;
      break;
    case Attribute::Kind::kInt:
      os << a.i;
      break;
    case Attribute::Kind::kString:
      os << '"' << a.s << '"';
      break;
    case Attribute::Kind::kTensor:
      os << "tensor<" << dtype_name(a.t.dtype()) << dims_str(a.t.shape()) << ">";
      break;
    case Attribute::Kind::kFloats:
      list(a.floats);
      break;
    case Attribute::Kind::kInts:
      list(a.ints);
      break;
    case Attribute::Kind::kStrings:
      list(a.strings);
      break;
    case Attribute::Kind::kGraph:
      os << "<graph>";
      break;
  }
  return os.str();
}

}  // namespace

std::string graph_to_text(const Graph& g) {
  std::ostringstream os;
  os << "graph " << (g.name.empty() ? "<unnamed>" : g.name) << " (opsets:";
  for (auto& [d, v] : g.opsets) os << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
  os << ")\n";
  for (const Value* v : g.inputs()) {
    if (!v->is_constant()) os << "  input  %" << v->name() << " : " << value_type(v) << "\n";
  }
  size_t n_const = 0;
  for (const Value* v : g.values()) n_const += v->is_constant() ? 1 : 0;
  os << "  " << n_const << " initializers\n";
  for (const Node* n : g.nodes()) {
    os << "  ";
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const Value* o = n->output(i);
      os << (i ? ", " : "") << (o ? "%" + o->name() + " : " + value_type(o) : std::string("_"));
    }
    os << " = " << (n->domain().empty() ? "" : n->domain() + ".") << n->op_type() << "(";
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      os << (i ? ", " : "") << (v ? (v->is_constant() ? "$" : "%") + v->name() : std::string("_"));
    }
    os << ")";
    if (!n->attrs().empty()) {
      os << " {";
      bool first = true;
      for (auto& [k, a] : n->attrs()) {
        os << (first ? "" : ", ") << k << "=" << attr_text(a);
        first = false;
      }
      os << "}";
    }
    os << "  # " << n->name();
    if (!n->fused_by().empty()) {
      os << " fused by " << n->fused_by() << " from";
      for (auto& f : n->fused_from()) os << " " << f;
    }
    os << "\n";
  }
  for (const Value* v : g.outputs())
    os << "  output %" << v->name() << " : " << value_type(v) << "\n";
  return os.str();
}

}  // namespace nnfuse
