// The epilogue of the gated dense layer (FusedGatedMatMul): one row of the packed product
// [gate | up] (2n floats) into y[j] = act(gate[j]) * up[j], vectorized for the activations a
// gated FFN uses (GELU erf and tanh, SiLU and Swish, ReLU, none) and on the reference
// activation for the others.
#pragma once

#include <cstdint>

#include "kernels/ref/fused.h"

namespace nnfuse::cpu {

void gated_row(const ref::Activation& act, const float* packed, float* y, int64_t n);

}  // namespace nnfuse::cpu
