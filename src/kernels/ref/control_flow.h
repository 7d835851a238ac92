// If, Loop and Scan: what the node does with its subgraphs (which branch, how many trips, the
// loop-carried values, the scanned slices and the stacked scan outputs), apart from how a
// subgraph runs. The reference kernels run each subgraph node by node on the reference kernels
// (run_body_on_reference); the fast kernel (kernels/cpu/cpu_control_flow.cc) runs it on kernels
// it planned once. A subgraph's last inputs are the outer values it captures
// (Graph::num_captures), which the node receives as its last inputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

// Runs subgraph `body` of `owner` on `inputs` (one per body input, formal inputs then captures)
// and returns its outputs.
using BodyRunner = std::function<std::vector<Tensor>(
    const Graph& body, const std::vector<const Tensor*>& inputs, const Node& owner)>;

// The oracle's runner: the body's nodes in order on their reference kernels.
std::vector<Tensor> run_body_on_reference(const Graph& body,
                                          const std::vector<const Tensor*>& inputs,
                                          const Node& owner);

// Runs the If, Loop or Scan node of ctx with `run` for each subgraph run.
void run_control_flow(KernelContext& ctx, const BodyRunner& run);

// Why a node of n's subgraphs (at any depth) has no reference kernel, "" when all have one.
std::string control_flow_support(const Node& n, int64_t opset);

// Checks the inputs `body` of `owner` is given: one per body input.
void check_body_inputs(const Graph& body, const std::vector<const Tensor*>& inputs,
                       const Node& owner);

}  // namespace nnfuse
