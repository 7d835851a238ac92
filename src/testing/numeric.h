// Numeric checks every test shares: deterministic random tensors and elementwise closeness.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace nnfuse::testing {

// Deterministic pseudo-random float32 tensor in [lo, hi).
inline Tensor random_tensor(const Dims& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::kFloat32, shape);
  float* p = t.data<float>();
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = lo + (hi - lo) * static_cast<float>(s >> 8) / static_cast<float>(1u << 24);
  }
  return t;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// Expects equal dtype and shape and elementwise closeness, |got - want| <= atol + rtol * |want|
// (a NaN or an infinity wanted must be got exactly).
inline void expect_close(const Tensor& got, const Tensor& want, float atol = 1e-5f,
                         float rtol = 1e-5f) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.double_at(i), w = want.double_at(i);
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w)
          << "at element " << i << ": got " << g << ", want " << w;
      continue;
    }
    EXPECT_LE(std::abs(g - w), atol + rtol * std::abs(w)) << "at element " << i;
  }
}

// The largest |got - want| over the tensors, relative to the largest |want| (at least `floor`):
// the error bound a fusion must meet (1e-4 in float32).
inline double max_relative_error(const Tensor& got, const Tensor& want, double floor = 1e-6) {
  double scale = 0, err = 0;
  for (int64_t j = 0; j < want.numel(); ++j) {
    scale = std::max(scale, std::abs(want.double_at(j)));
    err = std::max(err, std::abs(got.double_at(j) - want.double_at(j)));
  }
  return err / std::max(scale, floor);
}

}  // namespace nnfuse::testing
