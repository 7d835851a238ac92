// The ops of nnfuse's domain whose computation is given with the node:
//   FusedRegion(X_1, ..., X_n): a region of elementwise ops and at most one last-axis reduction,
//     found by automatic fusion or a user rule, run as one generated kernel (codegen/codegen.h).
//     The node stores the region in attributes, so a fused model runs anywhere: ops (ints, 4 per
//     op: kind, a, b, input), values (floats, one per op), output (int), and domain_shape (ints;
//     absent for elementwise regions, whose domain is the output's shape). Inputs are the
//     region's float32 inputs in order; the one output is the region's value. The shapes of
//     inputs and output are the node's values', which must be static.
//   UserPattern(...): a user fusion pattern's node (nnfuse/fusion_pattern.h): attribute pattern
//     (its name), ops (the matched ops), inputs_from (per input: matched node, input index) and
//     each matched node's attributes as "n<i>.<name>"; the pattern's compute runs it.
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "ops/def.h"

namespace nnfuse::ops {

struct FusedRegion {
  std::vector<Value*> inputs;
  codegen::Region region = {};
  NodeSpec spec() const;
};

// The node's attributes for `r` (shapes are not stored: they are the node's values' shapes).
Attrs fused_region_attrs(const codegen::Region& r);

// The region a FusedRegion node runs; throws kInvalidModel naming the node when its attributes
// are malformed or its values' shapes are not static float32.
codegen::Region fused_region_of(const Node& node);

// The generated function's name for `r`: "nnfuse_region_" + a hash of its encoded form, so equal
// regions share one cached object.
std::string fused_region_symbol(const codegen::Region& r);

struct UserPattern {
  std::vector<Value*> inputs;
  std::string pattern = {};          // its name
  std::vector<const Node*> matched;  // whose op types and attributes it carries
  Dims inputs_from = {};             // per input: matched node, input index
  NodeSpec spec() const;
};

void append_region_defs(std::vector<OpDef>& t);

}  // namespace nnfuse::ops
