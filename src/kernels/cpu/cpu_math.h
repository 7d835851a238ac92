// Vectorizable float32 approximations of exp, expm1, log, tanh, sigmoid, erf and softplus.
//
// Every function is branch-free (both sides of a case split are computed and one is selected),
// uses only +, -, *, /, comparisons and bit casts, and is force-inlined, so a loop calling it
// auto-vectorizes for whatever ISA the enclosing function is compiled for (see
// NNFUSE_TARGET_CLONES). Where the ISA has FMA (the AVX-512 clone), GCC contracts a * b + c
// into it; the last bit may then differ from the other clones, within the same bounds.
//
// Accuracy over dense sweeps against the double-precision std:: functions (cpu_math_test.cc,
// both the scalar form and the dispatched vector loop): exp, log < 8e-8 relative; expm1,
// tanh, sigmoid, softplus < 2.2e-7 relative; erf < 1.3e-7 absolute and < 1.8e-7 relative.
// NaN propagates; infinities give the mathematical limits; subnormal inputs and results are
// handled. The polynomial coefficients are near-minimax least-squares fits on Chebyshev nodes,
// rounded to float.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

// Force-inlined, so the caller's target ISA applies to the body.
#define NNFUSE_INLINE __attribute__((always_inline)) inline
// Compiles a hot loop function for AVX-512, AVX2 and baseline x86-64, picked at load time. Not
// under ThreadSanitizer: the loader runs the clones' resolver, which TSan instruments, before
// TSan's runtime has started.
//
// Under GCC also without jump threading (NNFUSE_NO_THREAD_JUMPS): it splits the clamps below
// (x > 89 ? 89 : x) into a constant path and a general one, which the vectorizer then computes
// both of under masks, three divisions per sigmoid instead of one. Without it a SiLU-gated row
// runs 1.9 cycles per element instead of 2.3, a GELU (erf) one 3.0 instead of 3.3 (AVX-512).
#if defined(__GNUC__) && !defined(__clang__)
#define NNFUSE_NO_THREAD_JUMPS __attribute__((optimize("no-thread-jumps")))
#else
#define NNFUSE_NO_THREAD_JUMPS
#endif
#if defined(__SANITIZE_THREAD__)
#define NNFUSE_TARGET_CLONES NNFUSE_NO_THREAD_JUMPS
#elif defined(__x86_64__)
#define NNFUSE_TARGET_CLONES \
  __attribute__((target_clones("avx512f", "avx2", "default"))) NNFUSE_NO_THREAD_JUMPS
#else
#define NNFUSE_TARGET_CLONES NNFUSE_NO_THREAD_JUMPS
#endif

namespace nnfuse::cpu {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

NNFUSE_INLINE uint32_t float_bits(float x) { return std::bit_cast<uint32_t>(x); }
NNFUSE_INLINE float bits_float(uint32_t b) { return std::bit_cast<float>(b); }

// |x| and copysign(magnitude, sign) through the sign bit.
NNFUSE_INLINE float abs_f(float x) { return bits_float(float_bits(x) & 0x7FFFFFFFu); }
NNFUSE_INLINE float copysign_f(float magnitude, float sign) {
  return bits_float((float_bits(magnitude) & 0x7FFFFFFFu) | (float_bits(sign) & 0x80000000u));
}

// 2^n for n in [-126, 127]; any n gives some float (no undefined behaviour) for NaN inputs.
NNFUSE_INLINE float pow2_i(int32_t n) {
  return bits_float((static_cast<uint32_t>(n) + 127u) << 23);
}

// exp(x) = 2^n * e^r with n = round(x / ln2) and |r| <= ln2 / 2; e^r = 1 + q, q = r + r^2 P(r).
// Returns q and n; exp_f and expm1_f finish from there.
struct ExpParts {
  float q;
  int32_t n;
};
NNFUSE_INLINE ExpParts exp_parts(float x) {
  // Beyond these bounds the result is inf or 0 anyway; clamping keeps n in range. NaN passes.
  x = x > 89.0f ? 89.0f : x;
  x = x < -104.0f ? -104.0f : x;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * kLog2e + kRound;
  const float nf = t - kRound;
  const int32_t n = static_cast<int32_t>(float_bits(t) - float_bits(kRound));
  // Cody-Waite: ln2 = kLn2Hi + kLn2Lo, kLn2Hi with few bits so nf * kLn2Hi is exact.
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  float p = 1.98577633e-4f;
  p = p * r + 1.39335974e-3f;
  p = p * r + 8.33336078e-3f;
  p = p * r + 4.16664667e-2f;
  p = p * r + 1.66666672e-1f;
  p = p * r + 0.5f;
  return {r + r * r * p, n};
}

// e^x. The 2^n scale is applied as two factors so results down to the subnormal range and up
// to FLT_MAX need no special case.
NNFUSE_INLINE float exp_f(float x) {
  const ExpParts e = exp_parts(x);
  const int32_t n1 = e.n >> 1;
  return (1.0f + e.q) * pow2_i(n1) * pow2_i(e.n - n1);
}

// e^x - 1, accurate near 0 (where n = 0 and r = x exactly, so q is the answer).
NNFUSE_INLINE float expm1_f(float x) {
  const ExpParts e = exp_parts(x);
  const int32_t n1 = e.n >> 1;
  const float full = (1.0f + e.q) * pow2_i(n1) * pow2_i(e.n - n1) - 1.0f;
  return e.n == 0 ? e.q : full;
}

// Natural log: x = 2^e * m with m in [sqrt(1/2), sqrt(2)); log(m) = f - f^2/2 + f^3 P(f),
// f = m - 1 (exact). Negative and NaN inputs give NaN, 0 gives -inf, +inf gives +inf.
NNFUSE_INLINE float log_f(float x) {
  constexpr float kMinNormal = 1.17549435e-38f;
  const bool sub = x < kMinNormal;
  const float xs = sub ? x * 8388608.0f : x;  // scale subnormals by 2^23
  const uint32_t bits = float_bits(xs);
  int32_t e = static_cast<int32_t>((bits >> 23) & 0xFFu) - 127 - (sub ? 23 : 0);
  float m = bits_float((bits & 0x007FFFFFu) | 0x3F800000u);  // [1, 2)
  const bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e = big ? e + 1 : e;
  const float f = m - 1.0f;
  const float z = f * f;
  float p = 7.14975372e-2f;
  p = p * f - 1.15712009e-1f;
  p = p * f + 1.16615109e-1f;
  p = p * f - 1.24110505e-1f;
  p = p * f + 1.42499372e-1f;
  p = p * f - 1.66684806e-1f;
  p = p * f + 2.00007081e-1f;
  p = p * f - 2.49999896e-1f;
  p = p * f + 3.33333313e-1f;
  const float ef = static_cast<float>(e);
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  float y = f * z * p;
  y = y + ef * kLn2Lo;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + ef * kLn2Hi;
  r = x == 0.0f ? -kInf : r;
  r = x == kInf ? kInf : r;
  r = (x < 0.0f || x != x) ? kNaN : r;
  return r;
}

// log(1 + u) for u >= 0 without losing u's precision when u is tiny (Goldberg's trick).
NNFUSE_INLINE float log1p_pos_f(float u) {
  const float v = 1.0f + u;
  const float d = v - 1.0f;
  return d == 0.0f ? u : log_f(v) * (u / d);
}

// tanh: odd polynomial below 0.625, 1 - 2 / (e^{2|x|} + 1) above.
NNFUSE_INLINE float tanh_f(float x) {
  const float a = abs_f(x);
  const float z = x * x;
  float p = 2.29303865e-3f;
  p = p * z - 8.34425259e-3f;
  p = p * z + 2.17690337e-2f;
  p = p * z - 5.39592803e-2f;
  p = p * z + 1.33333042e-1f;
  p = p * z - 3.33333343e-1f;
  const float small = x + x * z * p;
  const float large = copysign_f(1.0f - 2.0f / (exp_f(a + a) + 1.0f), x);
  return a < 0.625f ? small : large;
}

// 1 / (1 + e^-x), with e^-|x| so that the negative side keeps its relative accuracy.
NNFUSE_INLINE float sigmoid_f(float x) {
  const float e = exp_f(-abs_f(x));
  const float s = 1.0f / (1.0f + e);
  return x >= 0.0f ? s : e * s;
}

// erf: x P(x^2) for |x| <= 0.921875; 1 - exp(Q(|x|)) above, with Q a fit of log(erfc) on
// [0.921875, 4] (erf rounds to 1 beyond 3.92).
NNFUSE_INLINE float erf_f(float x) {
  const float a = abs_f(x);
  const float s = x * x;
  float p = -5.99130406e-4f;
  p = p * s + 4.99328552e-3f;
  p = p * s - 2.67667063e-2f;
  p = p * s + 1.12818196e-1f;
  p = p * s - 3.76124948e-1f;
  p = p * s + 1.12837911f;
  const float small = x * p;
  const float t = a < 4.0f ? a : 4.0f;
  float q = 1.60255763e-6f;
  q = q * t - 4.53559769e-5f;
  q = q * t + 5.90727548e-4f;
  q = q * t - 4.73034242e-3f;
  q = q * t + 2.63357200e-2f;
  q = q * t - 1.09925523e-1f;
  q = q * t - 6.31994963e-1f;
  q = q * t - 1.13013172f;
  q = q * t + 2.94336729e-4f;
  const float large = copysign_f(1.0f - exp_f(q), x);
  return a > 0.921875f ? large : small;
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|), without overflow.
NNFUSE_INLINE float softplus_f(float x) {
  return (x > 0.0f ? x : 0.0f) + log1p_pos_f(exp_f(-abs_f(x)));
}

}  // namespace nnfuse::cpu
