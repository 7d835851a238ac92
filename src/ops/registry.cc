// The table of definitions: each family's, listed here (no static registration).
#include <array>

#include "ir/error.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/conv_blocks.h"
#include "ops/dense.h"
#include "ops/norm.h"
#include "ops/onnx_ops.h"
#include "ops/quant.h"
#include "ops/region.h"
#include "ops/response_norm.h"

namespace nnfuse {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kBroadcast:
      return "broadcast";
    case OpClass::kInjective:
      return "injective";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kOutEltwiseFusable:
      return "out_eltwise_fusable";
    case OpClass::kOpaque:
      return "opaque";
  }
  return "?";
}

namespace ops {

namespace {

constexpr size_t kOps = static_cast<size_t>(Op::kEnd);

struct Table {
  std::vector<OpDef> defs;
  std::array<const OpDef*, kOps> by_op{};
  std::vector<const OpDef*> all;
};

const Table& table() {
  static const Table t = [] {
    Table r;
    append_activation_defs(r.defs);
    append_conv_defs(r.defs);
    append_conv_block_defs(r.defs);
    append_dense_defs(r.defs);
    append_norm_defs(r.defs);
    append_attention_defs(r.defs);
    append_region_defs(r.defs);
    append_response_norm_defs(r.defs);
    append_quant_defs(r.defs);
    for (const OpDef& d : r.defs) {
      const size_t i = static_cast<size_t>(d.op);
      if (d.op == Op::kUnknown || !is_own_op(d.op)) {
        fail(ErrorKind::kInternal, "a definition of ", op_name(d.op), ", not an op of ",
             kFusedDomain);
      }
      if (r.by_op[i]) fail(ErrorKind::kInternal, op_name(d.op), " is defined twice");
      r.by_op[i] = &d;
    }
    for (const OpDef* d : r.by_op) {
      if (d) r.all.push_back(d);
    }
    return r;
  }();
  return t;
}

const OpTraits& unknown_traits() {
  static const OpTraits t;
  return t;
}

}  // namespace

std::string spec_domain(const NodeSpec& s) {
  if (s.domain) return *s.domain;
  return is_onnx_op(s.op) ? "" : kFusedDomain;
}

const OpDef* find_def(Op op) { return table().by_op[static_cast<size_t>(op)]; }

const std::vector<const OpDef*>& all_defs() { return table().all; }

const OpTraits& traits_of(const Node& n) {
  if (const OpDef* d = def_of(n)) return d->traits;
  if (is_default_domain(n.domain())) {
    if (const OpTraits* t = onnx_traits(n.op())) return *t;
  }
  return unknown_traits();
}

StrictRefusal strict_refusal(Op op) {
  const OpTraits& t = traits_of(op);
  if (t.compute) return StrictRefusal::kAlways;
  if (op == Op::kIdentity || op == Op::kDropout) return StrictRefusal::kNever;  // copies
  switch (t.op_class) {
    case OpClass::kElementwise:
    case OpClass::kBroadcast:
    case OpClass::kReduction:
      return StrictRefusal::kOnFloats;
    default:
      return op == Op::kCumSum ? StrictRefusal::kOnFloats : StrictRefusal::kNever;
  }
}

bool strict_refuses(const Node& n) {
  if (traits_of(n).compute) return true;
  if (n.is(Op::kUnknown) || strict_refusal(n.op()) != StrictRefusal::kOnFloats) return false;
  for (const Value* v : n.outputs()) {
    if (!v) continue;
    const DType t = v->dtype();
    if (t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 ||
        t == DType::kFloat64) {
      return true;
    }
  }
  return false;
}

const OpTraits& traits_of(Op op) {
  if (const OpDef* d = find_def(op)) return d->traits;
  if (const OpTraits* t = is_onnx_op(op) ? onnx_traits(op) : nullptr) return *t;
  return unknown_traits();
}

OpClass op_class(const Node& node) {
  const OpTraits& t = traits_of(node);
  return t.node_class ? t.node_class(node) : t.op_class;
}

bool traits_listed(Op op) { return find_def(op) || (is_onnx_op(op) && onnx_traits(op)); }

std::string check_against_def(const Node& n, const OpDef& def) {
  size_t required = 0;
  for (const Port& p : def.inputs) required += p.optional || p.variadic ? 0 : 1;
  const bool variadic_in = !def.inputs.empty() && def.inputs.back().variadic;
  const bool variadic_out = !def.outputs.empty() && def.outputs.back().variadic;
  for (size_t i = 0; i < def.inputs.size() && i < n.num_inputs(); ++i) {
    if (!def.inputs[i].optional && !def.inputs[i].variadic && !n.input(i)) {
      return "input " + std::to_string(i) + " (" + def.inputs[i].name + ") is missing";
    }
  }
  if (n.num_inputs() < required) return "it has " + std::to_string(n.num_inputs()) + " inputs";
  if (!variadic_in && n.num_inputs() > def.inputs.size()) {
    return "it has " + std::to_string(n.num_inputs()) + " inputs, the op takes at most " +
           std::to_string(def.inputs.size());
  }
  if (!variadic_out && n.num_outputs() > def.outputs.size()) {
    return "it has " + std::to_string(n.num_outputs()) + " outputs, the op has at most " +
           std::to_string(def.outputs.size());
  }
  for (const auto& [name, a] : n.attrs()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : def.attrs) {
      if (s.name == name) spec = &s;
    }
    if (!spec && !def.open_attrs) return "attribute '" + name + "' is not one of the op's";
    if (spec && spec->kind != a.kind) {
      return "attribute '" + name + "' is a " + attribute_kind_name(a.kind) + ", not a " +
             attribute_kind_name(spec->kind);
    }
  }
  return "";
}

std::string check_node(const Node& n, const OpDef& def) {
  if (std::string why = check_against_def(n, def); !why.empty()) return why;
  if (!def.infer) return "";
  std::vector<OutputType> out;
  if (std::string why = def.infer(n, out); !why.empty()) return "its shape rule: " + why;
  for (size_t k = 0; k < n.num_outputs() && k < out.size(); ++k) {
    const Value* v = n.output(k);
    if (!v) continue;
    const OutputType& want = out[k];
    if (want.dtype != DType::kUndefined && v->dtype() != DType::kUndefined &&
        want.dtype != v->dtype()) {
      return "output " + std::to_string(k) + " is " + dtype_name(v->dtype()) +
             ", its shape rule says " + dtype_name(want.dtype);
    }
    const Shape& s = v->shape();
    bool agree = !s.has_rank || !want.shape.has_rank || s.dims.size() == want.shape.dims.size();
    for (size_t d = 0; agree && s.has_rank && want.shape.has_rank && d < s.dims.size(); ++d) {
      agree = !s.dims[d].known() || !want.shape.dims[d].known() ||
              s.dims[d].value == want.shape.dims[d].value;
    }
    if (!agree) {
      return "output " + std::to_string(k) + " '" + v->name() + "' is " + s.str() +
             ", its shape rule says " + want.shape.str();
    }
  }
  return "";
}

}  // namespace ops
}  // namespace nnfuse
