// Tests of Constant, ConstantOfShape, Range, Cast, CastLike and Pad. Expected values are
// worked out by hand.
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/half.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace misc_test {

using testing::expect_close;
using testing::run_ref1;
using testing::values;

Tensor f32(Dims s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}
std::vector<float> fv(const Tensor& t) { return values<float>(t); }
using F = std::vector<float>;
using I = std::vector<int64_t>;
using H = std::vector<uint16_t>;

// A float16 or bfloat16 vector from its bit patterns, and the bit patterns of one.
Tensor bits16(DType t, const H& bits) {
  Tensor x(t, {static_cast<int64_t>(bits.size())});
  std::memcpy(x.raw(), bits.data(), bits.size() * 2);
  return x;
}
H bits_of(const Tensor& t) {
  EXPECT_EQ(dtype_size(t.dtype()), 2u);
  H b(static_cast<size_t>(t.numel()));
  std::memcpy(b.data(), t.raw(), b.size() * 2);
  return b;
}
Tensor cast(const Tensor& x, DType to) {
  Tensor y = run_ref1("Cast", {x}, {{"to", attr_int(dtype_to_onnx(to))}});
  EXPECT_EQ(y.dtype(), to);
  return y;
}
float bits_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(RefMiscConstant, ValueAttributes) {
  Tensor v = f32({2}, {1.5f, -2});
  Tensor y = run_ref1("Constant", {}, {{"value", attr_tensor(v)}});
  EXPECT_EQ(y.shape(), (Dims{2}));
  EXPECT_EQ(fv(y), (F{1.5f, -2}));
  Tensor s = run_ref1("Constant", {}, {{"value_float", attr_float(0.25f)}});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(fv(s), (F{0.25f}));
  EXPECT_EQ(fv(run_ref1("Constant", {}, {{"value_floats", attr_floats({1, 2})}})), (F{1, 2}));
  EXPECT_EQ(values<int64_t>(run_ref1("Constant", {}, {{"value_int", attr_int(7)}})), (I{7}));
  Tensor ints = run_ref1("Constant", {}, {{"value_ints", attr_ints({3, 4, 5})}});
  EXPECT_EQ(ints.dtype(), DType::kInt64);
  EXPECT_EQ(values<int64_t>(ints), (I{3, 4, 5}));
}

TEST(RefMiscConstant, StringIsUnsupported) {
  try {
    run_ref1("Constant", {}, {{"value_string", attr_string("hi")}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

TEST(RefMiscConstantOfShape, DefaultAndValue) {
  Tensor z = run_ref1("ConstantOfShape", {i64({2, 3})});
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_EQ(z.shape(), (Dims{2, 3}));
  EXPECT_EQ(fv(z), F(6, 0.f));
  Tensor y = run_ref1("ConstantOfShape", {i64({3})},
                      {{"value", attr_tensor(Tensor::from_vector<int64_t>({1}, {7}))}});
  EXPECT_EQ(values<int64_t>(y), (I{7, 7, 7}));
  EXPECT_EQ(run_ref1("ConstantOfShape", {i64({})}).rank(), 0);
  // A non-zero value over an odd count (the doubling copies' last partial step).
  Tensor h = run_ref1("ConstantOfShape", {i64({37, 3})},
                      {{"value", attr_tensor(Tensor::from_vector<float>({1}, {-2.5f}))}});
  EXPECT_EQ(fv(h), F(111, -2.5f));
  EXPECT_THROW(run_ref1("ConstantOfShape", {i64({-1})}), Error);
  EXPECT_THROW(run_ref1("ConstantOfShape", {i64({1 << 30, 1 << 30, 1 << 30})}), Error);
}

TEST(RefMiscRange, FloatAndInt) {
  Tensor f = run_ref1(
      "Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1), Tensor::scalar<float>(0.3f)});
  expect_close(f, f32({4}, {0, 0.3f, 0.6f, 0.9f}));
  Tensor i = run_ref1("Range", {Tensor::scalar<int64_t>(10), Tensor::scalar<int64_t>(4),
                                Tensor::scalar<int64_t>(-3)});
  EXPECT_EQ(values<int64_t>(i), (I{10, 7}));
  Tensor i32 = run_ref1("Range", {Tensor::scalar<int32_t>(3), Tensor::scalar<int32_t>(9),
                                  Tensor::scalar<int32_t>(3)});
  EXPECT_EQ(values<int32_t>(i32), (std::vector<int32_t>{3, 6}));
  EXPECT_EQ(run_ref1("Range", {Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1),
                               Tensor::scalar<int64_t>(1)})
                .shape(),
            (Dims{0}));
  // Full int64 span: no overflow in the count or the values.
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(
      values<int64_t>(run_ref1("Range", {Tensor::scalar<int64_t>(lo), Tensor::scalar<int64_t>(hi),
                                         Tensor::scalar<int64_t>(hi)})),
      (I{lo, -1, hi - 1}));
  EXPECT_THROW(run_ref1("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1),
                                  Tensor::scalar<float>(0)}),
               Error);
  EXPECT_THROW(run_ref1("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1e30f),
                                  Tensor::scalar<float>(1)}),
               Error);
}

TEST(RefMiscCast, FloatToIntTruncates) {
  Tensor x = f32({5}, {1.7f, -1.7f, 2.5f, -0.5f, 17179869184.0f});  // the last is 2^34
  Tensor y = run_ref1("Cast", {x}, {{"to", attr_int(6)}});          // int32
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(values<int32_t>(y),
            (std::vector<int32_t>{1, -1, 2, 0, std::numeric_limits<int32_t>::max()}));
  EXPECT_EQ(values<int64_t>(run_ref1("Cast", {x}, {{"to", attr_int(7)}})),
            (I{1, -1, 2, 0, int64_t{1} << 34}));
}

TEST(RefMiscCast, OtherPairs) {
  Tensor big = Tensor::from_vector<int64_t>({2}, {300, -1});
  EXPECT_EQ(values<uint8_t>(run_ref1("Cast", {big}, {{"to", attr_int(2)}})),
            (std::vector<uint8_t>{44, 255}));  // wraps modulo 256
  EXPECT_EQ(fv(run_ref1("Cast", {big}, {{"to", attr_int(1)}})), (F{300, -1}));
  EXPECT_EQ(values<bool>(run_ref1("Cast", {f32({3}, {0, -0.5f, 2})}, {{"to", attr_int(9)}})),
            (std::vector<bool>{false, true, true}));
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  EXPECT_EQ(values<double>(run_ref1("Cast", {b}, {{"to", attr_int(11)}})),
            (std::vector<double>{1, 0}));
  EXPECT_THROW(run_ref1("Cast", {big}, {{"to", attr_int(8)}}), Error);   // string
  EXPECT_THROW(run_ref1("Cast", {big}, {{"to", attr_int(14)}}), Error);  // complex64
}

TEST(RefMiscCast, ToFloat16RoundsToNearestEven) {
  const float one = 1.0f, ulp = std::ldexp(1.0f, -10);  // float16's last place in [1, 2)
  Tensor x = f32({8}, {one, one + ulp / 2, one + 3 * ulp / 2, one + ulp / 2 + std::ldexp(1.0f, -20),
                       0.1f, -2.5f, 0.0f, -0.0f});
  // 1 + half a place ties to 1 (even), 1 + 1.5 places to 1 + 2 places (even); a hair above
  // the tie goes up. 0.1 is 1.6 * 2^-4: 614.4 places above 2^-4, rounded down to 0x2e66.
  EXPECT_EQ(bits_of(cast(x, DType::kFloat16)),
            (H{0x3c00, 0x3c00, 0x3c02, 0x3c01, 0x2e66, 0xc100, 0x0000, 0x8000}));
}

TEST(RefMiscCast, ToFloat16SubnormalsOverflowAndNaN) {
  const float tiny = std::ldexp(1.0f, -24);  // the smallest float16 subnormal
  Tensor x = f32({8}, {tiny, tiny / 2, 0.75f * tiny, 1.5f * tiny, 1023.5f * tiny,
                       std::ldexp(1.0f, -14), -std::ldexp(1.0f, -26), 2.5f * tiny});
  // 2^-25 ties to 0 (even); 0.75 * 2^-24 rounds to 1 unit; 1.5 units ties to 2; 1023.5 units
  // ties to 1024, the smallest normal 0x0400 (2^-14); 2^-26 is below half a unit: -0; 2.5
  // units tie to 2.
  EXPECT_EQ(bits_of(cast(x, DType::kFloat16)),
            (H{0x0001, 0x0000, 0x0001, 0x0002, 0x0400, 0x0400, 0x8000, 0x0002}));
  const float inf = std::numeric_limits<float>::infinity();
  Tensor big = f32({7}, {65504, 65519.99f, 65520, 1e5f, -1e5f, inf, -inf});
  // 65504 is the largest finite; 65520 (half a place above) ties to even: infinity.
  EXPECT_EQ(bits_of(cast(big, DType::kFloat16)),
            (H{0x7bff, 0x7bff, 0x7c00, 0x7c00, 0xfc00, 0x7c00, 0xfc00}));
  H nan = bits_of(cast(f32({2}, {NAN, -NAN}), DType::kFloat16));
  for (uint16_t b : nan) EXPECT_TRUE((b & 0x7c00) == 0x7c00 && (b & 0x03ff) != 0) << b;
  EXPECT_EQ(nan[0] & 0x8000, 0);
  EXPECT_EQ(nan[1] & 0x8000, 0x8000);
}

TEST(RefMiscCast, DoubleToFloat16RoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above a float16 tie: rounded to float first, it would be the
  // tie itself and go down to 1.
  Tensor x = Tensor::from_vector<double>(
      {3}, {1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), std::ldexp(1.0, -24), 65520.0});
  EXPECT_EQ(bits_of(cast(x, DType::kFloat16)), (H{0x3c01, 0x0001, 0x7c00}));
}

TEST(RefMiscCast, FromFloat16IsExact) {
  Tensor h = bits16(DType::kFloat16, {0x0001, 0x7bff, 0x3555, 0xfc00, 0x8000, 0x7e00, 0x4a80});
  std::vector<double> d = values<double>(cast(h, DType::kFloat64));
  EXPECT_EQ(d[0], std::ldexp(1.0, -24));
  EXPECT_EQ(d[1], 65504);
  EXPECT_EQ(d[2], 0.333251953125);
  EXPECT_EQ(d[3], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(d[4] == 0 && std::signbit(d[4]));
  EXPECT_TRUE(std::isnan(d[5]));
  EXPECT_EQ(d[6], 13);
  F f = fv(cast(h, DType::kFloat32));
  EXPECT_EQ(f[0], std::ldexp(1.0f, -24));
  EXPECT_EQ(f[2], 0.333251953125f);
  EXPECT_TRUE(std::isnan(f[5]));
  // Tensor::double_at reads both 16-bit types.
  EXPECT_EQ(h.double_at(1), 65504);
  EXPECT_EQ(bits16(DType::kBFloat16, {0xc0a0}).double_at(0), -5);
  // To integers as from float: truncated toward zero and saturated; NaN gives 0.
  Tensor g = bits16(DType::kFloat16, {0xc100, 0x7c00, 0x7e00, 0x4a80});  // -2.5, inf, NaN, 13
  EXPECT_EQ(values<int32_t>(cast(g, DType::kInt32)),
            (std::vector<int32_t>{-2, std::numeric_limits<int32_t>::max(), 0, 13}));
  EXPECT_EQ(values<uint8_t>(cast(g, DType::kUInt8)), (std::vector<uint8_t>{0, 255, 0, 13}));
  EXPECT_EQ(values<bool>(cast(g, DType::kBool)), (std::vector<bool>{true, true, true, true}));
}

TEST(RefMiscCast, IntegersAndBoolToFloat16) {
  // 2049 ties between 2048 and 2050 (places of 2): to 2048; 2051 to 2052; 70000 overflows.
  Tensor i = Tensor::from_vector<int64_t>({5}, {2049, 2051, -3, 70000, 0});
  EXPECT_EQ(bits_of(cast(i, DType::kFloat16)), (H{0x6800, 0x6802, 0xc200, 0x7c00, 0x0000}));
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  EXPECT_EQ(bits_of(cast(b, DType::kFloat16)), (H{0x3c00, 0x0000}));
  EXPECT_EQ(bits_of(cast(b, DType::kBFloat16)), (H{0x3f80, 0x0000}));
}

TEST(RefMiscCast, BFloat16RoundsToNearestEven) {
  // 1 + 2^-8 (half a bfloat16 place) ties to 1; 1 + 3 * 2^-8 to 1 + 2^-6 (even); one float
  // place above a tie goes up. The largest float rounds to infinity; subnormals round too.
  Tensor x = f32({10}, {bits_float(0x3f808000), bits_float(0x3f818000), bits_float(0x3f808001),
                        bits_float(0x7f7fffff), bits_float(0x7f7f7fff), bits_float(0x00008000),
                        bits_float(0x00018000), bits_float(0x80000001), -2.0f,
                        std::numeric_limits<float>::infinity()});
  EXPECT_EQ(bits_of(cast(x, DType::kBFloat16)),
            (H{0x3f80, 0x3f82, 0x3f81, 0x7f80, 0x7f7f, 0x0000, 0x0002, 0x8000, 0xc000, 0x7f80}));
  // NaN stays NaN, also one whose payload lies only in the bits dropped.
  for (uint16_t b : bits_of(cast(f32({2}, {NAN, bits_float(0x7f800001)}), DType::kBFloat16))) {
    EXPECT_TRUE((b & 0x7f80) == 0x7f80 && (b & 0x007f) != 0) << b;
  }
  // Widening is exact, subnormals included.
  F f = fv(cast(bits16(DType::kBFloat16, {0x3f81, 0x0001, 0xff80}), DType::kFloat32));
  EXPECT_EQ(f[0], 1.0078125f);
  EXPECT_EQ(f[1], bits_float(0x00010000));
  EXPECT_EQ(f[2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(values<double>(cast(bits16(DType::kBFloat16, {0x0001}), DType::kFloat64))[0],
            std::ldexp(1.0, -133));
}

TEST(RefMiscCast, BetweenFloat16AndBFloat16) {
  // 1 + 2^-10 is nearest 1 in bfloat16; 65504 rounds up to 65536; that overflows float16.
  EXPECT_EQ(bits_of(cast(bits16(DType::kFloat16, {0x3c01, 0x7bff}), DType::kBFloat16)),
            (H{0x3f80, 0x4780}));
  EXPECT_EQ(bits_of(cast(bits16(DType::kBFloat16, {0x4780, 0x3f81}), DType::kFloat16)),
            (H{0x7c00, 0x3c08}));
  EXPECT_EQ(bits_of(cast(bits16(DType::kFloat16, {0x3555}), DType::kFloat16)), (H{0x3555}));
}

TEST(RefMiscCastLike, TakesTheTargetType) {
  Tensor y = run_ref1("CastLike", {f32({2}, {-3.9f, 3.9f}), Tensor::scalar<int64_t>(0)});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(values<int64_t>(y), (I{-3, 3}));
  Tensor h = run_ref1("CastLike", {f32({2}, {0.1f, 1e5f}), bits16(DType::kFloat16, {0})});
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(bits_of(h), (H{0x2e66, 0x7c00}));
  Tensor f = run_ref1("CastLike", {bits16(DType::kBFloat16, {0x3f81}), f32({1}, {0})});
  EXPECT_EQ(fv(f), (F{1.0078125f}));
}

Tensor pad_input() { return f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}); }

TEST(RefMiscPad, ConstantEdgeReflect) {
  Tensor pads = i64({0, 2, 0, 0});
  EXPECT_EQ(fv(run_ref1("Pad", {pad_input(), pads})),
            (F{0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}));
  EXPECT_EQ(fv(run_ref1("Pad", {pad_input(), pads, Tensor::scalar<float>(9)})),
            (F{9, 9, 1.0f, 1.2f, 9, 9, 2.3f, 3.4f, 9, 9, 4.5f, 5.7f}));
  EXPECT_EQ(fv(run_ref1("Pad", {pad_input(), pads}, {{"mode", attr_string("reflect")}})),
            (F{1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
  EXPECT_EQ(fv(run_ref1("Pad", {pad_input(), pads}, {{"mode", attr_string("edge")}})),
            (F{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
}

TEST(RefMiscPad, OneDimModesAndCropping) {
  Tensor x = f32({3}, {1, 2, 3});
  EXPECT_EQ(fv(run_ref1("Pad", {x, i64({2, 2})}, {{"mode", attr_string("reflect")}})),
            (F{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(fv(run_ref1("Pad", {x, i64({1, 3})}, {{"mode", attr_string("edge")}})),
            (F{1, 1, 2, 3, 3, 3, 3}));
  EXPECT_EQ(fv(run_ref1("Pad", {f32({5}, {1, 2, 3, 4, 5}), i64({-1, 1})})), (F{2, 3, 4, 5, 0}));
  EXPECT_EQ(run_ref1("Pad", {x, i64({-2, -1})}).shape(), (Dims{0}));
  EXPECT_THROW(run_ref1("Pad", {x, i64({-2, -2})}), Error);
  EXPECT_THROW(run_ref1("Pad", {x, i64({1})}), Error);
}

TEST(RefMiscPad, Int64AndOpset2Attributes) {
  Tensor x = Tensor::from_vector<int64_t>({2}, {5, 6});
  EXPECT_EQ(values<int64_t>(run_ref1("Pad", {x, i64({1, 0}), Tensor::scalar<int64_t>(-1)})),
            (I{-1, 5, 6}));
  EXPECT_EQ(fv(run_ref1("Pad", {f32({2}, {5, 6})},
                        {{"pads", attr_ints({0, 1})}, {"value", attr_float(1.5f)}}, 2)),
            (F{5, 6, 1.5f}));
  Tensor h = run_ref1("Pad", {bits16(DType::kFloat16, {0x3c00})},
                      {{"pads", attr_ints({0, 1})}, {"value", attr_float(1.5f)}}, 2);
  EXPECT_EQ(bits_of(h), (H{0x3c00, 0x3e00}));
}

}  // namespace misc_test
}  // namespace nnfuse
