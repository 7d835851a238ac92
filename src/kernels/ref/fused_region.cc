// Reference FusedRegion: the region evaluated op by op (codegen::evaluate). Also the run-time
// fallback when its generated code cannot be built.
#include "kernels/ref/fused_region.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "codegen/jit.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

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

std::string supports_fused_region(const Node& node, int64_t) {
  try {
    (void)fused_region_of(node);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void run_fused_region(KernelContext& ctx) {
  const codegen::Region r = fused_region_of(ctx.node);
  std::vector<const float*> in;
  for (size_t i = 0; i < r.input_shapes.size(); ++i) {
    const Tensor& t = ctx.in(i);
    const Dims want(r.input_shapes[i].begin(), r.input_shapes[i].end());
    NNFUSE_CHECK(t.dtype() == DType::kFloat32 && t.shape() == want, ctx.node.describe(), ": input ",
                 i, " is ", dtype_name(t.dtype()), dims_str(t.shape()), ", expected ", "float32",
                 dims_str(want));
    in.push_back(t.data<float>());
  }
  Tensor out(DType::kFloat32, Dims(r.output_shape.begin(), r.output_shape.end()));
  codegen::evaluate(r, in, out.data<float>());
  ctx.outputs[0] = std::move(out);
}

}  // namespace

std::map<std::string, Attribute> fused_region_attrs(const codegen::Region& r) {
  std::map<std::string, Attribute> a;
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

void append_fused_region_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({kFusedRegionOp, run_fused_region, supports_fused_region});
}

}  // namespace nnfuse
