// Models stored in half precision (float16 or bfloat16 weights and activations) run in float32
// inside: the CPU kernels compute in float32, and every fusion rule then applies to them as to a
// float32 model. The graph's inputs and outputs keep their declared types, through a Cast at
// each, and a Cast to a half type inside the graph still rounds to it, so the model computes
// what it declares with float32 arithmetic between the roundings it asks for.
#pragma once

#include "ir/graph.h"

namespace nnfuse {

// Rewrites `g` in place as above; a graph with no float16 or bfloat16 value is left as it is.
// Returns the number of values widened.
size_t widen_half_precision(Graph& g);

}  // namespace nnfuse
