// What a fusion saves and what a node costs: the one place the project computes a fusion's
// benefit (the fusion passes' report, automatic fusion's decisions and the report's figures).
//
//   intermediate bytes  a value produced and consumed inside a fused node is no longer written to
//                       memory and read back: 2 * numel * dtype size (unknown sizes count 0)
//   kernels saved       one launch instead of one per node: nodes - 1
//   FLOPs               2 per multiply-add of Conv, ConvTranspose, MatMul and Gemm (and nnfuse's
//                       fused forms of them), one per output element of any other node
//   bytes moved         what a kernel reads and writes: its inputs and outputs once each
//   recomputation       elements a fused elementwise region computes more than once because
//                       a smaller member is broadcast into the region's larger domain
//   roofline estimate   a kernel takes max(FLOPs / peak, bytes moved / bandwidth) plus one
//                       launch; a fusion's estimated speedup is the nodes' sum over the fused
//                       node's time
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ir/graph.h"
#include "ir/saturate.h"

namespace nnfuse::cost {

// Costs saturate (ir/saturate.h: sat_add, sat_mul).

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

// Bytes one run of `n` reads and writes: each distinct input and output value once (values of
// unknown size count 0).
int64_t bytes_moved(const Node& n);

// What broadcasting costs a fused elementwise region: the elements its smaller members compute
// again for every position of the largest output (the domain), and that count weighted by the
// op's price (an Exp or Div about 16 adds). `per_row` elements (a row region's per-row values,
// made once per row) are not recomputed; -1 for none.
struct Recompute {
  int64_t elements = 0;
  int64_t cost = 0;
};
Recompute recomputation(const std::vector<Node*>& nodes, int64_t per_row = -1);
// The largest static output of `nodes`, in elements (the domain a fused region runs over).
int64_t domain_elements(const std::vector<Node*>& nodes);

// The machine a roofline estimate is made for. The defaults are a 2-core AVX-512 server's
// order of magnitude (about 200 GFLOP/s, 20 GB/s, 2 us per launch).
struct Machine {
  double flops_per_s = 2e11;
  double bytes_per_s = 2e10;
  double launch_s = 2e-6;
};
// The roofline time of one kernel doing `flops` and moving `bytes` (negative counts as 0).
double roofline_seconds(int64_t flops, int64_t bytes, const Machine& m = {});

// What replacing `nodes` by one node writing `outputs` saves, and the figures behind the
// estimate: the nodes' FLOPs (unknown counts 0), the bytes they move apart and together (the
// intermediates no longer written and read back), and the estimated speedup.
struct Benefit {
  int64_t bytes_saved = 0;
  int kernels_saved = 0;
  int64_t flops = 0;
  int64_t bytes_before = 0, bytes_after = 0;
  double seconds_before = 0, seconds_after = 0;  // the roofline estimates
  double estimated_speedup() const {
    return seconds_after > 0 ? seconds_before / seconds_after : 1.0;
  }
};
Benefit fusion_benefit(const std::vector<Node*>& nodes, const std::vector<Value*>& outputs,
                       const Machine& m = {});

// A whole graph: its kernels (nodes other than Constant), their FLOPs (unknown counts 0), the
// bytes they move and the sum of their roofline times.
struct GraphCost {
  int64_t kernels = 0, flops = 0, bytes_moved = 0;
  double seconds = 0;
};
GraphCost graph_cost(const Graph& g, const Machine& m = {});

}  // namespace nnfuse::cost
