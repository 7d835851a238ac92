// cpu.unary_math against the reference kernel: the same double formulas, so the same numbers,
// bit for bit, over shapes, attributes, halves (Round's ties), out-of-domain inputs (NaN) and
// channels-last and in-place runs.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_unary_math_test {

using testing::expect_in_place_matches_ref;
using testing::FastInput;
using testing::random_tensor;

struct Case {
  const char* op;
  float lo, hi;  // input range
  std::map<std::string, Attribute> attrs;
};

std::vector<Case> cases() {
  return {
      {"Floor", -5, 5, {}},
      {"Ceil", -5, 5, {}},
      {"Round", -5, 5, {}},
      {"Sign", -2, 2, {}},
      {"Sin", -10, 10, {}},
      {"Cos", -10, 10, {}},
      {"Tan", -1.5f, 1.5f, {}},
      {"Asin", -1.2f, 1.2f, {}},  // beyond [-1, 1]: NaN on both sides
      {"Acos", -1.2f, 1.2f, {}},
      {"Atan", -10, 10, {}},
      {"Sinh", -5, 5, {}},
      {"Cosh", -5, 5, {}},
      {"Asinh", -10, 10, {}},
      {"Acosh", 0.5f, 10, {}},
      {"Atanh", -1.1f, 1.1f, {}},
      {"Selu", -5, 5, {}},
      {"Selu", -5, 5, {{"alpha", attr_float(1.5f)}, {"gamma", attr_float(2.0f)}}},
      {"Celu", -5, 5, {}},
      {"Celu", -5, 5, {{"alpha", attr_float(0.5f)}}},
      {"Softsign", -5, 5, {}},
      {"ThresholdedRelu", -3, 3, {}},
      {"ThresholdedRelu", -3, 3, {{"alpha", attr_float(0.25f)}}},
      {"Shrink", -3, 3, {}},
      {"Shrink", -3, 3, {{"lambd", attr_float(1.5f)}, {"bias", attr_float(0.25f)}}},
  };
}

// The fast kernel's output equals the reference's bit for bit (NaN where it has NaN).
void expect_same(const Case& c, const FastInput& x) {
  Tensor got =
      testing::run_kernel(c.op, {x}, c.attrs, 1, "cpu.unary_math", /*opset=*/17).outputs[0];
  Tensor want = testing::run_ref1(c.op, {x.value}, c.attrs, 17);
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "at " << i;
    } else {
      EXPECT_EQ(g, w) << "at " << i << " of " << x.value.data<float>()[i];
    }
  }
}

TEST(CpuUnaryMath, SameNumbersAsTheReferenceOverShapes) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    for (const Dims& s : std::vector<Dims>{{}, {7}, {1000}, {2, 3, 4, 5}, {70001}}) {
      SCOPED_TRACE(std::string(c.op) + " " + dims_str(s));
      expect_same(c, {random_tensor(s, seed++, c.lo, c.hi)});
    }
  }
}

TEST(CpuUnaryMath, HalvesZerosAndInfinities) {
  const std::vector<float> v = {-2.5f, -1.5f, -0.5f, -0.0f,    0.0f,      0.5f, 1.5f,
                                2.5f,  1.0f,  -1.0f, INFINITY, -INFINITY, NAN};
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.op);
    expect_same(c, {Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v)});
  }
}

TEST(CpuUnaryMath, ChannelsLastAndInPlace) {
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.op);
    expect_same(c, {random_tensor({2, 5, 3, 7}, seed++, c.lo, c.hi), false, Layout::kNHWC});
    expect_in_place_matches_ref("cpu.unary_math", c.op,
                                {{random_tensor({3, 1001}, seed++, c.lo, c.hi)}}, 0, c.attrs);
  }
}

TEST(CpuUnaryMath, DeclinesOtherTypes) {
  Tensor ints = Tensor::from_vector<int64_t>({3}, {-1, 0, 2});
  EXPECT_FALSE(testing::fast_accepts("cpu.unary_math", "Sign", {{ints}}));
  EXPECT_TRUE(testing::fast_accepts("cpu.unary_math", "Sign", {{random_tensor({3}, 1, -1, 1)}}));
}

}  // namespace cpu_unary_math_test
}  // namespace nnfuse
