// Vectorized activation epilogues over rows of floats, for kernels that apply an activation
// after their own computation: the gated dense layer (FusedGatedMatMul), whose packed product
// [gate | up] (2n floats) becomes y[j] = act(gate[j]) * up[j], and the normalizations with an
// activation (GroupNorm), y[j] = act(y[j]). The halves may lie apart (a product whose halves
// are padded to balance the GEMM's threads). Vectorized for the activations these layers use
// (GELU erf and tanh, SiLU and Swish, Sigmoid, Tanh, ReLU, LeakyReLU, HardSigmoid, HardSwish,
// none), on the reference activation for the others (Clip).
#pragma once

#include <cstdint>

#include "kernels/ref/fused.h"

namespace nnfuse::cpu {

// y[j] = act(gate[j]) * up[j] for j in [0, n).
void gated_row(const ref::Activation& act, const float* gate, const float* up, float* y, int64_t n);
// y[j] = act(y[j]) for j in [0, n).
void activation_row(const ref::Activation& act, float* y, int64_t n);

}  // namespace nnfuse::cpu
