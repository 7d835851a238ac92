// Views, the plan's step that makes reshape-like nodes free: a node whose output is its input's
// bytes read under other dims (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout), or in
// the other layout (a Transpose between a tensor's two storage orders), runs no kernel; its
// output shares its input's storage. The plan asks this of each node before choosing it a
// kernel, as the view's output layout is what the nodes after it read.
#pragma once

#include <optional>

#include "ir/graph.h"
#include "runtime/plan.h"

namespace nnfuse {

// How a node runs as a view of its input 0.
struct ViewOf {
  Layout layout = Layout::kPlain;  // the layout its output is read in
  bool plain_input = false;        // input 0 is read through a plain copy (the plan reorders it)
};

// The view `n` is given its input 0 as the plan holds it (`in`; nullptr when omitted), or
// nullopt where it must run a kernel.
std::optional<ViewOf> view_of(const Node& n, const PlanValue* in);

}  // namespace nnfuse
