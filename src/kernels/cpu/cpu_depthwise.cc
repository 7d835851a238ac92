#include "kernels/cpu/cpu_depthwise.h"

#include <omp.h>

#include <algorithm>

#include "ir/error.h"
#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/cpu_vec.h"

namespace nnfuse::cpu {
namespace {

// Channels the threads split by, where they split the channels.
constexpr int64_t kSplitLanes = 16;
// Below this many multiply-adds a run stays on one thread.
constexpr int64_t kParallelWork = int64_t{1} << 15;

// What every block reads.
struct Plan {
  const DepthwiseGeometry* g;
  int64_t c_pad;
  const float* wt;    // [c_pad / 16][k * k][16]
  const float* bias;  // [c_pad]
  ref::Activation act;
  bool in_registers;  // act has a clamp form (form), applied as the outputs are written
  ClampForm form;
};

// Output pixels [ow0, ow0 + P) of output row oy of one image (x and y at its first pixel),
// channels [c, c + W) (the first n of them where kPart): each input row's P - 1 + K
// columns loaded once, zeros for those outside the image where kEdge.
template <int W, int K, int P, bool kEdge, bool kPart>
NNFUSE_INLINE void block(const Plan& p, const float* x, float* y, int64_t oy, int64_t ow0,
                         int64_t c, int64_t n) {
  using V = typename FloatVec<W>::type;
  constexpr int kIn = P - 1 + K;
  const DepthwiseGeometry& g = *p.g;
  const V bias = load<W>(p.bias + c);
  // The taps of channels [c, c + W): 16 floats apart, in the block of c's vector of 16.
  const float* wc = p.wt + c / kSplitLanes * K * K * kSplitLanes + c % kSplitLanes;
  V acc[P];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) acc[j] = bias;
  const int64_t ix0 = ow0 - g.pad_l;
#pragma GCC unroll 5
  for (int ky = 0; ky < K; ++ky) {
    const int64_t iy = oy - g.pad_t + ky;
    if (iy < 0 || iy >= g.h) continue;
    const float* row = x + iy * g.w * g.c + c;
    V in[kIn];
#pragma GCC unroll 20
    for (int i = 0; i < kIn; ++i) {
      const int64_t ix = ix0 + i;
      if (kEdge && (ix < 0 || ix >= g.w)) {
        in[i] = V{};
      } else {
        in[i] = kPart ? load_part<W>(row + ix * g.c, n) : load<W>(row + ix * g.c);
      }
    }
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) {
      const V wv = load<W>(wc + (ky * K + kx) * kSplitLanes);
#pragma GCC unroll 8
      for (int j = 0; j < P; ++j) acc[j] += in[j + kx] * wv;
    }
  }
  const ClampForm f = p.form;
  if (f.times_x) {
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) acc[j] = acc[j] * clamp_of<W>(acc[j], f);
  } else {
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) acc[j] = clamp_of<W>(acc[j], f);
  }
  float* out = y + (oy * g.ow + ow0) * g.c + c;
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) {
    if (kPart) {
      store_part<W>(out + j * g.c, acc[j], n);
    } else {
      store<W>(out + j * g.c, acc[j]);
    }
  }
}

// Output pixels [ow0, ow0 + P) of row oy, channels [c0, c1): vectors of W, one of 8 where W
// is 16 and 8 or more are left, then the rest (fewer than 8, or than W) as a partial vector.
// All the channels of a block before the next block: the block's input pixels are read whole,
// in the order they lie in memory (a vector of channels at a time across a row of pixels, the
// lines of the next vector fetched later, missed the hardware's prefetch: 1.2-1.4x oneDNN's
// time with the input in memory, where it took 0.5-0.7x with the input in cache).
template <int W, int K, int P, bool kEdge>
NNFUSE_INLINE void block_channels(const Plan& p, const float* x, float* y, int64_t oy, int64_t ow0,
                                  int64_t c0, int64_t c1) {
  int64_t c = c0;
  for (; c + W <= c1; c += W) block<W, K, P, kEdge, false>(p, x, y, oy, ow0, c, W);
  if constexpr (W > 8) {
    if (c + 8 <= c1) {
      block<8, K, P, kEdge, false>(p, x, y, oy, ow0, c, 8);
      c += 8;
    }
  }
  constexpr int kTail = W > 8 ? 8 : W;
  if (c < c1) block<kTail, K, P, kEdge, true>(p, x, y, oy, ow0, c, c1 - c);
}

// True when a block of P outputs from ow0 reads a column outside the image.
template <int K, int P>
NNFUSE_INLINE bool reaches_edge(const DepthwiseGeometry& g, int64_t ow0) {
  const int64_t first = ow0 - g.pad_l;
  return first < 0 || first + P - 1 + K > g.w;
}

// Output row oy, channels [c0, c1), in blocks of P pixels, the last one ending at the row's end
// (it may recompute a few of the previous block's pixels). kInterior: blocks inside the image
// read it without a test (else every block tests its columns: rows narrower than 8 pixels).
template <int W, int K, int P, bool kInterior>
NNFUSE_INLINE void blocks(const Plan& p, const float* x, float* y, int64_t oy, int64_t c0,
                          int64_t c1) {
  const int64_t ow = p.g->ow;
  for (int64_t o = 0;; o += P) {
    if (o + P > ow) o = ow - P;
    if (kInterior && !reaches_edge<K, P>(*p.g, o)) {
      block_channels<W, K, P, false>(p, x, y, oy, o, c0, c1);
    } else {
      block_channels<W, K, P, true>(p, x, y, oy, o, c0, c1);
    }
    if (o + P == ow) break;
  }
}

// Output row oy, channels [c0, c1): blocks of P (8 or 4) pixels; in a row narrower than P, of 7
// where it has 7 (a 7x7 map's), else of 4 or 1.
template <int W, int K, int P>
NNFUSE_INLINE void row(const Plan& p, const float* x, float* y, int64_t oy, int64_t c0,
                       int64_t c1) {
  const int64_t ow = p.g->ow;
  if (ow >= P) {
    blocks<W, K, P, true>(p, x, y, oy, c0, c1);
    return;
  }
  if constexpr (P == 8) {
    if (ow == 7) {
      block_channels<W, K, 7, true>(p, x, y, oy, 0, c0, c1);
      return;
    }
    if (ow >= 4) {
      blocks<W, K, 4, false>(p, x, y, oy, c0, c1);
      return;
    }
  }
  blocks<W, K, 1, false>(p, x, y, oy, c0, c1);
}

// Rows [r0, r1) of all images' output rows, channels [c0, c1).
template <int W, int K>
NNFUSE_INLINE void rows_ks(const Plan& p, const float* x, float* y, int64_t r0, int64_t r1,
                           int64_t c0, int64_t c1) {
  // 8 accumulators and up to 12 input vectors of AVX-512's 32 registers; 4 and 8 of AVX2's 16.
  constexpr int P = W == 16 ? 8 : 4;
  const DepthwiseGeometry& g = *p.g;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t img = r / g.oh, oy = r % g.oh;
    const float* xi = x + img * g.h * g.w * g.c;
    float* yi = y + img * g.oh * g.ow * g.c;
    row<W, K, P>(p, xi, yi, oy, c0, c1);
    if (p.in_registers) continue;
    float* out = yi + oy * g.ow * g.c;
    if (c0 == 0 && c1 == g.c) {
      activation_row(p.act, out, g.ow * g.c);
      continue;
    }
    for (int64_t o = 0; o < g.ow; ++o) activation_row(p.act, out + o * g.c + c0, c1 - c0);
  }
}

template <int W>
NNFUSE_INLINE void run_rows(const Plan& p, const float* x, float* y, int64_t r0, int64_t r1,
                            int64_t c0, int64_t c1) {
  const DepthwiseGeometry& g = *p.g;
  if (g.k == 3) rows_ks<W, 3>(p, x, y, r0, r1, c0, c1);
  if (g.k == 5) rows_ks<W, 5>(p, x, y, r0, r1, c0, c1);
}

using RowsFn = void (*)(const Plan&, const float*, float*, int64_t, int64_t, int64_t, int64_t);

#if defined(__x86_64__)
__attribute__((target("avx512f,avx2,fma"))) void rows_avx512(const Plan& p, const float* x,
                                                             float* y, int64_t r0, int64_t r1,
                                                             int64_t c0, int64_t c1) {
  run_rows<16>(p, x, y, r0, r1, c0, c1);
}
__attribute__((target("avx2,fma"))) void rows_avx2(const Plan& p, const float* x, float* y,
                                                   int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  run_rows<8>(p, x, y, r0, r1, c0, c1);
}
#endif
void rows_base(const Plan& p, const float* x, float* y, int64_t r0, int64_t r1, int64_t c0,
               int64_t c1) {
  run_rows<4>(p, x, y, r0, r1, c0, c1);
}

RowsFn rows_for(int width) {
#if defined(__x86_64__)
  if (width == 16) return rows_avx512;
  if (width == 8) return rows_avx2;
#endif
  return rows_base;
}

}  // namespace

std::string depthwise_declines(const DepthwiseGeometry& g) {
  if (g.k != 3 && g.k != 5)
    return "a " + std::to_string(g.k) + "x" + std::to_string(g.k) + " kernel (3x3 and 5x5 run)";
  if (g.stride != 1) {
    return "stride " + std::to_string(g.stride) +
           " (strided, it reads twice the inputs per output, and with them in memory took 1.2-1.7x "
           "oneDNN's time)";
  }
  if (g.n < 1 || g.c < 1 || g.h < 1 || g.w < 1 || g.oh < 1 || g.ow < 1) return "an empty dimension";
  if (g.pad_t < 0 || g.pad_l < 0 || g.pad_t >= g.k || g.pad_l >= g.k) {
    return "pads outside [0, k)";
  }
  // Trailing pads: the last output's window may end at most k - 1 past the input.
  if ((g.oh - 1) * g.stride + g.k - g.pad_t > g.h + g.k - 1 ||
      (g.ow - 1) * g.stride + g.k - g.pad_l > g.w + g.k - 1) {
    return "trailing pads of k or more";
  }
  return "";
}

DepthwiseConv::DepthwiseConv(const DepthwiseGeometry& g, const float* weights, const float* bias,
                             ref::Activation act, int threads)
    : g_(g),
      act_(act),
      width_(vector_width("NNFUSE_DEPTHWISE_ISA")),
      threads_(std::max(1, threads > 0 ? threads : omp_get_max_threads())) {
  const std::string why = depthwise_declines(g);
  NNFUSE_CHECK(why.empty(), "depthwise conv: ", why);
  in_registers_ = clamp_form(act, &form_);
  c_pad_ = (g.c + kSplitLanes - 1) / kSplitLanes * kSplitLanes;
  const int64_t taps = g.k * g.k;
  wt_.assign(static_cast<size_t>(taps * c_pad_), 0.0f);
  bias_.assign(static_cast<size_t>(c_pad_), 0.0f);
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t t = 0; t < taps; ++t) {
      wt_[(c / kSplitLanes * taps + t) * kSplitLanes + c % kSplitLanes] = weights[c * taps + t];
    }
    if (bias) bias_[c] = bias[c];
  }
}

void DepthwiseConv::run(const float* x, float* y) const {
  const Plan p{&g_, c_pad_, wt_.data(), bias_.data(), act_, in_registers_, form_};
  const RowsFn rows = rows_for(width_);
  const int64_t total_rows = g_.n * g_.oh;
  const int64_t work = total_rows * g_.ow * g_.c * g_.k * g_.k;
  const int64_t nt = omp_in_parallel() || work < kParallelWork
                         ? 1
                         : std::min<int64_t>(threads_, omp_get_max_threads());
  if (nt == 1) {
    rows(p, x, y, 0, total_rows, 0, g_.c);
    return;
  }
  // By rows, or by vectors of 16 channels where the busiest thread then has less to do.
  const int64_t vectors = c_pad_ / kSplitLanes;
  const int64_t by_rows = (total_rows + nt - 1) / nt * vectors;
  const int64_t by_channels = (vectors + nt - 1) / nt * total_rows;
  const bool split_rows = by_rows <= by_channels;
#pragma omp parallel num_threads(static_cast <int>(nt))
  {
    const int64_t t = omp_get_thread_num(), tn = omp_get_num_threads();
    if (split_rows) {
      rows(p, x, y, total_rows * t / tn, total_rows * (t + 1) / tn, 0, g_.c);
    } else {
      const int64_t c0 = vectors * t / tn * kSplitLanes;
      const int64_t c1 = std::min(g_.c, vectors * (t + 1) / tn * kSplitLanes);
      if (c0 < c1) rows(p, x, y, 0, total_rows, c0, c1);
    }
  }
}

}  // namespace nnfuse::cpu
