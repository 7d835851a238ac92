// GlobalResponseNorm (nnfuse's domain), ConvNeXt-V2's Global Response Normalization:
//   G[n, c] = sqrt(sum over the spatial positions p of X[n, p, c]^2)   (the L2 norm of each map)
//   N[n, c] = G[n, c] / (mean over the channels c' of G[n, c'] + epsilon)
//   Y = Gamma[c] * (X * N[n, c]) + Beta[c] + X
// X is [N, spatial..., C] (channels last, as ConvNeXt-V2's block computes it) or, with
// channels_last = 0, [N, C, spatial...]; Gamma and Beta hold one value per channel. The sums are
// taken in double by the reference kernel.
#pragma once

#include "ops/def.h"

namespace nnfuse::ops {

namespace response_norm {
inline constexpr size_t kX = 0, kGamma = 1, kBeta = 2;
}

struct GlobalResponseNorm {
  Value* x = nullptr;
  Value* gamma = nullptr;  // [C]
  Value* beta = nullptr;   // [C]
  float epsilon = 1e-6f;
  bool channels_last = true;
  NodeSpec spec() const;
};

// The channel axis of the node's X of rank `rank`: the last, or 1 (channels_last = 0).
int64_t response_norm_channel_axis(const Node& n, int64_t rank);

void append_response_norm_defs(std::vector<OpDef>& t);

}  // namespace nnfuse::ops
