// Dense-layer epilogues, run by the matmul kernel as oneDNN bias and post-ops:
//   MatMulBiasAddFusionPass: act(MatMul(a, B) + bias) == FusedMatMul(a, B, bias, act), with
//                            bias a constant of shape [N] (or [1, ..., N]); act optional
//   GemmActivationFusionPass: act(Gemm(a, b, c)) == FusedGemm(a, b, c, act)
//   MatMulResidualFusionPass: MatMul(a, W) [+ bias] + r == FusedMatMulResidual(a, W, bias, r),
//                            the residual of the product's shape summed into it as the product
//                            is written (a residual block's projection; the Adds the
//                            LayerNorm fusions took are theirs)
#include "ops/dense.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Pat;

// "" when `bias` is one float32 value per column of the MatMul's output (shape [N] or
// [1, ..., N], of rank at most the output's), else why not.
std::string row_bias_reason(const Value& out, const Tensor& bias) {
  if (out.dtype() != DType::kFloat32 || bias.dtype() != DType::kFloat32) {
    return "the MatMul is not float32";
  }
  const Shape& s = out.shape();
  if (!s.has_rank || s.dims.empty() || !s.dims.back().known()) {
    return "the MatMul's last dim is not known";
  }
  const int64_t n = s.dims.back().value;
  for (size_t i = 0; i + 1 < bias.shape().size(); ++i) {
    if (bias.dim(static_cast<int64_t>(i)) != 1) {
      return "the bias " + dims_str(bias.shape()) + " is not a row vector";
    }
  }
  if (bias.numel() != n || bias.rank() > static_cast<int64_t>(s.dims.size())) {
    return "the bias " + dims_str(bias.shape()) + " does not broadcast as [" + std::to_string(n) +
           "]";
  }
  return "";
}

Rule matmul_add_act() {
  using namespace pattern;
  Pat mm = op("MatMul", {any("a"), any("b")}).named("mm");
  Pat add = op("Add", {mm, constant("bias")}).named("add");
  return {.name = "MatMulBiasAddFusionPass",
          .description = "Fuses a bias Add (and an activation after it) into the MatMul",
          .ops = {"MatMul", "Add"},
          .patterns = with_activations(add, true),
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Tensor* bias = m.constant("bias");
            if (std::string why = row_bias_reason(*m.node("mm")->output(0), *bias); !why.empty()) {
              return why;
            }
            ops::FusedMatMul mm{m["a"], m["b"], nullptr, {}};
            if (std::string why = m.activation(&mm.act); !why.empty()) return why;
            mm.bias =
                add_constant(m.g, m["bias"]->name() + "_row", bias->reshaped({bias->numel()}));
            return m.fuse(mm.spec());
          }};
}

Rule gemm_act() {
  return {.name = "GemmActivationFusionPass",
          .description = "Fuses the activation that follows a Gemm into it",
          .ops = {"Gemm", "Relu"},
          .patterns = with_activations(pattern::op_any_inputs("Gemm").named("gemm")),
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* gemm = m.node("gemm");
            if (gemm->input(0)->dtype() != DType::kFloat32) {
              return std::string("the Gemm is not float32");
            }
            ops::FusedGemm g{gemm->input(0),
                             optional_input(gemm, 1),
                             optional_input(gemm, 2),
                             ops::GemmAttrs::of(*gemm),
                             {}};
            if (std::string why = m.activation(&g.act); !why.empty()) return why;
            return m.fuse(g.spec());
          }};
}

Rule matmul_residual() {
  using namespace pattern;
  Pat mm = any_of(
      {op_in(kFusedDomain, "FusedMatMul", {any("a"), constant("w"), optional(any("bias"))}, false)
           .named("mm"),
       op("MatMul", {any("a"), constant("w")}).named("mm")});
  return {.name = "MatMulResidualFusionPass",
          .description = "Fuses the residual Add after a dense layer into its product",
          .ops = {"MatMul", "Add"},
          .patterns = {{"", op("Add", {mm, any("r")})}},
          .guards = {guard::float32({"a", "r"}), guard::not_constant({"r"}),
                     guard::no_activation("mm"), guard::matrix("w"), guard::same_shape("r", "mm")},
          .rewrite = [](const RuleMatch& m) -> std::string {
            return m.fuse(ops::FusedMatMulResidual{m["a"], m["w"], m["bias"], m["r"]}.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_matmul_residual_pass() { return make_rule_pass(matmul_residual()); }
std::unique_ptr<Pass> make_matmul_add_act_pass() { return make_rule_pass(matmul_add_act()); }
std::unique_ptr<Pass> make_gemm_act_pass() { return make_rule_pass(gemm_act()); }

}  // namespace nnfuse
