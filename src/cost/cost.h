// What a fusion saves and what a node costs: the one place the project computes a fusion's
// benefit (the fusion passes' report, automatic fusion's decisions and the report's figures).
//
//   intermediate bytes  a value produced and consumed inside a fused node is no longer written to
//                       memory and read back: 2 * numel * dtype size (unknown sizes count 0)
//   kernels saved       one launch instead of one per node: nodes - 1
//   FLOPs               2 per multiply-add of Conv, ConvTranspose, MatMul and Gemm (and nnfuse's
//                       fused forms of them), one per output element of any other node
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace nnfuse::cost {

// numel * dtype size of a value of static shape and sized dtype, else -1.
int64_t value_bytes(const Value& v);

// Twice the sum of the values' static sizes (each written once and read back); values of unknown
// shape or dtype count 0, a value listed twice counts once, nullptr entries are ignored.
int64_t intermediate_bytes(const std::vector<const Value*>& values);

// The values `nodes` produce that are not among `outputs`: what a fused node keeps inside.
std::vector<const Value*> intermediates(const std::vector<Node*>& nodes,
                                        const std::vector<Value*>& outputs);

// Kernel launches saved by running `nodes` nodes as one.
inline int kernels_saved(size_t nodes) { return nodes == 0 ? 0 : static_cast<int>(nodes) - 1; }

// FLOPs of one run of `n` (see above); -1 when a shape it needs is not static.
int64_t flops(const Node& n);

// What replacing `nodes` by one node writing `outputs` saves.
struct Benefit {
  int64_t bytes_saved = 0;
  int kernels_saved = 0;
};
Benefit fusion_benefit(const std::vector<Node*>& nodes, const std::vector<Value*>& outputs);

}  // namespace nnfuse::cost
