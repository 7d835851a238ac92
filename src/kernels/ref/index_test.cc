// Tests of the index-driven reference kernels (Gather*, Scatter*, Compress, ReverseSequence,
// OneHot, EyeLike, NonZero). Expected values are worked out by hand (most follow the ONNX
// operator documentation's examples).
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace index_test {

using testing::run_ref1;
using testing::values;

Tensor f32(Dims s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(Dims s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
std::vector<float> fv(const Tensor& t) { return values<float>(t); }
std::vector<int64_t> iv(const Tensor& t) { return values<int64_t>(t); }
using F = std::vector<float>;
using I = std::vector<int64_t>;

TEST(RefShapeGather, Axis0NegativeAndScalar) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor y = run_ref1("Gather", {x, i64({2, 2}, {0, 1, -1, 0})});
  EXPECT_EQ(y.shape(), (Dims{2, 2, 2}));
  EXPECT_EQ(fv(y), (F{1, 2, 3, 4, 5, 6, 1, 2}));
  Tensor s = run_ref1("Gather", {x, Tensor::scalar<int64_t>(1)});
  EXPECT_EQ(s.shape(), (Dims{2}));
  EXPECT_EQ(fv(s), (F{3, 4}));
}

TEST(RefShapeGather, Axis1Int32IndicesInt64Data) {
  Tensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor idx = Tensor::from_vector<int32_t>({2}, {2, 0});
  Tensor y = run_ref1("Gather", {x, idx}, {{"axis", attr_int(-1)}});
  EXPECT_EQ(y.shape(), (Dims{2, 2}));
  EXPECT_EQ(iv(y), (I{3, 1, 6, 4}));
}

TEST(RefShapeGather, OutOfRangeThrows) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run_ref1("Gather", {x, i64({1}, {3})}), Error);
  EXPECT_THROW(run_ref1("Gather", {x, i64({1}, {-4})}), Error);
  EXPECT_THROW(run_ref1("Gather", {x, i64({1}, {0})}, {{"axis", attr_int(2)}}), Error);
}

TEST(RefShapeGatherElements, Axis1AndAxis0) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(fv(run_ref1("GatherElements", {a, i64({2, 2}, {0, 0, 1, 0})}, {{"axis", attr_int(1)}})),
            (F{1, 1, 4, 3}));
  Tensor b = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor y = run_ref1("GatherElements", {b, i64({2, 3}, {1, 2, 0, 2, 0, 0})});
  EXPECT_EQ(y.shape(), (Dims{2, 3}));
  EXPECT_EQ(fv(y), (F{4, 8, 3, 7, 2, 3}));
  EXPECT_EQ(fv(run_ref1("GatherElements", {a, i64({1, 1}, {-1})})), (F{3}));
  EXPECT_THROW(run_ref1("GatherElements", {a, i64({1, 1}, {2})}), Error);
  EXPECT_THROW(run_ref1("GatherElements", {a, i64({1, 3}, {0, 0, 0})}), Error);
}

TEST(RefShapeGatherND, TuplesSlicesAndBatchDims) {
  Tensor a = i64({2, 2}, {0, 1, 2, 3});
  EXPECT_EQ(iv(run_ref1("GatherND", {a, i64({2, 2}, {0, 0, 1, 1})})), (I{0, 3}));
  Tensor s = run_ref1("GatherND", {a, i64({2, 1}, {1, 0})});
  EXPECT_EQ(s.shape(), (Dims{2, 2}));
  EXPECT_EQ(iv(s), (I{2, 3, 0, 1}));
  Tensor b = i64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor y = run_ref1("GatherND", {b, i64({2, 1}, {1, 0})}, {{"batch_dims", attr_int(1)}});
  EXPECT_EQ(y.shape(), (Dims{2, 2}));
  EXPECT_EQ(iv(y), (I{2, 3, 4, 5}));
  EXPECT_EQ(iv(run_ref1("GatherND", {b, i64({1, 3}, {1, -1, 0})})), (I{6}));
  EXPECT_THROW(run_ref1("GatherND", {a, i64({1, 2}, {2, 0})}), Error);
  EXPECT_THROW(run_ref1("GatherND", {a, i64({1, 3}, {0, 0, 0})}), Error);
  // int32 indices, negative ones counting from the back, and one out of range.
  const Tensor i32 = run_ref1("Cast", {i64({3, 1}, {1, -2, 0})}, {{"to", attr_int(6)}});
  EXPECT_EQ(iv(run_ref1("GatherND", {a, i32})), (I{2, 3, 0, 1, 0, 1}));
  const Tensor bad = run_ref1("Cast", {i64({1, 1}, {-3})}, {{"to", attr_int(6)}});
  EXPECT_THROW(run_ref1("GatherND", {a, bad}), Error);
}

TEST(RefShapeScatterND, ReplacesElements) {
  Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = run_ref1("ScatterND", {data, i64({4, 1}, {4, 3, 1, 7}), f32({4}, {9, 10, 11, 12})});
  EXPECT_EQ(fv(y), (F{1, 11, 3, 10, 9, 6, 7, 12}));
  EXPECT_EQ(fv(data), (F{1, 2, 3, 4, 5, 6, 7, 8}));  // the input is untouched
  // Slices: replace row 1 of a 2x2.
  Tensor m =
      run_ref1("ScatterND", {f32({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {1}), f32({1, 2}, {8, 9})});
  EXPECT_EQ(fv(m), (F{1, 2, 8, 9}));
  Tensor add = run_ref1("ScatterND", {data, i64({2, 1}, {0, 0}), f32({2}, {10, 20})},
                        {{"reduction", attr_string("add")}});
  EXPECT_EQ(fv(add), (F{31, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(run_ref1("ScatterND", {data, i64({1, 1}, {8}), f32({1}, {0})}), Error);
  EXPECT_THROW(run_ref1("ScatterND", {data, i64({1, 1}, {0}), f32({2}, {0, 0})}), Error);
}

// GatherElements and ScatterElements (no reduction) along each axis of a 3-D tensor, with
// int64 and int32 indices (negative ones included) smaller than the data, against loops over
// the coordinates.
TEST(RefShapeElements, EveryAxisAgainstCoordinateLoops) {
  const Dims ds = {3, 4, 5}, is = {2, 3, 4};
  F data(60);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f;
  const Tensor x = f32(ds, data);
  for (int64_t axis = 0; axis < 3; ++axis) {
    const int64_t d = ds[static_cast<size_t>(axis)];
    I idx(24);
    F upd(24);
    for (size_t i = 0; i < idx.size(); ++i) {
      idx[i] = static_cast<int64_t>((i * 7 + 3) % static_cast<size_t>(2 * d)) - d;  // [-d, d)
      upd[i] = 100.0f + static_cast<float>(i);
    }
    for (bool int32 : {false, true}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (int32 ? " int32" : " int64"));
      Tensor ind = i64(is, idx);
      if (int32) ind = run_ref1("Cast", {ind}, {{"to", attr_int(6)}});
      const std::map<std::string, Attribute> a = {{"axis", attr_int(axis)}};
      F want_g(24), want_s = data;
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 3; ++j) {
          for (int64_t k = 0; k < 4; ++k) {
            const size_t lin = static_cast<size_t>((i * 3 + j) * 4 + k);
            int64_t c[3] = {i, j, k};
            c[axis] = (idx[lin] + d) % d;
            const size_t off = static_cast<size_t>((c[0] * 4 + c[1]) * 5 + c[2]);
            want_g[lin] = data[off];
            want_s[off] = upd[lin];  // later updates win
          }
        }
      }
      EXPECT_EQ(fv(run_ref1("GatherElements", {x, ind}, a)), want_g);
      EXPECT_EQ(fv(run_ref1("ScatterElements", {x, ind, f32(is, upd)}, a)), want_s);
    }
  }
}

TEST(RefShapeScatterElements, NoneAddMul) {
  Tensor zeros(DType::kFloat32, {3, 3});
  Tensor idx = i64({2, 3}, {1, 0, 2, 0, 2, 1});
  Tensor upd = f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f});
  EXPECT_EQ(fv(run_ref1("ScatterElements", {zeros, idx, upd})),
            (F{2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}));
  Tensor data = f32({1, 5}, {1, 2, 3, 4, 5});
  Tensor i2 = i64({1, 2}, {1, 1}), u2 = f32({1, 2}, {1.5f, 2.5f});
  EXPECT_EQ(fv(run_ref1("ScatterElements", {data, i2, u2},
                        {{"axis", attr_int(1)}, {"reduction", attr_string("add")}})),
            (F{1, 6, 3, 4, 5}));
  EXPECT_EQ(fv(run_ref1("ScatterElements", {data, i2, u2},
                        {{"axis", attr_int(1)}, {"reduction", attr_string("mul")}})),
            (F{1, 7.5f, 3, 4, 5}));
  EXPECT_EQ(fv(run_ref1("ScatterElements", {data, i64({1, 1}, {-1}), f32({1, 1}, {9})},
                        {{"axis", attr_int(1)}})),
            (F{1, 2, 3, 4, 9}));
  EXPECT_THROW(run_ref1("ScatterElements", {data, i64({1, 1}, {5}), f32({1, 1}, {9})},
                        {{"axis", attr_int(1)}}),
               Error);
  // Integer add wraps like the hardware instead of overflowing.
  Tensor i8 = Tensor::from_vector<int8_t>({1}, {127});
  EXPECT_EQ(values<int8_t>(run_ref1("ScatterElements",
                                    {i8, i64({1}, {0}), Tensor::from_vector<int8_t>({1}, {1})},
                                    {{"reduction", attr_string("add")}})),
            (std::vector<int8_t>{-128}));
}

TEST(RefShapeCompress, AxisAndFlattened) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto cond = [](std::vector<bool> v) {
    return Tensor::from_vector<bool>({static_cast<int64_t>(v.size())}, v);
  };
  Tensor a0 = run_ref1("Compress", {x, cond({false, true, true})}, {{"axis", attr_int(0)}});
  EXPECT_EQ(a0.shape(), (Dims{2, 2}));
  EXPECT_EQ(fv(a0), (F{3, 4, 5, 6}));
  Tensor a1 = run_ref1("Compress", {x, cond({false, true})}, {{"axis", attr_int(1)}});
  EXPECT_EQ(a1.shape(), (Dims{3, 1}));
  EXPECT_EQ(fv(a1), (F{2, 4, 6}));
  EXPECT_EQ(fv(run_ref1("Compress", {x, cond({false, true, false, false, true})})), (F{2, 5}));
  // A shorter condition drops the rest.
  EXPECT_EQ(fv(run_ref1("Compress", {x, cond({true})}, {{"axis", attr_int(-1)}})), (F{1, 3, 5}));
  EXPECT_THROW(run_ref1("Compress", {x, cond({false, false, true})}, {{"axis", attr_int(1)}}),
               Error);
}

TEST(RefShapeReverseSequence, TimeMajorAndBatchMajor) {
  Tensor x = f32({4, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  EXPECT_EQ(fv(run_ref1("ReverseSequence", {x, i64({4}, {4, 3, 2, 1})})),
            (F{12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15}));
  EXPECT_EQ(fv(run_ref1("ReverseSequence", {x, i64({4}, {1, 2, 3, 4})},
                        {{"batch_axis", attr_int(0)}, {"time_axis", attr_int(1)}})),
            (F{0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12}));
  EXPECT_THROW(run_ref1("ReverseSequence", {x, i64({4}, {5, 1, 1, 1})}), Error);
  EXPECT_THROW(run_ref1("ReverseSequence", {x, i64({3}, {1, 1, 1})}), Error);
}

TEST(RefShapeOneHot, AxesAndOutOfRange) {
  Tensor idx = i64({4}, {0, 2, -1, 5});
  Tensor vals = f32({2}, {0, 1});
  Tensor depth = Tensor::scalar<int64_t>(3);
  Tensor y = run_ref1("OneHot", {idx, depth, vals});
  EXPECT_EQ(y.shape(), (Dims{4, 3}));
  EXPECT_EQ(fv(y), (F{1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0}));
  Tensor t = run_ref1("OneHot", {idx, depth, vals}, {{"axis", attr_int(0)}});
  EXPECT_EQ(t.shape(), (Dims{3, 4}));
  EXPECT_EQ(fv(t), (F{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0}));
  // Float indices and depth; int64 values with off = 5, on = 7.
  Tensor z =
      run_ref1("OneHot", {f32({2}, {1.0f, 0.0f}), Tensor::scalar<float>(2.0f), i64({2}, {5, 7})});
  EXPECT_EQ(iv(z), (I{5, 7, 7, 5}));
  EXPECT_THROW(run_ref1("OneHot", {idx, Tensor::scalar<int64_t>(0), vals}), Error);
}

TEST(RefShapeEyeLike, DiagonalOffsetsAndDtype) {
  Tensor x(DType::kFloat32, {3, 4});
  EXPECT_EQ(fv(run_ref1("EyeLike", {x}, {{"k", attr_int(1)}})),
            (F{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  Tensor y = run_ref1("EyeLike", {x}, {{"k", attr_int(-1)}, {"dtype", attr_int(7)}});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(iv(y), (I{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(fv(run_ref1("EyeLike", {x}, {{"k", attr_int(9)}})), F(12, 0.f));
  EXPECT_THROW(run_ref1("EyeLike", {x}, {{"dtype", attr_int(8)}}), Error);  // string
}

TEST(RefShapeNonZero, Coordinates) {
  Tensor y = run_ref1("NonZero", {f32({2, 2}, {1, 0, 1, 1})});
  EXPECT_EQ(y.shape(), (Dims{2, 3}));
  EXPECT_EQ(iv(y), (I{0, 1, 1, 0, 0, 1}));
  Tensor b = run_ref1("NonZero", {Tensor::from_vector<bool>({3}, {false, true, true})});
  EXPECT_EQ(iv(b), (I{1, 2}));
  EXPECT_EQ(run_ref1("NonZero", {f32({2}, {0, 0})}).shape(), (Dims{1, 0}));
  EXPECT_EQ(iv(run_ref1("NonZero", {f32({6}, {3, 0, 4, 0, 0, 0})})), (I{0, 2}));
  EXPECT_EQ(iv(run_ref1("NonZero", {f32({3}, {1, 2, 3})})), (I{0, 1, 2}));
  // Rank 3 with a unit dim: each row of the output is one coordinate.
  Tensor r3 = run_ref1("NonZero", {f32({2, 1, 3}, {0, 2, 0, 5, 0, 7})});
  EXPECT_EQ(r3.shape(), (Dims{3, 3}));
  EXPECT_EQ(iv(r3), (I{0, 1, 1, 0, 0, 0, 1, 0, 2}));
}

}  // namespace index_test
}  // namespace nnfuse
