// Cost model for automatic fusion: what running a region as one kernel saves. Kept simple
// and exact; the roofline estimate of src/cost/ can refine it later.
//
// Intermediates are the values produced by a member and used by a member. Unfused, each is
// written to memory by its producer and read back by its consumers; fused, it stays in
// registers. So:
//   bytes_saved   = sum over intermediates of 2 * numel * dtype_size (one write, one read;
//                   an intermediate whose shape is not fully known or whose dtype has no size
//                   counts 0, and is counted in unknown_intermediates)
//   kernels_saved = nodes - 1 (one launch instead of one per node)
// A region pays when it saves a kernel and at least min_bytes_saved bytes:
//   pays  <=>  kernels_saved >= 1 && bytes_saved >= min_bytes_saved.
#pragma once

#include <cstdint>

#include "passes/auto_fuse/grouping.h"

namespace nnfuse {

struct RegionCost {
  int64_t bytes_saved = 0;
  int kernels_saved = 0;
  int intermediates = 0;          // values produced and used inside the region
  int unknown_intermediates = 0;  // of which with unknown size (counted as 0 bytes)
};

struct CostOptions {
  int64_t min_bytes_saved = 0;
};

RegionCost region_cost(const Region& r);

// kernels_saved >= 1 && bytes_saved >= options.min_bytes_saved.
bool pays(const RegionCost& cost, const CostOptions& options = {});

}  // namespace nnfuse
