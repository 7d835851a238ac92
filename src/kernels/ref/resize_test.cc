// Tests of the Resize reference kernel. Expected values are computed by hand from the spec's
// coordinate formulas (the comments show the source coordinates), and most match the ONNX
// operator documentation's examples.
#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace resize_test {

using testing::expect_close;
using testing::run_ref1;
using testing::values;

Tensor f32(Dims s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}
Tensor scales(std::vector<float> v) {
  return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
}
const Tensor kNone;  // an omitted input
using F = std::vector<float>;

Tensor two_by_two() { return f32({1, 1, 2, 2}, {1, 2, 3, 4}); }
// 1x1x4x4 holding 1..16, i.e. 4 * row + col + 1.
Tensor four_by_four() {
  Tensor t(DType::kFloat32, {1, 1, 4, 4});
  for (int64_t i = 0; i < 16; ++i) t.data<float>()[i] = static_cast<float>(i + 1);
  return t;
}

std::map<std::string, Attribute> attrs(const std::string& mode, const std::string& ctm,
                                       const std::string& nearest = "round_prefer_floor") {
  return {{"mode", attr_string(mode)},
          {"coordinate_transformation_mode", attr_string(ctm)},
          {"nearest_mode", attr_string(nearest)}};
}

// Expected 8x8 output of four_by_four() for per-axis source indices `src`.
F gather_8x8(const std::array<int, 8>& src) {
  F out;
  for (int i : src) {
    for (int j : src) out.push_back(static_cast<float>(4 * i + j + 1));
  }
  return out;
}

TEST(RefMiscResize, NearestUpsampleHalfPixel) {
  // Rows: x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1.
  // Cols: x = (o + 0.5) / 3 - 0.5 = -0.33, 0, 0.33, 0.67, 1, 1.33 -> 0, 0, 0, 1, 1, 1.
  Tensor y = run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 2, 3})});
  ASSERT_EQ(y.shape(), (Dims{1, 1, 4, 6}));
  EXPECT_EQ(values<float>(y),
            (F{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(RefMiscResize, NearestDownsample) {
  // Output floor(2 * 0.6) x floor(4 * 0.6) = 1 x 2. Rows: x = 0.5 / 0.6 - 0.5 = 0.33 -> 0.
  // Cols: 0.33 -> 0 and 1.5 / 0.6 - 0.5 = 2 -> 2.
  Tensor x = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = run_ref1("Resize", {x, kNone, scales({1, 1, 0.6f, 0.6f})});
  EXPECT_EQ(y.shape(), (Dims{1, 1, 1, 2}));
  EXPECT_EQ(values<float>(y), (F{1, 3}));
}

TEST(RefMiscResize, NearestModesWithSizes) {
  Tensor sizes = i64({1, 1, 8, 8});
  // half_pixel, ceil: x = o / 2 - 0.25 = -0.25, 0.25, 0.75, ... 3.25 -> 0,1,1,2,2,3,3,3(clamped).
  EXPECT_EQ(values<float>(run_ref1("Resize", {four_by_four(), kNone, kNone, sizes},
                                   attrs("nearest", "half_pixel", "ceil"))),
            gather_8x8({0, 1, 1, 2, 2, 3, 3, 3}));
  // align_corners, floor: x = 3o / 7 = 0, .43, .86, 1.29, 1.71, 2.14, 2.57, 3.
  EXPECT_EQ(values<float>(run_ref1("Resize", {four_by_four(), kNone, kNone, sizes},
                                   attrs("nearest", "align_corners", "floor"))),
            gather_8x8({0, 0, 0, 1, 1, 2, 2, 3}));
  // asymmetric: x = o / 2 = 0, .5, 1, 1.5, ...; ties go up or down per nearest_mode.
  EXPECT_EQ(values<float>(run_ref1("Resize", {four_by_four(), kNone, kNone, sizes},
                                   attrs("nearest", "asymmetric", "round_prefer_ceil"))),
            gather_8x8({0, 1, 1, 2, 2, 3, 3, 3}));
  EXPECT_EQ(values<float>(run_ref1("Resize", {four_by_four(), kNone, kNone, sizes},
                                   attrs("nearest", "asymmetric", "round_prefer_floor"))),
            gather_8x8({0, 0, 1, 1, 2, 2, 3, 3}));
  // tf_half_pixel_for_nn (opset 11): x = (o + 0.5) / 2 = .25, .75, 1.25, ... -> 0,1,1,2,2,3,3,4->3.
  EXPECT_EQ(values<float>(run_ref1("Resize", {four_by_four(), kNone, kNone, sizes},
                                   attrs("nearest", "tf_half_pixel_for_nn"), 11)),
            gather_8x8({0, 1, 1, 2, 2, 3, 3, 3}));
}

TEST(RefMiscResize, NearestKeepsIntegerTypes) {
  Tensor x = Tensor::from_vector<int32_t>({1, 2}, {7, -9});
  Tensor y = run_ref1("Resize", {x, kNone, scales({1, 2})}, attrs("nearest", "asymmetric"));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{7, 7, -9, -9}));
}

TEST(RefMiscResize, LinearHalfPixel) {
  // 1-D weights: x = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1):
  // [1, 2] -> [1, 1.25, 1.75, 2]; [3, 4] -> [3, 3.25, 3.75, 4]; rows mix the same way.
  Tensor y = run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 2, 2})},
                      attrs("linear", "half_pixel"));
  expect_close(y, f32({1, 1, 4, 4}, {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f,
                                     3.25f, 3.5f, 3, 3.25f, 3.75f, 4}));
}

TEST(RefMiscResize, LinearAlignCornersAndAsymmetric) {
  // align_corners: x = o / 3 -> [1, 4/3, 5/3, 2] per row, rows offset by 2 * x.
  Tensor y = run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 2, 2})},
                      attrs("linear", "align_corners"));
  F want;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) want.push_back(1 + 2 * (i / 3.0f) + j / 3.0f);
  }
  expect_close(y, f32({1, 1, 4, 4}, want));
  // asymmetric: x = o / 2 = 0, 0.5, 1, 1.5 (clamped to 1).
  Tensor z = run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 2, 2})},
                      attrs("linear", "asymmetric"));
  expect_close(z, f32({1, 1, 4, 4}, {1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4}));
}

TEST(RefMiscResize, LinearPytorchHalfPixelSingleRow) {
  // One output row: pytorch_half_pixel reads row 0, half_pixel reads x = 0.5 / 0.5 - 0.5 = 0.5.
  Tensor sizes = i64({1, 1, 1, 4});
  Tensor p = run_ref1("Resize", {two_by_two(), kNone, kNone, sizes},
                      attrs("linear", "pytorch_half_pixel"));
  expect_close(p, f32({1, 1, 1, 4}, {1, 1.25f, 1.75f, 2}));
  Tensor h = run_ref1("Resize", {two_by_two(), kNone, kNone, sizes}, attrs("linear", "half_pixel"));
  expect_close(h, f32({1, 1, 1, 4}, {2, 2.25f, 2.75f, 3}));
}

TEST(RefMiscResize, LinearDownsample) {
  // Rows: x = 0.33 -> 1 + 4/3 offset; cols: x = 0.33 and 2 -> 1 + 1/3 + 4/3, 3 + 4/3.
  Tensor x = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y =
      run_ref1("Resize", {x, kNone, scales({1, 1, 0.6f, 0.6f})}, attrs("linear", "half_pixel"));
  expect_close(y, f32({1, 1, 1, 2}, {2.6666667f, 4.3333333f}));
}

TEST(RefMiscResize, TfCropAndResize) {
  // Rows: x = 0.4 * 3 + o * 0.2 * 3 / 2 = 1.2, 1.5, 1.8; cols: 1.8, 2.1, 2.4; value 4r + c + 1.
  Tensor roi = scales({0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f});
  Tensor y = run_ref1("Resize", {four_by_four(), roi, kNone, i64({1, 1, 3, 3})},
                      attrs("linear", "tf_crop_and_resize"));
  expect_close(y, f32({1, 1, 3, 3}, {7.6f, 7.9f, 8.2f, 8.8f, 9.1f, 9.4f, 10, 10.3f, 10.6f}), 1e-4f);
  // Rows 1.2, 2.4, 3.6 (outside); cols 1.8, 3.45 (outside), 5.1 (outside).
  Tensor roi2 = scales({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f});
  auto a = attrs("linear", "tf_crop_and_resize");
  a["extrapolation_value"] = attr_float(10);
  Tensor z = run_ref1("Resize", {four_by_four(), roi2, kNone, i64({1, 1, 3, 3})}, a);
  expect_close(z, f32({1, 1, 3, 3}, {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10}), 1e-4f);
}

// Cubic convolution with coefficient a at distance d, as the spec defines it.
double cubic_kernel(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// 1-D cubic half_pixel resize of v to n outputs, written from the spec independently of the
// kernel: neighbours beyond the edge repeat the edge, or are dropped when exclude_outside.
std::vector<double> cubic_1d(const std::vector<double>& v, int n, double a, bool exclude) {
  int len = static_cast<int>(v.size());
  std::vector<double> out;
  for (int o = 0; o < n; ++o) {
    double x = (o + 0.5) * len / n - 0.5, acc = 0, wsum = 0;
    int base = static_cast<int>(std::floor(x));
    for (int i = base - 1; i <= base + 2; ++i) {
      if (exclude && (i < 0 || i >= len)) continue;
      double w = cubic_kernel(x - i, a);
      acc += w * v[static_cast<size_t>(std::clamp(i, 0, len - 1))];
      wsum += w;
    }
    out.push_back(exclude ? acc / wsum : acc);
  }
  return out;
}

TEST(RefMiscResize, CubicHalfPixel) {
  // The input is 4r + c + 1 and weights sum to 1, so the output is 4 R(o) + C(o) + 1 with R, C
  // the 1-D resizes of [0, 1, 2, 3].
  std::vector<double> r = cubic_1d({0, 1, 2, 3}, 8, -0.75, false);
  F want;
  for (double ri : r) {
    for (double cj : r) want.push_back(static_cast<float>(4 * ri + cj + 1));
  }
  EXPECT_NEAR(want[0], 0.47265625, 1e-7);  // worked by hand: 1 + 5 * (-0.10546875)
  Tensor y = run_ref1("Resize", {four_by_four(), kNone, scales({1, 1, 2, 2})},
                      attrs("cubic", "half_pixel"));
  expect_close(y, f32({1, 1, 8, 8}, want), 1e-5f);
}

TEST(RefMiscResize, CubicExcludeOutside) {
  std::vector<double> r = cubic_1d({0, 1, 2, 3}, 8, -0.5, true);
  F want;
  for (double ri : r) {
    for (double cj : r) want.push_back(static_cast<float>(4 * ri + cj + 1));
  }
  EXPECT_NEAR(want[0], 0.5588235, 1e-6);  // 1 + 5 * (-0.0703125 / 0.796875)
  auto a = attrs("cubic", "half_pixel");
  a["cubic_coeff_a"] = attr_float(-0.5f);
  a["exclude_outside"] = attr_int(1);
  Tensor y = run_ref1("Resize", {four_by_four(), kNone, scales({1, 1, 2, 2})}, a);
  expect_close(y, f32({1, 1, 8, 8}, want), 1e-5f);
}

TEST(RefMiscResize, Opset11EmptyInputs) {
  // Opset 11: roi and scales present but empty, sizes given.
  Tensor empty(DType::kFloat32, {0});
  Tensor y = run_ref1("Resize", {two_by_two(), empty, empty, i64({1, 1, 4, 4})},
                      attrs("linear", "half_pixel"), 11);
  EXPECT_EQ(y.shape(), (Dims{1, 1, 4, 4}));
  EXPECT_NEAR(values<float>(y)[1], 1.25f, 1e-6);
}

TEST(RefMiscResize, Errors) {
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 2, 2}), i64({1, 1, 4, 4})}),
               Error);
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, kNone, kNone}), Error);
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, scales({2, 2})}), Error);
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 2, 2})}, {}, 10), Error);
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, -2, 2})}), Error);
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 1e30f, 1e30f})}), Error);
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, kNone, i64({1, 1, -1, 2})}), Error);
  Tensor ints = Tensor::from_vector<int32_t>({1, 2}, {1, 2});
  EXPECT_THROW(run_ref1("Resize", {ints, kNone, scales({1, 2})}, attrs("linear", "half_pixel")),
               Error);
  EXPECT_THROW(run_ref1("Resize", {two_by_two(), kNone, scales({1, 1, 2, 2})},
                        attrs("linear", "tf_crop_and_resize")),
               Error);  // no roi
}

}  // namespace resize_test
}  // namespace nnfuse
