// Private to the MultiHeadAttention kernel (cpu_attention.cc, its loops in
// cpu_attention_loops.cc): the node's geometry, planned once, the arguments of a run, and the
// rotary embedding of one head's row, which the loops apply to Q's and K's blocks and the kernel
// to the new K rows it rotates once.
#pragma once

#include <cstdint>
#include <cstring>

#include "ir/tensor.h"
#include "kernels/cpu/cpu_math.h"

namespace nnfuse::cpu::attention {

constexpr int64_t kQBlock = 64;           // query rows per task
constexpr int64_t kKBlock = 64;           // keys per step (a multiple of every W)
constexpr int kRows = 4;                  // query rows per PV register tile
constexpr int kKeys = 4;                  // keys per QK^T register tile
constexpr int64_t kRotateOnceBlocks = 4;  // query blocks from which K is rotated once

// The node's geometry, planned once (cpu_attention.cc), and where a run reads K and V.
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

// Runs tasks [t0, t1) of (batch, head, query block), in that order.
using RangeFn = void (*)(const Args&, int64_t, int64_t);

// The loops for the widest ISA the CPU has; NNFUSE_ATTENTION_ISA=avx2|sse2 caps it (the tests
// run every path).
RangeFn pick_range();

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

}  // namespace nnfuse::cpu::attention
