// The loops of the MultiHeadAttention kernel (cpu_attention.cc): a task's flash-attention walk
// over the key blocks for a block of query rows. Q's block is scaled and transposed into the
// vector lanes (rotated first with rotary embeddings); S^T = K Q^T runs on register tiles of
// keys by query lanes; the mask, the causal limit and the online softmax run across the lanes;
// PV runs over D on tiles of query rows. Written once on GCC's vector extensions over W floats
// and compiled for AVX-512 (W = 16), AVX2 + FMA (8) and baseline SSE2 (4).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_attention_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu::attention {
namespace {

// Unaligned, aliasing vector types, as the intrinsics headers define __m512_u and friends.
template <int W>
struct VecOf;
template <>
struct VecOf<16> {
  typedef float type __attribute__((vector_size(64), aligned(4), may_alias));
};
template <>
struct VecOf<8> {
  typedef float type __attribute__((vector_size(32), aligned(4), may_alias));
};
template <>
struct VecOf<4> {
  typedef float type __attribute__((vector_size(16), aligned(4), may_alias));
};

// Vectors per register tile row: 16 accumulators with AVX-512's 32 registers, 8 otherwise.
template <int W>
constexpr int kMaxC = W == 16 ? 4 : 2;

// Per-thread scratch, in floats. Query rows are the lanes of qt and st.
struct Scratch {
  std::vector<float> buf;
  float* qt;     // [D, kQBlock]: the query block, scaled and transposed
  float* st;     // [kKBlock, kQBlock]: scores, then probabilities, of a key block
  float* acc;    // [kQBlock, Dp]: the output accumulator
  float* vb;     // [kKBlock, Dp]: V's block padded to Dp columns (when D % W != 0)
  float* m;      // [kQBlock] running max
  float* l;      // [kQBlock] running sum
  float* alpha;  // [kQBlock] this block's rescale factor
  float* mx;     // [kQBlock] this block's max
  float* qr;     // [kQBlock, D]: the query block rotated (rotary embeddings)
  float* kr;     // [kKBlock, D]: the key block rotated (unless K arrives rotated)

  // dp: D padded to whole vectors.
  Scratch(const Args& a, int64_t dp) {
    const int64_t d = a.p->head_size;
    const int64_t qd = a.cos ? d : 0, kd = a.cos && !a.k_rotated ? d : 0;
    const int64_t sizes[] = {d * kQBlock,  kKBlock * kQBlock, kQBlock * dp, kKBlock * dp,
                             kQBlock,      kQBlock,           kQBlock,      kQBlock,
                             kQBlock * qd, kKBlock * kd};
    float** slots[] = {&qt, &st, &acc, &vb, &m, &l, &alpha, &mx, &qr, &kr};
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    buf.assign(static_cast<size_t>(total), 0.0f);
    float* p = buf.data();
    for (size_t i = 0; i < 10; ++i) {
      *slots[i] = p;
      p += sizes[i];
    }
  }
};

// st[j][0, C*W) = sum_t k[j][t] * qt[t][0, C*W) for R keys j (rows `ks` apart in K).
template <int W, int R, int C>
NNFUSE_INLINE void qk_tile(const float* qt, const float* k, int64_t ks, float* st, int64_t d) {
  using V = typename VecOf<W>::type;
  V acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = V{};
  }
  for (int64_t t = 0; t < d; ++t) {
    V qv[C];
    for (int c = 0; c < C; ++c) qv[c] = *reinterpret_cast<const V*>(qt + t * kQBlock + c * W);
    for (int r = 0; r < R; ++r) {
      const float kv = k[r * ks + t];
      for (int c = 0; c < C; ++c) acc[r][c] += kv * qv[c];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) *reinterpret_cast<V*>(st + r * kQBlock + c * W) = acc[r][c];
  }
}

template <int W, int R>
NNFUSE_INLINE void qk_keys(const float* qt, const float* k, int64_t ks, float* st, int64_t d,
                           int64_t nqv) {
  for (int64_t c0 = 0; c0 < nqv; c0 += kMaxC<W>) {
    const int64_t cn = std::min<int64_t>(kMaxC<W>, nqv - c0), o = c0 * W;
    if (cn == kMaxC<W>) {
      qk_tile<W, R, kMaxC<W>>(qt + o, k, ks, st + o, d);
    } else if (cn == 1) {
      qk_tile<W, R, 1>(qt + o, k, ks, st + o, d);
    } else if (cn == 2) {
      qk_tile<W, R, 2>(qt + o, k, ks, st + o, d);
    } else {
      qk_tile<W, R, 3>(qt + o, k, ks, st + o, d);
    }
  }
}

// Scores of keys [j, j + R) for the lanes from the first vector any of them sees: key j is
// causally masked for lanes below first + j, so whole vectors below that are skipped (their
// scores are left as they are; the mask overwrites them).
template <int W, int R>
NNFUSE_INLINE void qk_group(const float* qt, const float* k, int64_t ks, float* st, int64_t d,
                            int64_t nqv, int64_t first, int64_t j) {
  const int64_t skip = std::clamp<int64_t>(first + j, 0, nqv * W) / W * W;
  if (skip == nqv * W) return;
  qk_keys<W, R>(qt + skip, k + j * ks, ks, st + j * kQBlock + skip, d, nqv - skip / W);
}

// Scores of keys [0, n) of the block (K rows `ks` apart) for the nqv * W query lanes; lanes
// below first + j need no score for key j.
template <int W>
NNFUSE_INLINE void qk_block(const float* qt, const float* k, int64_t ks, float* st, int64_t d,
                            int64_t n, int64_t nqv, int64_t first) {
  int64_t j = 0;
  for (; j + kKeys <= n; j += kKeys) qk_group<W, kKeys>(qt, k, ks, st, d, nqv, first, j);
  switch (n - j) {
    case 1:
      return qk_group<W, 1>(qt, k, ks, st, d, nqv, first, j);
    case 2:
      return qk_group<W, 2>(qt, k, ks, st, d, nqv, first, j);
    case 3:
      return qk_group<W, 3>(qt, k, ks, st, d, nqv, first, j);
    default:
      return;
  }
}

// acc[r][0, C*W) = acc[r] * alpha[r] + sum_{j < n} st[j][r] * v[j][0, C*W) for kRows query rows
// r (acc rows dp apart, V rows vs apart).
template <int W, int C>
NNFUSE_INLINE void pv_tile(const float* st, const float* v, int64_t vs, int64_t n, float* acc,
                           int64_t dp, const float* alpha) {
  using V = typename VecOf<W>::type;
  V a[kRows][C];
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < C; ++c) {
      a[r][c] = *reinterpret_cast<const V*>(acc + r * dp + c * W) * alpha[r];
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    V vv[C];
    for (int c = 0; c < C; ++c) vv[c] = *reinterpret_cast<const V*>(v + j * vs + c * W);
    for (int r = 0; r < kRows; ++r) {
      const float pr = st[j * kQBlock + r];
      for (int c = 0; c < C; ++c) a[r][c] += pr * vv[c];
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < C; ++c) *reinterpret_cast<V*>(acc + r * dp + c * W) = a[r][c];
  }
}

template <int W>
NNFUSE_INLINE void pv_rows(const float* st, const float* v, int64_t vs, int64_t n, float* acc,
                           int64_t dp, const float* alpha) {
  const int64_t nv = dp / W;
  for (int64_t c0 = 0; c0 < nv; c0 += kMaxC<W>) {
    const int64_t cn = std::min<int64_t>(kMaxC<W>, nv - c0), o = c0 * W;
    if (cn == kMaxC<W>) {
      pv_tile<W, kMaxC<W>>(st, v + o, vs, n, acc + o, dp, alpha);
    } else if (cn == 1) {
      pv_tile<W, 1>(st, v + o, vs, n, acc + o, dp, alpha);
    } else if (cn == 2) {
      pv_tile<W, 2>(st, v + o, vs, n, acc + o, dp, alpha);
    } else {
      pv_tile<W, 3>(st, v + o, vs, n, acc + o, dp, alpha);
    }
  }
}

// dst[t][r] = src[r][t] * scale for a W x W tile (src rows `ss` apart, dst rows kQBlock apart):
// log2(W) rounds swapping the off-diagonal halves of ever smaller blocks, in registers.
template <int W, typename Seq = std::make_integer_sequence<int, W>>
struct Transpose;
template <int W, int... K>
struct Transpose<W, std::integer_sequence<int, K...>> {
  using V = typename VecOf<W>::type;
  typedef int I __attribute__((vector_size(4 * W)));

  template <int S>
  NNFUSE_INLINE static void round(V* a) {
    for (int i = 0; i < W; ++i) {
      if (i & S) continue;
      const V x = a[i], y = a[i + S];
#if defined(__clang__)
      a[i] = __builtin_shufflevector(x, y, ((K & S) ? W + K - S : K)...);
      a[i + S] = __builtin_shufflevector(x, y, ((K & S) ? W + K : K + S)...);
#else
      a[i] = __builtin_shuffle(x, y, I{((K & S) ? W + K - S : K)...});
      a[i + S] = __builtin_shuffle(x, y, I{((K & S) ? W + K : K + S)...});
#endif
    }
  }

  NNFUSE_INLINE static void tile(const float* src, int64_t ss, float scale, float* dst) {
    V a[W];
    for (int i = 0; i < W; ++i) a[i] = *reinterpret_cast<const V*>(src + i * ss) * scale;
    if constexpr (W >= 16) round<8>(a);
    if constexpr (W >= 8) round<4>(a);
    round<2>(a);
    round<1>(a);
    for (int i = 0; i < W; ++i) *reinterpret_cast<V*>(dst + i * kQBlock) = a[i];
  }
};

template <int W>
NNFUSE_INLINE void transpose_tile(const float* src, int64_t ss, float scale, float* dst) {
  Transpose<W>::tile(src, ss, scale, dst);
}

// e^x for x <= 0 (a score minus the running max) or NaN, flushed to 0 below e^-87 (FLT_MIN):
// weights there are negligible next to the max's (1), and denormals would be slow. So 2^n is
// a normal float and one scaling does (exp_f splits it in two for the full range).
NNFUSE_INLINE float weight(float x) {
  const ExpParts e = exp_parts(x);
  const float y = (1.0f + e.q) * pow2_i(e.n);
  return x < -87.0f ? 0.0f : y;
}

// One task: batch b, head h, query rows [i0, i0 + rows) as lanes [0, rows) of the blocks.
template <int W>
NNFUSE_INLINE void attend(const Args& a, Scratch& s, int64_t b, int64_t h, int64_t i0,
                          int64_t rows) {
  const Problem& p = *a.p;
  const int64_t d = p.head_size, dp = (d + W - 1) / W * W;
  const int64_t hidden = p.heads * d, col = h * d, g = h / (p.heads / p.kv_heads);
  const int64_t nqv = (rows + W - 1) / W, lanes = nqv * W;   // rows padded to whole vectors
  const int64_t tiled = (rows + kRows - 1) / kRows * kRows;  // rows padded to whole PV tiles
  const int64_t off = p.sk - p.sq;  // causal: query i sees keys j <= i + off
  const float scale = p.scale;
  // Q block (rotated first), scaled, transposed (W x W tiles in registers, then the edges);
  // padding lanes zero.
  const float* qb = a.q + (b * p.sq + i0) * p.q_stride + col;
  int64_t qs = p.q_stride;
  if (a.cos) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = (i0 + r) * p.rotary;  // position i0 + r
      rotate_head(p, qb + r * qs, s.qr + r * d, a.cos + at, a.sin + at);
    }
    qb = s.qr;
    qs = d;
  }
  const int64_t rw = rows / W * W, dw = d / W * W;
  for (int64_t r0 = 0; r0 < rw; r0 += W) {
    for (int64_t t0 = 0; t0 < dw; t0 += W) {
      transpose_tile<W>(qb + r0 * qs + t0, qs, scale, s.qt + t0 * kQBlock + r0);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = qb + r * qs;
    for (int64_t t = r < rw ? dw : 0; t < d; ++t) s.qt[t * kQBlock + r] = src[t] * scale;
  }
  for (int64_t t = 0; rows < lanes && t < d; ++t) {
    std::fill(s.qt + t * kQBlock + rows, s.qt + t * kQBlock + lanes, 0.0f);
  }
  std::fill(s.acc, s.acc + tiled * dp, 0.0f);
  std::fill(s.m, s.m + lanes, -kInf);
  std::fill(s.l, s.l + lanes, 0.0f);
  const float* mbase = a.mask ? a.mask + b * p.ms_b + h * p.ms_h + i0 * p.ms_q : nullptr;
  const int64_t kend = p.causal ? std::min(p.sk, i0 + rows + off) : p.sk;
  const bool copy_v = d % W != 0;
  float* const m = s.m;
  float* const l = s.l;
  float* const alpha = s.alpha;
  float* const mx = s.mx;
  for (int64_t k0 = 0; k0 < kend; k0 += kKBlock) {
    const int64_t n = std::min(kKBlock, kend - k0);
    const float* kb = a.k + b * p.kb + g * p.kh + k0 * p.kr + p.k_col;
    int64_t ks = p.kr;
    if (a.cos && !a.k_rotated) {  // keys j at positions k0 + j (no past without a cache)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = (k0 + j) * p.rotary;
        rotate_head(p, kb + j * ks, s.kr + j * d, a.cos + at, a.sin + at);
      }
      kb = s.kr;
      ks = d;
    }
    // Lanes r < k0 + j - off - i0 cannot see key j (causal).
    qk_block<W>(s.qt, kb, ks, s.st, d, n, nqv, p.causal ? k0 - off - i0 : -kKBlock);
    // Mask, causal limit and padding lanes; the block's max per lane.
    std::fill(mx, mx + lanes, -kInf);
    for (int64_t j = 0; j < n; ++j) {
      float* x = s.st + j * kQBlock;
      const int64_t jg = k0 + j;
      if (mbase && p.ms_q == 0) {
        const float add = mbase[jg * p.ms_k];
#pragma omp simd
        for (int64_t r = 0; r < rows; ++r) x[r] += add;
      } else if (mbase) {
        const float* mj = mbase + jg * p.ms_k;
        const int64_t mq = p.ms_q;
        for (int64_t r = 0; r < rows; ++r) x[r] += mj[r * mq];
      }
      // Lanes r < first (causal) and r >= rows (padding) are masked.
      const int64_t first = p.causal ? jg - off - i0 : 0;
#pragma omp simd
      for (int64_t r = 0; r < lanes; ++r) {
        const float v = r >= first && r < rows ? x[r] : -kInf;
        x[r] = v;
        mx[r] = v > mx[r] ? v : mx[r];
      }
    }
    // Online softmax: while every key so far is masked, m stays -inf and the shift is 0, so
    // e^-inf = 0 rather than e^(-inf - -inf) = NaN. A NaN score reaches l and the output.
#pragma omp simd
    for (int64_t r = 0; r < lanes; ++r) {
      const float m_new = mx[r] > m[r] ? mx[r] : m[r];
      const float shift = m_new == -kInf ? 0.0f : m_new;
      alpha[r] = weight(m[r] - shift);
      l[r] *= alpha[r];
      m[r] = m_new;
      mx[r] = shift;
    }
    for (int64_t j = 0; j < n; ++j) {
      float* x = s.st + j * kQBlock;
#pragma omp simd
      for (int64_t r = 0; r < lanes; ++r) {
        const float e = weight(x[r] - mx[r]);
        x[r] = e;
        l[r] += e;
      }
    }
    const float* vb = a.v + b * p.vb + g * p.vh + k0 * p.vr + p.v_col;
    int64_t vs = p.vr;
    if (copy_v) {
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(s.vb + j * dp, vb + j * p.vr, static_cast<size_t>(d) * sizeof(float));
        std::fill(s.vb + j * dp + d, s.vb + (j + 1) * dp, 0.0f);
      }
      vb = s.vb;
      vs = dp;
    }
    for (int64_t r0 = 0; r0 < tiled; r0 += kRows) {
      // Rows r0 .. r0 + kRows - 1 see keys j < i0 + r0 + kRows + off - k0 (causal); the
      // others' weights are 0.
      const int64_t seen = p.causal ? std::clamp<int64_t>(i0 + r0 + kRows + off - k0, 0, n) : n;
      pv_rows<W>(s.st + r0, vb, vs, seen, s.acc + r0 * dp, dp, alpha + r0);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* o = a.out + (b * p.sq + i0 + r) * hidden + col;
    if (m[r] == -kInf) {  // every key masked: NaN, as Softmax over all -inf
      std::fill(o, o + d, kNaN);
      continue;
    }
    const float* acc = s.acc + r * dp;
    const float inv = 1.0f / l[r];
#pragma omp simd
    for (int64_t t = 0; t < d; ++t) o[t] = acc[t] * inv;
  }
}

// Tasks [t0, t1) of (batch, head, query block), in that order.
template <int W>
NNFUSE_INLINE void attend_range(const Args& a, int64_t t0, int64_t t1) {
  const Problem& p = *a.p;
  const int64_t dp = (p.head_size + W - 1) / W * W;
  Scratch s(a, dp);
  const int64_t qblocks = (p.sq + kQBlock - 1) / kQBlock;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t qb = t % qblocks, bh = t / qblocks;
    const int64_t i0 = qb * kQBlock;
    attend<W>(a, s, bh / p.heads, bh % p.heads, i0, std::min(kQBlock, p.sq - i0));
  }
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx2,fma"))) void range_avx512(const Args& a, int64_t t0,
                                                              int64_t t1) {
  attend_range<16>(a, t0, t1);
}
__attribute__((target("avx2,fma"))) void range_avx2(const Args& a, int64_t t0, int64_t t1) {
  attend_range<8>(a, t0, t1);
}
#endif
void range_base(const Args& a, int64_t t0, int64_t t1) { attend_range<4>(a, t0, t1); }

}  // namespace

RangeFn pick_range() {
#if defined(__x86_64__)
  switch (cpu::vector_width("NNFUSE_ATTENTION_ISA")) {
    case 16:
      return range_avx512;
    case 8:
      return range_avx2;
    default:
      break;
  }
#endif
  return range_base;
}

}  // namespace nnfuse::cpu::attention
