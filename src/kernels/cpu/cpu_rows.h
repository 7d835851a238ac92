// Vectorized reductions over one contiguous row of floats, shared by the softmax, normalization
// and reduction kernels. Sums accumulate in double, so they match the reference kernels (which
// reduce in double) to float rounding whatever the row length.
#pragma once

#include <cstdint>
#include <vector>

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

// The one-row product y = x W over weights packed in panels of kRowPanel columns: panel b is a
// row-major [Kp, kRowPanel] block (oneDNN's BA16a64b blocking of a matmul's weights, or
// pack_row_panels'), `panel` floats after panel b - 1, zero past the last column. Columns
// [kRowPanel * b0, kRowPanel * b1) of y (of n) get (+)= x [k] times the panels, plus bias (may
// be null). One pass over each panel, its sums in registers, the even and odd rows in two sums.
inline constexpr int kRowPanel = 64;
void row_times_panels(const float* x, int64_t k, const float* w, int64_t panel, int64_t b0,
                      int64_t b1, int64_t n, const float* bias, bool accumulate, float* y);
// y[q] (+)= x[q] W for `rows` rows q (x rows xs floats apart, y rows ys apart) over the same
// panels, each panel read once for up to 4 rows; no bias. Each output of a group of rows is one
// running sum over k (a row on its own: row_times_panels').
void rows_times_panels(const float* x, int64_t rows, int64_t xs, int64_t k, const float* w,
                       int64_t panel, int64_t n, bool accumulate, float* y, int64_t ys);
// w as [n, k] (row o holds output o's k weights: a 1x1 conv's [out, in]) packed in those panels,
// each k * kRowPanel floats.
std::vector<float> pack_row_panels(const float* w, int64_t n, int64_t k);

}  // namespace nnfuse::cpu
