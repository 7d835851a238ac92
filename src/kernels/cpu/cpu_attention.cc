// MultiHeadAttention (domain ai.nnfuse, float32, plain, static shapes): the op's contract is in
// kernels/ref/attention.cc. Flash-attention style: one task per (batch, head, block of kQBlock
// query rows), parallel over the runtime's threads; it walks the keys in blocks of kKBlock with
// an online softmax (running max m and sum l per query row, the accumulator rescaled by
// e^(m_old - m_new) when the max grows), so the Sq x Sk score matrix is never made: per thread,
// scratch is O(kQBlock * (D + kKBlock)).
//
// The query rows are the vector lanes: the block of Q is scaled and transposed once per task
// into qt [D, kQBlock], so S^T = K Q^T runs with a register tile of kKeys keys (read in place,
// broadcast) by up to 64 query lanes; the mask, the causal limit and the online softmax then run
// across lanes with no horizontal reductions; and PV runs over D with a tile of kRows query rows,
// reading V's rows in place (a zero-padded copy when D is not a multiple of the vector width).
// Key blocks past every row's causal limit are skipped. Grouped-query attention reads each K/V
// head for its group of query heads in place. Rotary embeddings are applied by each task: to
// its block of Q as it transposes it, and to each block of K as it reads it (again for every
// task that reads that block), into the task's own scratch, so no rotated copy is written to
// memory and read back by another thread. From 4 query blocks on, K is rotated once before
// the tasks instead: each block is read by every later query block (rotates_k_once). With a
// KV cache the new K rows are rotated once, the past is copied once into the present outputs
// and the new rows after it; attention then reads K and V there, head by head.
//
// The loops are written once with GCC vector extensions over a vector of W floats and compiled
// for AVX-512 (W = 16), AVX2 + FMA (8) and baseline SSE2 (4), picked when the kernel is made.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse::cpu {
namespace {

constexpr int64_t kQBlock = 64;           // query rows per task
constexpr int64_t kKBlock = 64;           // keys per step (a multiple of every W)
constexpr int kRows = 4;                  // query rows per PV register tile
constexpr int kKeys = 4;                  // keys per QK^T register tile
constexpr int64_t kRotateOnceBlocks = 4;  // query blocks from which K is rotated once

// ---- Geometry (plan time)

struct Problem {
  int64_t batch = 0, sq = 0, sk = 0, heads = 0, kv_heads = 0, head_size = 0;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;  // row strides of Q's, K's and V's tensors
  int64_t k_col = 0, v_col = 0;                      // first column of K and V in their tensors
  int64_t rotary = 0;                                // R of the cos and sin [Sq, R]; 0: none
  int64_t past = 0;                                  // P of past_key, past_value [B, G, P, D]
  // Where attention reads K and V: row j of head g of batch b at b * kb + g * kh + j * kr
  // (+ k_col); likewise V. Set per run.
  int64_t kb = 0, kh = 0, kr = 0, vb = 0, vh = 0, vr = 0;
  float scale = 1.0f;
  bool packed = false, causal = false, interleaved = false, cached = false;
  Dims past_shape;
  Dims q_shape, kv_shape, mask_shape;  // kv_shape empty when packed, mask_shape when no mask
  int64_t ms_b = 0, ms_h = 0, ms_q = 0, ms_k = 0;  // mask strides (0 on broadcast dims)
};

// The node's geometry when this kernel can run it (attributes valid, static shapes that fit);
// else nullopt, and the reference kernel runs (and reports) it.
std::optional<Problem> plan(const NodeInfo& info) {
  const Node& node = info.node;
  Problem p;
  try {
    p.heads = node.attr_int("num_heads", 0);
    p.kv_heads = node.attr_int("kv_num_heads", p.heads);
    const int64_t packed = node.attr_int("qkv_packed", 0), causal = node.attr_int("causal", 0);
    const int64_t il = node.attr_int("rotary_interleaved", 0);
    if (p.heads < 1 || (packed != 0 && packed != 1) || (causal != 0 && causal != 1)) return {};
    if (p.kv_heads < 1 || p.heads % p.kv_heads != 0 || (il != 0 && il != 1)) return {};
    p.packed = packed == 1;
    p.causal = causal == 1;
    p.interleaved = il == 1;
    node.attr_float("scale", 1.0f);
  } catch (const Error&) {
    return {};
  }
  const std::optional<Dims> q = info.input_shape(0);
  if (!q || q->size() != 3) return {};
  p.q_shape = *q;
  p.batch = (*q)[0];
  p.sq = (*q)[1];
  int64_t hidden = (*q)[2];
  if (p.packed) {
    const int64_t parts = p.heads + 2 * p.kv_heads;
    if (info.has_input(1) || info.has_input(2) || hidden % parts != 0) return {};
    p.head_size = hidden / parts;
    hidden = p.heads * p.head_size;
    p.sk = p.sq;
    p.q_stride = p.k_stride = p.v_stride = parts * p.head_size;
    p.k_col = hidden;
    p.v_col = hidden + p.kv_heads * p.head_size;
  } else {
    if (hidden % p.heads != 0) return {};
    p.head_size = hidden / p.heads;
    const std::optional<Dims> k = info.input_shape(1), v = info.input_shape(2);
    if (!k || !v || *k != *v || k->size() != 3 || (*k)[0] != p.batch ||
        (*k)[2] != p.kv_heads * p.head_size) {
      return {};
    }
    p.kv_shape = *k;
    p.sk = (*k)[1];
    p.q_stride = hidden;
    p.k_stride = p.v_stride = p.kv_heads * p.head_size;
  }
  if (info.has_input(4) != info.has_input(5)) return {};
  if (info.has_input(4)) {
    const std::optional<Dims> c = info.input_shape(4), sn = info.input_shape(5);
    if (!c || !sn || *c != *sn || c->size() != 2 || (*c)[0] != p.sq || (*c)[1] % 2 != 0 ||
        (*c)[1] > p.head_size || (*c)[1] < 2 || p.sk != p.sq) {
      return {};
    }
    p.rotary = (*c)[1];
  }
  if (info.has_input(6) != info.has_input(7) || node.num_outputs() > (info.has_input(6) ? 3 : 1)) {
    return {};
  }
  if (info.has_input(6)) {
    const std::optional<Dims> pk = info.input_shape(6), pv = info.input_shape(7);
    if (!pk || !pv || *pk != *pv || pk->size() != 4 || (*pk)[0] != p.batch ||
        (*pk)[1] != p.kv_heads || (*pk)[3] != p.head_size) {
      return {};
    }
    p.past = (*pk)[2];
    p.past_shape = *pk;
    p.cached = true;
    const Dims present = {p.batch, p.kv_heads, p.past + p.sk, p.head_size};
    for (size_t o = 1; o < node.num_outputs(); ++o) {
      if (std::optional<Dims> d = info.output_shape(o); d && *d != present) return {};
    }
    p.sk += p.past;
  }
  p.scale = node.has_attr("scale") ? node.attr_float("scale", 1.0f)
            : p.head_size > 0
                ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.head_size)))
                : 1.0f;
  if (info.has_input(3)) {
    const std::optional<Dims> m = info.input_shape(3);
    if (!m || m->size() > 4) return {};
    const Dims full = {p.batch, p.heads, p.sq, p.sk};
    Dims m4(4 - m->size(), 1);
    m4.insert(m4.end(), m->begin(), m->end());
    for (size_t i = 0; i < 4; ++i) {
      if (m4[i] != 1 && m4[i] != full[i]) return {};
    }
    p.mask_shape = *m;
    const Dims st = contiguous_strides(m4);
    p.ms_b = m4[0] == 1 ? 0 : st[0];
    p.ms_h = m4[1] == 1 ? 0 : st[1];
    p.ms_q = m4[2] == 1 ? 0 : st[2];
    p.ms_k = m4[3] == 1 ? 0 : st[3];
  }
  const Dims out = {p.batch, p.sq, hidden};
  if (std::optional<Dims> o = info.output_shape(0); o && *o != out) return {};
  return p;
}

// ---- Loops

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

// Run-time arguments of one kernel run. With rotary embeddings (cos and sin set), each task
// rotates its block of Q; it rotates K's blocks as it reads them unless `k_rotated` (a KV
// cache's present K, rotated once as it is written).
struct Args {
  const Problem* p;
  const float *q, *k, *v, *mask;
  float* out;
  const float *cos = nullptr, *sin = nullptr;
  bool k_rotated = false;
};

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

// Rotary embeddings (the contract: kernels/ref/attention.cc) of one head's row x into y, at the
// position whose cos and sin rows are c and sn.
NNFUSE_INLINE void rotate_head(const Problem& p, const float* x, float* y, const float* c,
                               const float* sn) {
  const int64_t d = p.head_size, r = p.rotary, half = r / 2;
  if (p.interleaved) {
    for (int64_t t = 0; t < r; t += 2) {
      y[t] = x[t] * c[t] - x[t + 1] * sn[t];
      y[t + 1] = x[t + 1] * c[t + 1] + x[t] * sn[t + 1];
    }
  } else {
#pragma omp simd
    for (int64_t t = 0; t < half; ++t) y[t] = x[t] * c[t] - x[t + half] * sn[t];
#pragma omp simd
    for (int64_t t = half; t < r; ++t) y[t] = x[t] * c[t] + x[t - half] * sn[t];
  }
  std::memcpy(y + r, x + r, static_cast<size_t>(d - r) * sizeof(float));
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

using RangeFn = void (*)(const Args&, int64_t, int64_t);

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

// The widest ISA the CPU has; NNFUSE_ATTENTION_ISA=avx2|sse2 caps it (the tests run every path).
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

// Rotary embeddings of the `heads` heads of rows [r0, r1) of x (row stride xs, from column
// col) into y (row stride ys): row r of a batch entry is position r % sq.
void rotate_rows(const Problem& p, const float* x, int64_t xs, int64_t col, int64_t heads, float* y,
                 int64_t ys, const float* cos, const float* sin, int64_t r0, int64_t r1) {
  const int64_t d = p.head_size;
  for (int64_t row = r0; row < r1; ++row) {
    const float* c = cos + (row % p.sq) * p.rotary;
    const float* sn = sin + (row % p.sq) * p.rotary;
    for (int64_t h = 0; h < heads; ++h) {
      rotate_head(p, x + row * xs + col + h * d, y + row * ys + h * d, c, sn);
    }
  }
}

// ---- The kernel

class AttentionKernel : public Kernel {
 public:
  AttentionKernel(const NodeInfo& info, const Problem& p)
      : who_(info.node.describe()), p_(p), range_(pick_range()) {
    // Working memory: the new rows of K rotated (with a KV cache, before they are copied into
    // the present K), and the present K and V the node does not output.
    if (rotates_k_once(p)) rotated_k_ = p.batch * p.sq * p.kv_heads * p.head_size;
    if (p.cached) {
      own_presents_ = 3 - static_cast<int64_t>(std::min<size_t>(info.node.num_outputs(), 3));
      present_ = p.batch * p.kv_heads * p.sk * p.head_size;
    }
  }

  size_t scratch_bytes() const override {
    return (static_cast<size_t>(scratch_floats()) * sizeof(float) + 63) / 64 * 64;
  }

  void run(KernelIO& io) override {
    check(io, 0, p_.q_shape);
    if (!p_.packed) {
      check(io, 1, p_.kv_shape);
      check(io, 2, p_.kv_shape);
    }
    if (!p_.mask_shape.empty() || io.has_input(3)) check(io, 3, p_.mask_shape);
    if (p_.rotary > 0) {
      check(io, 4, {p_.sq, p_.rotary});
      check(io, 5, {p_.sq, p_.rotary});
    }
    Tensor& y = io.output(0, DType::kFloat32, {p_.batch, p_.sq, p_.heads * p_.head_size});
    float* out = y.data<float>();
    if (y.numel() == 0 && !p_.cached) return;
    if (p_.sk == 0) {  // no keys: the products over an empty axis are 0
      std::fill(out, out + y.numel(), 0.0f);
      return;
    }
    const float* q = io.in(0).data<float>();
    const float* k = p_.packed ? q : io.in(1).data<float>();
    Problem p = p_;
    std::vector<float> own_scratch;  // when the plan gives no scratch region
    float* scratch = reinterpret_cast<float*>(io.scratch);
    if (!scratch && scratch_floats() > 0) {
      own_scratch.resize(static_cast<size_t>(scratch_floats()));
      scratch = own_scratch.data();
    }
    const float* cos = p.rotary > 0 ? io.in(4).data<float>() : nullptr;
    const float* sin = p.rotary > 0 ? io.in(5).data<float>() : nullptr;
    const bool k_rotated = rotates_k_once(p);
    if (k_rotated) {
      // The new K rows [B, S, G*D] rotated once: for the present K, or for the many tasks
      // that read each block of a long prompt. Else each task rotates the blocks of Q and K it
      // reads, in its own cache.
      const int64_t kd = p.kv_heads * p.head_size;
      float* rk = scratch;
      parallel_range(p.batch * p.sq, std::max<int64_t>(1, kParallelGrain / kd),
                     [&](int64_t r0, int64_t r1) {
                       rotate_rows(p, k, p.k_stride, p.k_col, p.kv_heads, rk, kd, cos, sin, r0, r1);
                     });
      k = rk;
      p.k_stride = kd;
      p.k_col = 0;
    }
    const float* v = p_.packed ? io.in(0).data<float>() : io.in(2).data<float>();
    const int64_t d = p.head_size, fresh = p.sk - p.past;
    p.kb = fresh * p.k_stride, p.kh = d, p.kr = p.k_stride;
    p.vb = fresh * p.v_stride, p.vh = d, p.vr = p.v_stride;
    if (p.cached) {
      // The present K and V [B, G, P + S, D] (outputs 1 and 2, else buffers of the run's own):
      // each head's past rows in one copy, then its new rows; attention reads them there.
      const Dims present = {p.batch, p.kv_heads, p.sk, d};
      float* dst[2];
      float* own = scratch + rotated_k_;
      for (size_t c = 0; c < 2; ++c) {
        check(io, 6 + c, p_.past_shape);
        if (io.outputs.size() > 1 + c) {
          dst[c] = io.output(1 + c, DType::kFloat32, present).data<float>();
        } else {
          dst[c] = own;
          own += present_;
        }
      }
      const float* src[2] = {k + p.k_col, v + p.v_col};
      const int64_t strides[2] = {p.k_stride, p.v_stride};
      const float* past[2] = {io.in(6).data<float>(), io.in(7).data<float>()};
      const int64_t heads = p.batch * p.kv_heads;
      parallel_range(2 * heads, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t c = t / heads, bg = t % heads, b = bg / p.kv_heads, g = bg % p.kv_heads;
          float* to = dst[c] + bg * p.sk * d;
          std::memcpy(to, past[c] + bg * p.past * d,
                      static_cast<size_t>(p.past * d) * sizeof(float));
          for (int64_t j = 0; j < fresh; ++j) {
            std::memcpy(to + (p.past + j) * d, src[c] + (b * fresh + j) * strides[c] + g * d,
                        static_cast<size_t>(d) * sizeof(float));
          }
        }
      });
      k = dst[0];
      v = dst[1];
      p.k_col = p.v_col = 0;
      p.kb = p.vb = p.kv_heads * p.sk * d;
      p.kh = p.vh = p.sk * d;
      p.kr = p.vr = d;
    }
    const Args a{&p,  q,   k,   v,        io.has_input(3) ? io.in(3).data<float>() : nullptr,
                 out, cos, sin, k_rotated};
    const int64_t tasks = p_.batch * p_.heads * ((p_.sq + kQBlock - 1) / kQBlock);
    const int64_t work = p_.batch * p_.heads * p_.sq * p_.sk * p_.head_size;
    const RangeFn range = range_;
    parallel_blocks(tasks, work, [&](int64_t t0, int64_t t1) { range(a, t0, t1); });
  }

 private:
  void check(const KernelIO& io, size_t i, const Dims& want) const {
    if (!io.has_input(i)) fail(ErrorKind::kRuntime, who_, ": input ", i, " is missing");
    const Tensor& t = io.in(i);
    require_float(t, who_);
    if (t.shape() != want || t.layout() != Layout::kPlain) {
      fail(ErrorKind::kRuntime, who_, ": input ", i, " has shape ", dims_str(t.shape()),
           ", planned for ", dims_str(want));
    }
  }

  // Whether K is rotated once before the tasks run rather than by each task as it reads it:
  // with a KV cache (the present K holds it rotated), and for prompts of many query blocks,
  // where each K block is read by every later query block of the heads of its group.
  // (LLaMA-style prefill, 8 heads of 64 over 2 KV heads, 2 threads, per attention, rotating in
  // the tasks against rotating once: at 128 tokens, 2 blocks, 0.136 against 0.184 ms; at 256, 4
  // blocks, 0.63 against 0.56 ms; at 512, 8 blocks, 1.97 against 1.76 ms.)
  static bool rotates_k_once(const Problem& p) {
    return p.rotary > 0 && (p.cached || (p.sq + kQBlock - 1) / kQBlock >= kRotateOnceBlocks);
  }

  int64_t scratch_floats() const { return rotated_k_ + own_presents_ * present_; }

  std::string who_;
  Problem p_;
  RangeFn range_;
  int64_t rotated_k_ = 0;                   // floats of the rotated new K rows
  int64_t own_presents_ = 0, present_ = 0;  // present K/V not output, and floats of each
};

// Why the kernel declines a MultiHeadAttention, "" when it runs it.
std::string attention_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (n.domain() != kFusedDomain || n.num_inputs() > 8 || n.num_outputs() > 3 || !n.output(0)) {
    return "not an ai.nnfuse MultiHeadAttention of at most 8 inputs and 3 outputs";
  }
  if (std::string r = float_inputs_problem(info); !r.empty()) return r;
  if (!info.all_inputs_in(Layout::kPlain)) return "an input is not plain";
  if (plan(info)) return "";
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && !info.input_shape(i)) return not_static_f32(info, i);
  }
  return "heads, Q/K/V, mask, cos/sin or output shapes it does not run";
}

std::unique_ptr<Kernel> attention_create(const NodeInfo& info) {
  std::optional<Problem> p = plan(info);
  if (!p) fail(ErrorKind::kInternal, info.node.describe(), ": cpu.attention cannot run it");
  return std::make_unique<AttentionKernel>(info, *p);
}

}  // namespace

void append_attention_kernels(FactoryTable& t) {
  t.emplace_back("MultiHeadAttention",
                 KernelFactory{"cpu.attention", accepts_unless_declined<attention_declines>,
                               nullptr, attention_create, nullptr, attention_declines});
}

}  // namespace nnfuse::cpu
