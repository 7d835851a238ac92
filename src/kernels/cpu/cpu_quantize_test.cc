// cpu.quantize_linear and cpu.dequantize_linear against the reference kernels, exactly: per
// tensor and per axis (first, middle, last), int8 and uint8 (int32 for Dequantize), with and
// without a zero point, channels-last data per tensor, and quotients that tie, saturate, are
// infinite or NaN.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_quantize_test {

using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;
using testing::run_ref1;

Tensor cast(const Tensor& t, DType to) {
  return run_ref1("Cast", {t}, {{"to", attr_int(static_cast<int64_t>(to))}});
}

// x over [-40, 40] with ties (k + 0.5 quarters), huge, infinite, NaN and signed-zero values.
Tensor awkward(const Dims& shape, uint32_t seed) {
  Tensor x = random_tensor(shape, seed, -40.0f, 40.0f);
  float* p = x.data<float>();
  const float special[] = {2.625f,
                           -2.625f,
                           0.125f,
                           -0.125f,
                           1e30f,
                           -1e30f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           -0.0f,
                           31.875f,
                           -32.125f};
  for (int64_t i = 0; i < x.numel() && i < 12; ++i) p[i * 5 % x.numel()] = special[i];
  return x;
}

TEST(CpuQuantize, QuantizeMatchesTheReferenceKernel) {
  const Dims shape = {2, 6, 5, 7};
  uint32_t seed = 1;
  for (DType q : {DType::kInt8, DType::kUInt8}) {
    for (int64_t axis : {int64_t{-100}, int64_t{0}, int64_t{1}, int64_t{-1}}) {  // -100: per tensor
      for (bool with_zp : {true, false}) {
        if (!with_zp && q == DType::kInt8) continue;  // no zero point means uint8
        SCOPED_TRACE(dtype_name(q) + " axis " + std::to_string(axis) + (with_zp ? " zp" : ""));
        const int64_t count = axis == -100 ? 1 : shape[static_cast<size_t>(axis < 0 ? 3 : axis)];
        Tensor s = random_tensor(axis == -100 ? Dims{} : Dims{count}, seed++, 0.05f, 0.5f);
        s.data<float>()[0] = 0.25f;  // exact quarters: ties round to even
        Tensor z =
            cast(random_tensor(s.shape(), seed++, q == DType::kInt8 ? -20.0f : 0.0f, 20.0f), q);
        std::vector<FastInput> in = {{awkward(shape, seed++)}, {s, true}};
        if (with_zp) in.push_back({z, true});
        std::map<std::string, Attribute> attrs;
        if (axis != -100) attrs["axis"] = attr_int(axis);
        expect_matches_ref("cpu.quantize_linear", "QuantizeLinear", in, attrs, 1, 0.0f, 0.0f, 13);
      }
    }
  }
}

TEST(CpuQuantize, DequantizeMatchesTheReferenceKernel) {
  const Dims shape = {3, 4, 9};
  uint32_t seed = 50;
  for (DType t : {DType::kInt8, DType::kUInt8, DType::kInt32}) {
    for (int64_t axis : {int64_t{-100}, int64_t{1}, int64_t{2}}) {
      SCOPED_TRACE(dtype_name(t) + " axis " + std::to_string(axis));
      const float lo = t == DType::kUInt8 ? 0.0f : t == DType::kInt8 ? -128.0f : -3e6f;
      const float hi = t == DType::kInt32 ? 3e6f : 127.0f;
      const int64_t count = axis == -100 ? 1 : shape[static_cast<size_t>(axis)];
      const Dims ps = axis == -100 ? Dims{} : Dims{count};
      std::vector<FastInput> in = {{cast(random_tensor(shape, seed++, lo, hi), t)},
                                   {random_tensor(ps, seed++, 0.001f, 0.3f), true},
                                   {cast(random_tensor(ps, seed++, lo / 2, hi / 2), t), true}};
      std::map<std::string, Attribute> attrs;
      if (axis != -100) attrs["axis"] = attr_int(axis);
      expect_matches_ref("cpu.dequantize_linear", "DequantizeLinear", in, attrs, 1, 0.0f, 0.0f, 13);
      in.pop_back();  // no zero point
      expect_matches_ref("cpu.dequantize_linear", "DequantizeLinear", in, attrs, 1, 0.0f, 0.0f, 13);
    }
  }
}

// Per-tensor parameters over channels-last data keep the layout; a long tensor splits across
// threads.
TEST(CpuQuantize, ChannelsLastAndLargeTensorsPerTensor) {
  const Tensor s = Tensor::from_vector<float>({}, {0.07f});
  const Tensor z = cast(Tensor::from_vector<float>({}, {3.0f}), DType::kUInt8);
  expect_matches_ref("cpu.quantize_linear", "QuantizeLinear",
                     {{awkward({1, 16, 9, 9}, 7), false, Layout::kNHWC}, {s, true}, {z, true}}, {},
                     1, 0.0f, 0.0f, 13);
  expect_matches_ref("cpu.quantize_linear", "QuantizeLinear",
                     {{awkward({1, 64, 56, 56}, 8)}, {s, true}, {z, true}}, {}, 1, 0.0f, 0.0f, 13);
  const Tensor q = cast(random_tensor({1, 64, 56, 56}, 9, 0.0f, 255.0f), DType::kUInt8);
  expect_matches_ref("cpu.dequantize_linear", "DequantizeLinear",
                     {{q, false, Layout::kNHWC}, {s, true}, {z, true}}, {}, 1, 0.0f, 0.0f, 13);
}

TEST(CpuQuantize, DeclinesWhatItDoesNotRun) {
  const Tensor s = Tensor::from_vector<float>({}, {0.5f});
  std::vector<FastInput> int_x = {{cast(random_tensor({4}, 1, -9.0f, 9.0f), DType::kInt32)},
                                  {s, true}};
  EXPECT_EQ(testing::run_kernel("QuantizeLinear", int_x, {}, 1, "", 13).kernel, "ref");
  std::vector<FastInput> blocked = {{random_tensor({4, 4}, 2)},
                                    {Tensor::from_vector<float>({4, 2}, std::vector<float>(8, 1))}};
  EXPECT_FALSE(testing::OneNode("QuantizeLinear", blocked, {{"block_size", attr_int(2)}}).node ==
               nullptr);
  EXPECT_THROW(testing::run_kernel("QuantizeLinear", blocked, {{"block_size", attr_int(2)}}, 1,
                                   "cpu.quantize_linear", 21),
               Error);
  // A per-axis scale that does not fit the data: the reference kernel's error.
  std::vector<FastInput> bad = {{random_tensor({2, 3}, 3)},
                                {Tensor::from_vector<float>({2}, {0.5f, 0.25f})}};
  EXPECT_THROW(testing::run_kernel("QuantizeLinear", bad, {}, 1, "cpu.quantize_linear", 13), Error);
}

}  // namespace cpu_quantize_test
}  // namespace nnfuse
