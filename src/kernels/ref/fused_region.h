// FusedRegion (ai.nnfuse): a region of elementwise ops and at most one last-axis reduction,
// found by automatic fusion or a user rule, run as one generated kernel (codegen/codegen.h).
//
// The node stores the region in attributes, so a fused model runs anywhere:
//   ops (ints, 4 per op: kind, a, b, input), values (floats, one per op), output (int), and
//   domain_shape (ints; absent for elementwise regions whose domain is the output's shape).
// Inputs are the region's float32 inputs in order; the one output is the region's value. The
// shapes of inputs and output come from the node's values, which must be static.
#pragma once

#include <map>
#include <string>

#include "codegen/codegen.h"
#include "ir/graph.h"

namespace nnfuse {

inline constexpr const char* kFusedRegionOp = "FusedRegion";

// The node's attributes for `r` (shapes are not stored: they are the node's values' shapes).
std::map<std::string, Attribute> fused_region_attrs(const codegen::Region& r);

// The region a FusedRegion node runs; throws kInvalidModel naming the node when its
// attributes are malformed or its values' shapes are not static float32.
codegen::Region fused_region_of(const Node& node);

// The generated function's name for `r`: "nnfuse_region_" + a hash of its encoded form, so
// equal regions share one cached object.
std::string fused_region_symbol(const codegen::Region& r);

}  // namespace nnfuse
