// Folding, the plan's first step: the values it computes once, when it is built, instead of
// once per run: every Constant node's output, and every view (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Dropout) of constants (exporters share equal weights through Identity).
// Those nodes then run no step.
#pragma once

#include <map>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace nnfuse {

// Per folded node's output, its value.
using FoldedValues = std::map<const Value*, Tensor>;

// The reshape-like ops whose output is its input's data under other dims (plan_views.h makes
// them views).
bool is_view_op(const Node& n);
bool is_view_op(Op op);

// The folded values of `g`, in graph order (a view of a folded value folds too).
FoldedValues fold_constants(const Graph& g);

}  // namespace nnfuse
