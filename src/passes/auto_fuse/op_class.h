// The op classes automatic fusion groups by are the ops' (ops/def.h: ops::op_class, from each
// op's traits); what grouping needs beyond the class: whether a reduction is over the last axis.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "ops/def.h"

namespace nnfuse {

// True for a kReduction node that reduces exactly the last axis of its (statically ranked)
// first input: Reduce* with axes {-1} (attribute or constant input), ArgMax/ArgMin with
// axis -1, Softmax/LogSoftmax/Hardmax along the last axis (before opset 13 they work on the
// input coerced to 2-D at `axis`, so only axis == rank - 1 is a last-axis reduction).
// `opset` is the default-domain opset of the graph.
bool is_last_axis_reduction(const Node& node, int64_t opset);

}  // namespace nnfuse
