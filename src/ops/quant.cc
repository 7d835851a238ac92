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

}  // namespace

NodeSpec MatMulIntegerToFloat::spec() const {
  Attrs attrs;
  act.write(attrs);
  return {Op::kMatMulIntegerToFloat, {a, b, a_scale, b_scale, a_zero, b_zero, bias}, attrs};
}

void append_quant_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
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
