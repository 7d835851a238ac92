// Tests of the shape/layout reference kernels. Expected values are worked out by hand (or by
// an index formula written here), never taken from the kernels.
#include <cstring>
#include <limits>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace shape_test {

using testing::run_ref;
using testing::run_ref1;
using testing::values;

Tensor f32(Dims s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}
// 0, 1, 2, ... as float32.
Tensor iota(Dims s) {
  Tensor t(DType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
std::vector<float> fv(const Tensor& t) { return values<float>(t); }
using F = std::vector<float>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(RefShapeReshape, InfersMinusOneAndCopiesZero) {
  Tensor x = iota({2, 3, 4});
  Tensor y = run_ref1("Reshape", {x, i64({4, -1})});
  EXPECT_EQ(y.shape(), (Dims{4, 6}));
  EXPECT_EQ(fv(y), fv(x));
  EXPECT_EQ(run_ref1("Reshape", {x, i64({0, -1})}).shape(), (Dims{2, 12}));
  EXPECT_EQ(run_ref1("Reshape", {x, i64({0, 0, 2, 2})}).shape(), (Dims{2, 3, 2, 2}));
  Tensor s32 = Tensor::from_vector<int32_t>({2}, {-1, 8});
  EXPECT_EQ(run_ref1("Reshape", {x, s32}).shape(), (Dims{3, 8}));
}

TEST(RefShapeReshape, AllowZero) {
  Tensor empty(DType::kFloat32, {0, 3});
  // allowzero=1: 0 is a real zero-size dim.
  EXPECT_EQ(run_ref1("Reshape", {empty, i64({3, 0})}, {{"allowzero", attr_int(1)}}).shape(),
            (Dims{3, 0}));
  // allowzero=0: 0 copies dim 1 (3), so [3, 3] needs 9 elements, not 0.
  EXPECT_THROW(run_ref1("Reshape", {empty, i64({3, 0})}), Error);
}

TEST(RefShapeReshape, CountMismatchThrows) {
  EXPECT_THROW(run_ref1("Reshape", {iota({2, 3}), i64({4, 2})}), Error);
  EXPECT_THROW(run_ref1("Reshape", {iota({2, 3}), i64({4, -1})}), Error);
  EXPECT_THROW(run_ref1("Reshape", {iota({2, 3}), i64({-1, -1})}), Error);
  EXPECT_THROW(run_ref1("Reshape", {iota({2, 3}), i64({0, 0, 0})}), Error);
}

TEST(RefShapeFlatten, Axes) {
  Tensor x = iota({2, 3, 4});
  EXPECT_EQ(run_ref1("Flatten", {x}, {{"axis", attr_int(2)}}).shape(), (Dims{6, 4}));
  EXPECT_EQ(run_ref1("Flatten", {x}, {{"axis", attr_int(-1)}}).shape(), (Dims{6, 4}));
  EXPECT_EQ(run_ref1("Flatten", {x}, {{"axis", attr_int(0)}}).shape(), (Dims{1, 24}));
  EXPECT_EQ(run_ref1("Flatten", {x}).shape(), (Dims{2, 12}));
  EXPECT_EQ(fv(run_ref1("Flatten", {x}, {{"axis", attr_int(3)}})), fv(x));
  EXPECT_THROW(run_ref1("Flatten", {x}, {{"axis", attr_int(4)}}), Error);
}

TEST(RefShapeTranspose, DefaultReversesAndPerm) {
  Tensor y = run_ref1("Transpose", {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(y.shape(), (Dims{3, 2}));
  EXPECT_EQ(fv(y), (F{1, 4, 2, 5, 3, 6}));

  Tensor x = iota({2, 3, 4});
  Tensor z = run_ref1("Transpose", {x}, {{"perm", attr_ints({1, 2, 0})}});
  ASSERT_EQ(z.shape(), (Dims{3, 4, 2}));
  for (int64_t a = 0; a < 3; ++a) {
    for (int64_t b = 0; b < 4; ++b) {
      for (int64_t c = 0; c < 2; ++c) {  // z[a][b][c] = x[c][a][b]
        EXPECT_EQ(z.data<float>()[(a * 4 + b) * 2 + c], static_cast<float>(c * 12 + a * 4 + b));
      }
    }
  }
  EXPECT_THROW(run_ref1("Transpose", {x}, {{"perm", attr_ints({0, 0, 1})}}), Error);
}

TEST(RefShapeTranspose, Int64AndBool) {
  Tensor x = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(values<int64_t>(run_ref1("Transpose", {x})), (std::vector<int64_t>{1, 3, 2, 4}));
  Tensor b = Tensor::from_vector<bool>({1, 3}, {true, false, true});
  Tensor bt = run_ref1("Transpose", {b});
  EXPECT_EQ(bt.shape(), (Dims{3, 1}));
  EXPECT_EQ(values<bool>(bt), (std::vector<bool>{true, false, true}));
}

TEST(RefShapeSqueeze, AttributeInputAndAll) {
  Tensor x = iota({1, 3, 1, 2});
  EXPECT_EQ(run_ref1("Squeeze", {x}, {{"axes", attr_ints({0})}}, 11).shape(), (Dims{3, 1, 2}));
  EXPECT_EQ(run_ref1("Squeeze", {x, i64({-2})}, {}, 13).shape(), (Dims{1, 3, 2}));
  EXPECT_EQ(run_ref1("Squeeze", {x}, {}, 13).shape(), (Dims{3, 2}));
  EXPECT_THROW(run_ref1("Squeeze", {x, i64({1})}, {}, 13), Error);
  EXPECT_THROW(run_ref1("Squeeze", {x, i64({0, 0})}, {}, 13), Error);
}

TEST(RefShapeUnsqueeze, AttributeAndInput) {
  Tensor x = iota({2, 3});
  EXPECT_EQ(run_ref1("Unsqueeze", {x}, {{"axes", attr_ints({0, 3})}}, 11).shape(),
            (Dims{1, 2, 3, 1}));
  EXPECT_EQ(run_ref1("Unsqueeze", {x, i64({-1})}, {}, 13).shape(), (Dims{2, 3, 1}));
  EXPECT_EQ(run_ref1("Unsqueeze", {x, i64({1, -1})}, {}, 13).shape(), (Dims{2, 1, 3, 1}));
  EXPECT_EQ(fv(run_ref1("Unsqueeze", {x, i64({1})}, {}, 13)), fv(x));
  EXPECT_THROW(run_ref1("Unsqueeze", {x, i64({4})}, {}, 13), Error);
  EXPECT_THROW(run_ref1("Unsqueeze", {x}, {}, 13), Error);
}

TEST(RefShapeConcat, Axes) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 1}, {5, 6});
  Tensor y = run_ref1("Concat", {a, b}, {{"axis", attr_int(1)}});
  EXPECT_EQ(y.shape(), (Dims{2, 3}));
  EXPECT_EQ(fv(y), (F{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(fv(run_ref1("Concat", {a, b}, {{"axis", attr_int(-1)}})), (F{1, 2, 5, 3, 4, 6}));
  Tensor c = f32({1, 2}, {7, 8});
  EXPECT_EQ(fv(run_ref1("Concat", {a, c}, {{"axis", attr_int(0)}})), (F{1, 2, 3, 4, 7, 8}));
  EXPECT_THROW(run_ref1("Concat", {a, b}, {{"axis", attr_int(0)}}), Error);
  Tensor i8 = Tensor::from_vector<int8_t>({2}, {1, 2}), j8 = Tensor::from_vector<int8_t>({1}, {3});
  EXPECT_EQ(values<int8_t>(run_ref1("Concat", {i8, j8}, {{"axis", attr_int(0)}})),
            (std::vector<int8_t>{1, 2, 3}));
}

TEST(RefShapeSplit, AttributeOpset11) {
  auto out = run_ref("Split", {iota({2, 3})}, {{"axis", attr_int(1)}, {"split", attr_ints({1, 2})}},
                     2, 11);
  EXPECT_EQ(out[0].shape(), (Dims{2, 1}));
  EXPECT_EQ(fv(out[0]), (F{0, 3}));
  EXPECT_EQ(fv(out[1]), (F{1, 2, 4, 5}));
}

TEST(RefShapeSplit, InputOpset13) {
  auto out = run_ref("Split", {iota({3, 2}), i64({2, 1})}, {}, 2, 13);
  EXPECT_EQ(out[0].shape(), (Dims{2, 2}));
  EXPECT_EQ(fv(out[0]), (F{0, 1, 2, 3}));
  EXPECT_EQ(fv(out[1]), (F{4, 5}));
  EXPECT_THROW(run_ref("Split", {iota({3, 2}), i64({2, 2})}, {}, 2, 13), Error);
}

TEST(RefShapeSplit, Equal) {
  auto out = run_ref("Split", {iota({6})}, {}, 3, 13);
  EXPECT_EQ(fv(out[0]), (F{0, 1}));
  EXPECT_EQ(fv(out[1]), (F{2, 3}));
  EXPECT_EQ(fv(out[2]), (F{4, 5}));
  EXPECT_THROW(run_ref("Split", {iota({5})}, {}, 3, 13), Error);
}

TEST(RefShapeSlice, Basic2d) {
  Tensor x = iota({3, 4});
  Tensor y = run_ref1("Slice", {x, i64({1, 1}), i64({3, 3})});
  EXPECT_EQ(y.shape(), (Dims{2, 2}));
  EXPECT_EQ(fv(y), (F{5, 6, 9, 10}));
  // Only axis 1, with a step of 2 and an end past the dim (clamped).
  Tensor z = run_ref1("Slice", {x, i64({1}), i64({kMax}), i64({1}), i64({2})});
  EXPECT_EQ(z.shape(), (Dims{3, 2}));
  EXPECT_EQ(fv(z), (F{1, 3, 5, 7, 9, 11}));
}

TEST(RefShapeSlice, NegativeStepsAndClamping) {
  Tensor x = iota({10});
  EXPECT_EQ(fv(run_ref1("Slice", {x, i64({-1}), i64({kMin}), i64({0}), i64({-1})})),
            (F{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(fv(run_ref1("Slice", {x, i64({8}), i64({1}), i64({0}), i64({-2})})), (F{8, 6, 4, 2}));
  // Start past the end with a negative step clamps to the last element.
  EXPECT_EQ(fv(run_ref1("Slice", {x, i64({100}), i64({6}), i64({0}), i64({-3})})), (F{9}));
  // Negative start and end count from the back.
  EXPECT_EQ(fv(run_ref1("Slice", {x, i64({-3}), i64({-1})})), (F{7, 8}));
  // Empty results.
  EXPECT_EQ(run_ref1("Slice", {x, i64({5}), i64({2})}).shape(), (Dims{0}));
  EXPECT_EQ(run_ref1("Slice", {x, i64({2}), i64({5}), i64({0}), i64({-1})}).shape(), (Dims{0}));
  EXPECT_EQ(run_ref1("Slice", {x, i64({-100}), i64({-50})}).shape(), (Dims{0}));
  EXPECT_EQ(fv(run_ref1("Slice", {x, i64({0}), i64({kMax}), i64({0}), i64({kMax})})), (F{0}));
  EXPECT_EQ(fv(run_ref1("Slice", {x, i64({9}), i64({kMin}), i64({0}), i64({kMin})})), (F{9}));
  EXPECT_THROW(run_ref1("Slice", {x, i64({0}), i64({5}), i64({0}), i64({0})}), Error);
  EXPECT_THROW(run_ref1("Slice", {x, i64({0}), i64({5}), i64({1})}), Error);
}

TEST(RefShapeExpand, Bidirectional) {
  Tensor x = f32({3, 1}, {1, 2, 3});
  Tensor y = run_ref1("Expand", {x, i64({2, 1, 4})});
  EXPECT_EQ(y.shape(), (Dims{2, 3, 4}));
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], 1 + (i / 4) % 3);
  EXPECT_EQ(run_ref1("Expand", {x, i64({1, 1})}).shape(), (Dims{3, 1}));
  EXPECT_THROW(run_ref1("Expand", {x, i64({2, 4})}), Error);
}

TEST(RefShapeTile, Repeats) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor y = run_ref1("Tile", {x, i64({2, 3})});
  ASSERT_EQ(y.shape(), (Dims{4, 6}));
  EXPECT_EQ(fv(y), (F{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  EXPECT_EQ(run_ref1("Tile", {x, i64({0, 1})}).shape(), (Dims{0, 2}));
  EXPECT_THROW(run_ref1("Tile", {x, i64({2})}), Error);
}

TEST(RefShapeShape, StartEnd) {
  Tensor x(DType::kFloat32, {2, 3, 4, 5});
  EXPECT_EQ(values<int64_t>(run_ref1("Shape", {x})), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(
      values<int64_t>(run_ref1("Shape", {x}, {{"start", attr_int(1)}, {"end", attr_int(-1)}})),
      (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(
      values<int64_t>(run_ref1("Shape", {x}, {{"start", attr_int(-10)}, {"end", attr_int(1)}})),
      (std::vector<int64_t>{2}));
  EXPECT_EQ(run_ref1("Shape", {x}, {{"start", attr_int(3)}, {"end", attr_int(1)}}).shape(),
            (Dims{0}));
  EXPECT_EQ(values<int64_t>(run_ref1("Size", {x})), (std::vector<int64_t>{120}));
  EXPECT_EQ(run_ref1("Size", {x}).rank(), 0);
}

TEST(RefShapeIdentity, CopiesFloat16Bytes) {
  Tensor h(DType::kFloat16, {2});
  uint16_t bits[2] = {0x3C00, 0xC000};  // 1.0, -2.0
  std::memcpy(h.raw(), bits, sizeof bits);
  Tensor y = run_ref1("Identity", {h});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(std::memcmp(y.raw(), bits, sizeof bits), 0);
  EXPECT_NE(y.raw(), h.raw());
}

TEST(RefShapeDropout, InferenceAndMask) {
  Tensor x = f32({3}, {1, -2, 3});
  auto out = run_ref("Dropout", {x, Tensor::scalar<float>(0.5f)}, {}, 2);
  EXPECT_EQ(fv(out[0]), (F{1, -2, 3}));
  EXPECT_EQ(values<bool>(out[1]), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(fv(run_ref1("Dropout", {x, Tensor(), Tensor::scalar<bool>(false)})), (F{1, -2, 3}));
  EXPECT_THROW(run_ref1("Dropout", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)}),
               Error);
}

// The ONNX DepthToSpace example: input [1, 8, 2, 3] holding 9 * c + 3 * h + w.
Tensor depth_input() {
  Tensor x(DType::kFloat32, {1, 8, 2, 3});
  for (int64_t c = 0; c < 8; ++c) {
    for (int64_t i = 0; i < 6; ++i)
      x.data<float>()[c * 6 + i] = static_cast<float>(9 * c + i / 3 * 3 + i % 3);
  }
  return x;
}

TEST(RefShapeDepthToSpace, DcrAndCrd) {
  Tensor dcr = run_ref1("DepthToSpace", {depth_input()}, {{"blocksize", attr_int(2)}});
  ASSERT_EQ(dcr.shape(), (Dims{1, 2, 4, 6}));
  EXPECT_EQ(fv(dcr), (F{0,  18, 1,  19, 2,  20, 36, 54, 37, 55, 38, 56, 3,  21, 4,  22,
                        5,  23, 39, 57, 40, 58, 41, 59, 9,  27, 10, 28, 11, 29, 45, 63,
                        46, 64, 47, 65, 12, 30, 13, 31, 14, 32, 48, 66, 49, 67, 50, 68}));
  Tensor crd = run_ref1("DepthToSpace", {depth_input()},
                        {{"blocksize", attr_int(2)}, {"mode", attr_string("CRD")}});
  EXPECT_EQ(fv(crd), (F{0,  9,  1,  10, 2,  11, 18, 27, 19, 28, 20, 29, 3,  12, 4,  13,
                        5,  14, 21, 30, 22, 31, 23, 32, 36, 45, 37, 46, 38, 47, 54, 63,
                        55, 64, 56, 65, 39, 48, 40, 49, 41, 50, 57, 66, 58, 67, 59, 68}));
  EXPECT_THROW(run_ref1("DepthToSpace", {depth_input()}, {{"blocksize", attr_int(3)}}), Error);
}

TEST(RefShapeSpaceToDepth, HandCaseAndInverseOfDcr) {
  Tensor y =
      run_ref1("SpaceToDepth", {f32({1, 1, 2, 2}, {0, 1, 2, 3})}, {{"blocksize", attr_int(2)}});
  EXPECT_EQ(y.shape(), (Dims{1, 4, 1, 1}));
  EXPECT_EQ(fv(y), (F{0, 1, 2, 3}));
  Tensor dcr = run_ref1("DepthToSpace", {depth_input()}, {{"blocksize", attr_int(2)}});
  Tensor back = run_ref1("SpaceToDepth", {dcr}, {{"blocksize", attr_int(2)}});
  EXPECT_EQ(back.shape(), (Dims{1, 8, 2, 3}));
  EXPECT_EQ(fv(back), fv(depth_input()));
  EXPECT_THROW(run_ref1("SpaceToDepth", {iota({1, 1, 3, 2})}, {{"blocksize", attr_int(2)}}), Error);
}

TEST(RefShapeTrilu, UpperLowerAndK) {
  Tensor x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(fv(run_ref1("Trilu", {x})), (F{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  EXPECT_EQ(fv(run_ref1("Trilu", {x, Tensor::scalar<int64_t>(1)})), (F{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(fv(run_ref1("Trilu", {x, Tensor::scalar<int64_t>(-1)}, {{"upper", attr_int(0)}})),
            (F{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_EQ(fv(run_ref1("Trilu", {x}, {{"upper", attr_int(0)}})), (F{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  // Batched: the mask applies to the last two dims.
  EXPECT_EQ(fv(run_ref1("Trilu", {f32({2, 1, 2}, {1, 2, 3, 4})}, {{"upper", attr_int(0)}})),
            (F{1, 0, 3, 0}));
}

TEST(RefShapeErrors, AbsurdSizesThrow) {
  Tensor x = iota({4});
  EXPECT_THROW(run_ref1("Tile", {x, i64({int64_t{1} << 62})}), Error);
  EXPECT_THROW(run_ref1("Expand", {x, i64({int64_t{1} << 40, int64_t{1} << 40, 4})}), Error);
  EXPECT_THROW(run_ref1("Reshape", {x, i64({int64_t{1} << 40, int64_t{1} << 40, -1})}), Error);
  EXPECT_THROW(run_ref1("DepthToSpace", {iota({1, 4, 1, 1})}, {{"blocksize", attr_int(kMax)}}),
               Error);
}

TEST(RefShapeSupport, RejectsFloatShapeInput) {
  EXPECT_THROW(run_ref1("Reshape", {iota({2}), f32({1}, {2})}), Error);
}

}  // namespace shape_test
}  // namespace nnfuse
