#include <algorithm>

#include "codegen/jit.h"
#include "ir/error.h"
#include "ir/progress.h"
#include "ops/region.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/auto_fuse/cost.h"
#include "passes/auto_fuse/grouping.h"
#include "passes/auto_fuse/lower.h"
#include "passes/fusions/fusion_util.h"

namespace nnfuse {

namespace {

constexpr const char* kPass = "AutoFusionPass";

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The generated kernels of the regions that will be fused, built into the cache a batch of
// regions per compiler run (codegen::jit_prebuild) before they are fused one by one, each
// then finding its kernel in the cache (or, when its batch did not build, building it alone).
void prebuild(const std::vector<Region>& regions, int64_t opset) {
  std::vector<codegen::JitFunction> fns;
  for (const Region& r : regions) {
    if (r.outputs.size() != 1 || !why_not_paying(region_cost(r)).empty()) continue;
    auto lowered = lower_region(r.nodes, opset);
    const LoweredRegion* l = std::get_if<LoweredRegion>(&lowered);
    if (!l) continue;
    const std::string symbol = ops::fused_region_symbol(l->region);
    fns.push_back({symbol, codegen::emit_cpp_function(l->region, symbol)});
  }
  if (fns.size() >= 2) codegen::jit_prebuild(codegen::emit_cpp_preamble(), fns);
}

class AutoFusionPass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{kPass,
                            "remaining chains of elementwise ops and last-axis reductions -> one "
                            "generated kernel each (FusedRegion)"};
    return i;
  }

  void run(Graph& g, PassContext& ctx) const override {
    const int64_t opset = g.opset("");
    GroupingOptions opts;
    opts.accept = [opset](const Node& n) { return lowering_blocker(n, opset).empty(); };
    opts.free_input = [](const Value& v) { return becomes_literal(v); };
    // Regions are disjoint and a rewrite only touches its own nodes, so every region found
    // up front stays valid while the others are replaced.
    const std::vector<Region> regions = find_regions(g, opts);
    if (ctx.target == "cpu") prebuild(regions, opset);
    // On a terminal, the region whose kernel is being built (the compiler takes a while).
    Progress progress("building kernels:", static_cast<int64_t>(regions.size()));
    progress.keep_ticking();
    int64_t done = 0;
    for (const Region& r : regions) {
      progress.update(++done);
      ctx.matched(kPass);
      if (std::string why = why_not_paying(region_cost(r)); !why.empty()) {
        ctx.rejected(kPass, original_names(r.nodes), "does not pay: " + why);
        continue;
      }
      if (r.outputs.size() != 1) {
        ctx.rejected(kPass, original_names(r.nodes), "the region's root has several outputs");
        continue;
      }
      if (std::string why = fuse_as_generated(g, ctx, kPass, r.nodes); !why.empty()) {
        ctx.rejected(kPass, original_names(r.nodes), why);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_auto_fusion_pass() { return std::make_unique<AutoFusionPass>(); }

std::string fuse_as_generated(Graph& g, PassContext& ctx, const std::string& pass,
                              const std::vector<Node*>& nodes) {
  auto lowered = lower_region(nodes, g.opset(""));
  if (auto* why = std::get_if<std::string>(&lowered)) return "cannot be generated: " + *why;
  LoweredRegion& l = std::get<LoweredRegion>(lowered);
  if (ctx.target == "cpu") {
    const std::string symbol = ops::fused_region_symbol(l.region);
    const codegen::JitResult j = codegen::jit_build(codegen::emit_cpp(l.region, symbol), symbol);
    if (!j.ok()) {
      const std::string region = nodes.back()->name();
      const std::vector<std::string> names = original_names(nodes);
      warn("fallback: region '", region, "' (", joined(names), ") runs unfused: ", j.error);
      ctx.report.fallbacks.push_back({pass, region, names, j.error});
      return "fallback: " + j.error;
    }
  }
  std::string why =
      apply_fusion(g, ctx, pass, nodes, ops::FusedRegion{l.inputs, l.region}.spec(), {l.output});
  return why;
}

}  // namespace nnfuse
