#include "ops/region.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "codegen/jit.h"
#include "ir/builder.h"
#include "ir/error.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

Attribute ints_attr(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

std::vector<int64_t> static_shape(const Node& node, const Value* v, const char* what) {
  if (!v) fail(ErrorKind::kInvalidModel, node.describe(), ": ", what, " is missing");
  if (v->dtype() != DType::kFloat32) {
    fail(ErrorKind::kInvalidModel, node.describe(), ": ", what, " '", v->name(),
         "' is not float32");
  }
  if (!v->shape().fully_known()) {
    fail(ErrorKind::kInvalidModel, node.describe(), ": ", what, " '", v->name(),
         "' has no static shape");
  }
  const Dims d = v->shape().static_dims();
  return std::vector<int64_t>(d.begin(), d.end());
}

// An elementwise region's output is its domain: the inputs broadcast together. A row region's
// output has the domain's elements or one per row, in a shape the region does not state (its
// value's): unknown here.
std::string infer_region(const Node& n, std::vector<OutputType>& out) {
  out.assign(n.num_outputs(), OutputType{DType::kFloat32, Shape::unknown()});
  if (out.size() != 1) return "FusedRegion has one output";
  if (n.has_attr("domain_shape")) return "";
  Shape s{true, {}};
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (std::string why = broadcast_shape(s, input_shape(n, i), &s); !why.empty()) return why;
  }
  out[0].shape = s;
  return "";
}

std::string user_pattern_why(const Node& n) {
  return "fusion pattern '" + n.attr_string("pattern", "") +
         "' is computed by the user's code, which ONNX Runtime cannot run";
}

}  // namespace

NodeSpec UserPattern::spec() const {
  NodeSpec s{Op::kUserPattern, inputs, {{"pattern", attr_string(pattern)}}};
  Attribute ops;
  ops.kind = Attribute::Kind::kStrings;
  for (size_t i = 0; i < matched.size(); ++i) {
    ops.strings.push_back(matched[i]->op_type());
    for (const auto& [name, a] : matched[i]->attrs()) {
      s.attrs[std::string("n").append(std::to_string(i)).append(".").append(name)] = a;
    }
  }
  s.attrs["ops"] = ops;
  s.attrs["inputs_from"] = attr_ints(inputs_from);
  return s;
}

NodeSpec FusedRegion::spec() const {
  return {Op::kFusedRegion, inputs, fused_region_attrs(region)};
}

Attrs fused_region_attrs(const codegen::Region& r) {
  Attrs a;
  a["ops"] = ints_attr(codegen::encode_ops(r));
  Attribute values;
  values.kind = Attribute::Kind::kFloats;
  values.floats = codegen::encode_values(r);
  a["values"] = values;
  Attribute out;
  out.kind = Attribute::Kind::kInt;
  out.i = r.output;
  a["output"] = out;
  if (!r.domain_shape.empty()) a["domain_shape"] = ints_attr(r.domain_shape);
  return a;
}

codegen::Region fused_region_of(const Node& node) {
  if (node.num_outputs() != 1) {
    fail(ErrorKind::kInvalidModel, node.describe(), ": FusedRegion has one output, not ",
         node.num_outputs());
  }
  std::vector<std::vector<int64_t>> in;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    std::string what = "input ";
    what += std::to_string(i);
    in.push_back(static_shape(node, node.input(i), what.c_str()));
  }
  std::vector<int64_t> out = static_shape(node, node.output(0), "output");
  const Attribute* ops = node.find_attr("ops");
  const Attribute* values = node.find_attr("values");
  const Attribute* output = node.find_attr("output");
  if (!ops || ops->kind != Attribute::Kind::kInts || !values ||
      values->kind != Attribute::Kind::kFloats || !output ||
      output->kind != Attribute::Kind::kInt) {
    fail(ErrorKind::kInvalidModel, node.describe(),
         ": FusedRegion needs the attributes ops (ints), values (floats) and output (int)");
  }
  try {
    return codegen::decode(ops->ints, values->floats, static_cast<int>(output->i), std::move(in),
                           std::move(out), node.attr_ints("domain_shape"));
  } catch (const std::invalid_argument& e) {
    fail(ErrorKind::kInvalidModel, node.describe(), ": malformed region: ", e.what());
  }
}

std::string fused_region_symbol(const codegen::Region& r) {
  std::ostringstream key;
  for (int64_t v : codegen::encode_ops(r)) key << v << ",";
  for (float v : codegen::encode_values(r)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%a;", static_cast<double>(v));
    key << buf;
  }
  key << "|" << r.output << "|";
  auto shape = [&key](const std::vector<int64_t>& s) {
    for (int64_t d : s) key << d << "x";
    key << "/";
  };
  for (const auto& s : r.input_shapes) shape(s);
  shape(r.output_shape);
  shape(r.domain_shape);
  char name[48];
  std::snprintf(name, sizeof name, "nnfuse_region_%016llx",
                static_cast<unsigned long long>(codegen::fnv1a64(key.str())));
  return name;
}

void append_region_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  t.push_back(
      {.op = Op::kFusedRegion,
       .summary = "a region of elementwise ops and at most one last-axis reduction, run "
                  "as one generated kernel",
       .inputs = {{"X", false, true}},
       .outputs = {{"Y"}},
       .attrs = {{"ops", K::kInts},
                 {"values", K::kFloats},
                 {"output", K::kInt},
                 {"domain_shape", K::kInts, "the output's shape"}},
       .traits = {.op_class = OpClass::kOpaque},
       .infer = infer_region,
       .ort = {.kind = OrtForm::Kind::kLowering, .summary = "its ops as standard ONNX ops"}});
  t.push_back({.op = Op::kUserPattern,
               .summary = "a registered user fusion pattern's node, run by the pattern's compute",
               .inputs = {{"X", true, true}},
               .outputs = {{"Y", true, true}},
               .attrs = {{"pattern", K::kString}, {"ops", K::kStrings}, {"inputs_from", K::kInts}},
               .open_attrs = true,
               .traits = {.op_class = OpClass::kOpaque},
               .infer_why = "the pattern's own infer_shape gives its outputs",
               .ort = {.kind = OrtForm::Kind::kNone,
                       .why = "a user fusion pattern's compute is C++ code registered in the "
                              "process; ONNX Runtime has no kernel for it",
                       .why_for = user_pattern_why}});
}

}  // namespace nnfuse::ops
