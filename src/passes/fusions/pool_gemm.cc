// GlobalPoolGemmFusionPass: Gemm(Flatten(GlobalAveragePool(x))) == FusedGlobalPoolGemm(x, ...)
// (torchvision's classifier head as one kernel; the pooled [N, C] never goes to memory).
#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

class PoolGemmFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"GlobalPoolGemmFusionPass",
                            "Fuses GlobalAveragePool, Flatten and Gemm (a classifier head)", true,
                            true};
    return i;
  }
  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat pool = op("GlobalAveragePool", {any("x")}).named("pool").rank(4);
    Pat flat = any_of({op("Flatten", {pool}).named("flatten"),
                       op("Reshape", {pool, constant("shape")}).named("flatten")});
    Pat gemm = op("Gemm", {flat, constant("b")}, false).named("gemm");
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, {{"", gemm}}, [&](const std::string&, const Match& m) -> std::string {
      Node* fl = m.node("flatten");
      Node* gn = m.node("gemm");
      if (fl->op_type() == "Flatten" && fl->attr_int("axis", 1) != 1) {
        return std::string("the Flatten's axis is not 1");
      }
      if (fl->op_type() == "Reshape") {
        auto s = constant_value(m.value("shape"))->to_int64_vector();
        if (s.size() != 2) return std::string("the Reshape does not make a matrix");
      }
      if (gn->attr_int("transA", 0) != 0) return std::string("the Gemm transposes its input");
      if (m.value("x")->dtype() != DType::kFloat32) return std::string("the pool is not float32");
      std::vector<Value*> ins = {m.value("x"), m.value("b")};
      if (gn->num_inputs() > 2 && gn->input(2)) ins.push_back(gn->input(2));
      std::map<std::string, Attribute> attrs = gn->attrs();
      return apply_fusion(g, ctx, pass, m.nodes(), "FusedGlobalPoolGemm", kFusedDomain, ins,
                          {gn->output(0)}, attrs);
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_pool_gemm_pass() { return std::make_unique<PoolGemmFusion>(); }

}  // namespace nnfuse
