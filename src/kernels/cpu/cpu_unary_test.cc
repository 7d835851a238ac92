#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_unary_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

struct UnaryCase {
  const char* op;
  float lo, hi;  // input range
  std::map<std::string, Attribute> attrs;
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"Relu", -3, 3, {}},
      {"LeakyRelu", -3, 3, {}},
      {"LeakyRelu", -3, 3, {{"alpha", attr_float(0.3f)}}},
      {"Sigmoid", -20, 20, {}},
      {"HardSigmoid", -6, 6, {}},
      {"HardSigmoid", -6, 6, {{"alpha", attr_float(0.1f)}, {"beta", attr_float(0.3f)}}},
      {"HardSwish", -6, 6, {}},
      {"Tanh", -10, 10, {}},
      {"Erf", -5, 5, {}},
      {"Exp", -20, 10, {}},
      {"Log", 1e-3f, 100, {}},
      {"Sqrt", 0, 100, {}},
      {"Reciprocal", 0.5f, 4, {}},
      {"Neg", -3, 3, {}},
      {"Abs", -3, 3, {}},
      {"Elu", -5, 5, {}},
      {"Elu", -5, 5, {{"alpha", attr_float(0.5f)}}},
      {"Softplus", -30, 30, {}},
  };
}

const std::vector<Dims> kShapes = {{},     {1}, {7}, {33}, {1000}, {2, 3, 4, 5}, {2, 1, 3, 1, 4},
                                   {70001}};

TEST(CpuUnary, MatchesReferenceOverShapes) {
  uint32_t seed = 1;
  for (const UnaryCase& c : unary_cases()) {
    for (const Dims& s : kShapes) {
      SCOPED_TRACE(std::string(c.op) + " " + dims_str(s));
      expect_matches_ref("cpu.unary", c.op, {{random_tensor(s, seed++, c.lo, c.hi)}}, c.attrs);
    }
  }
}

TEST(CpuUnary, ChannelsLastInputGivesChannelsLastOutput) {
  uint32_t seed = 100;
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.op);
    FastInput x{random_tensor({2, 5, 3, 7}, seed++, c.lo, c.hi), false, Layout::kNHWC};
    expect_matches_ref("cpu.unary", c.op, {x}, c.attrs);
    testing::OneNode one(c.op, {x}, c.attrs);
    EXPECT_EQ(testing::find_factory(c.op, "cpu.unary")->output_layout(one.info(), 0),
              Layout::kNHWC);
  }
}

TEST(CpuUnary, InPlace) {
  uint32_t seed = 200;
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.op);
    expect_in_place_matches_ref("cpu.unary", c.op, {{random_tensor({3, 1001}, seed++, c.lo, c.hi)}},
                                0, c.attrs);
    expect_in_place_matches_ref(
        "cpu.unary", c.op,
        {{random_tensor({1, 4, 5, 6}, seed++, c.lo, c.hi), false, Layout::kNHWC}}, 0, c.attrs);
  }
}

TEST(CpuUnary, ClipWithBoundInputs) {
  Tensor x = random_tensor({5, 77}, 3, -4, 4);
  Tensor lo = Tensor::scalar<float>(-1.5f), hi = Tensor::scalar<float>(2.0f);
  expect_matches_ref("cpu.unary", "Clip", {{x}});
  expect_matches_ref("cpu.unary", "Clip", {{x}, {lo, true}, {hi, true}});
  expect_matches_ref("cpu.unary", "Clip", {{x}, {lo}, {hi}});  // bounds known only at run time
  expect_matches_ref("cpu.unary", "Clip", {{x}, {Tensor()}, {hi, true}});
  expect_matches_ref("cpu.unary", "Clip", {{x}, {lo, true}});
  // min > max: everything becomes max.
  expect_matches_ref("cpu.unary", "Clip", {{x}, {hi, true}, {lo, true}});
  expect_in_place_matches_ref("cpu.unary", "Clip", {{x}, {lo, true}, {hi, true}}, 0);
}

TEST(CpuUnary, ClipOpset6Attributes) {
  Tensor x = random_tensor({40, 3}, 4, -4, 4);
  expect_matches_ref("cpu.unary", "Clip", {{x}},
                     {{"min", attr_float(-0.5f)}, {"max", attr_float(0.7f)}}, 1, 1e-5f, 1e-4f,
                     /*opset=*/6);
  expect_matches_ref("cpu.unary", "Clip", {{x}}, {{"max", attr_float(0.0f)}}, 1, 1e-5f, 1e-4f, 6);
}

TEST(CpuUnary, ClipRejectsNonScalarBoundsAtRunTime) {
  Tensor x = random_tensor({4}, 5);
  Tensor lo = Tensor::from_vector<float>({2}, {0, 1});
  EXPECT_THROW(testing::run_kernel("Clip", {{x}, {lo}}, {}, 1, "cpu.unary"), Error);
}

TEST(CpuUnary, DeclinesOtherTypes) {
  for (DType t : {DType::kInt64, DType::kFloat16, DType::kFloat64, DType::kInt32}) {
    Tensor x(t, {4});
    EXPECT_FALSE(fast_accepts("cpu.unary", "Relu", {{x}})) << dtype_name(t);
    EXPECT_FALSE(fast_accepts("cpu.unary", "Exp", {{x}})) << dtype_name(t);
  }
  Tensor x = random_tensor({4}, 6);
  EXPECT_TRUE(fast_accepts("cpu.unary", "Relu", {{x}}));
  Tensor i64 = Tensor::scalar<int64_t>(1);
  EXPECT_FALSE(fast_accepts("cpu.unary", "Clip", {{x}, {i64}}));
  // An attribute of the wrong kind is left to the reference kernel to report.
  EXPECT_FALSE(fast_accepts("cpu.unary", "LeakyRelu", {{x}}, {{"alpha", attr_string("a")}}));
}

// Infinities and NaN compared exactly, finite values within tolerance.
void expect_same_with_specials(const std::string& op, const Tensor& x) {
  SCOPED_TRACE(op);
  Tensor got = testing::run_kernel(op, {{x}}, {}, 1, "cpu.unary").outputs[0];
  Tensor want = testing::run_ref1(op, {x});
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "at " << x.data<float>()[i];
    } else if (std::isinf(w)) {
      EXPECT_EQ(g, w) << "at " << x.data<float>()[i];
    } else {
      EXPECT_NEAR(g, w, 1e-6 + 1e-6 * std::abs(w)) << "at " << x.data<float>()[i];
    }
  }
}

TEST(CpuUnary, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>(
      {9}, {0.0f, -0.0f, inf, -inf, nan, 100.0f, -100.0f, 1e-30f, -1e-42f});
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf",
                         "Exp", "Neg", "Abs", "Elu", "Softplus", "Reciprocal", "Log", "Sqrt"}) {
    expect_same_with_specials(op, x);
  }
}

}  // namespace cpu_unary_test
}  // namespace nnfuse
