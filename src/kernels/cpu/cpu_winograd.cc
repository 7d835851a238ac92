#include "kernels/cpu/cpu_winograd.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ir/error.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/cpu_vec.h"

namespace nnfuse::cpu {
namespace {

constexpr int kPoints = 36;  // the 6x6 transformed tile
constexpr int kTile = 4;     // outputs per tile side
// Below this many multiply-adds of the products a run stays on one thread.
constexpr int64_t kParallelWork = int64_t{1} << 18;
// From this many tiles per thread the threads split the tiles rather than the output channels.
constexpr int64_t kSplitTiles = 24;
// A thread transforms its tiles in chunks of about this many bytes of V at most (but 16 tiles
// at least), so that V, M and the transformed kernels stay in a 1 MiB L2 cache.
constexpr int64_t kChunkBytes = 512 * 1024;

// Register tiles of the products: up to kRows rows (transformed input tiles) by kColVectors
// vectors of output channels: 24 accumulators of AVX-512's 32 registers, 8 of the 16 otherwise.
// A block of kColVectors vectors is also the unit of work the threads take.
template <int W>
constexpr int kRows = W == 16 ? 12 : 4;
constexpr int kColVectors = 2;

// What every phase reads.
struct Plan {
  const WinogradGeometry* g;
  int64_t tiles_h, tiles_w, cin_pad, cout_pad;
  int64_t v_plane, m_plane;  // floats from one point's matrix of V (of M) to the next's
  int64_t blocks;            // blocks of kColVectors vectors of output channels
  const float* wt;           // the kernels per vector of output channels: [cout_pad / W][cin][9][W]
  const float* bias;
  ref::Activation act;
};

// B^T d for one column (or row) of a 6x6 input tile.
template <int W, typename V = typename FloatVec<W>::type>
NNFUSE_INLINE void input_line(const V* d, V* o) {
  o[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  o[1] = d[3] + d[4] - 4.0f * (d[1] + d[2]);
  o[2] = 4.0f * (d[1] - d[2]) - d[3] + d[4];
  o[3] = 2.0f * (d[3] - d[1]) - d[2] + d[4];
  o[4] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
  o[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// A^T m for one column (or row) of a 6x6 product tile.
template <int W, typename V = typename FloatVec<W>::type>
NNFUSE_INLINE void output_line(const V* m, V* o) {
  const V a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4];
  o[0] = m[0] + a + c;
  o[1] = b + 2.0f * d;
  o[2] = a + 4.0f * c;
  o[3] = b + 8.0f * d + m[5];
}

// Input tiles [t0, t1): V[p][t - t0][c] = (B^T d B)[p] over the 6x6 patch of tile t, zeros
// outside the image and past cin.
template <int W>
NNFUSE_INLINE void input_tiles(const Plan& P, const float* x, float* v, int64_t t0, int64_t t1) {
  using V = typename FloatVec<W>::type;
  const WinogradGeometry& g = *P.g;
  const int64_t per_image = P.tiles_h * P.tiles_w, plane = P.v_plane;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t b = t / per_image, r = t % per_image;
    const int64_t iy0 = r / P.tiles_w * kTile - g.pad_t, ix0 = r % P.tiles_w * kTile - g.pad_l;
    const bool inside = iy0 >= 0 && ix0 >= 0 && iy0 + 6 <= g.h && ix0 + 6 <= g.w;
    const float* xb = x + b * g.h * g.w * g.cin;
    for (int64_t c0 = 0; c0 < P.cin_pad; c0 += W) {
      const int64_t cn = std::min<int64_t>(W, g.cin - c0);
      V d[6][6];
      if (inside && cn == W) {
        for (int i = 0; i < 6; ++i) {
          const float* row = xb + ((iy0 + i) * g.w + ix0) * g.cin + c0;
          for (int j = 0; j < 6; ++j) d[i][j] = load<W>(row + j * g.cin);
        }
      } else {
        for (int i = 0; i < 6; ++i) {
          const int64_t yy = iy0 + i;
          for (int j = 0; j < 6; ++j) {
            const int64_t xx = ix0 + j;
            d[i][j] = V{};
            if (yy < 0 || yy >= g.h || xx < 0 || xx >= g.w) continue;
            const float* at = xb + (yy * g.w + xx) * g.cin + c0;
            d[i][j] = cn == W ? load<W>(at) : load_part<W>(at, cn);
          }
        }
      }
      V cols[6][6];  // cols[i][j] = (B^T d)[i][j]
      for (int j = 0; j < 6; ++j) {
        const V in[6] = {d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j]};
        V out[6];
        input_line<W>(in, out);
        for (int i = 0; i < 6; ++i) cols[i][j] = out[i];
      }
      float* at = v + (t - t0) * P.cin_pad + c0;
      for (int i = 0; i < 6; ++i) {
        V out[6];
        input_line<W>(cols[i], out);
        for (int j = 0; j < 6; ++j) store<W>(at + (i * 6 + j) * plane, out[j]);
      }
    }
  }
}

// m[r][0, C*W) = sum_k v[r][k] * u[k][0, C*W) for R rows (v rows vs apart, m rows ms apart).
template <int W, int R, int C>
NNFUSE_INLINE void product_tile(const float* v, int64_t vs, const float* u, int64_t k, float* m,
                                int64_t ms) {
  using V = typename FloatVec<W>::type;
  V acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = V{};
  }
  for (int64_t i = 0; i < k; ++i) {
    V w[C];
    for (int c = 0; c < C; ++c) w[c] = load<W>(u + (i * C + c) * W);
    for (int r = 0; r < R; ++r) {
      const float a = v[r * vs + i];
      for (int c = 0; c < C; ++c) acc[r][c] += a * w[c];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) store<W>(m + r * ms + c * W, acc[r][c]);
  }
}

// product_tile for `rows` (1 to R) rows.
template <int W, int C, int R>
NNFUSE_INLINE void product_rows(int64_t rows, const float* v, int64_t vs, const float* u, int64_t k,
                                float* m, int64_t ms) {
  if (rows == R) {
    product_tile<W, R, C>(v, vs, u, k, m, ms);
  } else if constexpr (R > 1) {
    product_rows<W, C, R - 1>(rows, v, vs, u, k, m, ms);
  }
}

// G a for one column (or row) a of a 3x3 kernel: the 6 values of the tile's column (row),
// G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1].
template <int W, typename V = typename FloatVec<W>::type>
NNFUSE_INLINE void kernel_line(V a0, V a1, V a2, V* o) {
  const V p = (-1.0f / 6) * (a0 + a2), q = (1.0f / 6) * a1;
  const V r = (1.0f / 24) * a0 + (1.0f / 6) * a2, t = (1.0f / 12) * a1;
  o[0] = 0.25f * a0;
  o[1] = p - q;
  o[2] = p + q;
  o[3] = r + t;
  o[4] = r - t;
  o[5] = a2;
}

// The tile rows of G g G^T that come in pairs from shared terms: Q = 0 gives rows 0 and 5,
// 1 rows 1 and 2, 2 rows 3 and 4.
constexpr int kPairRows[3][2] = {{0, 5}, {1, 2}, {3, 4}};

// Two rows (pair Q) of G g G^T for every input channel of C vectors of output channels:
// ub[k * 6 + j][ci][0, C*W) is point (kPairRows[Q][k], j), from the kernels wt[c][ci][tap][0, W)
// of vector c.
template <int W, int C, int Q>
NNFUSE_INLINE void transform_pair(const float* wt, int64_t cin, float* ub) {
  using V = typename FloatVec<W>::type;
  for (int64_t ci = 0; ci < cin; ++ci) {
    for (int c = 0; c < C; ++c) {
      const float* k = wt + (c * cin + ci) * 9 * W;
      V rows[2][3];  // the pair's rows of G g
      for (int col = 0; col < 3; ++col) {
        // The column's 6 values; the pair's two are kept (the others, force-inlined and
        // unused, are not computed).
        V line[6];
        kernel_line<W>(load<W>(k + col * W), load<W>(k + (3 + col) * W), load<W>(k + (6 + col) * W),
                       line);
        rows[0][col] = line[kPairRows[Q][0]];
        rows[1][col] = line[kPairRows[Q][1]];
      }
      for (int h = 0; h < 2; ++h) {
        V out[6];
        kernel_line<W>(rows[h][0], rows[h][1], rows[h][2], out);
        for (int j = 0; j < 6; ++j) store<W>(ub + ((h * 6 + j) * cin + ci) * C * W + c * W, out[j]);
      }
    }
  }
}

// M[p] = V[p] U[p][:, vectors [q, q + C)] for every point p (V: [36][tiles][cin_pad], M:
// [36][tiles][kColVectors * W], planes v_plane and m_plane apart), a pair of point rows at a
// time: their kernels transformed into ub, then the 12 products, the tiles in row blocks of
// equal size up to kRows.
template <int W, int C>
NNFUSE_INLINE void vector_products(const Plan& P, const float* v, float* m, int64_t tiles,
                                   int64_t q, float* ub) {
  const int64_t cin = P.g->cin;
  const int64_t row_blocks = (tiles + kRows<W> - 1) / kRows<W>;
  const int64_t rows = (tiles + row_blocks - 1) / row_blocks;
  const float* wt = P.wt + q * cin * 9 * W;
  for (int pair = 0; pair < 3; ++pair) {
    if (pair == 0) {
      transform_pair<W, C, 0>(wt, cin, ub);
    } else if (pair == 1) {
      transform_pair<W, C, 1>(wt, cin, ub);
    } else {
      transform_pair<W, C, 2>(wt, cin, ub);
    }
    for (int k = 0; k < 12; ++k) {
      const int64_t p = kPairRows[pair][k / 6] * 6 + k % 6;
      const float* u = ub + k * cin * C * W;
      const float* vp = v + p * P.v_plane;
      float* mp = m + p * P.m_plane;
      for (int64_t r0 = 0; r0 < tiles; r0 += rows) {
        const int64_t n = std::min(rows, tiles - r0);
        product_rows<W, C, kRows<W>>(n, vp + r0 * P.cin_pad, P.cin_pad, u, cin,
                                     mp + r0 * kColVectors * W, kColVectors * W);
      }
    }
  }
}

// Output channel vectors [q0, q1) of tiles [t0, t1), from M as vector_products(q0) leaves it:
// Y = act(A^T m A + bias (+ sum)) for the pixels inside the output.
template <int W>
NNFUSE_INLINE void output_tiles(const Plan& P, const float* m, float* y, int64_t pitch,
                                const float* sum, int64_t t0, int64_t t1, int64_t q0, int64_t q1) {
  using V = typename FloatVec<W>::type;
  const WinogradGeometry& g = *P.g;
  const int64_t per_image = P.tiles_h * P.tiles_w, plane = P.m_plane;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t b = t / per_image, r = t % per_image;
    const int64_t oy0 = r / P.tiles_w * kTile, ox0 = r % P.tiles_w * kTile;
    const int64_t ny = std::min<int64_t>(kTile, g.oh - oy0),
                  nx = std::min<int64_t>(kTile, g.ow - ox0);
    const int64_t pixel0 = (b * g.oh + oy0) * g.ow + ox0;
    for (int64_t c0 = q0 * W; c0 < q1 * W; c0 += W) {
      const int64_t cn = std::min<int64_t>(W, g.cout - c0);
      const float* at = m + (t - t0) * kColVectors * W + (c0 - q0 * W);
      V rows[4][6];  // rows[i][j] = (A^T m)[i][j]
      for (int j = 0; j < 6; ++j) {
        V in[6], out[4];
        for (int i = 0; i < 6; ++i) in[i] = load<W>(at + (i * 6 + j) * plane);
        output_line<W>(in, out);
        for (int i = 0; i < 4; ++i) rows[i][j] = out[i];
      }
      const V bias = load<W>(P.bias + c0);
      for (int i = 0; i < ny; ++i) {
        V out[4];
        output_line<W>(rows[i], out);
        for (int j = 0; j < nx; ++j) {
          const int64_t pixel = pixel0 + i * g.ow + j;
          V val = out[j] + bias;
          if (sum) {
            const float* s = sum + pixel * g.cout + c0;
            val += cn == W ? load<W>(s) : load_part<W>(s, cn);
          }
          val = activate<W>(val, P.act);
          float* to = y + pixel * pitch + c0;
          if (cn == W) {
            store<W>(to, val);
          } else {
            std::memcpy(to, &val, static_cast<size_t>(cn) * sizeof(float));
          }
        }
      }
    }
  }
}

// One thread's part of a run: items (chunk of tiles, block of output channels) of tiles
// [t0, t1) taken from `next` until none is left, chunk by chunk: a chunk's tiles transformed
// into the thread's own V when it first meets the chunk, then the block's products into its own
// M and the block's outputs. The threads split the tiles where there are many (each then takes
// every block of its own tiles, transforming the kernels once per chunk) and the blocks
// otherwise (each transforming every tile it needs: small next to the products): either way no
// thread waits for another or reads what another core wrote, and where they split the blocks, a
// thread that starts late (waking one takes tens of microseconds on some virtual machines) takes
// fewer. Chunks keep the thread's V small enough to stay in its L2 cache: a 56x56 map's V
// streamed from memory made the kernel slower than the direct one inside a network.
struct Part {
  const float* x;
  float* y;
  int64_t pitch;
  const float* sum;
  float *v, *m, *ub;
  int64_t t0, t1, chunk;
  std::atomic<int64_t>* next;
};

template <int W>
NNFUSE_INLINE void run_part(const Plan& P, const Part& a) {
  const int64_t vectors = P.cout_pad / W;
  const int64_t items = (a.t1 - a.t0 + a.chunk - 1) / a.chunk * P.blocks;
  int64_t have = -1;  // the chunk in V
  for (int64_t i = a.next->fetch_add(1); i < items; i = a.next->fetch_add(1)) {
    const int64_t c = i / P.blocks, b = i % P.blocks;
    const int64_t c0 = a.t0 + c * a.chunk, c1 = std::min(a.t1, c0 + a.chunk);
    if (c != have) {
      input_tiles<W>(P, a.x, a.v, c0, c1);
      have = c;
    }
    const int64_t q0 = b * kColVectors, q1 = std::min<int64_t>(vectors, q0 + kColVectors);
    if (q1 - q0 == kColVectors) {
      vector_products<W, kColVectors>(P, a.v, a.m, c1 - c0, q0, a.ub);
    } else {
      vector_products<W, 1>(P, a.v, a.m, c1 - c0, q0, a.ub);
    }
    output_tiles<W>(P, a.m, a.y, a.pitch, a.sum, c0, c1, q0, q1);
  }
}

using PartFn = void (*)(const Plan&, const Part&);

#if defined(__x86_64__)
__attribute__((target("avx512f,avx2,fma"))) void part_avx512(const Plan& p, const Part& a) {
  run_part<16>(p, a);
}
__attribute__((target("avx2,fma"))) void part_avx2(const Plan& p, const Part& a) {
  run_part<8>(p, a);
}
#endif
void part_base(const Plan& p, const Part& a) { run_part<4>(p, a); }

PartFn part_for(int width) {
#if defined(__x86_64__)
  if (width == 16) return part_avx512;
  if (width == 8) return part_avx2;
#endif
  return part_base;
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

std::string winograd_declines(const ref::Activation& act) {
  switch (act.kind) {
    case ref::ActivationKind::kNone:
    case ref::ActivationKind::kRelu:
    case ref::ActivationKind::kLeakyRelu:
    case ref::ActivationKind::kClip:
    case ref::ActivationKind::kQuantize:
      return "";
    default:
      return "its activation is not one the Winograd kernel applies (ReLU, LeakyReLU, Clip, "
             "the quantize round trip)";
  }
}

WinogradConv::WinogradConv(const WinogradGeometry& g, const float* weights, const float* bias,
                           ref::Activation act, int threads)
    : g_(g),
      act_(act),
      width_(vector_width("NNFUSE_WINOGRAD_ISA")),
      threads_(std::max(1, threads > 0 ? threads : omp_get_max_threads())) {
  NNFUSE_CHECK(g.n > 0 && g.cin > 0 && g.cout > 0 && g.oh > 0 && g.ow > 0,
               "Winograd conv: empty geometry");
  tiles_h_ = (g.oh + kTile - 1) / kTile;
  tiles_w_ = (g.ow + kTile - 1) / kTile;
  tiles_ = g.n * tiles_h_ * tiles_w_;
  cin_pad_ = round_up(g.cin, width_);
  cout_pad_ = round_up(g.cout, width_);
  chunk_ = std::min(tiles_, std::max<int64_t>(16, kChunkBytes / (kPoints * cin_pad_ * 4)));
  bias_.assign(static_cast<size_t>(cout_pad_), 0.0f);
  if (bias) std::copy_n(bias, g.cout, bias_.begin());
  // The kernels per vector of output channels: [cout_pad / W][cin][9][W], zeros past cout.
  wt_.assign(static_cast<size_t>(9 * g.cin * cout_pad_), 0.0f);
  for (int64_t co = 0; co < g.cout; ++co) {
    float* to = wt_.data() + (co / width_ * g.cin * 9) * width_ + co % width_;
    for (int64_t ci = 0; ci < g.cin; ++ci) {
      for (int tap = 0; tap < 9; ++tap) {
        to[(ci * 9 + tap) * width_] = weights[(co * g.cin + ci) * 9 + tap];
      }
    }
  }
}

WinogradConv::Scratch WinogradConv::scratch_layout() const {
  Scratch s;
  s.v_plane = chunk_ * cin_pad_ + 16;
  s.m_plane = chunk_ * kColVectors * width_ + 16;
  s.v = 0;
  s.m = s.v + round_up(kPoints * s.v_plane * 4, 64);
  s.ub = s.m + round_up(kPoints * s.m_plane * 4, 64);
  s.per_thread = s.ub + round_up(12 * g_.cin * kColVectors * width_ * 4, 64);
  return s;
}

size_t WinogradConv::scratch_bytes() const {
  return static_cast<size_t>(threads_ * scratch_layout().per_thread);
}

void WinogradConv::run(const float* x, float* y, int64_t y_pitch, const float* sum,
                       std::byte* scratch) const {
  const Scratch s = scratch_layout();
  const int64_t vectors = cout_pad_ / width_;
  const int64_t blocks = (vectors + kColVectors - 1) / kColVectors;
  const Plan plan{&g_,       tiles_h_, tiles_w_,   cin_pad_,     cout_pad_, s.v_plane,
                  s.m_plane, blocks,   wt_.data(), bias_.data(), act_};
  const PartFn part = part_for(width_);
  const int64_t work = kPoints * tiles_ * g_.cin * g_.cout;
  // Split the tiles where each thread gets kSplitTiles or more, else the blocks.
  int64_t nt = std::min<int64_t>(omp_get_max_threads(), threads_);
  const bool split_tiles = nt > 1 && tiles_ >= kSplitTiles * 2;
  nt = std::min(nt, split_tiles ? tiles_ / kSplitTiles : blocks);
  if (omp_in_parallel() || work < kParallelWork) nt = 1;
  std::atomic<int64_t> shared_next{0};
#pragma omp parallel num_threads(static_cast <int>(nt))
  {
    const int64_t k = omp_get_thread_num(), n = omp_get_num_threads();
    std::atomic<int64_t> own_next{0};
    std::byte* own = scratch + k * s.per_thread;
    const int64_t t0 = split_tiles ? tiles_ * k / n : 0;
    const int64_t t1 = split_tiles ? tiles_ * (k + 1) / n : tiles_;
    // Chunks of equal size up to chunk_.
    const int64_t chunks = (t1 - t0 + chunk_ - 1) / chunk_;
    part(plan, {x, y, y_pitch, sum, reinterpret_cast<float*>(own + s.v),
                reinterpret_cast<float*>(own + s.m), reinterpret_cast<float*>(own + s.ub), t0, t1,
                (t1 - t0 + chunks - 1) / chunks, split_tiles ? &own_next : &shared_next});
  }
}

}  // namespace nnfuse::cpu
