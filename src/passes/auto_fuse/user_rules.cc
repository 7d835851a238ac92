#include <algorithm>

#include "kernels/ref/ref_kernels.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/auto_fuse/lower.h"
#include "passes/auto_fuse/op_class.h"
#include "passes/fusions/fusion_util.h"

namespace nnfuse {

namespace {

// The chain of `ops` starting at `first`, each node a consumer of the previous one's output;
// empty when there is none.
std::vector<Node*> chain_from(Node* first, const std::vector<std::string>& ops) {
  if (first->op_type() != ops[0] || !is_default_domain(first->domain())) return {};
  std::vector<Node*> chain{first};
  for (size_t i = 1; i < ops.size(); ++i) {
    const Node* cur = chain.back();
    Node* next = nullptr;
    for (const Value* v : cur->outputs()) {
      if (!v) continue;
      for (const Use& u : v->uses()) {
        if (u.node->op_type() == ops[i] && is_default_domain(u.node->domain()) &&
            std::find(chain.begin(), chain.end(), u.node) == chain.end()) {
          next = u.node;
          break;
        }
      }
      if (next) break;
    }
    if (!next) return {};
    chain.push_back(next);
  }
  return chain;
}

// Why the chain's inner values cannot stay inside one kernel ("" when they can).
std::string escapes(const std::vector<Node*>& chain) {
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    for (const Value* v : chain[i]->outputs()) {
      if (!v) continue;
      if (v->is_graph_output()) return "'" + v->name() + "' is a graph output";
      for (const Use& u : v->uses()) {
        if (std::find(chain.begin(), chain.end(), u.node) == chain.end()) {
          return "'" + v->name() + "' is also used outside the chain by " + u.node->describe();
        }
      }
    }
  }
  return "";
}

}  // namespace

std::string user_rule_problem(const UserRule& rule) {
  if (rule.ops.size() < 2) return "a rule fuses a chain of at least two ops";
  for (const std::string& op : rule.ops) {
    if (lowerable_op_type(op)) continue;
    std::string usable;
    for (const std::string& o : lowerable_op_types()) usable += (usable.empty() ? "" : ", ") + o;
    if (!find_ref_kernel(op) && !op_class_listed(op, "")) {
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
    rewrite_each(
        g, ctx, rule.name, [&](Node* n) { return chain_from(n, rule.ops); },
        [&](const std::vector<Node*>& chain) {
          if (std::string why = escapes(chain); !why.empty()) return why;
          return fuse_as_generated(g, ctx, rule.name, chain);
        });
  }
}

}  // namespace nnfuse
