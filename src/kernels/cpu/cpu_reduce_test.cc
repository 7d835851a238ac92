#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_reduce_test {

using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::random_tensor;

// Like expect_matches_ref, with NaN equal to NaN (ReduceMean over an empty dim is 0 / 0) and
// equal infinities equal (ReduceMax over an empty dim is -inf).
void expect_matches(const std::string& op, const std::vector<testing::FastInput>& inputs,
                    const std::map<std::string, Attribute>& attrs, int64_t opset) {
  Tensor got = testing::run_kernel(op, inputs, attrs, 1, "cpu.reduce", opset).outputs[0];
  std::vector<Tensor> plain;
  for (const auto& in : inputs) plain.push_back(in.value);
  Tensor want = testing::run_ref1(op, plain, attrs, opset);
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "at " << i;
    } else if (g != w) {  // infinities only compare equal
      EXPECT_LE(std::abs(g - w), 1e-5 + 1e-5 * std::abs(w)) << "at " << i;
    }
  }
}

const char* const kOps[] = {"ReduceSum",       "ReduceMean", "ReduceMax",       "ReduceMin",
                            "ReduceL1",        "ReduceL2",   "ReduceSumSquare", "ReduceLogSum",
                            "ReduceLogSumExp", "ReduceProd"};

struct Case {
  Dims shape;
  std::vector<int64_t> axes;  // empty: all
};

const std::vector<Case> kCases = {
    {{1, 128, 768}, {-1}},  // LayerNorm's mean
    {{7}, {0}},
    {{33, 1000}, {1}},
    {{33, 1000}, {0}},
    {{1000, 33}, {0}},
    {{2, 3, 4, 5}, {1}},
    {{2, 3, 4, 5}, {1, 2}},
    {{2, 3, 4, 5}, {0, 2}},  // alternating: the general path
    {{2, 3, 4, 5}, {-1, 0}},
    {{2, 3, 4, 5}, {}},
    {{2, 1, 3, 1, 5}, {1, 3}},  // only extent-1 dims: a copy
    {{2, 1, 3, 1, 5}, {1, 2}},
    {{3, 2000}, {0}},
    {{300000}, {0}},  // one long row, split across threads
    {{2, 300000}, {1}},
    {{4, 0, 3}, {1}},  // empty reduction: identity
    {{4, 0, 3}, {0}},  // empty output
    {{}, {}},
};

// Every op on every case, axes as the attribute, with and without keepdims, the input
// arriving in `layout`.
void check_axes_attribute(const std::vector<Case>& cases, uint32_t seed, Layout layout) {
  for (const char* op : kOps) {
    for (const Case& c : cases) {
      for (int64_t keep : {0, 1}) {
        SCOPED_TRACE(std::string(op) + " " + dims_str(c.shape) + " axes " + dims_str(c.axes) +
                     " keepdims " + std::to_string(keep));
        std::map<std::string, Attribute> attrs = {{"keepdims", attr_int(keep)}};
        if (!c.axes.empty()) attrs["axes"] = attr_ints(c.axes);
        expect_matches(op, {{random_tensor(c.shape, seed++, -2, 3), false, layout}}, attrs,
                       /*opset=*/13);
      }
    }
  }
}

TEST(CpuReduce, AxesAttributeWithAndWithoutKeepdims) {
  check_axes_attribute(kCases, 1, Layout::kPlain);
}

TEST(CpuReduce, AxesInput) {
  uint32_t seed = 500;
  for (const char* op : kOps) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(op) + " " + dims_str(c.shape) + " axes " + dims_str(c.axes));
      Tensor axes = Tensor::from_vector<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes);
      expect_matches(op, {{random_tensor(c.shape, seed++, -2, 3)}, {axes, true}}, {},
                     /*opset=*/18);
      // Axes known only at run time.
      expect_matches(op, {{random_tensor(c.shape, seed++, -2, 3)}, {axes}},
                     {{"keepdims", attr_int(0)}}, 18);
    }
    Tensor none = Tensor::from_vector<int64_t>({0}, {});
    expect_matches_ref("cpu.reduce", op, {{random_tensor({3, 4}, seed++)}, {none, true}},
                       {{"noop_with_empty_axes", attr_int(1)}}, 1, 1e-5f, 1e-5f, 18);
  }
}

// A channels-last input (a convolution's output): reduced where it lies when the kept dims keep
// their order (all spatial dims: a video network's head; C; everything), from a plain copy
// otherwise (some spatial dims kept next to C).
TEST(CpuReduce, ChannelsLastInputs) {
  const std::vector<Case> cases = {
      {{2, 48, 7}, {2}},
      {{1, 40, 3, 5}, {2, 3}},
      {{2, 24, 3, 4, 5}, {2, 3, 4}},
      {{2, 24, 3, 4, 5}, {-1, -3, -2}},
      {{2, 20, 3, 4}, {1}},
      {{2, 20, 3, 4}, {2}},
      {{2, 20, 3, 4}, {3}},
      {{2, 20, 3, 4}, {0, 2}},
      {{2, 20, 3, 4}, {}},
      {{3, 20, 1, 4}, {3}},
      {{1, 17, 6, 2, 3}, {1, 3}},
      {{4, 1000, 2, 2}, {2, 3}},
  };
  check_axes_attribute(cases, 900, Layout::kNHWC);
}

TEST(CpuReduce, SumsAreAccurateOnLongRows) {
  // Values of mixed sign whose sum nearly cancels: float accumulation would drift.
  Tensor x = random_tensor({4, 1 << 20}, 900, -1000, 1000);
  expect_matches_ref("cpu.reduce", "ReduceSum", {{x}}, {{"axes", attr_ints({1})}}, 1, 1e-3f, 1e-6f,
                     13);
  expect_matches_ref("cpu.reduce", "ReduceMean", {{x}}, {{"axes", attr_ints({0})}}, 1, 1e-5f, 1e-6f,
                     13);
}

TEST(CpuReduce, NaNPropagatesThroughMaxAndMin) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = random_tensor({3, 40}, 950);
  x.data<float>()[45] = nan;
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    for (int64_t axis : {0, 1}) {
      Tensor y = testing::run_kernel(op, {{x}}, {{"axes", attr_ints({axis})}}, 1, "cpu.reduce", 13)
                     .outputs[0];
      Tensor want = testing::run_ref1(op, {x}, {{"axes", attr_ints({axis})}}, 13);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const float g = y.data<float>()[i], w = want.data<float>()[i];
        EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << op << " axis " << axis << " " << i;
      }
    }
  }
}

// Integer Sum (wrapping), Max and Min over every axes case, an empty reduced dim, and values
// that overflow a sum.
TEST(CpuReduce, IntegersMatchTheReferenceKernel) {
  uint32_t seed = 900;
  for (DType t : {DType::kInt64, DType::kInt32}) {
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin"}) {
      for (const Case& c : kCases) {
        for (int64_t keep : {0, 1}) {
          SCOPED_TRACE(std::string(op) + " " + dtype_name(t) + " " + dims_str(c.shape) + " axes " +
                       dims_str(c.axes) + " keepdims " + std::to_string(keep));
          std::map<std::string, Attribute> attrs = {{"keepdims", attr_int(keep)}};
          if (!c.axes.empty()) attrs["axes"] = attr_ints(c.axes);
          const Tensor x = testing::run_ref1("Cast", {random_tensor(c.shape, seed++, -1000, 1000)},
                                             {{"to", attr_int(static_cast<int64_t>(t))}});
          expect_matches_ref("cpu.reduce", op, {{x}}, attrs, 1, 0.0f, 0.0f, 13);
        }
      }
      expect_matches_ref("cpu.reduce", op, {{Tensor(t, {3, 0, 2})}}, {{"axes", attr_ints({1})}}, 1,
                         0.0f, 0.0f, 13);
    }
  }
  const int64_t big = std::numeric_limits<int64_t>::max();
  expect_matches_ref("cpu.reduce", "ReduceSum",
                     {{Tensor::from_vector<int64_t>({3}, {big, big, 5})}}, {}, 1, 0.0f, 0.0f, 13);
}

TEST(CpuReduce, DeclinesAndErrors) {
  EXPECT_FALSE(fast_accepts("cpu.reduce", "ReduceMean", {{Tensor(DType::kInt64, {4})}}));
  EXPECT_FALSE(fast_accepts("cpu.reduce", "ReduceSum", {{Tensor(DType::kUInt8, {4})}}));
  EXPECT_FALSE(fast_accepts("cpu.reduce", "ReduceMean", {{Tensor(DType::kFloat16, {4})}}));
  EXPECT_TRUE(fast_accepts("cpu.reduce", "ReduceMean",
                           {{random_tensor({1, 2, 3, 4}, 1), false, Layout::kNHWC}}));
  EXPECT_TRUE(fast_accepts("cpu.reduce", "ReduceMean", {{random_tensor({4}, 1)}}));
  EXPECT_THROW(testing::run_kernel("ReduceSum", {{random_tensor({4, 4}, 2)}},
                                   {{"axes", attr_ints({2})}}, 1, "cpu.reduce", 13),
               Error);
}

}  // namespace cpu_reduce_test
}  // namespace nnfuse
