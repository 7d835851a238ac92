// Dense-layer epilogues, run by the matmul kernel as oneDNN bias and post-ops:
//   MatMulBiasAddFusionPass: act(MatMul(a, B) + bias) == FusedMatMul(a, B, bias, act), with
//                            bias a constant of shape [N] (or [1, ..., N]); act optional
//   GemmActivationFusionPass: act(Gemm(a, b, c)) == FusedGemm(a, b, c, act)
#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

class MatMulAddActFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"MatMulBiasAddFusionPass",
                            "Fuses a bias Add (and an activation after it) into the MatMul", true,
                            true};
    return i;
  }
  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat mm = op("MatMul", {any("a"), any("b")}).named("mm");
    Pat add = op("Add", {mm, constant("bias")}).named("add");
    std::vector<ActivationPattern> pats = activation_patterns(add);
    pats.push_back({"", add});
    const std::string pass = info().name;
    rewrite_all(
        g, ctx, pass, pats, [&](const std::string& act_name, const Match& m) -> std::string {
          Value* out = m.node("mm")->output(0);
          const Tensor* bias = constant_value(m.value("bias"));
          if (out->dtype() != DType::kFloat32 || bias->dtype() != DType::kFloat32) {
            return std::string("the MatMul is not float32");
          }
          if (!out->shape().has_rank || out->shape().dims.empty() ||
              !out->shape().dims.back().known()) {
            return std::string("the MatMul's last dim is not known");
          }
          int64_t n = out->shape().dims.back().value;
          for (size_t i = 0; i + 1 < bias->shape().size(); ++i) {
            if (bias->dim(static_cast<int64_t>(i)) != 1) {
              return std::string("the bias " + dims_str(bias->shape()) + " is not a row vector");
            }
          }
          if (bias->numel() != n || bias->rank() > static_cast<int64_t>(out->shape().dims.size())) {
            return std::string("the bias " + dims_str(bias->shape()) + " does not broadcast as [" +
                               std::to_string(n) + "]");
          }
          Value* b = add_constant(g, m.value("bias")->name() + "_row", bias->reshaped({n}));
          std::map<std::string, Attribute> attrs;
          std::string why;
          const auto a = activation_from_match(act_name, m, &why);  // "" is none
          if (!a) return why;
          set_activation_attrs(attrs, *a);
          return apply_fusion(g, ctx, pass, m.nodes(), "FusedMatMul", kFusedDomain,
                              {m.value("a"), m.value("b"), b}, {m.root()->output(0)}, attrs);
        });
  }
};

class GemmActFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"GemmActivationFusionPass",
                            "Fuses the activation that follows a Gemm into it", true, true};
    return i;
  }
  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat gemm = op_any_inputs("Gemm").named("gemm");
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, activation_patterns(gemm),
                [&](const std::string& act_name, const Match& m) -> std::string {
                  Node* gn = m.node("gemm");
                  std::string why;
                  auto a = activation_from_match(act_name, m, &why);
                  if (gn->input(0)->dtype() != DType::kFloat32) why = "the Gemm is not float32";
                  if (!a || !why.empty()) return why;
                  std::map<std::string, Attribute> attrs = gn->attrs();
                  set_activation_attrs(attrs, *a);
                  std::vector<Value*> ins =
                      gn->inputs();  // a copy: the node is removed while fusing
                  return apply_fusion(g, ctx, pass, m.nodes(), "FusedGemm", kFusedDomain, ins,
                                      {m.root()->output(0)}, attrs);
                });
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_add_act_pass() { return std::make_unique<MatMulAddActFusion>(); }
std::unique_ptr<Pass> make_gemm_act_pass() { return std::make_unique<GemmActFusion>(); }

}  // namespace nnfuse
