// The row loops of the ExpandDepthwise kernel (cpu_expand_depthwise.cc), on ring rows blocked by
// 16 channels, as force-inlined templates on GCC's vector extensions: the 1x1 expansion (or a
// stem's gathered taps) of one input row into a ring row, a register-blocked product of about 24
// sums (6 pixels by 4 vectors, 8 by 3 or 12 by 2), and the depthwise convolution of one output
// row, 8 output pixels of one vector at a time, each with the activation applied in registers
// (Clamp). The kernel's file compiles them into its NNFUSE_TARGET_CLONES row functions, one
// clone per ISA, which stay in one file with their callers: called from another file, Clang 14
// (the sanitizer build's compiler) does not dispatch the clones.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/cpu/cpu_math.h"

namespace nnfuse::cpu::expand_depthwise {

constexpr int64_t kLanes = 16;

// 16 floats; 4-byte alignment, so loads and stores at any float address are allowed. Values of
// this type only pass between force-inlined functions, never across a call, so GCC's note that
// their ABI differs with and without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float Vec __attribute__((vector_size(64), aligned(4)));

NNFUSE_INLINE Vec splat(float x) { return Vec{} + x; }
NNFUSE_INLINE Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
NNFUSE_INLINE void store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }
// min(max(x, lo), hi), NaN passing through (as the reference activations let it).
NNFUSE_INLINE Vec clamp(Vec x, Vec lo, Vec hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

typedef int32_t VecI __attribute__((vector_size(64), aligned(4)));

// e^x for x <= 0, with exp_parts' reduction and polynomial (cpu_math.h) on vectors; x is
// clamped to -87 first, where e^x is still a normal float (the sigmoid below then rounds to
// its limits anyway). NaN passes through.
NNFUSE_INLINE Vec exp_nonpositive(Vec x) {
  x = x < splat(-87.0f) ? splat(-87.0f) : x;
  constexpr float kLog2e = 1.44269504088896341f, kRound = 12582912.0f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const Vec t = x * kLog2e + kRound;
  const Vec nf = t - kRound;
  const VecI n = (VecI)t - (VecI)splat(kRound);
  const Vec r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  Vec p = splat(1.98577633e-4f);
  p = p * r + 1.39335974e-3f;
  p = p * r + 8.33336078e-3f;
  p = p * r + 4.16664667e-2f;
  p = p * r + 1.66666672e-1f;
  p = p * r + 0.5f;
  const Vec q = r + r * r * p;
  return (1.0f + q) * (Vec)((n + 127) << 23);
}

// sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e) below, e = e^-|x| in (0, 1]: the reciprocal
// of d = 1 + e in (1, 2] by Newton's iteration from 24/17 - 8/17 d (relative error under 1/17,
// squared by each step: under 1e-9 after three), without a division.
NNFUSE_INLINE Vec sigmoid(Vec x) {
  const VecI sign = VecI{} + static_cast<int32_t>(0x80000000u);
  const Vec e = exp_nonpositive((Vec)((VecI)x | sign));  // e^-|x|
  const Vec d = 1.0f + e;
  Vec y = (24.0f / 17.0f) - (8.0f / 17.0f) * d;
  y = y * (2.0f - d * y);
  y = y * (2.0f - d * y);
  y = y * (2.0f - d * y);
  return x >= 0.0f ? y : e * y;
}

// An activation as the kernels apply it in registers: a clamp (ReLU, Clip; none: unbounded),
// then HardSwish's x * clamp(x / 6 + 1 / 2, 0, 1), Swish's x * sigmoid(alpha x) (SiLU: alpha 1)
// or the sigmoid. The others are applied after, over the rows written (activation_row), and
// are the identity here.
struct Clamp {
  enum Then { kNothing, kHardSwish, kSwish, kSigmoid };
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  Then then = kNothing;
  float alpha = 1.0f;
};

// Clamp in vectors.
struct Epilogue {
  Vec lo, hi;
  Clamp::Then then;
  float alpha;
  explicit Epilogue(const Clamp& c)
      : lo(splat(c.lo)), hi(splat(c.hi)), then(c.then), alpha(c.alpha) {}
};
NNFUSE_INLINE Vec finish(const Epilogue& e, Vec x) {
  x = clamp(x, e.lo, e.hi);
  switch (e.then) {
    case Clamp::kHardSwish:
      return x * clamp(x * (1.0f / 6.0f) + 0.5f, splat(0.0f), splat(1.0f));
    case Clamp::kSwish:
      return x * sigmoid(e.alpha * x);
    case Clamp::kSigmoid:
      return sigmoid(x);
    default:
      return x;
  }
}

// y[r * 16 + v * vstride + j] = clamp(b[v * 16 + j] + sum_c x(r, c) * w[(c * NV + v) * 16 + j])
// for R pixels r and NV vectors v, where x(r, c) is x[r * xs + c] (pixels of cin channels, xs
// apart) or, kTaps, x[c * xs + r] (gather_row's rows of xs pixels, one per tap).
template <int R, int NV, bool kTaps>
NNFUSE_INLINE void expand_block(const float* x, int64_t cin, int64_t xs, const float* w,
                                const float* b, const Epilogue& ep, float* y, int64_t vstride) {
  Vec acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = load(b + v * kLanes);
  }
  for (int64_t c = 0; c < cin; ++c) {
    Vec wv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) wv[v] = load(w + (c * NV + v) * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const Vec xb = splat(kTaps ? x[c * xs + r] : x[r * xs + c]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += xb * wv[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) store(y + r * kLanes + v * vstride, finish(ep, acc[r][v]));
  }
}

// Pixels [r, width) of a row in blocks of R, then of R / 2, ... down to 1.
template <int NV, int R, bool kTaps>
NNFUSE_INLINE void expand_tail(const float* x, int64_t r, int64_t width, int64_t cin, int64_t xs,
                               const float* w, const float* b, const Epilogue& ep, float* y,
                               int64_t vstride) {
  for (; r + R <= width; r += R) {
    expand_block<R, NV, kTaps>(x + (kTaps ? r : r * xs), cin, xs, w, b, ep, y + r * kLanes,
                               vstride);
  }
  if constexpr (R > 1) expand_tail<NV, R / 2, kTaps>(x, r, width, cin, xs, w, b, ep, y, vstride);
}

// About 24 accumulators whatever the panel's width: each broadcast input feeds NV products and
// each weight vector R.
template <int NV, bool kTaps>
NNFUSE_INLINE void expand_row_nv(const float* x, int64_t width, int64_t cin, int64_t xs,
                                 const float* w, const float* b, const Epilogue& ep, float* y,
                                 int64_t vstride) {
  constexpr int kPixels = NV == 4 ? 6 : NV == 3 ? 8 : 12;
  expand_tail<NV, kPixels, kTaps>(x, 0, width, cin, xs, w, b, ep, y, vstride);
}

template <bool kTaps>
NNFUSE_INLINE void expand_row_of(const float* x, int64_t width, int64_t cin, int64_t xs,
                                 const float* w, const float* b, const Epilogue& ep, float* y,
                                 int64_t vstride, int nv) {
  switch (nv) {
    case 4:
      expand_row_nv<4, kTaps>(x, width, cin, xs, w, b, ep, y, vstride);
      break;
    case 3:
      expand_row_nv<3, kTaps>(x, width, cin, xs, w, b, ep, y, vstride);
      break;
    case 2:
      expand_row_nv<2, kTaps>(x, width, cin, xs, w, b, ep, y, vstride);
      break;
    default:
      expand_row_nv<1, kTaps>(x, width, cin, xs, w, b, ep, y, vstride);
      break;
  }
}

// B output pixels of one vector: rows[kh] points at the first input pixel of the first output
// pixel in ring row kh, w at the vector's K * K weights (16 each). Each ring row's inputs are
// loaded once into registers and serve every tap that reads them.
template <int K, int S, int B>
NNFUSE_INLINE void depthwise_block(const float* const* rows, const float* w, Vec bias,
                                   const Epilogue& ep, float* y, int64_t ystride) {
  constexpr int kIn = (B - 1) * S + K;
  Vec acc[B];
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b) acc[b] = bias;
#pragma GCC unroll 5
  for (int kh = 0; kh < K; ++kh) {
    Vec in[kIn];
#pragma GCC unroll 20
    for (int i = 0; i < kIn; ++i) in[i] = load(rows[kh] + i * kLanes);
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw) {
      const Vec wv = load(w + (kh * K + kw) * kLanes);
#pragma GCC unroll 8
      for (int b = 0; b < B; ++b) acc[b] += in[b * S + kw] * wv;
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b) store(y + b * ystride, finish(ep, acc[b]));
}

// Output pixels [o, wo) of one vector in blocks of B, then of B / 2, ... down to 1.
template <int K, int S, int B>
NNFUSE_INLINE void depthwise_tail(const float* const* rv, int64_t o, int64_t wo, const float* w,
                                  Vec bias, const Epilogue& ep, float* y, int64_t ystride) {
  const float* r[K];
  for (; o + B <= wo; o += B) {
    for (int kh = 0; kh < K; ++kh) r[kh] = rv[kh] + o * S * kLanes;
    depthwise_block<K, S, B>(r, w, bias, ep, y + o * ystride, ystride);
  }
  if constexpr (B > 1) depthwise_tail<K, S, B / 2>(rv, o, wo, w, bias, ep, y, ystride);
}

template <int K, int S>
NNFUSE_INLINE void depthwise_row_ks(const float* const* rows, int64_t wp, int64_t wo, int64_t nv,
                                    const float* w, const float* b, const Epilogue& ep, float* y,
                                    int64_t ystride) {
  for (int64_t v = 0; v < nv; ++v) {
    const float* rv[K];
    for (int kh = 0; kh < K; ++kh) rv[kh] = rows[kh] + v * wp * kLanes;
    depthwise_tail<K, S, 8>(rv, 0, wo, w + v * K * K * kLanes, load(b + v * kLanes), ep,
                            y + v * kLanes, ystride);
  }
}

}  // namespace nnfuse::cpu::expand_depthwise
