#include "passes/auto_fuse/cost.h"

#include <algorithm>
#include <set>
#include <string>
#include <unordered_set>

#include "cost/cost.h"

namespace nnfuse {

namespace {

bool static_numel(const Value* v, int64_t* n) {
  if (!v || !v->shape().fully_known()) return false;
  *n = 1;
  for (int64_t d : v->shape().static_dims()) *n *= d;
  return true;
}

// Ops whose evaluation costs about as much as a dozen or more adds.
bool expensive(const Node& n) {
  static const std::set<std::string> ops = {"Div",     "Erf",      "Exp",  "HardSwish",
                                            "Log",     "Mean",     "Pow",  "Reciprocal",
                                            "Sigmoid", "Softplus", "Sqrt", "Tanh"};
  return ops.count(n.op_type()) != 0;
}

}  // namespace

RegionCost region_cost(const Region& r) {
  RegionCost c;
  // The domain's size: the largest member output (members broadcast into one shape).
  int64_t domain = 0;
  for (const Node* n : r.nodes) {
    int64_t k = 0;
    for (const Value* v : n->outputs()) {
      if (static_numel(v, &k)) domain = std::max(domain, k);
    }
  }
  // In a row region, values of one element per row (the reduction's result and what is
  // computed from it alone) are made once per row: not recomputed.
  int64_t per_row = -1;
  for (const Node* n : r.nodes) {
    const Value* x = n->input(0);
    if (n->op_type().rfind("Reduce", 0) != 0 || !x || !x->shape().fully_known()) continue;
    const Dims d = x->shape().static_dims();
    if (!d.empty() && d.back() > 0) per_row = domain / d.back();
  }
  for (const Node* n : r.nodes) {
    int64_t k = 0;
    if (n->num_outputs() != 1 || !static_numel(n->output(0), &k) || k >= domain) continue;
    if (k == per_row) continue;
    c.recomputed += domain - k;
    c.recomputed_cost += (domain - k) * (expensive(*n) ? 16 : 1);
  }
  c.kernels_saved = cost::kernels_saved(r.nodes.size());
  std::unordered_set<const Node*> in(r.nodes.begin(), r.nodes.end());
  for (const Node* n : r.nodes) {
    for (const Value* v : n->outputs()) {
      if (!v) continue;
      const bool inside = std::any_of(v->uses().begin(), v->uses().end(),
                                      [&](const Use& u) { return in.count(u.node) != 0; });
      if (!inside) continue;
      ++c.intermediates;
      const int64_t bytes = cost::value_bytes(*v);
      if (bytes < 0) {
        ++c.unknown_intermediates;
        continue;
      }
      c.bytes_saved += 2 * bytes;  // written once and read back, as cost::intermediate_bytes
    }
  }
  return c;
}

bool pays(const RegionCost& cost, const CostOptions& options) {
  return why_not_paying(cost, options).empty();
}

std::string why_not_paying(const RegionCost& cost, const CostOptions& options) {
  if (cost.kernels_saved < 1) return "saves no kernel";
  if (cost.bytes_saved < options.min_bytes_saved) {
    return "saves " + std::to_string(cost.bytes_saved) + " bytes, below the minimum of " +
           std::to_string(options.min_bytes_saved);
  }
  const int64_t saved = cost.bytes_saved / 4 + cost.kernels_saved * options.launch_cost;
  if (saved < cost.recomputed_cost) {
    return "broadcasting would recompute " + std::to_string(cost.recomputed) + " elements (cost " +
           std::to_string(cost.recomputed_cost) + ") to save " + std::to_string(cost.bytes_saved) +
           " bytes and " + std::to_string(cost.kernels_saved) + " kernels (worth " +
           std::to_string(saved) + ")";
  }
  return "";
}

}  // namespace nnfuse
