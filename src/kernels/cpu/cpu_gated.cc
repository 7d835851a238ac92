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

template <class Op>
NNFUSE_INLINE void act_loop(float* y, int64_t n, Op op) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] = op(y[i]);
}

#define NNFUSE_GATE(...) \
  [=](float v) __attribute__((always_inline)) { return __VA_ARGS__; }

constexpr float kInvSqrt2 = 0.707106781186547524f;
constexpr float kTwoSqrt2OverPi = 1.59576912160573071f;  // 2 * sqrt(2 / pi)

// min(max(t, 0), 1), NaN passing through.
NNFUSE_INLINE float unit_clamp(float t) {
  t = t < 0.0f ? 0.0f : t;
  return t > 1.0f ? 1.0f : t;
}

// The vectorized activations, each as LOOP(expression of v), one table for both loops; the
// switch returns false for a kind without a vector form here.
#define NNFUSE_ACTIVATION_SWITCH(kind, alpha, beta, LOOP)                             \
  switch (kind) {                                                                     \
    case ActivationKind::kNone:                                                       \
      LOOP(v);                                                                        \
      return true;                                                                    \
    case ActivationKind::kRelu:                                                       \
      LOOP(v < 0.0f ? 0.0f : v);                                                      \
      return true;                                                                    \
    case ActivationKind::kLeakyRelu:                                                  \
      LOOP(v < 0.0f ? alpha * v : v);                                                 \
      return true;                                                                    \
    case ActivationKind::kHardSigmoid:                                                \
      LOOP(unit_clamp(alpha* v + beta));                                              \
      return true;                                                                    \
    case ActivationKind::kHardSwish:                                                  \
      LOOP(v* unit_clamp(v / 6.0f + 0.5f));                                           \
      return true;                                                                    \
    case ActivationKind::kTanh:                                                       \
      LOOP(tanh_f(v));                                                                \
      return true;                                                                    \
    case ActivationKind::kGelu:                                                       \
      LOOP(0.5f * v * (1.0f + erf_f(v * kInvSqrt2)));                                 \
      return true;                                                                    \
    case ActivationKind::kGeluTanh:                                                   \
      /* x / 2 * (1 + tanh(t)) == x * sigmoid(2t), as the Gelu kernel computes it. */ \
      LOOP(v* sigmoid_f(kTwoSqrt2OverPi*(v + 0.044715f * v * v * v)));                \
      return true;                                                                    \
    case ActivationKind::kSigmoid:                                                    \
      LOOP(sigmoid_f(v));                                                             \
      return true;                                                                    \
    case ActivationKind::kSiLU:                                                       \
      LOOP(v* sigmoid_f(v));                                                          \
      return true;                                                                    \
    case ActivationKind::kSwish:                                                      \
      LOOP(v* sigmoid_f(alpha* v));                                                   \
      return true;                                                                    \
    case ActivationKind::kQuantize:                                                   \
      LOOP(ops::quantize_dequantize(v, alpha, beta));                                 \
      return true;                                                                    \
    default:                                                                          \
      return false;                                                                   \
  }

NNFUSE_TARGET_CLONES bool fast_gate(ActivationKind kind, float alpha, float beta, const float* g,
                                    const float* u, float* y, int64_t n){
#define NNFUSE_LOOP(...) gate_loop(g, u, y, n, NNFUSE_GATE(__VA_ARGS__))
    NNFUSE_ACTIVATION_SWITCH(kind, alpha, beta, NNFUSE_LOOP)
#undef NNFUSE_LOOP
}

NNFUSE_TARGET_CLONES
    bool fast_activation(ActivationKind kind, float alpha, float beta, float* y, int64_t n) {
#define NNFUSE_LOOP(...) act_loop(y, n, NNFUSE_GATE(__VA_ARGS__))
  NNFUSE_ACTIVATION_SWITCH(kind, alpha, beta, NNFUSE_LOOP)
#undef NNFUSE_LOOP
}

#undef NNFUSE_ACTIVATION_SWITCH
#undef NNFUSE_GATE

}  // namespace

void gated_row(const ref::Activation& act, const float* g, const float* u, float* y, int64_t n) {
  if (fast_gate(act.kind, act.alpha, act.beta, g, u, y, n)) return;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(ref::apply_activation(act, g[i]) * u[i]);
  }
}

void activation_row(const ref::Activation& act, float* y, int64_t n) {
  if (act.kind == ActivationKind::kNone || fast_activation(act.kind, act.alpha, act.beta, y, n))
    return;
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(ref::apply_activation(act, y[i]));
}

}  // namespace nnfuse::cpu
