#include "passes/auto_fuse/cost.h"

#include <algorithm>
#include <unordered_set>

namespace nnfuse {

RegionCost region_cost(const Region& r) {
  RegionCost c;
  c.kernels_saved = r.nodes.empty() ? 0 : static_cast<int>(r.nodes.size()) - 1;
  std::unordered_set<const Node*> in(r.nodes.begin(), r.nodes.end());
  for (const Node* n : r.nodes) {
    for (const Value* v : n->outputs()) {
      if (!v) continue;
      const bool inside = std::any_of(v->uses().begin(), v->uses().end(),
                                      [&](const Use& u) { return in.count(u.node) != 0; });
      if (!inside) continue;
      ++c.intermediates;
      const int64_t elem = static_cast<int64_t>(dtype_size(v->dtype()));
      if (!v->shape().fully_known() || elem == 0) {
        ++c.unknown_intermediates;
        continue;
      }
      int64_t numel = 1;
      for (int64_t d : v->shape().static_dims()) numel *= d;
      c.bytes_saved += 2 * numel * elem;
    }
  }
  return c;
}

bool pays(const RegionCost& cost, const CostOptions& options) {
  return cost.kernels_saved >= 1 && cost.bytes_saved >= options.min_bytes_saved;
}

}  // namespace nnfuse
