#include "kernels/cpu/cpu_rows.h"

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

}  // namespace nnfuse::cpu
