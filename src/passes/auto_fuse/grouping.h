// Grouping for automatic fusion (TVM's FuseOps, post-dominator based): finds regions of
// elementwise, broadcast, injective and last-axis reduction ops that one generated kernel
// can run, so their intermediates never go to memory.
//
// A region has one output node, its root, that post-dominates every member: each member's
// outputs are used only by other members (never by an outside node, never a graph output),
// so every path from a member to a graph output passes through the root, values inside the
// region are not used outside it, and no path leaves the region and comes back (no cycle
// through outside nodes). Only the root's outputs leave it.
//
// Algorithm (greedy, deterministic): nodes are visited in reverse topological order; each
// fusable node not yet in a region becomes a root and the region grows backwards, taking
// candidate producers latest first. A producer joins when all of its consumers are already
// members and the limits still hold; otherwise it stays outside and the producers behind it
// can only start regions of their own. So a long chain cut by a limit is cut from its end:
// the last max_ops nodes form one region, the earlier ones the next.
//
// Precision guard: a region never computes a value twice. A member upstream of a reduction
// of its region (the reduction depends on it inside the region) must have all its consumers
// upstream of that reduction too; a value needed both to compute a reduction and after it
// (softmax's x for ReduceMax and Sub, exp(x - max) for ReduceSum and Div) stays a region
// input, and the region splits there.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"

namespace nnfuse {

struct GroupingOptions {
  int max_ops = 32;        // nodes per region
  int max_inputs = 8;      // distinct input values per region, constants included
  int max_reductions = 1;  // reduction nodes per region
  // A further condition on members (automatic fusion: the code generator can lower the node);
  // empty: every region_member_candidate.
  std::function<bool(const Node&)> accept;
  // Inputs that do not count against max_inputs (automatic fusion: scalar constants, which
  // become literals in the generated code); empty: every input counts.
  std::function<bool(const Value&)> free_input;
};

struct Region {
  std::vector<Node*> nodes;     // topological order; the last one is the root
  std::vector<Value*> inputs;   // distinct values used by members and produced outside, in
                                // order of first use
  std::vector<Value*> outputs;  // the root's outputs that are used or are graph outputs
  int reductions = 0;
};

// True for the nodes a region may contain: kElementwise, kBroadcast and kInjective ops, and
// kReduction ops that reduce the last axis (is_last_axis_reduction).
bool region_member_candidate(const Node& node, int64_t opset);

// The regions of 2 or more nodes of `g`, disjoint, in the order their roots appear in the
// graph. `g` must be topologically ordered; it is not changed.
std::vector<Region> find_regions(const Graph& g, const GroupingOptions& options = {});

// Why `r` is not a valid region of `g` under `options` ("" when it is): checks every rule
// above independently of find_regions (tests use it as the oracle).
std::string region_violation(const Graph& g, const Region& r, const GroupingOptions& options);

}  // namespace nnfuse
