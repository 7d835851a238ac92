// Tests of Constant, ConstantOfShape, Range, Cast, CastLike and Pad. Expected values are
// worked out by hand.
#include <limits>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace {

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
  EXPECT_THROW(run_ref1("Cast", {big}, {{"to", attr_int(10)}}), Error);  // float16
  EXPECT_THROW(run_ref1("Cast", {big}, {{"to", attr_int(8)}}), Error);   // string
}

TEST(RefMiscCastLike, TakesTheTargetType) {
  Tensor y = run_ref1("CastLike", {f32({2}, {-3.9f, 3.9f}), Tensor::scalar<int64_t>(0)});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(values<int64_t>(y), (I{-3, 3}));
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
}

}  // namespace
}  // namespace nnfuse
