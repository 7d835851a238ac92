// Vectorized float32 loops shared by the elementwise kernels (cpu_unary.cc, cpu_binary.cc).
// Every loop is written so that y may be exactly x (in place); any other overlap is not allowed.
#pragma once

#include <cstdint>
#include <string>

namespace nnfuse::cpu {

enum class UnaryKind {
  kRelu,
  kLeakyRelu,  // a = alpha
  kSigmoid,
  kHardSigmoid,  // a = alpha, b = beta
  kHardSwish,
  kTanh,
  kErf,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kNeg,
  kAbs,
  kClip,  // a = min, b = max
  kElu,   // a = alpha
  kSoftplus,
  kSquare,    // Pow(x, 2)
  kCube,      // Pow(x, 3)
  kPowHalf,   // Pow(x, 0.5)
  kIdentity,  // Pow(x, 1)
};

// Maps an ONNX op type to its unary kind; false when it is not one.
bool unary_kind_of(const std::string& op_type, UnaryKind* kind);

// y[i] = f(x[i]) for i in [0, n); single-threaded (callers split the range).
void unary_run(UnaryKind kind, const float* x, float* y, int64_t n, float a, float b);

}  // namespace nnfuse::cpu
