// Guards and the rewriter: the checks every fusion rewrite passes, and the replacement of a
// matched set of nodes by one fused node that carries its provenance.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "pattern/pattern.h"

namespace nnfuse::pattern {

// Returns "" when `nodes` may be replaced by one node producing `outputs`, else the reason:
// - an intermediate value (produced inside the set, not in `outputs`) is used outside the set
//   or is a graph output ("intermediate 'x' is also used by Relu 'r'");
// - replacing the set would create a cycle (a path leaves the set and comes back).
std::string check_replaceable(const Graph& g, const std::vector<Node*>& nodes,
                              const std::vector<Value*>& outputs);

// Replaces `nodes` by a new node of `op_type` in `domain` with `inputs` and `attrs`, writing
// the values in `outputs` (which were produced by nodes of the set): the new node takes over
// those values, the old nodes are removed, values left dead are deleted, and the graph is
// re-sorted. The node is named after the set's last node and records provenance (the names
// of `nodes` and `pass`). Throws kInternal when check_replaceable fails.
Node* replace_with(Graph& g, const std::vector<Node*>& nodes, const std::string& op_type,
                   const std::string& domain, const std::vector<Value*>& inputs,
                   const std::vector<Value*>& outputs,
                   const std::map<std::string, Attribute>& attrs, const std::string& pass);

// Adds a constant value (an initializer) with a fresh name derived from `stem`.
Value* add_constant(Graph& g, const std::string& stem, Tensor t);

}  // namespace nnfuse::pattern
