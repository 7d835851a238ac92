#include <algorithm>

#include "passes/auto_fuse/auto_fuse.h"
#include "passes/auto_fuse/lower.h"
#include "passes/auto_fuse/op_class.h"
#include "passes/fusions/fusion_util.h"

namespace nnfuse {

std::string user_rule_problem(const UserRule& rule) {
  if (rule.ops.size() < 2) return "a rule fuses a chain of at least two ops";
  for (const std::string& op : rule.ops) {
    if (lowerable_op(op_of("", op))) continue;
    std::string usable;
    for (const std::string& o : lowerable_op_types()) usable += (usable.empty() ? "" : ", ") + o;
    if (op_of("", op) == Op::kUnknown) {
      return "op '" + op + "' is not an ONNX op nnfuse knows (ops a rule may name: " + usable + ")";
    }
    return "op '" + op + "' cannot be fused into a generated kernel: only elementwise ops and " +
           "last-axis reductions can (" + usable + ")";
  }
  return "";
}

void run_user_rules(Graph& g, const std::vector<UserRule>& rules, PassContext& ctx) {
  for (const UserRule& rule : rules) {
    ctx.report.record(rule.name);  // listed even with no match
    const std::vector<Op> ops = onnx_ops_named(rule.ops);
    rewrite_each(
        g, ctx, rule.name, [&](Node* n) { return chain_from(n, ops); },
        [&](const std::vector<Node*>& chain) {
          if (std::string why = chain_escape(chain); !why.empty()) return why;
          return fuse_as_generated(g, ctx, rule.name, chain);
        });
  }
}

}  // namespace nnfuse
