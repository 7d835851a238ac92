#include <cmath>
#include <limits>
#include <random>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace pool_test {

using testing::expect_close;
using testing::run_ref;
using testing::run_ref1;
using testing::values;

Tensor iota(const Dims& shape, float start = 1) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

TEST(RefNnPool, MaxPool2dWithIndices) {
  Tensor x = iota({1, 1, 4, 4});
  auto attrs = std::map<std::string, Attribute>{{"kernel_shape", attr_ints({2, 2})},
                                                {"strides", attr_ints({2, 2})}};
  std::vector<Tensor> out = run_ref("MaxPool", {x}, attrs, 2);
  EXPECT_EQ(out[0].shape(), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{6, 8, 14, 16}));
  EXPECT_EQ(out[1].dtype(), DType::kInt64);
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{5, 7, 13, 15}));
  // Column-major indices: h + w * H.
  attrs["storage_order"] = attr_int(1);
  out = run_ref("MaxPool", {x}, attrs, 2);
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{5, 13, 7, 15}));
}

TEST(RefNnPool, MaxPoolIndicesCountWholeTensor) {
  // Indices are flat over N x C x spatial; the first maximum of a window wins.
  Tensor x = Tensor::from_vector<float>({2, 1, 3}, {1, 5, 5, 7, 2, 7});
  auto out = run_ref("MaxPool", {x}, {{"kernel_shape", attr_ints({3})}}, 2);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{5, 7}));
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{1, 3}));
}

TEST(RefNnPool, MaxPoolPadsDilationsAndNan) {
  Tensor x = Tensor::from_vector<float>({1, 1, 5}, {3, -1, 4, -5, 9});
  Tensor y = run_ref1("MaxPool", {x},
                      {{"kernel_shape", attr_ints({2})},
                       {"dilations", attr_ints({2})},
                       {"pads", attr_ints({1, 1})}});
  // Windows (dilated span 3) start at -1, 0, 1, 2, 3: taps {-1,1}, {0,2}, {1,3}, {2,4}, {3,5}.
  EXPECT_EQ(values<float>(y), (std::vector<float>{-1, 4, -1, 9, -5}));
  x.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  y = run_ref1("MaxPool", {x}, {{"kernel_shape", attr_ints({3})}});
  EXPECT_TRUE(std::isnan(values<float>(y)[0]));
  EXPECT_TRUE(std::isnan(values<float>(y)[2]));
}

TEST(RefNnPool, MaxPoolCeilMode) {
  Tensor x = iota({1, 1, 5});
  auto attrs = std::map<std::string, Attribute>{{"kernel_shape", attr_ints({2})},
                                                {"strides", attr_ints({2})}};
  EXPECT_EQ(values<float>(run_ref1("MaxPool", {x}, attrs)), (std::vector<float>{2, 4}));
  attrs["ceil_mode"] = attr_int(1);
  EXPECT_EQ(values<float>(run_ref1("MaxPool", {x}, attrs)), (std::vector<float>{2, 4, 5}));
  // A last window that would start in the end padding is dropped: in 5, kernel 2, stride 3,
  // pads (0, 1) gives ceil(4 / 3) + 1 = 3 windows, but the third would start at 6.
  Tensor y = run_ref1("MaxPool", {x},
                      {{"kernel_shape", attr_ints({2})},
                       {"strides", attr_ints({3})},
                       {"pads", attr_ints({0, 1})},
                       {"ceil_mode", attr_int(1)}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 5}));
}

TEST(RefNnPool, MaxPoolAutoPad) {
  // ONNX's test case maxpool_2d_precomputed_same_upper.
  Tensor x = iota({1, 1, 5, 5});
  Tensor y = run_ref1("MaxPool", {x},
                      {{"kernel_shape", attr_ints({3, 3})},
                       {"strides", attr_ints({2, 2})},
                       {"auto_pad", attr_string("SAME_UPPER")}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{7, 9, 10, 17, 19, 20, 22, 24, 25}));
  // SAME_LOWER puts the odd padding first: 1-D, in 4, kernel 2 -> pads (1, 0).
  Tensor x4 = Tensor::from_vector<float>({1, 1, 4}, {4, 1, 2, 3});
  y = run_ref1("MaxPool", {x4},
               {{"kernel_shape", attr_ints({2})}, {"auto_pad", attr_string("SAME_LOWER")}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{4, 4, 2, 3}));
  y = run_ref1("MaxPool", {x4},
               {{"kernel_shape", attr_ints({2})}, {"auto_pad", attr_string("SAME_UPPER")}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{4, 2, 3, 3}));
  y = run_ref1("MaxPool", {x4},
               {{"kernel_shape", attr_ints({3})}, {"auto_pad", attr_string("VALID")}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{4, 3}));
}

TEST(RefNnPool, MaxPool3d) {
  Tensor x = iota({1, 2, 2, 3, 4});
  Tensor y = run_ref1("MaxPool", {x},
                      {{"kernel_shape", attr_ints({2, 2, 2})}, {"strides", attr_ints({1, 1, 2})}});
  EXPECT_EQ(y.shape(), (Dims{1, 2, 1, 2, 2}));
  // Window max is its last element: (d=1, h+1, w+1) in each channel.
  EXPECT_EQ(values<float>(y), (std::vector<float>{18, 20, 22, 24, 42, 44, 46, 48}));
}

TEST(RefNnPool, AveragePoolCountIncludePad) {
  Tensor x = iota({1, 1, 5});
  auto attrs = std::map<std::string, Attribute>{
      {"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}, {"pads", attr_ints({1, 1})}};
  // Windows [-1, 1], [1, 3], [3, 5].
  EXPECT_EQ(values<float>(run_ref1("AveragePool", {x}, attrs)), (std::vector<float>{1.5, 3, 4.5}));
  attrs["count_include_pad"] = attr_int(1);
  EXPECT_EQ(values<float>(run_ref1("AveragePool", {x}, attrs)), (std::vector<float>{1, 3, 3}));
}

TEST(RefNnPool, AveragePoolCeilMode) {
  Tensor x = iota({1, 1, 6});
  auto attrs = std::map<std::string, Attribute>{{"kernel_shape", attr_ints({3})},
                                                {"strides", attr_ints({2})},
                                                {"pads", attr_ints({1, 1})},
                                                {"ceil_mode", attr_int(1)}};
  // Windows start at -1, 1, 3, 5; the last covers 5 (value 6), the end pad 6 and beyond (7).
  EXPECT_EQ(values<float>(run_ref1("AveragePool", {x}, attrs)), (std::vector<float>{1.5, 3, 5, 6}));
  attrs["count_include_pad"] = attr_int(1);
  // The divisor counts taps inside the padded input only: 3, 3, 3, 2.
  EXPECT_EQ(values<float>(run_ref1("AveragePool", {x}, attrs)), (std::vector<float>{1, 3, 5, 3}));
}

TEST(RefNnPool, AveragePool2dAgainstFormula) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor x(DType::kFloat32, {2, 3, 7, 6});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(gen);
  for (int64_t include : {0, 1}) {
    Tensor y = run_ref1("AveragePool", {x},
                        {{"kernel_shape", attr_ints({3, 2})},
                         {"strides", attr_ints({2, 2})},
                         {"pads", attr_ints({1, 0, 1, 1})},
                         {"count_include_pad", attr_int(include)}});
    ASSERT_EQ(y.shape(), (Dims{2, 3, 4, 3}));
    Tensor want(DType::kFloat32, y.shape());
    for (int64_t p = 0; p < 6; ++p) {
      for (int64_t oh = 0; oh < 4; ++oh) {
        for (int64_t ow = 0; ow < 3; ++ow) {
          double s = 0;
          int64_t n = 0;
          for (int64_t kh = 0; kh < 3; ++kh) {
            for (int64_t kw = 0; kw < 2; ++kw) {
              int64_t h = oh * 2 - 1 + kh, w = ow * 2 + kw;
              if (h >= 0 && h < 7 && w >= 0 && w < 6) {
                s += x.data<float>()[(p * 7 + h) * 6 + w];
                ++n;
              } else if (include) {
                ++n;
              }
            }
          }
          want.data<float>()[(p * 4 + oh) * 3 + ow] = static_cast<float>(s / n);
        }
      }
    }
    expect_close(y, want);
  }
}

TEST(RefNnPool, GlobalPools) {
  Tensor x = Tensor::from_vector<float>({1, 2, 2, 2}, {1, 2, 3, 4, -5, -6, -7, -8});
  Tensor avg = run_ref1("GlobalAveragePool", {x});
  EXPECT_EQ(avg.shape(), (Dims{1, 2, 1, 1}));
  EXPECT_EQ(values<float>(avg), (std::vector<float>{2.5, -6.5}));
  Tensor mx = run_ref1("GlobalMaxPool", {x});
  EXPECT_EQ(mx.shape(), (Dims{1, 2, 1, 1}));
  EXPECT_EQ(values<float>(mx), (std::vector<float>{4, -5}));
  Tensor x1 = Tensor::from_vector<double>({1, 1, 3}, {1, 2, 6});
  EXPECT_EQ(values<double>(run_ref1("GlobalAveragePool", {x1})), (std::vector<double>{3}));
}

TEST(RefNnPool, ErrorsAndUnsupported) {
  Tensor x = iota({1, 1, 4, 4});
  EXPECT_THROW(run_ref1("MaxPool", {x}), Error);  // no kernel_shape
  EXPECT_THROW(run_ref1("MaxPool", {x}, {{"kernel_shape", attr_ints({2})}}), Error);
  EXPECT_THROW(run_ref1("AveragePool", {x}, {{"kernel_shape", attr_ints({5, 5})}}), Error);
  EXPECT_THROW(run_ref1("MaxPool", {iota({4, 4})}, {{"kernel_shape", attr_ints({2, 2})}}), Error);
  // Pads as wide as the window.
  EXPECT_THROW(run_ref1("AveragePool", {x},
                        {{"kernel_shape", attr_ints({2, 2})}, {"pads", attr_ints({0, 2, 0, 0})}}),
               Error);
  Tensor xi(DType::kUInt8, {1, 1, 4, 4});
  try {
    run_ref1("MaxPool", {xi}, {{"kernel_shape", attr_ints({2, 2})}});
    FAIL() << "expected an unsupported error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
  EXPECT_THROW(run_ref1("MaxPool", {x},
                        {{"kernel_shape", attr_ints({2, 2})}, {"storage_order", attr_int(2)}}),
               Error);
}

}  // namespace pool_test
}  // namespace nnfuse
