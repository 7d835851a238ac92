// GridSample's sampling geometry, shared by the reference kernel (vision.cc) and the fast one
// (kernels/cpu/cpu_grid_sample.cc): for a normalized grid point, the input pixels it reads and
// their weights, computed in double.
//
// A grid value g maps to the pixel coordinate (g + 1) / 2 * (size - 1) with align_corners,
// else ((g + 1) * size - 1) / 2. A coordinate outside [0, size - 1] (align_corners) or
// [-0.5, size - 0.5] (not) is first clamped to [0, size - 1] (padding_mode border) or
// reflected at those bounds until inside (reflection). mode nearest rounds it half to even
// (before padding); bilinear interpolates the 2x2 neighbors and bicubic the 4x4 neighbors
// (Keys' cubic convolution, a = -0.75). Each neighbor pixel index outside the image reads 0
// (zeros), the clamped index (border) or the reflected index (reflection). Opset 20 names
// the modes linear and cubic.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace nnfuse::ref {

enum class GsMode { kNearest, kLinear, kCubic };
enum class GsPad { kZeros, kBorder, kReflection };

// Why the node's mode or padding_mode is not supported at `opset`, "" when both are.
std::string grid_sample_attrs_problem(const Node& n, int64_t opset);

// The taps of one grid point: up to 16 (flat index into an H x W plane, or -1 for a zero;
// weight), or a NaN coordinate (the output is NaN).
struct GsTaps {
  int n = 0;
  bool nan = false;
  int64_t idx[16];
  double w[16];
};

class GridSampleGeometry {
 public:
  // Reads mode, padding_mode and align_corners (errors name the node) for an h x w input.
  GridSampleGeometry(const Node& n, int64_t opset, int64_t h, int64_t w);
  void taps(double gx, double gy, GsTaps& t) const;

 private:
  struct Axis {
    int64_t size;
    double lo, hi;  // the reflection bounds
  };
  double unnormalize(double g, int64_t size) const;
  double pad_coord(double v, const Axis& a) const;
  int64_t index(int64_t i, const Axis& a) const;
  int64_t at(int64_t iy, int64_t ix) const;

  GsMode mode_ = GsMode::kLinear;
  GsPad pad_ = GsPad::kZeros;
  bool align_ = false;
  int64_t h_, w_;
  Axis ax_, ay_;
};

// Inline: the fast kernel computes the taps of every output point.

// x reflected at lo and hi until it lies in [lo, hi].
inline double gs_reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0 || !std::isfinite(x)) return lo;
  if (x >= lo && x <= hi) return x;
  const double d = x < lo ? lo - x : x - hi;
  const double flips = std::floor(d / range);
  const double r = d - flips * range;
  const bool even = std::fmod(flips, 2.0) == 0;
  if (x < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

inline void gs_cubic_coeffs(double t, double c[4]) {
  const double a = -0.75;
  const double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
  c[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
  c[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

inline double GridSampleGeometry::unnormalize(double g, int64_t size) const {
  const double s = static_cast<double>(size);
  return align_ ? (g + 1) / 2 * (s - 1) : ((g + 1) * s - 1) / 2;
}

// The continuous coordinate after the padding mode's clamp or reflection.
inline double GridSampleGeometry::pad_coord(double v, const Axis& a) const {
  if (v >= a.lo && v <= a.hi) return v;
  if (pad_ == GsPad::kBorder) return std::clamp(v, 0.0, static_cast<double>(a.size - 1));
  if (pad_ == GsPad::kReflection) return gs_reflect(v, a.lo, a.hi);
  // zeros: keep, but bound it so that neighbor indices stay representable (all read 0).
  return std::clamp(v, -4.0 - static_cast<double>(a.size), 4.0 + 2 * static_cast<double>(a.size));
}

// The pixel index `i` along an axis under the padding mode, or -1 for a zero.
inline int64_t GridSampleGeometry::index(int64_t i, const Axis& a) const {
  if (i >= 0 && i < a.size) return i;
  switch (pad_) {
    case GsPad::kZeros:
      return -1;
    case GsPad::kBorder:
      return std::clamp<int64_t>(i, 0, a.size - 1);
    case GsPad::kReflection:
      return std::clamp<int64_t>(
          static_cast<int64_t>(gs_reflect(static_cast<double>(i), a.lo, a.hi)), 0, a.size - 1);
  }
  return -1;
}

inline int64_t GridSampleGeometry::at(int64_t iy, int64_t ix) const {
  const int64_t yi = index(iy, ay_), xi = index(ix, ax_);
  return yi < 0 || xi < 0 ? -1 : yi * w_ + xi;
}

inline void GridSampleGeometry::taps(double gx, double gy, GsTaps& t) const {
  double fx = unnormalize(gx, w_), fy = unnormalize(gy, h_);
  t.n = 0;
  t.nan = std::isnan(fx) || std::isnan(fy);
  if (t.nan) return;
  if (mode_ == GsMode::kNearest) {
    fx = std::nearbyint(fx);
    fy = std::nearbyint(fy);
  }
  fx = pad_coord(fx, ax_);
  fy = pad_coord(fy, ay_);
  if (mode_ == GsMode::kNearest) {
    t.n = 1;
    t.idx[0] = at(static_cast<int64_t>(fy), static_cast<int64_t>(fx));
    t.w[0] = 1;
    return;
  }
  const double x0 = std::floor(fx), y0 = std::floor(fy);
  const int64_t ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
  if (mode_ == GsMode::kLinear) {
    const double lx = fx - x0, ly = fy - y0;
    t.n = 4;
    t.idx[0] = at(iy, ix);
    t.w[0] = (1 - ly) * (1 - lx);
    t.idx[1] = at(iy, ix + 1);
    t.w[1] = (1 - ly) * lx;
    t.idx[2] = at(iy + 1, ix);
    t.w[2] = ly * (1 - lx);
    t.idx[3] = at(iy + 1, ix + 1);
    t.w[3] = ly * lx;
    return;
  }
  double cx[4], cy[4];
  gs_cubic_coeffs(fx - x0, cx);
  gs_cubic_coeffs(fy - y0, cy);
  t.n = 16;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      t.idx[i * 4 + j] = at(iy - 1 + i, ix - 1 + j);
      t.w[i * 4 + j] = cy[i] * cx[j];
    }
  }
}

}  // namespace nnfuse::ref
