#include "ops/op_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace nnfuse {
namespace op_math_test {

// The indices Slice takes along a dim of length d, straight from the spec's definition.
std::vector<int64_t> spec_indices(int64_t d, int64_t s, int64_t e, int64_t step) {
  auto fix = [d](int64_t v, int64_t lo, int64_t hi) {
    return std::clamp(v < 0 ? v + d : v, lo, hi);
  };
  std::vector<int64_t> r;
  if (d == 0) return r;
  if (step > 0) {
    const int64_t end = fix(e, 0, d);
    for (int64_t i = fix(s, 0, d); i < end; i += step) {
      r.push_back(i);
      if (end - i <= step) break;  // the next index is past the end (and i + step may overflow)
    }
  } else {
    const int64_t end = fix(e, -1, d - 1);
    for (int64_t i = fix(s, 0, d - 1); i > end; i += step) {
      r.push_back(i);
      if (i - end <= -step) break;
    }
  }
  return r;
}

TEST(KernelMath, SliceAxisTakesTheSpecsIndices) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> bounds = {-big - 1, -big, -9, -7, -6, -5, -3, -1, 0,
                                       1,        2,    3,  5,  6,  7,  9,  big};
  for (int64_t d : std::vector<int64_t>{0, 1, 2, 5, 6}) {
    for (int64_t s : bounds) {
      for (int64_t e : bounds) {
        for (int64_t step : std::vector<int64_t>{-big, -3, -2, -1, 1, 2, 3, big}) {
          const SliceAxis a = slice_axis(d, s, e, step);
          std::vector<int64_t> got;
          for (int64_t i = 0; i < a.len; ++i) got.push_back(a.start + i * a.step);
          ASSERT_EQ(got, spec_indices(d, s, e, step))
              << "d " << d << " start " << s << " end " << e << " step " << step;
        }
      }
    }
  }
}

TEST(KernelMath, ConversionsTruncateAndSaturate) {
  EXPECT_EQ((convert_value<int8_t, float>(300.5f)), 127);
  EXPECT_EQ((convert_value<int8_t, float>(-300.5f)), -128);
  EXPECT_EQ((convert_value<int32_t, double>(-2.9)), -2);
  EXPECT_EQ((convert_value<int32_t, float>(std::numeric_limits<float>::quiet_NaN())), 0);
  EXPECT_TRUE((convert_value<bool, float>(-0.5f)));
  EXPECT_EQ(saturate_cast<uint8_t>(-4.0), 0);
  EXPECT_EQ(saturate_cast<uint8_t>(1e9), 255);
  EXPECT_EQ(saturate_cast<int64_t>(2.7), 2);
  EXPECT_EQ(saturate_cast<int16_t>(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_FLOAT_EQ(saturate_cast<float>(2.5), 2.5f);
}

}  // namespace op_math_test
}  // namespace nnfuse
