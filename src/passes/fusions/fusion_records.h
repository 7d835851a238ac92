// The fusion report's fused-node records kept true to the final graph.
#pragma once

#include <map>
#include <string>

#include "cost/cost.h"
#include "ir/graph.h"
#include "report/report.h"

namespace nnfuse {

// After the pipeline: each fused-node record whose node a later rewrite absorbed without
// recording it (a packed projection taking three fused ones) is folded into the record of the
// graph node that now holds its original nodes (made when there is none), so what it saved is
// counted once, under the node that runs. A record whose nodes no fused node holds stays.
// Then each record without an estimate (one made so, or a rule's that rewired a node in place)
// is estimated for `machine`: its original nodes' costs as imported (`originals`, from
// original_costs of the graph before the passes) against the node that runs them now.
struct OriginalCost {
  int64_t flops = 0, bytes_moved = 0;
  double seconds = 0;
};
std::map<std::string, OriginalCost> original_costs(const Graph& g, const cost::Machine& machine);
void settle_fusion_records(const Graph& g, FusionReport& report,
                           const std::map<std::string, OriginalCost>& originals,
                           const cost::Machine& machine);

}  // namespace nnfuse
