// Float vectors of W lanes (16: AVX-512, 8: AVX2, 4: SSE2) on GCC's vector extensions, for the
// hand-vectorized kernels that pick their width at run time (cpu_util.h: vector_width) and
// compile one body per width in target-attributed functions (the Winograd and the depthwise
// conv kernels): loads and stores at any float address, partial ones, a lane select, and the
// activations they apply in registers.
//
// Values of these types only pass between force-inlined functions, never across a call, so
// GCC's note that their ABI differs with and without AVX-512 does not apply.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/cpu_math.h"
#include "kernels/ref/fused.h"

#pragma GCC diagnostic ignored "-Wpsabi"

namespace nnfuse::cpu {

// The value type, the integer vector its comparisons give, and the unaligned, aliasing form
// that loads and stores go through.
template <int W>
struct FloatVec {
  typedef float type __attribute__((vector_size(4 * W)));
  typedef int mask __attribute__((vector_size(4 * W)));
  typedef float mem __attribute__((vector_size(4 * W), aligned(4), may_alias));
};

template <int W>
NNFUSE_INLINE typename FloatVec<W>::type load(const float* p) {
  return *reinterpret_cast<const typename FloatVec<W>::mem*>(p);
}
template <int W>
NNFUSE_INLINE void store(float* p, typename FloatVec<W>::type v) {
  *reinterpret_cast<typename FloatVec<W>::mem*>(p) = v;
}
// The first n (< W) lanes of p, zeros after.
template <int W>
NNFUSE_INLINE typename FloatVec<W>::type load_part(const float* p, int64_t n) {
  typename FloatVec<W>::type v{};
  std::memcpy(&v, p, static_cast<size_t>(n) * sizeof(float));
  return v;
}
// The first n (< W) lanes of v into p.
template <int W>
NNFUSE_INLINE void store_part(float* p, typename FloatVec<W>::type v, int64_t n) {
  std::memcpy(p, &v, static_cast<size_t>(n) * sizeof(float));
}

// keep ? a : b, lane by lane.
template <int W>
NNFUSE_INLINE typename FloatVec<W>::type select(typename FloatVec<W>::mask keep,
                                                typename FloatVec<W>::type a,
                                                typename FloatVec<W>::type b) {
  using I = typename FloatVec<W>::mask;
  using V = typename FloatVec<W>::type;
  return (V)(((I)a & keep) | ((I)b & ~keep));
}

// ReLU, LeakyReLU, Clip or the quantize round trip of v (v unchanged for any other
// activation), NaN passing through as the reference's comparisons let it (the round trip maps
// NaN to 0, as QuantizeLinear maps it to the zero point).
template <int W>
NNFUSE_INLINE typename FloatVec<W>::type activate(typename FloatVec<W>::type v,
                                                  const ref::Activation& a) {
  using V = typename FloatVec<W>::type;
  const V zero{};
  switch (a.kind) {
    case ref::ActivationKind::kRelu:
      return select<W>(v > zero, v, zero);
    case ref::ActivationKind::kLeakyRelu:
      return select<W>(v >= zero, v, a.alpha * v);
    case ref::ActivationKind::kClip: {
      const V lo = zero + a.alpha, hi = zero + a.beta;
      v = select<W>(v < lo, lo, v);
      return select<W>(v > hi, hi, v);
    }
    case ref::ActivationKind::kQuantize: {
      V q = v / (zero + a.alpha);
      for (int i = 0; i < W; ++i) q[i] = __builtin_rintf(q[i]);
      const V lo = zero + a.beta, hi = zero + (a.beta + 255.0f);
      q = select<W>(q < lo, lo, q);
      q = select<W>(q > hi, hi, q);
      return select<W>(q == q, q, zero) * a.alpha;
    }
    default:
      return v;
  }
}

// The activations of the form clamp(a x + b, lo, hi), multiplied by x where times_x: none,
// ReLU, Clip, HardSigmoid and HardSwish, which a kernel applies with the same few instructions
// whichever it is (no branch per output).
struct ClampForm {
  float a = 1.0f, b = 0.0f;
  float lo = -kInf, hi = kInf;
  bool times_x = false;
};

// The activation's clamp form, or false where it has none.
inline bool clamp_form(const ref::Activation& act, ClampForm* f) {
  *f = ClampForm{};
  switch (act.kind) {
    case ref::ActivationKind::kNone:
      return true;
    case ref::ActivationKind::kRelu:
      f->lo = 0.0f;
      return true;
    case ref::ActivationKind::kClip:
      f->lo = act.alpha;
      f->hi = act.beta;
      return true;
    case ref::ActivationKind::kHardSigmoid:
      *f = {act.alpha, act.beta, 0.0f, 1.0f, false};
      return true;
    case ref::ActivationKind::kHardSwish:
      *f = {1.0f / 6.0f, 0.5f, 0.0f, 1.0f, true};
      return true;
    default:
      return false;
  }
}

// clamp(a v + b, lo, hi) (times v where f.times_x is applied by the caller: see ClampForm), NaN
// passing through the clamp.
template <int W>
NNFUSE_INLINE typename FloatVec<W>::type clamp_of(typename FloatVec<W>::type v,
                                                  const ClampForm& f) {
  using V = typename FloatVec<W>::type;
  const V lo = V{} + f.lo, hi = V{} + f.hi;
  V t = f.a * v + f.b;
  t = t < lo ? lo : t;
  return t > hi ? hi : t;
}

}  // namespace nnfuse::cpu
