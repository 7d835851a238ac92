// Tests of the quantization reference kernels (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv) on
// hand-computed cases: rounding half to even, saturation, per-axis / per-row / per-channel
// parameters, absent zero points, and errors.
#include <cstdint>
#include <string>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace quant_test {

using testing::run_ref;
using testing::run_ref1;
using testing::values;
using F = std::vector<float>;
using U8 = std::vector<uint8_t>;
using I8 = std::vector<int8_t>;
using I32 = std::vector<int32_t>;

Tensor f32(Dims shape, const F& v) { return Tensor::from_vector<float>(std::move(shape), v); }
Tensor u8(Dims shape, const U8& v) { return Tensor::from_vector<uint8_t>(std::move(shape), v); }
Tensor i8(Dims shape, const I8& v) { return Tensor::from_vector<int8_t>(std::move(shape), v); }

TEST(RefQuant, QuantizeRoundsHalfToEvenAndSaturates) {
  Tensor x = f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1000, -1000});
  Tensor y =
      run_ref1("QuantizeLinear", {x, Tensor::scalar<float>(1), Tensor::scalar<uint8_t>(128)});
  EXPECT_EQ(y.dtype(), DType::kUInt8);
  EXPECT_EQ(values<uint8_t>(y), (U8{128, 130, 130, 128, 126, 255, 0}));

  // int8 zero point: int8 output, saturating to [-128, 127]; x / scale = 2.5, -2.5, 3.5, ...
  Tensor x2 = f32({5}, {5, -5, 7, 400, -400});
  Tensor y2 = run_ref1("QuantizeLinear", {x2, Tensor::scalar<float>(2), Tensor::scalar<int8_t>(0)});
  EXPECT_EQ(y2.dtype(), DType::kInt8);
  EXPECT_EQ(values<int8_t>(y2), (I8{2, -2, 4, 127, -128}));
}

TEST(RefQuant, QuantizeWithoutZeroPointIsUInt8) {
  Tensor y = run_ref1("QuantizeLinear", {f32({3}, {-1, 1.5f, 3}), Tensor::scalar<float>(1)});
  EXPECT_EQ(y.dtype(), DType::kUInt8);
  EXPECT_EQ(values<uint8_t>(y), (U8{0, 2, 3}));
  // An int32 input is quantized too.
  Tensor yi = run_ref1("QuantizeLinear", {Tensor::from_vector<int32_t>({3}, {-3, 5, 1000}),
                                          Tensor::scalar<float>(2), Tensor::scalar<int8_t>(1)});
  EXPECT_EQ(values<int8_t>(yi), (I8{-1, 3, 127}));  // -1.5 -> -2, 2.5 -> 2, saturated
}

TEST(RefQuant, QuantizePerAxis) {
  // axis 1 (the default): one scale and zero point per column.
  Tensor x = f32({2, 3}, {1, 2, 4, 3, 5, 6});
  Tensor scale = f32({3}, {1, 2, 4});
  Tensor zp = i8({3}, {0, 10, -10});
  EXPECT_EQ(values<int8_t>(run_ref1("QuantizeLinear", {x, scale, zp})),
            (I8{1, 11, -9, 3, 12, -8}));  // 5 / 2 = 2.5 -> 2, 6 / 4 = 1.5 -> 2
  // axis -2: one per row.
  Tensor y = run_ref1("QuantizeLinear", {x, f32({2}, {1, 0.5f}), u8({2}, {0, 100})},
                      {{"axis", attr_int(-2)}});
  EXPECT_EQ(values<uint8_t>(y), (U8{1, 2, 4, 106, 110, 112}));
}

TEST(RefQuant, Dequantize) {
  Tensor y = run_ref1("DequantizeLinear", {u8({3}, {0, 128, 255}), Tensor::scalar<float>(0.5f),
                                           Tensor::scalar<uint8_t>(128)});
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_EQ(values<float>(y), (F{-64, 0, 63.5f}));
  // int32 without a zero point.
  Tensor yi = run_ref1("DequantizeLinear", {Tensor::from_vector<int32_t>({2}, {-1000, 7}),
                                            Tensor::scalar<float>(0.25f)});
  EXPECT_EQ(values<float>(yi), (F{-250, 1.75f}));
  // Per axis 0.
  Tensor yp = run_ref1("DequantizeLinear",
                       {i8({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 0.5f}), i8({2}, {1, -2})},
                       {{"axis", attr_int(0)}});
  EXPECT_EQ(values<float>(yp), (F{0, 1, 2.5f, 3}));
}

TEST(RefQuant, DynamicQuantize) {
  // Range [-51, 204]: scale 1, zero point 51; 0.5, 1.5, 2.5 round half to even.
  auto out = run_ref("DynamicQuantizeLinear", {f32({6}, {-51, 0, 204, 0.5f, 1.5f, 2.5f})}, {}, 3);
  EXPECT_EQ(values<uint8_t>(out[0]), (U8{0, 51, 255, 51, 53, 53}));
  EXPECT_EQ(out[1].rank(), 0);
  EXPECT_EQ(values<float>(out[1]), (F{1}));
  EXPECT_EQ(values<uint8_t>(out[2]), (U8{51}));
  // The range always includes 0: all-positive data gets zero point 0.
  auto pos = run_ref("DynamicQuantizeLinear", {f32({2}, {255, 127.5f})}, {}, 3);
  EXPECT_EQ(values<uint8_t>(pos[2]), (U8{0}));
  EXPECT_EQ(values<uint8_t>(pos[0]), (U8{255, 128}));  // 127.5 -> 128
  // All zeros: scale 0, everything 0.
  auto zero = run_ref("DynamicQuantizeLinear", {f32({2}, {0, 0})}, {}, 3);
  EXPECT_EQ(values<float>(zero[1]), (F{0}));
  EXPECT_EQ(values<uint8_t>(zero[0]), (U8{0, 0}));
}

TEST(RefQuant, MatMulIntegerPerRowAndColumn) {
  Tensor a = u8({2, 3}, {1, 2, 3, 5, 5, 5});
  Tensor b = i8({3, 2}, {1, -1, 2, -2, 3, -3});
  Tensor a_zp = u8({2}, {1, 4});   // per row of A: A' = [[0, 1, 2], [1, 1, 1]]
  Tensor b_zp = i8({2}, {1, -1});  // per column of B: B' = [[0, 0], [1, -1], [2, -2]]
  Tensor y = run_ref1("MatMulInteger", {a, b, a_zp, b_zp});
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.shape(), (Dims{2, 2}));
  EXPECT_EQ(values<int32_t>(y), (I32{5, -5, 3, -3}));
  // Without zero points.
  EXPECT_EQ(values<int32_t>(run_ref1("MatMulInteger", {a, b})), (I32{14, -14, 30, -30}));
}

TEST(RefQuant, MatMulIntegerBatchedNdZeroPoint) {
  // A [2, 1, 2] with a zero point per (batch, row) of shape [2, 1, 1]; B [2, 1] broadcast.
  Tensor a = u8({2, 1, 2}, {3, 4, 5, 6});
  Tensor a_zp = u8({2, 1, 1}, {1, 2});
  Tensor b = u8({2, 1}, {1, 2});
  Tensor y = run_ref1("MatMulInteger", {a, b, a_zp});
  EXPECT_EQ(y.shape(), (Dims{2, 1, 1}));
  EXPECT_EQ(values<int32_t>(y), (I32{8, 11}));
}

TEST(RefQuant, QLinearMatMulRequantizes) {
  Tensor a = u8({1, 2}, {10, 20});  // a - zp = [0, 10], scale 0.5
  Tensor b = i8({2, 2}, {1, 2, 3, 4});
  Tensor b_scale = f32({2}, {1, 0.5f});  // per column
  Tensor b_zp = i8({2}, {0, 0});
  // acc = [30, 40]; real = [30 * 0.5 * 1, 40 * 0.5 * 0.5] = [15, 10]; / y_scale 2 = [7.5, 5].
  Tensor y = run_ref1("QLinearMatMul",
                      {a, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(10), b, b_scale,
                       b_zp, Tensor::scalar<float>(2), Tensor::scalar<uint8_t>(100)});
  EXPECT_EQ(y.dtype(), DType::kUInt8);
  EXPECT_EQ(values<uint8_t>(y), (U8{108, 105}));  // 7.5 -> 8
  // A small y_scale saturates; an int8 y_zero_point gives int8.
  Tensor ys = run_ref1("QLinearMatMul",
                       {a, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(10), b, b_scale,
                        b_zp, Tensor::scalar<float>(0.01f), Tensor::scalar<int8_t>(0)});
  EXPECT_EQ(values<int8_t>(ys), (I8{127, 127}));
}

TEST(RefQuant, ConvIntegerPadsStridesAndGroups) {
  Tensor x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});  // minus zero point 1: 1..9
  Tensor w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor y = run_ref1("ConvInteger", {x, w, Tensor::scalar<uint8_t>(1)},
                      {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}});
  EXPECT_EQ(y.shape(), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(values<int32_t>(y), (I32{1, 5, 11, 28}));  // padding adds nothing
  // group 2 with a per-output-channel weight zero point.
  Tensor x2 = u8({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor w2 = i8({2, 1, 1, 1}, {2, 3});
  Tensor y2 =
      run_ref1("ConvInteger", {x2, w2, Tensor(), i8({2}, {0, 1})}, {{"group", attr_int(2)}});
  EXPECT_EQ(values<int32_t>(y2), (I32{2, 4, 6, 8}));
}

TEST(RefQuant, QLinearConvPerChannelWithBias) {
  Tensor x = u8({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});  // minus zero point 1: 0..8
  Tensor w = i8({2, 1, 1, 1}, {1, 3});
  Tensor w_scale = f32({2}, {0.5f, 1});
  Tensor w_zp = i8({2}, {0, 1});  // w' = [1, 2]
  Tensor bias = Tensor::from_vector<int32_t>({2}, {1, -1});
  // Channel 0: (x' + 1) * 0.5 = 0.5, 1, ..., 4.5 rounded half to even; channel 1: 2 x' - 1.
  Tensor y =
      run_ref1("QLinearConv", {x, Tensor::scalar<float>(1), Tensor::scalar<uint8_t>(1), w, w_scale,
                               w_zp, Tensor::scalar<float>(1), Tensor::scalar<int8_t>(0), bias});
  EXPECT_EQ(y.dtype(), DType::kInt8);
  EXPECT_EQ(y.shape(), (Dims{1, 2, 3, 3}));
  EXPECT_EQ(values<int8_t>(y), (I8{0, 1, 2, 2, 2, 3, 4, 4, 4, -1, 1, 3, 5, 7, 9, 11, 13, 15}));
}

TEST(RefQuant, ErrorsAndUnsupportedVariants) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // A per-axis scale whose length does not match the axis.
  EXPECT_THROW(run_ref1("QuantizeLinear", {x, f32({2}, {1, 1}), u8({2}, {0, 0})}), Error);
  // Per-axis scales need opset 13.
  EXPECT_THROW(
      run_ref1("QuantizeLinear", {x, f32({3}, {1, 1, 1}), u8({3}, {0, 0, 0})}, {}, /*opset=*/10),
      Error);
  // A zero point of another type than its data.
  EXPECT_THROW(run_ref1("MatMulInteger", {u8({1, 1}, {1}), u8({1, 1}, {1}), i8({}, {0})}), Error);
  // float64 input: refused by the support function with a reason.
  try {
    run_ref1("QuantizeLinear", {Tensor::from_vector<double>({1}, {1.0}), Tensor::scalar<float>(1)});
    ADD_FAILURE() << "float64 input accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 of type float64 is not supported"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace quant_test
}  // namespace nnfuse
