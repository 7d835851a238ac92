#include "kernels/cpu/cpu_rows.h"

#include <algorithm>

#include "kernels/cpu/cpu_math.h"

namespace nnfuse::cpu {

NNFUSE_TARGET_CLONES double row_sum(const float* x, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
}

NNFUSE_TARGET_CLONES double row_sq_dev(const float* x, int64_t n, float mean) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    s += static_cast<double>(d * d);
  }
  return s;
}

NNFUSE_TARGET_CLONES float row_max(const float* x, int64_t n) {
  float m = -kInf;
  int nan = 0;
#pragma omp simd reduction(max : m) reduction(| : nan)
  for (int64_t i = 0; i < n; ++i) {
    m = x[i] > m ? x[i] : m;
    nan |= x[i] != x[i];
  }
  return nan ? kNaN : m;
}

NNFUSE_TARGET_CLONES float row_min(const float* x, int64_t n) {
  float m = kInf;
  int nan = 0;
#pragma omp simd reduction(min : m) reduction(| : nan)
  for (int64_t i = 0; i < n; ++i) {
    m = x[i] < m ? x[i] : m;
    nan |= x[i] != x[i];
  }
  return nan ? kNaN : m;
}

NNFUSE_TARGET_CLONES void col_sum(const float* x, int64_t rows, int64_t n, int64_t stride,
                                  double* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * stride;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<double>(xr[j]);
  }
}

NNFUSE_TARGET_CLONES void col_sq_dev(const float* x, int64_t rows, int64_t n, int64_t stride,
                                     const double* mean, double* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * stride;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(xr[j]) - mean[j];
      acc[j] += d * d;
    }
  }
}

NNFUSE_TARGET_CLONES void affine_plane(const float* x, float* y, int64_t n, float a, float b) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

NNFUSE_TARGET_CLONES void affine_rows(const float* x, float* y, int64_t rows, int64_t c,
                                      const float* a, const float* b) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
#pragma GCC ivdep
    for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] * a[j] + b[j];
  }
}

// NaN sticks: once acc[j] is NaN, neither comparison replaces it.
NNFUSE_TARGET_CLONES void col_max(const float* x, int64_t rows, int64_t n, int64_t stride,
                                  float* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * stride;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) acc[j] = (xr[j] > acc[j] || xr[j] != xr[j]) ? xr[j] : acc[j];
  }
}

NNFUSE_TARGET_CLONES void col_min(const float* x, int64_t rows, int64_t n, int64_t stride,
                                  float* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * stride;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) acc[j] = (xr[j] < acc[j] || xr[j] != xr[j]) ? xr[j] : acc[j];
  }
}

NNFUSE_TARGET_CLONES void row_times_panels(const float* x, int64_t k, const float* w, int64_t panel,
                                           int64_t b0, int64_t b1, int64_t n, const float* bias,
                                           bool accumulate, float* y) {
  for (int64_t b = b0; b < b1; ++b) {
    const float* p = w + b * panel;
    // Even and odd rows in two sums: two dependency chains, and half the rounding a single
    // running sum over k rows accrues.
    float acc[2][kRowPanel];
    for (int j = 0; j < kRowPanel; ++j) acc[0][j] = acc[1][j] = 0.0f;
    int64_t i = 0;
    for (; i + 1 < k; i += 2) {
      const float x0 = x[i], x1 = x[i + 1];
      const float* r = p + i * kRowPanel;
      for (int j = 0; j < kRowPanel; ++j) {
        acc[0][j] += x0 * r[j];
        acc[1][j] += x1 * r[kRowPanel + j];
      }
    }
    if (i < k) {
      const float xi = x[i];
      for (int j = 0; j < kRowPanel; ++j) acc[0][j] += xi * p[i * kRowPanel + j];
    }
    const int64_t c0 = b * kRowPanel, cn = std::min<int64_t>(kRowPanel, n - c0);
    for (int64_t j = 0; j < cn; ++j) {
      const float v = (acc[0][j] + acc[1][j]) + (bias ? bias[c0 + j] : 0.0f);
      y[c0 + j] = accumulate ? y[c0 + j] + v : v;
    }
  }
}

namespace {

// row_times_panels for R rows at once, each panel read once for all of them.
template <int R>
NNFUSE_INLINE void rows_panels(const float* x, int64_t xs, int64_t k, const float* w, int64_t panel,
                               int64_t n, bool accumulate, float* y, int64_t ys) {
  const int64_t panels = (n + kRowPanel - 1) / kRowPanel;
  for (int64_t b = 0; b < panels; ++b) {
    const float* p = w + b * panel;
    float acc[R][kRowPanel];
    for (int q = 0; q < R; ++q) {
      for (int j = 0; j < kRowPanel; ++j) acc[q][j] = 0.0f;
    }
    for (int64_t i = 0; i < k; ++i) {
      const float* r = p + i * kRowPanel;
      for (int q = 0; q < R; ++q) {
        const float xv = x[q * xs + i];
        for (int j = 0; j < kRowPanel; ++j) acc[q][j] += xv * r[j];
      }
    }
    const int64_t c0 = b * kRowPanel, cn = std::min<int64_t>(kRowPanel, n - c0);
    for (int q = 0; q < R; ++q) {
      float* yq = y + q * ys + c0;
      for (int64_t j = 0; j < cn; ++j) yq[j] = accumulate ? yq[j] + acc[q][j] : acc[q][j];
    }
  }
}

}  // namespace

NNFUSE_TARGET_CLONES void rows_times_panels(const float* x, int64_t rows, int64_t xs, int64_t k,
                                            const float* w, int64_t panel, int64_t n,
                                            bool accumulate, float* y, int64_t ys) {
  for (int64_t q = 0; q < rows;) {
    const int64_t left = rows - q;
    if (left >= 4) {
      rows_panels<4>(x + q * xs, xs, k, w, panel, n, accumulate, y + q * ys, ys);
      q += 4;
    } else if (left >= 2) {
      rows_panels<2>(x + q * xs, xs, k, w, panel, n, accumulate, y + q * ys, ys);
      q += 2;
    } else {  // one row: its two sums run faster
      row_times_panels(x + q * xs, k, w, panel, 0, (n + kRowPanel - 1) / kRowPanel, n, nullptr,
                       accumulate, y + q * ys);
      q += 1;
    }
  }
}

std::vector<float> pack_row_panels(const float* w, int64_t n, int64_t k) {
  const int64_t panels = (n + kRowPanel - 1) / kRowPanel;
  std::vector<float> p(static_cast<size_t>(panels * k * kRowPanel), 0.0f);
  for (int64_t o = 0; o < n; ++o) {
    float* col = p.data() + (o / kRowPanel) * k * kRowPanel + o % kRowPanel;
    for (int64_t i = 0; i < k; ++i) col[i * kRowPanel] = w[o * k + i];
  }
  return p;
}

}  // namespace nnfuse::cpu
