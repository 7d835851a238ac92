#include "kernels/cpu/cpu_gated.h"

#include "kernels/cpu/cpu_math.h"

namespace nnfuse::cpu {

namespace {

using ref::ActivationKind;

template <class Op>
NNFUSE_INLINE void gate_loop(const float* g, const float* u, float* y, int64_t n, Op op) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] = op(g[i]) * u[i];
}

#define NNFUSE_GATE(...) \
  [=](float v) __attribute__((always_inline)) { return __VA_ARGS__; }

// false when `kind` has no vector form here.
NNFUSE_TARGET_CLONES bool fast_gate(ActivationKind kind, float alpha, const float* g,
                                    const float* u, float* y, int64_t n) {
  constexpr float kInvSqrt2 = 0.707106781186547524f;
  constexpr float kTwoSqrt2OverPi = 1.59576912160573071f;  // 2 * sqrt(2 / pi)
  switch (kind) {
    case ActivationKind::kNone:
      gate_loop(g, u, y, n, NNFUSE_GATE(v));
      return true;
    case ActivationKind::kRelu:
      gate_loop(g, u, y, n, NNFUSE_GATE(v < 0.0f ? 0.0f : v));
      return true;
    case ActivationKind::kGelu:
      gate_loop(g, u, y, n, NNFUSE_GATE(0.5f * v * (1.0f + erf_f(v * kInvSqrt2))));
      return true;
    case ActivationKind::kGeluTanh:
      // x / 2 * (1 + tanh(t)) == x * sigmoid(2t), as the Gelu kernel computes it.
      gate_loop(g, u, y, n,
                NNFUSE_GATE(v * sigmoid_f(kTwoSqrt2OverPi * (v + 0.044715f * v * v * v))));
      return true;
    case ActivationKind::kSigmoid:
      gate_loop(g, u, y, n, NNFUSE_GATE(sigmoid_f(v)));
      return true;
    case ActivationKind::kSiLU:
      gate_loop(g, u, y, n, NNFUSE_GATE(v * sigmoid_f(v)));
      return true;
    case ActivationKind::kSwish:
      gate_loop(g, u, y, n, NNFUSE_GATE(v * sigmoid_f(alpha * v)));
      return true;
    default:
      return false;
  }
}

#undef NNFUSE_GATE

}  // namespace

void gated_row(const ref::Activation& act, const float* packed, float* y, int64_t n) {
  const float* g = packed;
  const float* u = packed + n;
  if (fast_gate(act.kind, act.alpha, g, u, y, n)) return;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(ref::apply_activation(act, g[i]) * u[i]);
  }
}

}  // namespace nnfuse::cpu
