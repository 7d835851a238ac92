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

namespace nnfuse::ref {

enum class ActivationKind {
  kNone,
  kRelu,
  kLeakyRelu,    // x >= 0 ? x : alpha * x
  kClip,         // min(max(x, alpha), beta)
  kSigmoid,      //
  kTanh,         //
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, x / 6 + 1 / 2))
  kSiLU,         // x * sigmoid(x)
  kGelu,         // x / 2 * (1 + erf(x / sqrt(2)))
  kGeluTanh,     // x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  kSwish,        // x * sigmoid(alpha * x)
};

struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0.0f, beta = 0.0f;
};

// Reads the activation attributes; absent parameters take the ONNX op's defaults (LeakyRelu
// 0.01; HardSigmoid 0.2 and 0.5; Clip unbounded; Swish 1). Throws kUnsupported naming the node for
// an unknown activation name (and an error for parameters of the wrong kind).
Activation read_activation(const Node& node);
// "" when read_activation accepts the node's attributes, else the reason.
std::string activation_reason(const Node& node);
// The activation of x, in double (NaN passes through as the ONNX ops let it).
double apply_activation(const Activation& a, double x);

}  // namespace nnfuse::ref
