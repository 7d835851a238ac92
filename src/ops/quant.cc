#include "ops/quant.h"

#include "ops/dense.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

namespace q = matmul_integer_to_float;

std::string infer_matmul_integer_to_float(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, {});
  out[0].dtype = DType::kFloat32;
  return matmul_shape(input_shape(n, q::kA), input_shape(n, q::kB), &out[0].shape);
}

// Y: A's shape with its last dim N, float32.
std::string infer_matmul_nbits(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, {});
  out[0].dtype = DType::kFloat32;
  const Shape a = input_shape(n, matmul_nbits::kA);
  if (!a.has_rank || a.dims.empty()) return "";
  out[0].shape = a;
  out[0].shape.dims.back() = Dim{n.attr_int("N", -1), ""};
  return "";
}

int64_t nbits_flops(const Node& n) {
  const Value* a = n.input(matmul_nbits::kA);
  if (!a || !a->shape().fully_known()) return 0;
  return 2 * checked_numel(a->shape().static_dims()) * n.attr_int("N", 0);
}

}  // namespace

NodeSpec MatMulIntegerToFloat::spec() const {
  Attrs attrs;
  act.write(attrs);
  return {Op::kMatMulIntegerToFloat, {a, b, a_scale, b_scale, a_zero, b_zero, bias}, attrs};
}

void append_quant_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  t.push_back(
      {.op = Op::kMatMulNBits,
       .summary = "A x W^T [+ bias] with W's blocks of K quantized to `bits` (ONNX Runtime's "
                  "com.microsoft MatMulNBits): the weights stay packed",
       .inputs = {{"A"}, {"B"}, {"scales"}, {"zero_points", true}, {"g_idx", true}, {"bias", true}},
       .outputs = {{"Y"}},
       .attrs = {{"K", K::kInt, ""},
                 {"N", K::kInt, ""},
                 {"bits", K::kInt, "4"},
                 {"block_size", K::kInt, ""},
                 {"accuracy_level", K::kInt, "0"}},
       .traits = {.op_class = OpClass::kOpaque, .compute = true, .flops = nbits_flops},
       .infer = infer_matmul_nbits,
       .ort = {.kind = OrtForm::Kind::kLowering,
               .summary = "com.microsoft MatMulNBits, as imported"}});
  t.push_back(
      {.op = Op::kMatMulIntegerToFloat,
       .summary = "act(float32(MatMulInteger(A, B, A_zero_point, B_zero_point)) * (A_scale * "
                  "B_scale) [+ Bias]): a dynamically quantized dense layer",
       .inputs = {{"A"},
                  {"B"},
                  {"A_scale"},
                  {"B_scale"},
                  {"A_zero_point", true},
                  {"B_zero_point", true},
                  {"Bias", true}},
       .outputs = {{"Y"}},
       .attrs = {{"activation", K::kString, ""},
                 {"activation_alpha", K::kFloat, "the activation's"},
                 {"activation_beta", K::kFloat, "the activation's"}},
       .traits = {.op_class = OpClass::kOutEltwiseFusable, .compute = true, .flops = dense_flops},
       .infer = infer_matmul_integer_to_float,
       .ort = {.kind = OrtForm::Kind::kLowering,
               .summary = "MatMulInteger, Cast, Mul, Mul, Add and the activation (ONNX Runtime "
                          "fuses them back into its MatMulIntegerToFloat)"}});
}

}  // namespace nnfuse::ops
