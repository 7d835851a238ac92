#include "ops/dense.h"

#include "ir/builder.h"
#include "ir/error.h"
#include "ir/saturate.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

Attrs with_activation(const Activation& act) {
  Attrs a;
  act.write(a);
  return a;
}

// A product of input 0 (A) and input 1 (B) as MatMul multiplies them.
std::string infer_matmul(const Node& n, std::vector<OutputType>& out) {
  out.assign(n.num_outputs(), {});
  out[0].dtype = like_input(n, 0).dtype;
  return matmul_shape(input_shape(n, 0), input_shape(n, 1), &out[0].shape);
}

// Gemm's [M, N] of A [M, K] or [K, M] (transA) and B [K, N] or [N, K] (transB).
std::string gemm_shape(const Shape& a, const Shape& b, const GemmAttrs& g, Shape* out) {
  *out = Shape::unknown();
  if (!a.has_rank || !b.has_rank) return "";
  if (a.dims.size() != 2 || b.dims.size() != 2) return "a Gemm operand is not a matrix";
  out->has_rank = true;
  out->dims = {a.dims[g.trans_a.value_or(0) ? 1 : 0], b.dims[g.trans_b.value_or(0) ? 0 : 1]};
  return "";
}

std::string infer_gemm(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, {});
  out[0].dtype = like_input(n, 0).dtype;
  return gemm_shape(input_shape(n, 0), input_shape(n, 1), GemmAttrs::of(n), &out[0].shape);
}

std::string infer_pool_gemm(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, {});
  out[0].dtype = like_input(n, 0).dtype;
  const Shape& x = input_shape(n, 0);
  Shape rows = Shape::unknown();
  if (x.has_rank) {
    if (x.dims.size() < 3) return "the pooled input is not of rank 3 or more";
    rows = Shape{true, {x.dims[0], x.dims[1]}};
  }
  return gemm_shape(rows, input_shape(n, 1), GemmAttrs::of(n), &out[0].shape);
}

// The gated product's output: the product's shape with half its columns.
std::string infer_gated(const Node& n, std::vector<OutputType>& out) {
  if (std::string why = infer_matmul(n, out); !why.empty()) return why;
  const int64_t cols = dim_of(out[0].shape, -1);
  if (cols >= 0 && cols % 2 != 0) return "the packed weight has an odd number of columns";
  out[0].shape = with_last_dim(out[0].shape, cols < 0 ? -1 : cols / 2);
  return "";
}

int64_t norm_matmul_opset(const Node&) { return 17; }
int64_t gated_opset(const Node& n) { return gated_has_norm(n) ? 17 : 0; }

}  // namespace

void NormPrologue::write(Attrs& attrs) const {
  attrs["epsilon"] = attr_float(epsilon);
  if (kind == NormKind::kRms) attrs["norm"] = attr_string("rms");
}

NormKind read_norm_kind(const Node& n) {
  const std::string kind = n.attr_string("norm", "layer");
  if (kind == "layer") return NormKind::kLayer;
  if (kind == "rms") return NormKind::kRms;
  fail(ErrorKind::kUnsupported, n.describe(), ": norm '", kind, "' is not 'layer' or 'rms'");
}

GemmAttrs GemmAttrs::of(const Node& n) {
  GemmAttrs g;
  if (n.has_attr("alpha")) g.alpha = n.attr_float("alpha", 1.0f);
  if (n.has_attr("beta")) g.beta = n.attr_float("beta", 1.0f);
  if (n.has_attr("transA")) g.trans_a = n.attr_int("transA", 0);
  if (n.has_attr("transB")) g.trans_b = n.attr_int("transB", 0);
  return g;
}

void GemmAttrs::write(Attrs& attrs) const {
  if (alpha) attrs["alpha"] = attr_float(*alpha);
  if (beta) attrs["beta"] = attr_float(*beta);
  if (trans_a) attrs["transA"] = attr_int(*trans_a);
  if (trans_b) attrs["transB"] = attr_int(*trans_b);
}

FusedMatMul FusedMatMul::of(const Node& n) {
  FusedMatMul m;
  m.a = optional_input(&n, fused_matmul::kA);
  m.b = optional_input(&n, fused_matmul::kB);
  if (n.is(Op::kMatMul)) return m;
  m.bias = optional_input(&n, fused_matmul::kBias);
  m.act = read_activation(n);
  return m;
}

NodeSpec FusedMatMul::spec() const {
  return {Op::kFusedMatMul, {a, b, bias}, with_activation(act)};
}

NodeSpec FusedGemm::spec() const {
  NodeSpec s{Op::kFusedGemm, {a, b, c}, with_activation(act)};
  gemm.write(s.attrs);
  return s;
}

NodeSpec FusedGlobalPoolGemm::spec() const {
  NodeSpec s{Op::kFusedGlobalPoolGemm, {x, b, c}, {}};
  gemm.write(s.attrs);
  return s;
}

NodeSpec FusedMatMulResidual::spec() const {
  return {Op::kFusedMatMulResidual, {a, b, bias, residual}, {}};
}

NodeSpec FusedMatMulLayerNorm::spec() const {
  return {Op::kFusedMatMulLayerNorm,
          {a, b, bias, residual, gamma, beta},
          {{"epsilon", attr_float(epsilon)}}};
}

NodeSpec FusedLayerNormMatMul::spec() const {
  NodeSpec s{Op::kFusedLayerNormMatMul, {x, w, bias, gamma, beta}, with_activation(act)};
  norm.write(s.attrs);
  return s;
}

FusedGatedMatMul FusedGatedMatMul::of(const Node& n) {
  FusedGatedMatMul g;
  g.x = optional_input(&n, norm_matmul::kX);
  g.w = optional_input(&n, norm_matmul::kW);
  g.bias = optional_input(&n, norm_matmul::kBias);
  g.act = read_activation(n);
  if (gated_has_norm(n)) {
    g.gamma = optional_input(&n, norm_matmul::kGamma);
    g.beta = optional_input(&n, norm_matmul::kBeta);
    g.norm = NormPrologue{read_norm_kind(n), n.attr_float("epsilon", 1e-5f)};
  }
  return g;
}

NodeSpec FusedGatedMatMul::spec() const {
  NodeSpec s{Op::kFusedGatedMatMul, {x, w, bias, gamma, beta}, with_activation(act)};
  if (norm) norm->write(s.attrs);
  return s;
}

int64_t dense_flops(const Node& n) {
  const auto y = known_dims(n.output(0));
  const auto a = known_dims(n.input(0));
  if (!y || !a || a->empty()) return -1;
  const bool trans_a = n.attr_int("transA", 0) != 0;
  const int64_t k = a->size() == 1 ? (*a)[0] : trans_a ? (*a)[a->size() - 2] : a->back();
  // The gated product computes both halves (gate and up) of each output element.
  return sat_mul(sat_mul(n.is(Op::kFusedGatedMatMul) ? 4 : 2, checked_numel(*y)), k);
}

void append_dense_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  const std::vector<AttrSpec> act = {{"activation", K::kString, ""},
                                     {"activation_alpha", K::kFloat, "the activation's"},
                                     {"activation_beta", K::kFloat, "the activation's"}};
  const std::vector<AttrSpec> gemm = {{"alpha", K::kFloat, "1"},
                                      {"beta", K::kFloat, "1"},
                                      {"transA", K::kInt, "0"},
                                      {"transB", K::kInt, "0"}};
  auto join = [](std::vector<AttrSpec> a, const std::vector<AttrSpec>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::vector<AttrSpec> norm = {{"epsilon", K::kFloat, "1e-5"},
                                      {"norm", K::kString, "layer"}};
  const OpTraits product{
      .op_class = OpClass::kOutEltwiseFusable, .compute = true, .flops = dense_flops};
  t.push_back({.op = Op::kFusedMatMul,
               .summary = "act(MatMul(A, B) [+ Bias])",
               .inputs = {{"A"}, {"B"}, {"Bias", true}},
               .outputs = {{"Y"}},
               .attrs = act,
               .traits = product,
               .infer = infer_matmul,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "FusedGemm or Gemm for a 2-D product with a vector bias; else "
                                  "MatMul with BiasGelu or FastGelu, or Add and the activation"}});
  t.push_back({.op = Op::kFusedGemm,
               .summary = "act(Gemm(A, B, C))",
               .inputs = {{"A"}, {"B"}, {"C", true}},
               .outputs = {{"Y"}},
               .attrs = join(gemm, act),
               .traits = product,
               .infer = infer_gemm,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "FusedGemm, or Gemm and the activation"}});
  t.push_back({.op = Op::kFusedGlobalPoolGemm,
               .summary = "act(Gemm(Flatten(GlobalAveragePool(X)), B, C)): a classifier head",
               .inputs = {{"X"}, {"B"}, {"C", true}},
               .outputs = {{"Y"}},
               .attrs = join(gemm, act),
               .traits = {.op_class = OpClass::kOutEltwiseFusable, .compute = true},
               .infer = infer_pool_gemm,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "GlobalAveragePool, Flatten, FusedGemm"}});
  t.push_back(
      {.op = Op::kFusedMatMulResidual,
       .summary = "FusedMatMul(A, B, Bias) + Residual (of the product's shape)",
       .inputs = {{"A"}, {"B"}, {"Bias", true}, {"Residual"}},
       .outputs = {{"Y"}},
       .attrs = act,
       .traits = product,
       .infer = infer_matmul,
       .ort = {.kind = OrtForm::Kind::kLowering, .summary = "the FusedMatMul lowering and Add"}});
  t.push_back({.op = Op::kFusedMatMulLayerNorm,
               .summary = "LayerNormalization(FusedMatMul(A, B, Bias) + Residual, Gamma, Beta; "
                          "axis -1, epsilon)",
               .inputs = {{"A"}, {"B"}, {"Bias", true}, {"Residual"}, {"Gamma"}, {"Beta", true}},
               .outputs = {{"Y"}},
               .attrs = {{"epsilon", K::kFloat, "1e-5"}},
               .traits = {.op_class = OpClass::kOutEltwiseFusable, .compute = true},
               .infer = infer_matmul,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "MatMul, SkipLayerNormalization",
                       .min_opset = norm_matmul_opset}});
  t.push_back({.op = Op::kFusedLayerNormMatMul,
               .summary = "FusedMatMul(LayerNormalization(X, Gamma, Beta; axis -1, epsilon), B, "
                          "Bias; act), or RMSNorm(X, Gamma) with norm = rms",
               .inputs = {{"X"}, {"B"}, {"Bias", true}, {"Gamma"}, {"Beta", true}},
               .outputs = {{"Y"}},
               .attrs = join(norm, act),
               .traits = {.op_class = OpClass::kOutEltwiseFusable, .compute = true},
               .infer = infer_matmul,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "LayerNormalization and the FusedMatMul lowering",
                       .min_opset = norm_matmul_opset}});
  t.push_back({.op = Op::kFusedGatedMatMul,
               .summary = "act(P[..., :N]) * P[..., N:], P = A W (+ Bias), W [K, 2N]; A = X or "
                          "its norm prologue (with Gamma)",
               .inputs = {{"X"}, {"W"}, {"Bias", true}, {"Gamma", true}, {"Beta", true}},
               .outputs = {{"Y"}},
               .attrs = join(norm, act),
               .traits = product,
               .infer = infer_gated,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "the gate's dense form with its activation, MatMul (+ Add), Mul",
                       .min_opset = gated_opset}});
}

}  // namespace nnfuse::ops
