// Cost model for automatic fusion: what running a region as one kernel saves, and what it
// costs. Kept simple and exact where it can be; the bytes and kernels are cost/cost.h's
// measures, the ones every fusion's benefit is reported in.
//
// Intermediates are the values produced by a member and used by a member. Unfused, each is
// written to memory by its producer and read back by its consumers; fused, it stays in
// registers. So:
//   bytes_saved   = sum over intermediates of 2 * numel * dtype_size (one write, one read;
//                   an intermediate whose shape is not fully known or whose dtype has no size
//                   counts 0, and is counted in unknown_intermediates)
//   kernels_saved = nodes - 1 (one launch instead of one per node)
// The generated kernel evaluates every member once per element of the region's domain (the
// broadcast of the members' output shapes): a member whose output is smaller (a [1, 768]
// Exp added to a [128, 768] value) is computed again for every element it is broadcast to.
//   recomputed      = sum over such members of (domain numel - output numel)
//   recomputed_cost = the same, weighted: 16 for exp/log/tanh/erf/sigmoid/pow/sqrt/div
//                     (and the ops built from them), 1 for the rest
// A region pays when it saves a kernel, at least min_bytes_saved bytes, and more time than
// the recomputation costs, in element-operation units:
//   pays  <=>  kernels_saved >= 1 && bytes_saved >= min_bytes_saved &&
//              bytes_saved / 4 + kernels_saved * launch_cost >= recomputed_cost
// (a float moved to memory and back is about one cheap op; a kernel launch, with its
// fork/join, about launch_cost of them).
#pragma once

#include <cstdint>
#include <string>

#include "passes/auto_fuse/grouping.h"

namespace nnfuse {

struct RegionCost {
  int64_t bytes_saved = 0;
  int kernels_saved = 0;
  int intermediates = 0;          // values produced and used inside the region
  int unknown_intermediates = 0;  // of which with unknown size (counted as 0 bytes)
  int64_t recomputed = 0;         // member evaluations beyond their output's size
  int64_t recomputed_cost = 0;    // the same, weighted by the ops' cost
};

struct CostOptions {
  int64_t min_bytes_saved = 0;
  int64_t launch_cost = 2000;
};

RegionCost region_cost(const Region& r);

// See above.
bool pays(const RegionCost& cost, const CostOptions& options = {});
// Why a region does not pay, for the report ("" when it does).
std::string why_not_paying(const RegionCost& cost, const CostOptions& options = {});

}  // namespace nnfuse
