// MatMulIntegerToFloatFusionPass: a dynamically quantized dense layer as ONNX Runtime's
// quantize_dynamic writes it,
//   acc = MatMulInteger(a, B, a_zero, B_zero)          (B and its zero point constants)
//   y   = act(Cast<float>(acc) * Mul(a_scale, B_scale) [+ bias])     (act: any epilogue
//                                                                     activation, or none)
//   == MatMulIntegerToFloat(a, B, a_scale, B_scale, a_zero, B_zero, bias; act)   (ops/quant.h)
// where a, a_scale and a_zero are a DynamicQuantizeLinear's outputs (or any single scale and
// zero point). Unfused, the int32 product is written, read back by the Cast, written as float,
// read by the Mul and again by the Add; fused, the sums are dequantized as they are computed.
// The fused node does the same float32 steps, so the fusion changes no number before the
// activation (which the fast kernel computes as the dense layers' epilogues do).
#include "ops/quant.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::Pat;

// "" when t (a scale or bias of a product with n columns) is one value or one per column, [N],
// so that it broadcasts without changing the product's shape.
std::string column_reason(const Tensor& t, int64_t n, bool may_be_one, const char* what) {
  if (t.rank() > 1) return std::string(what) + " " + dims_str(t.shape()) + " is not a vector";
  if ((may_be_one && t.numel() == 1) || t.numel() == n) return "";
  return std::string(what) + " " + dims_str(t.shape()) + " is not " +
         (may_be_one ? "one value or " : "") + "one value per column (" + std::to_string(n) + ")";
}

std::string fuse_quant_dense(const RuleMatch& m) {
  const Node* cast = m.node("cast");
  if (cast->attr_int("to", 0) != static_cast<int64_t>(DType::kFloat32)) {
    return std::string("the Cast is not to float32");
  }
  const Tensor* b = m.constant("b");
  if (b->rank() != 2) return "B " + dims_str(b->shape()) + " is not a matrix";
  const int64_t n = b->dim(1);
  if (const Value* az = m["a_zero"];
      az && !(az->shape().fully_known() && checked_numel(az->shape().static_dims()) == 1)) {
    return std::string("A's zero point is not one value");
  }
  const Value* as = m["a_scale"];
  if (as->dtype() != DType::kFloat32 || !as->shape().fully_known() ||
      checked_numel(as->shape().static_dims()) != 1) {
    return std::string("A's scale is not one float32 value");
  }
  const Tensor* bs = m.constant("b_scale");
  if (bs->dtype() != DType::kFloat32) return std::string("B's scale is not float32");
  if (std::string why = column_reason(*bs, n, true, "B's scale"); !why.empty()) return why;
  if (const Tensor* bz = m.constant("b_zero")) {
    if (std::string why = column_reason(*bz, n, true, "B's zero point"); !why.empty()) return why;
  }
  if (const Tensor* bias = m.constant("bias")) {
    if (bias->dtype() != DType::kFloat32) return std::string("the bias is not float32");
    if (std::string why = column_reason(*bias, n, false, "the bias"); !why.empty()) return why;
  }
  ops::MatMulIntegerToFloat f{m["a"],      m["b"],      m["a_scale"], m["b_scale"],
                              m["a_zero"], m["b_zero"], m["bias"]};
  if (std::string why = m.activation(&f.act); !why.empty()) return why;
  return m.fuse(f.spec());
}

// Each form with an activation after it (the variant names it), then without.
std::vector<ActivationPattern> quant_dense_patterns(const pattern::Pat& biased,
                                                    const pattern::Pat& bare) {
  std::vector<ActivationPattern> p = with_activations(biased, true);
  for (ActivationPattern& a : with_activations(bare, true)) p.push_back(std::move(a));
  return p;
}

Rule quant_dense() {
  using namespace pattern;
  Pat mmi = op("MatMulInteger",
               {any("a"), constant("b"), optional(any("a_zero")), optional(constant("b_zero"))})
                .named("mmi");
  Pat scale = op("Mul", {any("a_scale"), constant("b_scale")}).named("scale");
  Pat deq = op("Mul", {op("Cast", {mmi}).named("cast"), scale}).named("deq");
  Pat biased = op("Add", {deq, constant("bias")}).named("add");
  return {.name = "MatMulIntegerToFloatFusionPass",
          .description =
              "Fuses a dynamically quantized dense layer (MatMulInteger, the Cast to "
              "float, the scales' Mul, the bias Add and an activation) into one int8 "
              "kernel that dequantizes as it computes",
          .ops = {"MatMulInteger", "Cast", "Mul", "Mul", "Add"},
          .patterns = quant_dense_patterns(biased, deq),
          .rewrite = fuse_quant_dense};
}

}  // namespace

std::unique_ptr<Pass> make_quant_dense_pass() { return make_rule_pass(quant_dense()); }

}  // namespace nnfuse
