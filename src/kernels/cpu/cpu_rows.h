// Vectorized reductions over one contiguous row of floats, shared by the softmax, normalization
// and reduction kernels. Sums accumulate in double, so they match the reference kernels (which
// reduce in double) to float rounding whatever the row length.
#pragma once

#include <cstdint>

namespace nnfuse::cpu {

// Sum of x[0, n).
double row_sum(const float* x, int64_t n);
// Sum of (x[i] - mean)^2 over [0, n).
double row_sq_dev(const float* x, int64_t n, float mean);
// Max / min of x[0, n): NaN if any element is NaN; -inf / +inf for an empty row.
float row_max(const float* x, int64_t n);
float row_min(const float* x, int64_t n);

// Column reductions of a [rows, n] block with row stride `stride`: acc[j] op= x[r * stride + j].
void col_sum(const float* x, int64_t rows, int64_t n, int64_t stride, double* acc);
void col_max(const float* x, int64_t rows, int64_t n, int64_t stride, float* acc);
void col_min(const float* x, int64_t rows, int64_t n, int64_t stride, float* acc);
// acc[j] += (x[r * stride + j] - mean[j])^2 over the rows of a [rows, n] block, in double.
void col_sq_dev(const float* x, int64_t rows, int64_t n, int64_t stride, const double* mean,
                double* acc);

// Per-channel affine maps (y may be x): y[i] = x[i] * a + b over n elements of one channel, and
// y[r, j] = x[r, j] * a[j] + b[j] over `rows` rows of c channels.
void affine_plane(const float* x, float* y, int64_t n, float a, float b);
void affine_rows(const float* x, float* y, int64_t rows, int64_t c, const float* a, const float* b);

// One row of LayerNorm (cpu_norm.cc): y[i] = (x[i] - mean) * inv * scale[i] (+ bias[i] when
// bias is not null); y may be x.
void layer_norm_row(const float* x, float* y, int64_t n, float mean, float inv, const float* scale,
                    const float* bias);

}  // namespace nnfuse::cpu
