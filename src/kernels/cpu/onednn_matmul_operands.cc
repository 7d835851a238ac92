// The oneDNN matmul kernel's work on its operands around the product (onednn_matmul.cc): A
// normalized row by row (FusedLayerNormMatMul's and a gated product's norm prologue, and
// FusedMatMulLayerNorm's LayerNorm over Y) or pooled per channel (FusedGlobalPoolGemm), Gemm's
// C broadcast into Y, and a gated product's [gate | up] halves widened to whole column blocks.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"
#include "kernels/cpu/onednn_matmul_internal.h"

namespace nnfuse::onednn {

using dnnl::memory;

void normalize_rows(const float* x, float* y, int64_t rows, int64_t n, const float* gamma,
                    const float* beta, double eps, bool rms) {
  cpu::parallel_range(
      rows, std::max<int64_t>(1, cpu::kParallelGrain / n), [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const float* xr = x + r * n;
          const double mean = rms ? 0.0 : cpu::row_sum(xr, n) / static_cast<double>(n);
          const float m = static_cast<float>(mean);
          const double var = cpu::row_sq_dev(xr, n, m) / static_cast<double>(n);
          const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
          cpu::layer_norm_row(xr, y + r * n, n, m, inv, gamma, beta);
        }
      });
}

void broadcast_c(const float* c, int64_t c0, int64_t c1, int64_t m, int64_t n, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = c + (c0 == 1 ? 0 : i * c1);
    float* out = y + i * n;
    if (c1 == 1) {
      std::fill(out, out + n, row[0]);
    } else {
      std::copy(row, row + n, out);
    }
  }
}

void channel_means(const Tensor& x, Layout layout, Tensor& out) {
  constexpr int64_t kBlock = 256;
  const int64_t n = x.dim(0), c = x.dim(1), sz = x.numel() / (n * c);
  const float* px = x.data<float>();
  float* po = out.data<float>();
  const double inv = 1.0 / static_cast<double>(sz);
  if (layout == Layout::kNHWC) {
    const int64_t blocks = (c + kBlock - 1) / kBlock;
    cpu::parallel_tasks(n * blocks, x.numel(), [&](int64_t t) {
      const int64_t i = t / blocks, c0 = (t % blocks) * kBlock, cn = std::min(kBlock, c - c0);
      double acc[kBlock] = {};
      for (int64_t p = 0; p < sz; ++p) {
        const float* row = px + (i * sz + p) * c + c0;
        for (int64_t j = 0; j < cn; ++j) acc[j] += row[j];
      }
      for (int64_t j = 0; j < cn; ++j) po[i * c + c0 + j] = static_cast<float>(acc[j] * inv);
    });
    return;
  }
  cpu::parallel_tasks(n * c, x.numel(), [&](int64_t t) {
    const float* plane = px + t * sz;
    double acc = 0;
    for (int64_t p = 0; p < sz; ++p) acc += plane[p];
    po[t] = static_cast<float>(acc * inv);
  });
}

int64_t n_block(const memory::desc& d) {
  const dnnl_memory_desc_t& m = d.data;
  if (m.ndims != 2 || m.format_kind != dnnl_blocked) return 1;
  int64_t b = 1;
  for (int i = 0; i < m.format_desc.blocking.inner_nblks; ++i) {
    if (m.format_desc.blocking.inner_idxs[i] == 1) b *= m.format_desc.blocking.inner_blks[i];
  }
  return b;
}

// oneDNN splits a product of few rows over its column blocks, and a count that is not a
// multiple of the threads leaves a thread idle: at 128 rows x 512 on 2 threads, 2 x 1376
// columns (43 blocks of 64) took 0.996 ms and 2 x 1408 (44 blocks) 0.951 ms.
int64_t gated_half_columns(int64_t n, int64_t block, int threads) {
  if (block <= 1 || threads <= 1) return n;
  const int64_t blocks = (2 * n + block - 1) / block;
  if (blocks % threads == 0) return n;
  const int64_t want = (blocks + threads - 1) / threads * threads;
  if (want * block % 2 != 0) return n;
  const int64_t half = want * block / 2;
  return (half - n) * 16 <= n ? half : n;
}

Tensor pad_halves(const Tensor& t, int64_t n, int64_t half) {
  const int64_t rows = t.numel() / (2 * n);
  Tensor r(DType::kFloat32, t.rank() == 1 ? Dims{2 * half} : Dims{rows, 2 * half});
  const float* from = t.data<float>();
  float* to = r.data<float>();
  for (int64_t i = 0; i < rows; ++i) {
    std::copy(from + i * 2 * n, from + i * 2 * n + n, to + i * 2 * half);
    std::copy(from + i * 2 * n + n, from + (i + 1) * 2 * n, to + i * 2 * half + half);
  }
  return r;
}

}  // namespace nnfuse::onednn
