// The epilogue activation of nnfuse's fused ops (FusedConv, FusedMatMul, FusedGemm,
// FusedGlobalPoolGemm in domain ai.nnfuse), read from the attributes `activation`,
// `activation_alpha` and `activation_beta`. The reference kernels (fused.cc) apply it with
// apply_activation; the fast kernels map it onto oneDNN eltwise post-ops.
//
// The standalone activations the GELU fusion makes run on the same function:
//   Gelu(X) (ai.nnfuse, attr approximate = "none" | "tanh": ONNX opset-20 Gelu semantics)
//   Swish(X) (ai.nnfuse, attr alpha, default 1) = X * sigmoid(alpha * X)
#pragma once

#include <string>

#include "ir/graph.h"
#include "ops/activation.h"

namespace nnfuse::ref {

using ops::Activation;
using ops::activation_reason;
using ops::ActivationKind;
using ops::read_activation;

// The activation of x, in double (NaN passes through as the ONNX ops let it).
double apply_activation(const Activation& a, double x);

}  // namespace nnfuse::ref
