#include "passes/auto_fuse/cost.h"

#include <algorithm>
#include <set>
#include <string>
#include <unordered_set>

#include "cost/cost.h"
#include "ops/def.h"

namespace nnfuse {

RegionCost region_cost(const Region& r) {
  RegionCost c;
  const int64_t domain = cost::domain_elements(r.nodes);
  // In a row region, values of one element per row (the reduction's result and what is
  // computed from it alone) are made once per row: not recomputed.
  int64_t per_row = -1;
  for (const Node* n : r.nodes) {
    const Value* x = n->input(0);
    if (ops::op_class(*n) != OpClass::kReduction || !x || !x->shape().fully_known()) continue;
    const Dims d = x->shape().static_dims();
    if (!d.empty() && d.back() > 0) per_row = domain / d.back();
  }
  const cost::Recompute re = cost::recomputation(r.nodes, per_row);
  c.recomputed = re.elements;
  c.recomputed_cost = re.cost;
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
      // Written once and read back, as cost::intermediate_bytes.
      c.bytes_saved = sat_add(c.bytes_saved, sat_mul(2, bytes));
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
  const int64_t saved =
      sat_add(cost.bytes_saved / 4, sat_mul(cost.kernels_saved, options.launch_cost));
  if (saved < cost.recomputed_cost) {
    return "broadcasting would recompute " + std::to_string(cost.recomputed) + " elements (cost " +
           std::to_string(cost.recomputed_cost) + ") to save " + std::to_string(cost.bytes_saved) +
           " bytes and " + std::to_string(cost.kernels_saved) + " kernels (worth " +
           std::to_string(saved) + ")";
  }
  return "";
}

}  // namespace nnfuse
