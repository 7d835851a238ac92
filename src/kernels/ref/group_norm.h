// GroupNorm's addend (kernels/ref/group_norm.cc), shared by the reference and cpu kernels.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "ops/norm.h"

namespace nnfuse::ref {

// The per-(image, channel) addend a[n * c + j] of GroupNorm(X, Gamma, Beta, T?, TW?, TB?) for X
// of N images and C channels, in double: 0 without T; T's rows (1 or N rows of C values) without
// TW; else T [1 or N, K] x TW [K, C] + TB [C]. Throws naming `who` on shapes that do not fit.
std::vector<double> group_norm_addend(const Tensor* t, const Tensor* w, const Tensor* b, int64_t n,
                                      int64_t c, const std::string& who);

// The attribute t_activation ("" or "SiLU", ops/norm.h: diffusers' ResnetBlock2D takes the SiLU
// of the time embedding before its dense layer).
using ops::t_activation_reason;
using ops::t_silu;
// T as the addend reads it: `t` itself, or with `silu` its SiLU written into `storage` (in
// double, rounded once).
const Tensor* activated_t(bool silu, const Tensor* t, Tensor& storage);

}  // namespace nnfuse::ref
