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

// L floats (16: AVX-512's registers; 8: AVX2's; 4: SSE's); 4-byte alignment, so loads and
// stores at any float address are allowed. The rows stay blocked by 16 channels whatever L: a
// vector of 16 is 16 / L vectors of L side by side, each channel's arithmetic its own, so the
// loops below run once per part at offsets of L floats. A vector wider than the CPU's registers
// would live in memory (GCC gives it no machine mode): 16 lanes are for AVX-512 only. Values of
// these types only pass between force-inlined functions, never across a call, so GCC's note
// that their ABI differs with and without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
template <int L>
struct Lanes;
template <>
struct Lanes<16> {
  typedef float V __attribute__((vector_size(64), aligned(4)));
  typedef int32_t I __attribute__((vector_size(64), aligned(4)));
};
template <>
struct Lanes<8> {
  typedef float V __attribute__((vector_size(32), aligned(4)));
  typedef int32_t I __attribute__((vector_size(32), aligned(4)));
};
template <>
struct Lanes<4> {
  typedef float V __attribute__((vector_size(16), aligned(4)));
  typedef int32_t I __attribute__((vector_size(16), aligned(4)));
};
template <class V>
constexpr int kLanesOf = static_cast<int>(sizeof(V) / sizeof(float));
template <class V>
using IntOf = typename Lanes<kLanesOf<V>>::I;

template <class V>
NNFUSE_INLINE V splat(float x) {
  return V{} + x;
}
template <class V>
NNFUSE_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
NNFUSE_INLINE void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}
// min(max(x, lo), hi), NaN passing through (as the reference activations let it).
template <class V>
NNFUSE_INLINE V clamp(V x, V lo, V hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

// e^x for x <= 0, with exp_parts' reduction and polynomial (cpu_math.h) on vectors; x is
// clamped to -87 first, where e^x is still a normal float (the sigmoid below then rounds to
// its limits anyway). NaN passes through.
template <class V>
NNFUSE_INLINE V exp_nonpositive(V x) {
  using VI = IntOf<V>;
  x = x < splat<V>(-87.0f) ? splat<V>(-87.0f) : x;
  constexpr float kLog2e = 1.44269504088896341f, kRound = 12582912.0f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const V t = x * kLog2e + kRound;
  const V nf = t - kRound;
  const VI n = (VI)t - (VI)splat<V>(kRound);
  const V r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  V p = splat<V>(1.98577633e-4f);
  p = p * r + 1.39335974e-3f;
  p = p * r + 8.33336078e-3f;
  p = p * r + 4.16664667e-2f;
  p = p * r + 1.66666672e-1f;
  p = p * r + 0.5f;
  const V q = r + r * r * p;
  return (1.0f + q) * (V)((n + 127) << 23);
}

// sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e) below, e = e^-|x| in (0, 1]: the reciprocal
// of d = 1 + e in (1, 2] by Newton's iteration from 24/17 - 8/17 d (relative error under 1/17,
// squared by each step: under 1e-9 after three), without a division.
template <class V>
NNFUSE_INLINE V sigmoid(V x) {
  using VI = IntOf<V>;
  const VI sign = VI{} + static_cast<int32_t>(0x80000000u);
  const V e = exp_nonpositive((V)((VI)x | sign));  // e^-|x|
  const V d = 1.0f + e;
  V y = (24.0f / 17.0f) - (8.0f / 17.0f) * d;
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

// Clamp in vectors of V.
template <class V>
struct Epilogue {
  V lo, hi;
  Clamp::Then then;
  float alpha;
  explicit Epilogue(const Clamp& c)
      : lo(splat<V>(c.lo)), hi(splat<V>(c.hi)), then(c.then), alpha(c.alpha) {}
};
template <class V>
NNFUSE_INLINE V finish(const Epilogue<V>& e, V x) {
  x = clamp(x, e.lo, e.hi);
  switch (e.then) {
    case Clamp::kHardSwish:
      return x * clamp(x * (1.0f / 6.0f) + 0.5f, splat<V>(0.0f), splat<V>(1.0f));
    case Clamp::kSwish:
      return x * sigmoid(e.alpha * x);
    case Clamp::kSigmoid:
      return sigmoid(x);
    default:
      return x;
  }
}

// y[r * 16 + v * vstride + j] = clamp(b[v * 16 + j] + sum_c x(r, c) * w[(c * ws + v) * 16 + j])
// for R pixels r, NV vectors v and the L channels j of V from where y, w and b point, where
// x(r, c) is x[r * xs + c] (pixels of cin channels, xs apart) or, kTaps, x[c * xs + r]
// (gather_row's rows of xs pixels, one per tap); ws (at least NV) is the panel's width in
// vectors of 16, the weights of one input channel ws vectors apart.
template <class V, int R, int NV, bool kTaps>
NNFUSE_INLINE void expand_block(const float* x, int64_t cin, int64_t xs, const float* w, int64_t ws,
                                const float* b, const Epilogue<V>& ep, float* y, int64_t vstride) {
  V acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = load<V>(b + v * kLanes);
  }
  for (int64_t c = 0; c < cin; ++c) {
    V wv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) wv[v] = load<V>(w + (c * ws + v) * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const V xb = splat<V>(kTaps ? x[c * xs + r] : x[r * xs + c]);
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
template <class V, int NV, int R, bool kTaps>
NNFUSE_INLINE void expand_tail(const float* x, int64_t r, int64_t width, int64_t cin, int64_t xs,
                               const float* w, int64_t ws, const float* b, const Epilogue<V>& ep,
                               float* y, int64_t vstride) {
  for (; r + R <= width; r += R) {
    expand_block<V, R, NV, kTaps>(x + (kTaps ? r : r * xs), cin, xs, w, ws, b, ep, y + r * kLanes,
                                  vstride);
  }
  if constexpr (R > 1) {
    expand_tail<V, NV, R / 2, kTaps>(x, r, width, cin, xs, w, ws, b, ep, y, vstride);
  }
}

// Vectors [v0, v0 + NV) of a panel ws vectors wide, each in its 16 / L parts of V, in blocks of
// kAcc / NV pixels: each broadcast input feeds NV products and each weight vector kAcc / NV.
template <class V, int NV, int kAcc, bool kTaps>
NNFUSE_INLINE void expand_part(const float* x, int64_t width, int64_t cin, int64_t xs,
                               const float* w, int64_t ws, int64_t v0, const float* b,
                               const Epilogue<V>& ep, float* y, int64_t vstride) {
  for (int64_t h = 0; h < kLanes; h += kLanesOf<V>) {
    expand_tail<V, NV, kAcc / NV, kTaps>(x, 0, width, cin, xs, w + v0 * kLanes + h, ws,
                                         b + v0 * kLanes + h, ep, y + v0 * vstride + h, vstride);
  }
}

// A row times a panel of nv (1 to 4) vectors of 16, about 24 sums in registers of V: with
// AVX-512 (V of 16 lanes, 32 registers) the whole panel is one block of 6 pixels by 4 vectors,
// 8 by 3 or 12 by 2 (12 by 1); with AVX2 or SSE (8 or 4 lanes, 16 registers) each part of 8 or 4
// channels in turn, the panel in pieces of at most 2 vectors, 6 pixels by 2 or 12 by 1, 12 sums
// (wider blocks spill their sums to the stack).
template <class V, bool kTaps>
NNFUSE_INLINE void expand_row_of(const float* x, int64_t width, int64_t cin, int64_t xs,
                                 const float* w, const float* b, const Epilogue<V>& ep, float* y,
                                 int64_t vstride, int nv) {
  if constexpr (kLanesOf<V> == kLanes) {
    switch (nv) {
      case 4:
        expand_part<V, 4, 24, kTaps>(x, width, cin, xs, w, 4, 0, b, ep, y, vstride);
        break;
      case 3:
        expand_part<V, 3, 24, kTaps>(x, width, cin, xs, w, 3, 0, b, ep, y, vstride);
        break;
      case 2:
        expand_part<V, 2, 24, kTaps>(x, width, cin, xs, w, 2, 0, b, ep, y, vstride);
        break;
      default:
        expand_part<V, 1, 12, kTaps>(x, width, cin, xs, w, 1, 0, b, ep, y, vstride);
        break;
    }
  } else {
    int v0 = 0;
    for (; v0 + 2 <= nv; v0 += 2) {
      expand_part<V, 2, 12, kTaps>(x, width, cin, xs, w, nv, v0, b, ep, y, vstride);
    }
    if (v0 < nv) expand_part<V, 1, 12, kTaps>(x, width, cin, xs, w, nv, v0, b, ep, y, vstride);
  }
}

// B output pixels of one vector's L channels: rows[kh] points at the first input pixel of the
// first output pixel in ring row kh, w at the vector's K * K weights (16 apart). Each ring row's
// inputs are loaded once into registers (or read by the products from memory) and serve every
// tap that reads them.
template <class V, int K, int S, int B>
NNFUSE_INLINE void depthwise_block(const float* const* rows, const float* w, V bias,
                                   const Epilogue<V>& ep, float* y, int64_t ystride) {
  constexpr int kIn = (B - 1) * S + K;
  V acc[B];
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b) acc[b] = bias;
#pragma GCC unroll 5
  for (int kh = 0; kh < K; ++kh) {
    V in[kIn];
#pragma GCC unroll 20
    for (int i = 0; i < kIn; ++i) in[i] = load<V>(rows[kh] + i * kLanes);
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw) {
      const V wv = load<V>(w + (kh * K + kw) * kLanes);
#pragma GCC unroll 8
      for (int b = 0; b < B; ++b) acc[b] += in[b * S + kw] * wv;
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b) store(y + b * ystride, finish(ep, acc[b]));
}

// Output pixels [o, wo) of one vector in blocks of B, then of B / 2, ... down to 1.
template <class V, int K, int S, int B>
NNFUSE_INLINE void depthwise_tail(const float* const* rv, int64_t o, int64_t wo, const float* w,
                                  V bias, const Epilogue<V>& ep, float* y, int64_t ystride) {
  const float* r[K];
  for (; o + B <= wo; o += B) {
    for (int kh = 0; kh < K; ++kh) r[kh] = rv[kh] + o * S * kLanes;
    depthwise_block<V, K, S, B>(r, w, bias, ep, y + o * ystride, ystride);
  }
  if constexpr (B > 1) depthwise_tail<V, K, S, B / 2>(rv, o, wo, w, bias, ep, y, ystride);
}

// One output row, 8 output pixels of one vector's L channels at a time.
template <class V, int K, int S>
NNFUSE_INLINE void depthwise_row_ks(const float* const* rows, int64_t wp, int64_t wo, int64_t nv,
                                    const float* w, const float* b, const Epilogue<V>& ep, float* y,
                                    int64_t ystride) {
  for (int64_t v = 0; v < nv; ++v) {
    for (int64_t h = 0; h < kLanes; h += kLanesOf<V>) {
      const float* rv[K];
      for (int kh = 0; kh < K; ++kh) rv[kh] = rows[kh] + v * wp * kLanes + h;
      depthwise_tail<V, K, S, 8>(rv, 0, wo, w + v * K * K * kLanes + h, load<V>(b + v * kLanes + h),
                                 ep, y + v * kLanes + h, ystride);
    }
  }
}

}  // namespace nnfuse::cpu::expand_depthwise
