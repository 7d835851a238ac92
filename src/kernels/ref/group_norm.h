// GroupNorm's addend (kernels/ref/group_norm.cc), shared by the reference and cpu kernels.
#pragma once

#include <string>
#include <vector>

#include "ir/tensor.h"

namespace nnfuse::ref {

// The per-(image, channel) addend a[n * c + j] of GroupNorm(X, Gamma, Beta, T?, TW?, TB?) for X
// of N images and C channels, in double: 0 without T; T's rows (1 or N rows of C values) without
// TW; else T [1 or N, K] x TW [K, C] + TB [C]. Throws naming `who` on shapes that do not fit.
std::vector<double> group_norm_addend(const Tensor* t, const Tensor* w, const Tensor* b, int64_t n,
                                      int64_t c, const std::string& who);

}  // namespace nnfuse::ref
