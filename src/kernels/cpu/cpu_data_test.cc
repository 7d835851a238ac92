#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_data_test {

using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

Tensor i64(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// The values as a [1, n] index tensor (indices of rank 2).
Tensor i64s2(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({1, static_cast<int64_t>(v.size())}, v);
}

// A tensor of `t` with distinct-ish values (so misplaced elements show).
Tensor typed_tensor(DType t, const Dims& shape, uint32_t seed) {
  Tensor f = random_tensor(shape, seed, -100, 100);
  Tensor y(t, shape);
  for (int64_t i = 0; i < f.numel(); ++i) {
    const float v = f.data<float>()[i];
    switch (t) {
      case DType::kFloat32:
        y.data<float>()[i] = v;
        break;
      case DType::kInt64:
        y.data<int64_t>()[i] = static_cast<int64_t>(v * 1000);
        break;
      case DType::kUInt8:
        y.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + seed);
        break;
      case DType::kBool:
        y.data<bool>()[i] = v > 0;
        break;
      default:  // 2-byte types: raw bits
        reinterpret_cast<uint16_t*>(y.raw())[i] = static_cast<uint16_t>(i * 31 + seed);
    }
  }
  return y;
}

// Byte-exact comparison against the reference (works for every element type).
void expect_same_as_ref(const std::string& kernel, const std::string& op,
                        const std::vector<FastInput>& inputs,
                        const std::map<std::string, Attribute>& attrs = {}, size_t outputs = 1,
                        int64_t opset = 17) {
  testing::FastRun fast = testing::run_kernel(op, inputs, attrs, outputs, kernel, opset);
  std::vector<Tensor> plain;
  for (const FastInput& in : inputs) plain.push_back(in.value);
  std::vector<Tensor> ref = testing::run_ref(op, plain, attrs, outputs, opset);
  ASSERT_EQ(fast.outputs.size(), ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    ASSERT_EQ(fast.outputs[k].dtype(), ref[k].dtype()) << "output " << k;
    ASSERT_EQ(fast.outputs[k].shape(), ref[k].shape()) << "output " << k;
    EXPECT_EQ(std::memcmp(fast.outputs[k].raw(), ref[k].raw(), ref[k].nbytes()), 0)
        << "output " << k << " of " << op;
  }
}

const DType kTypes[] = {DType::kFloat32, DType::kInt64, DType::kUInt8, DType::kFloat16,
                        DType::kBool};

TEST(CpuTranspose, EveryPermutationUpToRank4) {
  uint32_t seed = 1;
  for (const Dims& s : std::vector<Dims>{{5}, {7, 33}, {2, 3, 4}, {3, 5, 7, 2}, {1, 4, 1, 6}}) {
    std::vector<int64_t> perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      SCOPED_TRACE(dims_str(s) + " perm " + dims_str(perm));
      expect_same_as_ref("cpu.transpose", "Transpose", {{typed_tensor(DType::kFloat32, s, seed++)}},
                         {{"perm", attr_ints(perm)}});
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(CpuTranspose, BertShapesRank5AndTypes) {
  uint32_t seed = 100;
  struct Case {
    Dims shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{1, 128, 12, 64}, {0, 2, 1, 3}},  // split heads
      {{1, 12, 128, 64}, {0, 2, 1, 3}},  // merge heads
      {{1, 12, 128, 64}, {0, 1, 3, 2}},  // K^T
      {{1, 12, 64, 128}, {0, 1, 3, 2}},
      {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}},
      {{2, 3, 4, 5, 6}, {0, 1, 2, 4, 3}},
      {{1000, 33}, {1, 0}},
      {{3, 300, 301}, {0, 2, 1}},
      {{1, 64, 56, 56}, {0, 2, 3, 1}},  // NCHW -> NHWC
      {{2, 0, 3}, {2, 1, 0}},
      {{}, {}},
  };
  for (DType t : kTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(dtype_name(t) + " " + dims_str(c.shape) + " perm " + dims_str(c.perm));
      expect_same_as_ref("cpu.transpose", "Transpose", {{typed_tensor(t, c.shape, seed++)}},
                         {{"perm", attr_ints(c.perm)}});
    }
  }
  // Default perm: reverse.
  expect_same_as_ref("cpu.transpose", "Transpose", {{typed_tensor(DType::kFloat32, {2, 3, 4}, 7)}});
  EXPECT_THROW(testing::run_kernel("Transpose", {{random_tensor({2, 3}, 1)}},
                                   {{"perm", attr_ints({0, 0})}}, 1, "cpu.transpose"),
               Error);
}

TEST(CpuSlice, StartsEndsAxesSteps) {
  uint32_t seed = 200;
  struct Case {
    Dims shape;
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<Case> cases = {
      {{10}, {2}, {7}, {}, {}},
      {{10, 33}, {1, 3}, {8, 30}, {}, {}},
      {{10, 33}, {5}, {big}, {1}, {}},
      {{10, 33}, {-3}, {-1}, {0}, {}},
      {{10, 33}, {9, 30}, {-big, 0}, {0, 1}, {-1, -3}},
      {{10, 33}, {0}, {33}, {-1}, {4}},
      {{2, 3, 4, 5}, {0, 1}, {1, 3}, {1, 3}, {1, 2}},
      {{2, 3, 4, 5}, {1}, {100}, {-2}, {1}},
      {{1, 128, 768}, {0}, {1}, {1}, {}},  // BERT pooler: first token
      {{4, 6}, {3}, {3}, {0}, {}},         // empty
      {{300, 400}, {10, 20}, {290, 390}, {0, 1}, {}},
  };
  for (DType t : kTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(dtype_name(t) + " " + dims_str(c.shape) + " starts " + dims_str(c.starts));
      std::vector<FastInput> in = {
          {typed_tensor(t, c.shape, seed++)}, {i64(c.starts), true}, {i64(c.ends), true}};
      if (!c.axes.empty() || !c.steps.empty()) {
        std::vector<int64_t> axes = c.axes;
        if (axes.empty()) {
          for (size_t i = 0; i < c.starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
        }
        in.push_back({i64(axes), true});
      }
      if (!c.steps.empty()) in.push_back({i64(c.steps)});
      expect_same_as_ref("cpu.slice", "Slice", in);
    }
  }
  EXPECT_THROW(
      testing::run_kernel("Slice",
                          {{random_tensor({4}, 1)}, {i64({0})}, {i64({2})}, {i64({0})}, {i64({0})}},
                          {}, 1, "cpu.slice"),
      Error);
}

TEST(CpuSplit, SizesFromInputAttributeOrEqual) {
  uint32_t seed = 300;
  for (DType t : kTypes) {
    Tensor x = typed_tensor(t, {6, 10, 4}, seed++);
    expect_same_as_ref("cpu.split", "Split", {{x}}, {{"axis", attr_int(1)}}, 2);
    expect_same_as_ref("cpu.split", "Split", {{x}, {i64({2, 5, 3}), true}}, {{"axis", attr_int(1)}},
                       3);
    expect_same_as_ref("cpu.split", "Split", {{x}, {i64({1, 0, 5})}}, {{"axis", attr_int(0)}}, 3);
    expect_same_as_ref("cpu.split", "Split", {{x}}, {{"axis", attr_int(-1)}}, 4, 11);
    expect_same_as_ref("cpu.split", "Split", {{x}},
                       {{"split", attr_ints({3, 7})}, {"axis", attr_int(1)}}, 2, 11);
    expect_same_as_ref("cpu.split", "Split", {{x}},
                       {{"num_outputs", attr_int(4)}, {"axis", attr_int(1)}}, 4, 18);
  }
  // BERT's fused QKV: [1, 128, 2304] into three.
  expect_same_as_ref("cpu.split", "Split", {{random_tensor({1, 128, 2304}, 9)}},
                     {{"axis", attr_int(-1)}}, 3);
  EXPECT_THROW(testing::run_kernel("Split", {{random_tensor({5}, 1)}}, {}, 2, "cpu.split"), Error);
}

TEST(CpuExpand, Broadcasts) {
  uint32_t seed = 400;
  struct Case {
    Dims in, shape;
  };
  const std::vector<Case> cases = {
      {{1}, {7}},
      {{3, 1}, {3, 50}},
      {{1, 50}, {3, 50}},
      {{}, {2, 3}},
      {{1, 1, 128}, {1, 12, 128}},
      {{2, 1, 4}, {3, 1, 5, 1}},
      {{4}, {2, 1, 4}},
      {{3, 1}, {1}},
      {{1, 5000}, {200, 5000}},
      {{4000, 1}, {4000, 64}},
      {{1, 3}, {0, 3}},
  };
  for (DType t : kTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(dtype_name(t) + " " + dims_str(c.in) + " to " + dims_str(c.shape));
      expect_same_as_ref("cpu.expand", "Expand", {{typed_tensor(t, c.in, seed++)}, {i64(c.shape)}});
    }
  }
  EXPECT_THROW(
      testing::run_kernel("Expand", {{random_tensor({3}, 1)}, {i64({4})}}, {}, 1, "cpu.expand"),
      Error);
}

TEST(CpuSlice, ChannelsLast) {
  // A conv's channels-last output sliced (ShuffleNet's halves, and along the other dims):
  // the same slice over the stored dims, written channels-last.
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases = {{{0}, {8}, {1}, {}},           {{8}, {16}, {1}, {}},
                                   {{1, 2}, {5, 7}, {2, 3}, {}},  {{15}, {0}, {1}, {-2}},
                                   {{0, 1}, {1, 4}, {0, -1}, {}}, {{3}, {100}, {-3}, {2}}};
  uint32_t seed = 900;
  for (DType t : {DType::kFloat32, DType::kUInt8}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(dtype_name(t) + " starts " + dims_str(c.starts) + " axes " + dims_str(c.axes));
      std::vector<FastInput> in = {{typed_tensor(t, {2, 16, 6, 7}, seed++), false, Layout::kNHWC},
                                   {i64(c.starts), true},
                                   {i64(c.ends), true},
                                   {i64(c.axes), true}};
      if (!c.steps.empty()) in.push_back({i64(c.steps), true});
      expect_same_as_ref("cpu.slice", "Slice", in);
      testing::OneNode one("Slice", in, {});
      EXPECT_EQ(testing::find_factory("Slice", "cpu.slice")->output_layout(one.info(), 0),
                Layout::kNHWC);
    }
  }
}

// Channels-last of rank 3 (a 1-D conv's output trimmed in time, wav2vec2's positional conv)
// and 5 (a video feature map sliced along channels and frames).
TEST(CpuSlice, ChannelsLastOfRanksThreeAndFive) {
  uint32_t seed = 950;
  for (const auto& [x, axes] : {std::pair{Dims{2, 6, 9}, std::vector<int64_t>{2}},
                                std::pair{Dims{2, 6, 9}, std::vector<int64_t>{1}},
                                std::pair{Dims{1, 8, 4, 3, 5}, std::vector<int64_t>{1, 2}},
                                std::pair{Dims{1, 8, 4, 3, 5}, std::vector<int64_t>{-1}}}) {
    SCOPED_TRACE(dims_str(x) + " axes " + dims_str(axes));
    std::vector<int64_t> starts(axes.size(), 1), ends(axes.size(), -1);
    std::vector<FastInput> in = {{random_tensor(x, seed++), false, Layout::kNHWC},
                                 {i64(starts), true},
                                 {i64(ends), true},
                                 {i64(axes), true}};
    expect_same_as_ref("cpu.slice", "Slice", in);
    testing::OneNode one("Slice", in, {});
    EXPECT_EQ(testing::find_factory("Slice", "cpu.slice")->output_layout(one.info(), 0),
              Layout::kNHWC);
  }
}

TEST(CpuGather, ChannelsLastChannelPermutation) {
  // ShuffleNet's channel shuffle as a Gather of the channels, on a conv's NHWC output; and the
  // other axes with 1-D indices.
  uint32_t seed = 950;
  for (DType t : {DType::kFloat32, DType::kInt64, DType::kUInt8}) {
    for (int64_t axis : {1, 2, 3, 0, -3}) {
      SCOPED_TRACE(dtype_name(t) + " axis " + std::to_string(axis));
      const Dims s = {2, 12, 5, 4};
      const int64_t d = s[static_cast<size_t>(axis < 0 ? axis + 4 : axis)];
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < d; ++i) idx.push_back((i * 5 + 1) % d);
      idx.push_back(-1);
      std::vector<FastInput> in = {{typed_tensor(t, s, seed++), false, Layout::kNHWC},
                                   {i64(idx), true}};
      expect_same_as_ref("cpu.gather", "Gather", in, {{"axis", attr_int(axis)}});
    }
  }
  // Plain data, one element per pick (inner size 1), and a scalar index in NHWC declined.
  expect_same_as_ref("cpu.gather", "Gather",
                     {{random_tensor({7, 33}, 1)}, {i64({32, 0, 5, 5}), true}},
                     {{"axis", attr_int(1)}});
  EXPECT_FALSE(fast_accepts(
      "cpu.gather", "Gather",
      {{random_tensor({1, 4, 2, 2}, 2), false, Layout::kNHWC}, {Tensor::scalar<int64_t>(1), true}},
      {{"axis", attr_int(1)}}));
}

TEST(CpuGather, EmbeddingsAndOtherAxes) {
  uint32_t seed = 500;
  // Embedding lookup: constant [V, D] table, int64 ids (negative ones count from the back).
  Tensor table = random_tensor({1000, 64}, seed++);
  Tensor ids = testing::random_int64({1, 128}, seed++, -1000, 999);
  expect_same_as_ref("cpu.gather", "Gather", {{table, true}, {ids}});
  Tensor ids32(DType::kInt32, {5});
  for (int i = 0; i < 5; ++i) ids32.data<int32_t>()[i] = i * 100 - 3;
  expect_same_as_ref("cpu.gather", "Gather", {{table, true}, {ids32}});
  for (DType t : kTypes) {
    Tensor x = typed_tensor(t, {4, 5, 6}, seed++);
    for (int64_t axis : {0, 1, 2, -1}) {
      SCOPED_TRACE(dtype_name(t) + " axis " + std::to_string(axis));
      const int64_t d = x.dim(axis < 0 ? axis + 3 : axis);
      expect_same_as_ref("cpu.gather", "Gather",
                         {{x}, {testing::random_int64({2, 3}, seed++, -d, d - 1)}},
                         {{"axis", attr_int(axis)}});
      expect_same_as_ref("cpu.gather", "Gather", {{x}, {Tensor::scalar<int64_t>(1)}},
                         {{"axis", attr_int(axis)}});
    }
  }
  EXPECT_THROW(testing::run_kernel("Gather", {{table}, {i64({1000})}}, {}, 1, "cpu.gather"), Error);
  EXPECT_THROW(testing::run_kernel("Gather", {{table}, {i64({-1001})}}, {}, 1, "cpu.gather"),
               Error);
}

TEST(CpuConcat, AlongEachAxis) {
  uint32_t seed = 600;
  for (DType t : kTypes) {
    for (int64_t axis : {0, 1, 2, -1}) {
      SCOPED_TRACE(dtype_name(t) + " axis " + std::to_string(axis));
      const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      std::vector<FastInput> in;
      for (int64_t len : {2, 0, 5, 1}) {
        Dims s = {3, 4, 5};
        s[a] = len;
        in.push_back({typed_tensor(t, s, seed++)});
      }
      expect_same_as_ref("cpu.concat", "Concat", in, {{"axis", attr_int(axis)}});
    }
  }
  // Large blocks (split into pieces across threads) and a single input.
  expect_same_as_ref("cpu.concat", "Concat",
                     {{random_tensor({1, 300000}, 1)}, {random_tensor({1, 200000}, 2)}},
                     {{"axis", attr_int(1)}});
  expect_same_as_ref("cpu.concat", "Concat", {{random_tensor({3, 4}, 3)}}, {{"axis", attr_int(0)}});
  // Many tiny blocks (coordinates stacked along a new last dim), rows across threads.
  expect_same_as_ref("cpu.concat", "Concat",
                     {{random_tensor({256, 49, 1}, 4)},
                      {random_tensor({256, 49, 1}, 5)},
                      {random_tensor({256, 49, 3}, 6)}},
                     {{"axis", attr_int(-1)}});
  EXPECT_THROW(
      testing::run_kernel("Concat", {{random_tensor({3, 4}, 1)}, {random_tensor({3, 5}, 2)}},
                          {{"axis", attr_int(0)}}, 1, "cpu.concat"),
      Error);
  EXPECT_FALSE(fast_accepts("cpu.concat", "Concat", {{random_tensor({3}, 1)}}));  // no axis
}

TEST(CpuConcat, ChannelsLastAlongEachAxis) {
  uint32_t seed = 700;
  for (DType t : {DType::kFloat32, DType::kUInt8}) {
    for (int64_t axis : {0, 1, 2, 3, -3}) {
      SCOPED_TRACE(dtype_name(t) + " axis " + std::to_string(axis));
      const size_t a = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
      std::vector<FastInput> in;
      for (int64_t len : {3, 1, 0, 16}) {
        Dims s = {2, 5, 4, 3};
        s[a] = len;
        in.push_back({typed_tensor(t, s, seed++), false, Layout::kNHWC});
      }
      expect_same_as_ref("cpu.concat", "Concat", in, {{"axis", attr_int(axis)}});
      testing::OneNode one("Concat", in, {{"axis", attr_int(axis)}});
      EXPECT_EQ(testing::find_factory("Concat", "cpu.concat")->output_layout(one.info(), 0),
                Layout::kNHWC);
    }
  }
  // Ranks 3 and 5: a 1-D and a 3-D UNet's skip concatenations, along channels and along time.
  for (const Dims& shape : {Dims{2, 5, 7}, Dims{1, 5, 3, 4, 2}}) {
    for (int64_t axis : {1, 2}) {
      SCOPED_TRACE(dims_str(shape) + " axis " + std::to_string(axis));
      std::vector<FastInput> in;
      for (int64_t len : {3, 16}) {
        Dims s = shape;
        s[static_cast<size_t>(axis)] = len;
        in.push_back({random_tensor(s, seed++), false, Layout::kNHWC});
      }
      expect_same_as_ref("cpu.concat", "Concat", in, {{"axis", attr_int(axis)}});
    }
  }
  // Mixed layouts are left to the planner, which makes them plain.
  EXPECT_FALSE(fast_accepts(
      "cpu.concat", "Concat",
      {{random_tensor({1, 2, 3, 3}, 1), false, Layout::kNHWC}, {random_tensor({1, 2, 3, 3}, 2)}},
      {{"axis", attr_int(1)}}));
}

TEST(CpuCast, BetweenFloatIntAndBool) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor f = Tensor::from_vector<float>({10}, {0.0f, -0.0f, 1.5f, -1.5f, 2.9f, -2.9f, 1e20f, -1e20f,
                                               inf, std::numeric_limits<float>::quiet_NaN()});
  const DType types[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                         DType::kBool};
  for (DType to : types) {
    SCOPED_TRACE("float32 to " + dtype_name(to));
    if (to != DType::kFloat32 && to != DType::kFloat64) {
      expect_same_as_ref("cpu.cast", "Cast", {{f}}, {{"to", attr_int(static_cast<int64_t>(to))}});
    }
    Tensor big = random_tensor({100000}, 7, -1e6f, 1e6f);
    expect_same_as_ref("cpu.cast", "Cast", {{big}}, {{"to", attr_int(static_cast<int64_t>(to))}});
  }
  Tensor ints = testing::random_int64({1, 128}, 8, -5, 5);
  for (DType to : types) {
    SCOPED_TRACE("int64 to " + dtype_name(to));
    expect_same_as_ref("cpu.cast", "Cast", {{ints}}, {{"to", attr_int(static_cast<int64_t>(to))}});
  }
  Tensor mask(DType::kBool, {2, 3});
  mask.data<bool>()[1] = true;
  expect_same_as_ref("cpu.cast", "Cast", {{mask}}, {{"to", attr_int(1)}});
  // Layout-transparent.
  FastInput nhwc{random_tensor({1, 3, 2, 2}, 9), false, Layout::kNHWC};
  expect_same_as_ref("cpu.cast", "Cast", {nhwc}, {{"to", attr_int(7)}});
  // float16 and bfloat16 to and from float32 only.
  EXPECT_FALSE(fast_accepts("cpu.cast", "Cast", {{ints}}, {{"to", attr_int(10)}}));
  EXPECT_FALSE(
      fast_accepts("cpu.cast", "Cast", {{Tensor(DType::kFloat16, {2})}}, {{"to", attr_int(7)}}));
}

TEST(CpuCast, HalfTypesToAndFromFloat32MatchTheReferenceBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  // Rounding ties, subnormals of both formats, overflow, signed zero, infinity and NaN.
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f + 1.0f / 2048,
                          1.0f + 3.0f / 2048,
                          65504.0f,
                          65520.0f,
                          1e-7f,
                          -6e-8f,
                          1e-40f,
                          3.0e38f,
                          inf,
                          -inf,
                          std::numeric_limits<float>::quiet_NaN()};
  Tensor special = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  Tensor big = random_tensor({70000}, 11, -70000.0f, 70000.0f);
  for (int64_t to : {10, 16}) {
    SCOPED_TRACE("to " + std::to_string(to));
    for (const Tensor& x : {special, big}) {
      expect_same_as_ref("cpu.cast", "Cast", {{x}}, {{"to", attr_int(to)}});
      // Back to float32 from the reference's rounding.
      std::vector<Tensor> half = testing::run_ref("Cast", {x}, {{"to", attr_int(to)}}, 1, 17);
      expect_same_as_ref("cpu.cast", "Cast", {{half[0]}}, {{"to", attr_int(1)}});
    }
  }
}

TEST(CpuData, DeclineChannelsLastAndOddTypes) {
  FastInput nhwc{random_tensor({1, 2, 3, 4}, 1), false, Layout::kNHWC};
  EXPECT_FALSE(fast_accepts("cpu.transpose", "Transpose", {nhwc}));
  // Gather and Slice take channels-last data (ChannelsLast tests), but not rank-changing
  // indices or channels-last bounds.
  EXPECT_FALSE(fast_accepts("cpu.gather", "Gather", {nhwc, {i64s2({0, 1})}}));
  EXPECT_FALSE(
      fast_accepts("cpu.slice", "Slice", {nhwc, {i64({0}), false, Layout::kNHWC}, {i64({1})}}));
  EXPECT_FALSE(
      fast_accepts("cpu.gather", "Gather", {{random_tensor({3}, 1)}, {random_tensor({1}, 2)}}));
  EXPECT_TRUE(fast_accepts("cpu.transpose", "Transpose", {{Tensor(DType::kFloat64, {2, 3})}}));
}

}  // namespace cpu_data_test
}  // namespace nnfuse
