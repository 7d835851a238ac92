// Automatic fusion and user rules: regions of cheap ops become FusedRegion nodes, each run by
// one generated kernel (kernels/ref/fused_region.h).
//
//   AutoFusionPass: after every hand-written fusion, groups what is left (grouping.h), keeps
//     the regions that pay (cost.h) and lower (lower.h), builds their code, and replaces each
//     region's nodes by one FusedRegion node. Declined regions are recorded with the reason.
//   User rules: {"rules":[{"name":"my_silu","ops":["Sigmoid","Mul"],"action":"fuse"}]} in the
//     switch file fuses every chain of those ops in that order, each feeding the next (the
//     ops may take other inputs too, and only the last one's output may be used elsewhere).
//     They run before the built-in fusions, so a user's rule takes precedence.
//
// Fallback: with the cpu target a region's code is built while fusing; when that fails (no
// compiler, a compile error) the nodes stay as they are, a warning naming the region says
// "fallback", and the report lists it under `fallback`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/switches.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace nnfuse {

std::unique_ptr<Pass> make_auto_fusion_pass();  // auto_fusion.cc

// Why `rule` cannot be a user rule ("" when it can): an empty op list, or an op with no
// lowering to a generated kernel (a Conv, an unknown op), named with the ops that can be used.
std::string user_rule_problem(const UserRule& rule);

// Applies each rule to `g` (record name: the rule's name). Rules must have no problem.
void run_user_rules(Graph& g, const std::vector<UserRule>& rules, PassContext& ctx);

// Replaces `nodes` (topological order, the last one the root) by a FusedRegion node for
// `pass`: "" when done, else why not (lowering refused, or the code did not build: then the
// fallback is recorded and announced too).
std::string fuse_as_generated(Graph& g, PassContext& ctx, const std::string& pass,
                              const std::vector<Node*>& nodes);

}  // namespace nnfuse
