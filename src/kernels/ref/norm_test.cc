#include <cmath>
#include <random>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace norm_test {

using testing::expect_close;
using testing::run_ref;
using testing::run_ref1;
using testing::values;

using testing::random_tensor;

float at(const Tensor& t, int64_t i) { return t.data<float>()[i]; }

TEST(RefNnNorm, BatchNormalizationFormula) {
  const int64_t n = 2, c = 3, hw = 4;
  Tensor x = random_tensor({n, c, 2, 2}, 1);
  Tensor scale = random_tensor({c}, 2), b = random_tensor({c}, 3);
  Tensor mean = random_tensor({c}, 4), var = random_tensor({c}, 5, 0.1f, 2.0f);
  const float eps = 1e-3f;
  Tensor y =
      run_ref1("BatchNormalization", {x, scale, b, mean, var}, {{"epsilon", attr_float(eps)}});
  Tensor want(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t ch = (i / hw) % c;
    want.data<float>()[i] = static_cast<float>(
        (at(x, i) - at(mean, ch)) / std::sqrt(double{at(var, ch)} + eps) * at(scale, ch) +
        at(b, ch));
  }
  expect_close(y, want);
  // Hand-computed, rank 2 input and default epsilon.
  Tensor x2 = Tensor::from_vector<float>({1, 2}, {3, 5});
  Tensor ones = Tensor::from_vector<float>({2}, {1, 2});
  Tensor zeros = Tensor::from_vector<float>({2}, {0, 1});
  Tensor v = Tensor::from_vector<float>({2}, {4, 1});
  Tensor y2 =
      run_ref1("BatchNormalization", {x2, ones, zeros, zeros, v}, {{"epsilon", attr_float(0.0f)}});
  EXPECT_EQ(values<float>(y2), (std::vector<float>{1.5, 9}));
}

// Training mode: the batch's own statistics, and the running ones updated by momentum.
TEST(RefNnNorm, BatchNormalizationTrainingMode) {
  // One channel over N = 2, 2 elements: values 1, 3, 5, 7 (mean 4, population var 5).
  Tensor x = Tensor::from_vector<float>({2, 1, 2}, {1, 3, 5, 7});
  Tensor one = Tensor::from_vector<float>({1}, {1}), zero = Tensor::from_vector<float>({1}, {0});
  auto out = run_ref("BatchNormalization", {x, one, zero, zero, one},
                     {{"training_mode", attr_int(1)},
                      {"epsilon", attr_float(0.0f)},
                      {"momentum", attr_float(0.5f)}},
                     3, 15);
  const float sd = std::sqrt(5.0f);
  EXPECT_NEAR(values<float>(out[0])[0], -3 / sd, 1e-6);
  EXPECT_NEAR(values<float>(out[0])[3], 3 / sd, 1e-6);
  EXPECT_NEAR(values<float>(out[1])[0], 0 * 0.5f + 4 * 0.5f, 1e-6);
  EXPECT_NEAR(values<float>(out[2])[0], 1 * 0.5f + 5 * 0.5f, 1e-6);
  // Before opset 14 training_mode does not exist: unsupported, naming it.
  try {
    run_ref1("BatchNormalization", {x, one, zero, zero, one}, {{"training_mode", attr_int(1)}}, 9);
    FAIL() << "expected an unsupported error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("training_mode"), std::string::npos);
  }
  // Running-statistics outputs without training mode.
  Tensor xr = random_tensor({1, 2, 2}, 1), p = random_tensor({2}, 2, 0.5f, 1.0f);
  EXPECT_THROW(run_ref("BatchNormalization", {xr, p, p, p, p}, {}, 3), Error);
  // Parameters of the wrong size.
  Tensor p3 = random_tensor({3}, 3);
  EXPECT_THROW(run_ref1("BatchNormalization", {xr, p, p, p3, p}), Error);
}

TEST(RefNnNorm, LayerNormalizationFormula) {
  const Dims shape = {2, 3, 4};
  Tensor x = random_tensor(shape, 1);
  for (int64_t axis : {-1, 1}) {
    SCOPED_TRACE(axis);
    const int64_t inner = axis == -1 ? 4 : 12, outer = 24 / inner;
    Dims norm_shape = axis == -1 ? Dims{4} : Dims{3, 4};
    Tensor scale = random_tensor(norm_shape, 2), b = random_tensor(norm_shape, 3);
    std::vector<Tensor> out =
        run_ref("LayerNormalization", {x, scale, b},
                {{"axis", attr_int(axis)}, {"epsilon", attr_float(1e-4f)}}, 3);
    Dims stat_shape = axis == -1 ? Dims{2, 3, 1} : Dims{2, 1, 1};
    ASSERT_EQ(out[1].shape(), stat_shape);
    ASSERT_EQ(out[2].shape(), stat_shape);
    Tensor want(DType::kFloat32, shape);
    for (int64_t r = 0; r < outer; ++r) {
      double s = 0, ss = 0;
      for (int64_t i = 0; i < inner; ++i) s += at(x, r * inner + i);
      double mu = s / inner;
      for (int64_t i = 0; i < inner; ++i) ss += std::pow(at(x, r * inner + i) - mu, 2);
      double inv = 1 / std::sqrt(ss / inner + 1e-4f);
      EXPECT_NEAR(at(out[1], r), mu, 1e-6);
      EXPECT_NEAR(at(out[2], r), inv, 1e-5);
      for (int64_t i = 0; i < inner; ++i) {
        want.data<float>()[r * inner + i] =
            static_cast<float>((at(x, r * inner + i) - mu) * inv * at(scale, i) + at(b, i));
      }
    }
    expect_close(out[0], want);
  }
  // Without B, default axis and epsilon: rows normalized to mean 0, variance ~1.
  Tensor x2 = Tensor::from_vector<float>({1, 4}, {1, 2, 3, 4});
  Tensor one = Tensor::from_vector<float>({4}, {1, 1, 1, 1});
  Tensor y = run_ref1("LayerNormalization", {x2, one});
  const double inv = 1 / std::sqrt(1.25 + 1e-5);
  std::vector<float> got = values<float>(y);
  EXPECT_NEAR(got[0], -1.5 * inv, 1e-6);
  EXPECT_NEAR(got[3], 1.5 * inv, 1e-6);
  // Bad axis, scale that does not broadcast.
  EXPECT_THROW(run_ref1("LayerNormalization", {x2, one}, {{"axis", attr_int(2)}}), Error);
  EXPECT_THROW(run_ref1("LayerNormalization", {x2, random_tensor({3}, 1)}), Error);
  EXPECT_THROW(run_ref1("LayerNormalization", {x2, one}, {{"stash_type", attr_int(11)}}), Error);
}

TEST(RefNnNorm, InstanceNormalization) {
  Tensor x = random_tensor({2, 3, 5}, 1);
  Tensor scale = random_tensor({3}, 2), b = random_tensor({3}, 3);
  Tensor y = run_ref1("InstanceNormalization", {x, scale, b}, {{"epsilon", attr_float(1e-3f)}});
  Tensor want(DType::kFloat32, x.shape());
  for (int64_t p = 0; p < 6; ++p) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < 5; ++i) s += at(x, p * 5 + i);
    double mu = s / 5;
    for (int64_t i = 0; i < 5; ++i) ss += std::pow(at(x, p * 5 + i) - mu, 2);
    double sd = std::sqrt(ss / 5 + 1e-3f);
    for (int64_t i = 0; i < 5; ++i) {
      want.data<float>()[p * 5 + i] =
          static_cast<float>((at(x, p * 5 + i) - mu) / sd * at(scale, p % 3) + at(b, p % 3));
    }
  }
  expect_close(y, want);
  EXPECT_THROW(run_ref1("InstanceNormalization", {x, random_tensor({2}, 2), b}), Error);
}

TEST(RefNnNorm, Lrn) {
  const int64_t c = 5, hw = 3, size = 3;
  Tensor x = random_tensor({2, c, 1, hw}, 1);
  const float alpha = 0.02f, beta = 0.6f, bias = 2.0f;
  Tensor y = run_ref1("LRN", {x},
                      {{"size", attr_int(size)},
                       {"alpha", attr_float(alpha)},
                       {"beta", attr_float(beta)},
                       {"bias", attr_float(bias)}});
  Tensor want(DType::kFloat32, x.shape());
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t i = 0; i < hw; ++i) {
        double sq = 0;
        for (int64_t q = ch - 1; q <= ch + 1; ++q) {
          if (q >= 0 && q < c) sq += std::pow(at(x, (n * c + q) * hw + i), 2);
        }
        int64_t idx = (n * c + ch) * hw + i;
        want.data<float>()[idx] =
            static_cast<float>(at(x, idx) / std::pow(bias + double{alpha} / size * sq, beta));
      }
    }
  }
  expect_close(y, want);
  // Even size: the window reaches floor((size-1)/2) below and ceil((size-1)/2) above.
  Tensor x1 = Tensor::from_vector<float>({1, 3}, {1, 2, 3});
  Tensor y1 = run_ref1("LRN", {x1},
                       {{"size", attr_int(2)},
                        {"alpha", attr_float(2.0f)},
                        {"beta", attr_float(1.0f)},
                        {"bias", attr_float(0.0f)}});
  EXPECT_EQ(values<float>(y1), (std::vector<float>{1.0f / 5, 2.0f / 13, 3.0f / 9}));
  EXPECT_THROW(run_ref1("LRN", {x1}), Error);  // size is required
}

TEST(RefNnNorm, MeanVarianceNormalization) {
  // Default axes [0, 2, 3]: per channel over N, H, W.
  Tensor x = Tensor::from_vector<float>({2, 2, 1, 1}, {1, 10, 3, 30});
  Tensor y = run_ref1("MeanVarianceNormalization", {x});
  std::vector<float> got = values<float>(y);
  EXPECT_NEAR(got[0], -1.0, 1e-6);
  EXPECT_NEAR(got[2], 1.0, 1e-6);
  EXPECT_NEAR(got[1], -1.0, 1e-6);
  EXPECT_NEAR(got[3], 1.0, 1e-6);
  // Explicit axes on a 2-D tensor.
  Tensor x2 = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 2, 2, 2});
  Tensor y2 = run_ref1("MeanVarianceNormalization", {x2}, {{"axes", attr_ints({1})}});
  const double sd = std::sqrt(2.0 / 3.0) + 1e-9;
  got = values<float>(y2);
  EXPECT_NEAR(got[0], -1 / sd, 1e-6);
  EXPECT_NEAR(got[1], 0, 1e-6);
  EXPECT_NEAR(got[2], 1 / sd, 1e-6);
  EXPECT_NEAR(got[4], 0, 1e-6);                                      // constant row: 0 / (0 + 1e-9)
  EXPECT_THROW(run_ref1("MeanVarianceNormalization", {x2}), Error);  // axes 2, 3 out of range
}

TEST(RefNnNorm, UnsupportedDtypes) {
  for (const char* op : {"LayerNormalization", "InstanceNormalization", "BatchNormalization"}) {
    SCOPED_TRACE(op);
    Tensor x(DType::kInt32, {1, 2, 2});
    Tensor p(DType::kInt32, {2});
    std::vector<Tensor> ins = {x, p, p};
    if (std::string(op) == "BatchNormalization") ins = {x, p, p, p, p};
    try {
      run_ref1(op, ins);
      FAIL() << "expected an unsupported error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    }
  }
}

}  // namespace norm_test
}  // namespace nnfuse
