#include "passes/fusions/fusion_util.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_set>

#include "cost/cost.h"
#include "ir/error.h"
#include "ops/conv.h"
#include "pattern/rewriter.h"

namespace nnfuse {

using pattern::Pat;

Node* add_spec_node(Graph& g, const ops::NodeSpec& spec, const std::string& name,
                    const std::vector<Value*>& outputs, const std::vector<std::string>& from,
                    const std::string& pass) {
  std::vector<Value*> inputs = spec.inputs;
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  Node* n =
      g.add_node(std::string(op_name(spec.op)), name, inputs, outputs, ops::spec_domain(spec));
  for (const auto& [k, a] : spec.attrs) n->set_attr(k, a);
  n->set_provenance(from, pass);
  return n;
}

std::string conv_part_reason(const Node& conv, const std::string& who) {
  if (conv.is(Op::kFusedConv) &&
      ((conv.num_inputs() > 3 && conv.input(3)) || ops::fused_conv::has_skip_conv(conv))) {
    return who + " adds a residual";
  }
  if (conv.num_inputs() > 2 && conv.input(2) && !pattern::constant_value(conv.input(2))) {
    return who + "'s bias is not a constant";
  }
  return "";
}

std::vector<std::string> original_names(const std::vector<Node*>& nodes) {
  std::vector<std::string> names;
  for (const Node* n : nodes) {
    if (n->fused_from().empty()) {
      names.push_back(n->name());
    } else {
      names.insert(names.end(), n->fused_from().begin(), n->fused_from().end());
    }
  }
  return names;
}

std::string apply_fusion(Graph& g, PassContext& ctx, const std::string& pass,
                         const std::vector<Node*>& nodes, const ops::NodeSpec& spec,
                         const std::vector<Value*>& outputs) {
  std::vector<Value*> inputs = spec.inputs;
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  std::vector<std::string> names = original_names(nodes);
  std::string why = pattern::check_replaceable(g, nodes, outputs);
  if (!why.empty()) return why;
  const cost::Benefit benefit = cost::fusion_benefit(nodes, outputs, ctx.machine);
  // The fused nodes among `nodes` (only a fusion's node has a record; most fusions absorb none,
  // and then the records are not scanned: a model with many fusions is not quadratic in them).
  std::vector<std::string> absorbed;
  for (const Node* n : nodes) {
    if (!n->fused_by().empty()) absorbed.push_back(n->name());
  }
  Node* fused = pattern::replace_with(g, nodes, std::string(op_name(spec.op)),
                                      ops::spec_domain(spec), inputs, outputs, spec.attrs, pass);
  fused->set_provenance(names, pass);
  ctx.applied(pass);
  FusionBenefit b{fused->name(),
                  pass,
                  names,
                  benefit.bytes_saved,
                  benefit.kernels_saved,
                  benefit.flops,
                  benefit.bytes_before,
                  benefit.bytes_after,
                  benefit.seconds_before,
                  benefit.seconds_after};
  // Fold in the benefits of fused nodes this one absorbed: what they saved, and what their own
  // original nodes moved and took instead of the absorbed node's figures.
  auto& list = ctx.report.fused;
  for (auto it = list.begin(); !absorbed.empty() && it != list.end();) {
    if (std::find(absorbed.begin(), absorbed.end(), it->node) != absorbed.end()) {
      b.bytes_saved += it->bytes_saved;
      b.kernels_saved += it->kernels_saved;
      if (it->seconds_after > 0) {
        b.bytes_before += it->bytes_before - it->bytes_after;
        b.seconds_before += it->seconds_before - it->seconds_after;
      }
      if (it->pass != pass) b.pass = it->pass + "+" + b.pass;
      it = list.erase(it);
    } else {
      ++it;
    }
  }
  list.push_back(b);
  return "";
}

namespace {

// How far (in edges) from a rewrite's new nodes a match may start that the rewrite enabled:
// more than the deepest pattern.
constexpr int kRecheckDepth = 16;

// The nodes within kRecheckDepth edges of `from`, upstream and downstream, `from` included.
std::vector<Node*> neighborhood(const std::vector<Node*>& from) {
  std::unordered_set<Node*> seen(from.begin(), from.end());
  std::vector<Node*> frontier = from, all = from;
  for (int d = 0; d < kRecheckDepth && !frontier.empty(); ++d) {
    std::vector<Node*> next;
    for (Node* n : frontier) {
      for (Value* v : n->inputs()) {
        if (v && v->producer() && seen.insert(v->producer()).second) next.push_back(v->producer());
      }
      for (Value* o : n->outputs()) {
        if (!o) continue;
        for (const Use& u : o->uses()) {
          if (seen.insert(u.node).second) next.push_back(u.node);
        }
      }
    }
    all.insert(all.end(), next.begin(), next.end());
    frontier = std::move(next);
  }
  return all;
}

// The fixed point of "try the first pending node in `order`; when it is rewritten, the nodes
// near what the rewrite made are pending again". Each node is tried once plus once per
// rewrite nearby, so a pass is linear in the graph, not in graph size times rewrites; the
// result is that of restarting the scan after every rewrite, since a match a rewrite enables
// starts within kRecheckDepth edges of its new nodes. `try_at` returns whether it rewrote.
template <typename Later>
void rewrite_to_fixed_point(Graph& g, const std::function<bool(Node*)>& try_at) {
  using Entry = std::pair<size_t, Node*>;
  std::priority_queue<Entry, std::vector<Entry>, Later> pending;
  for (Node* n : g.nodes()) pending.push({n->position(), n});
  while (!pending.empty()) {
    const auto [slot, n] = pending.top();
    pending.pop();
    // A removed node's entry is skipped; if its address was reused, the new node is live and
    // trying it is harmless.
    if (!g.contains(n, slot)) continue;
    const size_t mark = g.added_mark();
    if (!try_at(n)) continue;
    for (Node* m : neighborhood(g.added_since(mark))) pending.push({m->position(), m});
  }
}

}  // namespace

void rewrite_all(
    Graph& g, PassContext& ctx, const std::string& pass,
    const std::vector<ActivationPattern>& patterns,
    const std::function<bool(const pattern::Match&)>& applies,
    const std::function<std::string(const std::string&, const pattern::Match&)>& rewrite) {
  // A pass none of whose patterns can start at any node's op has nothing to do: most passes on
  // most graphs, found without the queue of the fixed point.
  const std::vector<Node*> nodes = g.nodes();
  const bool any = std::any_of(nodes.begin(), nodes.end(), [&](const Node* n) {
    return std::any_of(patterns.begin(), patterns.end(), [&](const ActivationPattern& p) {
      return pattern::may_match_at(p.match, n);
    });
  });
  if (!any) return;
  std::set<std::string> declined;
  // Latest nodes first: the largest pattern is found from its last node before a smaller
  // one (without the epilogue) can match at an inner node.
  rewrite_to_fixed_point<std::less<>>(g, [&](Node* n) {
    if (declined.count(n->name())) return false;
    for (const ActivationPattern& p : patterns) {
      auto m = pattern::match_at(g, p.match, n);
      if (!m || (applies && !applies(*m))) continue;
      ctx.matched(pass);
      std::vector<std::string> names = original_names(m->nodes());
      std::string why = rewrite(p.name, *m);
      if (why.empty()) return true;
      ctx.rejected(pass, names, why);
      declined.insert(n->name());
      return false;
    }
    return false;
  });
}

void rewrite_each(Graph& g, PassContext& ctx, const std::string& pass,
                  const std::function<std::vector<Node*>(Node*)>& select,
                  const std::function<std::string(const std::vector<Node*>&)>& rewrite) {
  std::set<std::string> declined;
  // Earliest nodes first.
  rewrite_to_fixed_point<std::greater<>>(g, [&](Node* n) {
    if (declined.count(n->name())) return false;
    const std::vector<Node*> nodes = select(n);
    if (nodes.empty()) return false;
    ctx.matched(pass);
    const std::vector<std::string> names = original_names(nodes);
    const std::string why = rewrite(nodes);
    if (why.empty()) return true;
    ctx.rejected(pass, names, why);
    declined.insert(n->name());
    return false;
  });
}

// The chain of `ops` starting at `first`, each node a consumer of the previous one's output;
// empty when there is none.
std::vector<Node*> chain_from(Node* first, const std::vector<Op>& ops) {
  if (ops.empty() || ops[0] == Op::kUnknown || !first->is(ops[0])) return {};
  std::vector<Node*> chain{first};
  for (size_t i = 1; i < ops.size(); ++i) {
    const Node* cur = chain.back();
    Node* next = nullptr;
    for (const Value* v : cur->outputs()) {
      if (!v) continue;
      for (const Use& u : v->uses()) {
        if (u.node->is(ops[i]) && std::find(chain.begin(), chain.end(), u.node) == chain.end()) {
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

std::vector<Op> onnx_ops_named(const std::vector<std::string>& names) {
  std::vector<Op> r;
  for (const std::string& n : names) r.push_back(op_of("", n));
  return r;
}

// Why the chain's inner values cannot stay inside one kernel ("" when they can).
std::string chain_escape(const std::vector<Node*>& chain) {
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

}  // namespace nnfuse
