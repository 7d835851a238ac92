// GlobalPoolGemmFusionPass: Gemm(Flatten(GlobalAveragePool(x))) == FusedGlobalPoolGemm(x, ...)
// (torchvision's classifier head as one kernel; the pooled [N, C] never goes to memory).
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

Rule pool_gemm() {
  using namespace pattern;
  Pat pool = op("GlobalAveragePool", {any("x")}).named("pool").rank(4);
  Pat flat = any_of({op("Flatten", {pool}).named("flatten"),
                     op("Reshape", {pool, constant("shape")}).named("flatten")});
  Pat gemm = op("Gemm", {flat, constant("b")}, false).named("gemm");
  return {.name = "GlobalPoolGemmFusionPass",
          .description = "Fuses GlobalAveragePool, Flatten and Gemm (a classifier head)",
          .ops = {"GlobalAveragePool", "Flatten", "Gemm"},
          .patterns = {{"", gemm}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* fl = m.node("flatten");
            const Node* gn = m.node("gemm");
            if (fl->op_type() == "Flatten" && fl->attr_int("axis", 1) != 1) {
              return "the Flatten's axis is not 1";
            }
            if (fl->op_type() == "Reshape" && m.constant("shape")->numel() != 2) {
              return "the Reshape does not make a matrix";
            }
            if (gn->attr_int("transA", 0) != 0) return "the Gemm transposes its input";
            if (m["x"]->dtype() != DType::kFloat32) return "the pool is not float32";
            std::vector<Value*> ins = {m["x"], m["b"]};
            if (gn->num_inputs() > 2 && gn->input(2)) ins.push_back(gn->input(2));
            return m.fuse("FusedGlobalPoolGemm", ins, gn->attrs());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_pool_gemm_pass() { return make_rule_pass(pool_gemm()); }

}  // namespace nnfuse
