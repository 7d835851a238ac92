// GlobalPoolGemmFusionPass: Gemm(Flatten(GlobalAveragePool(x))) == FusedGlobalPoolGemm(x, ...)
// (torchvision's classifier head as one kernel; the pooled [N, C] never goes to memory).
#include "ops/dense.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

// "" when Reshape(pooled, shape), on the pool's [N, C, 1, 1] output, gives [N, C] (what the
// fused kernel computes: one row per image), else why not. [C, N] or [N * C, 1] are matrices too.
std::string flattens_rows(const Tensor& shape, const Shape& x) {
  if (shape.numel() != 2 || shape.dtype() != DType::kInt64)
    return "the Reshape does not make a matrix";
  const int64_t a = shape.data<int64_t>()[0], b = shape.data<int64_t>()[1];
  const int64_t n = x.dims.at(0).value, c = x.dims.at(1).value;  // -1 where not known
  const bool rows = a == 0 || (n >= 0 && a == n);                // the first dim stays N
  const bool cols = c >= 0 && b == c;
  if ((rows && (b == -1 || cols)) || (a == -1 && cols)) return "";
  return "the Reshape does not make one row per image ([N, C])";
}

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
            if (fl->is(Op::kFlatten) && fl->attr_int("axis", 1) != 1) {
              return "the Flatten's axis is not 1";
            }
            if (fl->is(Op::kReshape)) {
              if (std::string why = flattens_rows(*m.constant("shape"), m["x"]->shape());
                  !why.empty()) {
                return why;
              }
            }
            if (gn->attr_int("transA", 0) != 0) return "the Gemm transposes its input";
            if (m["x"]->dtype() != DType::kFloat32) return "the pool is not float32";
            return m.fuse(ops::FusedGlobalPoolGemm{m["x"], m["b"], optional_input(gn, 2),
                                                   ops::GemmAttrs::of(*gn)}
                              .spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_pool_gemm_pass() { return make_rule_pass(pool_gemm()); }

}  // namespace nnfuse
