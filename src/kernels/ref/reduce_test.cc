#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace reduce_test {

using testing::run_ref1;
using testing::values;

Tensor F(Dims shape, std::vector<float> v) { return Tensor::from_vector<float>(shape, v); }
Tensor I64(Dims shape, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(shape, v); }

void expect_floats(const Tensor& got, const Dims& shape, const std::vector<double>& want,
                   double tol = 1e-6) {
  ASSERT_EQ(got.dtype(), DType::kFloat32);
  ASSERT_EQ(got.shape(), shape);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    float g = got.data<float>()[i];
    if (std::isinf(want[i])) {
      EXPECT_EQ(g, want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(g, want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
    }
  }
}

std::string reason(const std::string& op, const std::vector<DType>& dtypes, int64_t opset = 17) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    ins.push_back(g.add_value("in" + std::to_string(i), dtypes[i], Shape::of({2})));
  }
  Node* n = g.add_node(op, "n", ins, {g.add_value("out")});
  return ref_unsupported_reason(*n, opset);
}

// x = [[1, 2, 3], [4, 5, 6]]
Tensor x23() { return F({2, 3}, {1, 2, 3, 4, 5, 6}); }
std::map<std::string, Attribute> axes(std::vector<int64_t> a, int64_t keepdims = 1) {
  return {{"axes", attr_ints(std::move(a))}, {"keepdims", attr_int(keepdims)}};
}

// ---------------------------------------------------------------------------------------
// Reduce*.

TEST(RefReduce, SumKeepdimsAndNegativeAxes) {
  expect_floats(run_ref1("ReduceSum", {x23()}, axes({1}), 11), {2, 1}, {6, 15});
  expect_floats(run_ref1("ReduceSum", {x23()}, axes({1}, 0), 11), {2}, {6, 15});
  expect_floats(run_ref1("ReduceSum", {x23()}, axes({-1}, 0), 11), {2}, {6, 15});
  expect_floats(run_ref1("ReduceSum", {x23()}, axes({0}), 11), {1, 3}, {5, 7, 9});
  expect_floats(run_ref1("ReduceSum", {x23()}, axes({-2, 1}, 0), 11), {}, {21});
  // No axes: reduce everything.
  expect_floats(run_ref1("ReduceSum", {x23()}, {}, 11), {1, 1}, {21});
  expect_floats(run_ref1("ReduceSum", {x23()}, {{"keepdims", attr_int(0)}}, 11), {}, {21});
}

TEST(RefReduce, SumAxesAsInput) {
  expect_floats(run_ref1("ReduceSum", {x23(), I64({1}, {1})}, {}, 13), {2, 1}, {6, 15});
  expect_floats(run_ref1("ReduceSum", {x23(), I64({1}, {-2})}, {{"keepdims", attr_int(0)}}, 13),
                {3}, {5, 7, 9});
  // Empty axes input: reduce all, or nothing with noop_with_empty_axes.
  expect_floats(run_ref1("ReduceSum", {x23(), I64({0}, {})}, {}, 13), {1, 1}, {21});
  expect_floats(run_ref1("ReduceSum", {x23(), Tensor()}, {}, 13), {1, 1}, {21});
  expect_floats(
      run_ref1("ReduceSum", {x23(), I64({0}, {})}, {{"noop_with_empty_axes", attr_int(1)}}, 13),
      {2, 3}, {1, 2, 3, 4, 5, 6});
  expect_floats(run_ref1("ReduceSum", {x23()}, {{"noop_with_empty_axes", attr_int(1)}}, 13), {2, 3},
                {1, 2, 3, 4, 5, 6});
}

TEST(RefReduce, ThreeDimsSeveralAxes) {
  // x[i][j][k] = 12 i + 4 j + k over [2, 3, 4]; reduce axes 0 and 2.
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  std::vector<double> want;
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i) {
      for (int k = 0; k < 4; ++k) s += 12 * i + 4 * j + k;
    }
    want.push_back(s);
  }
  expect_floats(run_ref1("ReduceSum", {F({2, 3, 4}, v)}, axes({0, 2}), 11), {1, 3, 1}, want);
  expect_floats(run_ref1("ReduceSum", {F({2, 3, 4}, v)}, axes({2, -3}, 0), 11), {3}, want);
  std::vector<double> mean;
  for (double s : want) mean.push_back(s / 8);
  expect_floats(run_ref1("ReduceMean", {F({2, 3, 4}, v)}, axes({0, 2}, 0), 11), {3}, mean);
}

TEST(RefReduce, EveryOp) {
  Tensor x = F({2, 3}, {1, -2, 3, -4, 5, -6});
  auto run = [&](const std::string& op) { return run_ref1(op, {x}, axes({1}, 0), 13); };
  expect_floats(run("ReduceSum"), {2}, {2, -5});
  expect_floats(run("ReduceMean"), {2}, {2.0 / 3, -5.0 / 3});
  expect_floats(run("ReduceMax"), {2}, {3, 5});
  expect_floats(run("ReduceMin"), {2}, {-2, -6});
  expect_floats(run("ReduceProd"), {2}, {-6, 120});
  expect_floats(run("ReduceL1"), {2}, {6, 15});
  expect_floats(run("ReduceL2"), {2}, {std::sqrt(14.0), std::sqrt(77.0)});
  expect_floats(run("ReduceSumSquare"), {2}, {14, 77});
  expect_floats(run_ref1("ReduceLogSum", {x23()}, axes({1}, 0)), {2},
                {std::log(6.0), std::log(15.0)});
  expect_floats(run("ReduceLogSumExp"), {2},
                {std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)),
                 std::log(std::exp(-4.0) + std::exp(5.0) + std::exp(-6.0))});
}

TEST(RefReduce, LogSumExpIsStable) {
  expect_floats(run_ref1("ReduceLogSumExp", {F({2}, {1000, 1000})}, {{"keepdims", attr_int(0)}}),
                {}, {1000 + std::log(2.0)});
  expect_floats(run_ref1("ReduceLogSumExp", {F({2}, {-1000, -1000})}, {{"keepdims", attr_int(0)}}),
                {}, {-1000 + std::log(2.0)});
}

TEST(RefReduce, EmptyReduction) {
  Tensor e = F({2, 0}, {});
  const double inf = std::numeric_limits<double>::infinity();
  expect_floats(run_ref1("ReduceSum", {e}, axes({1}), 11), {2, 1}, {0, 0});
  expect_floats(run_ref1("ReduceProd", {e}, axes({1}), 11), {2, 1}, {1, 1});
  expect_floats(run_ref1("ReduceMax", {e}, axes({1}), 11), {2, 1}, {-inf, -inf});
  expect_floats(run_ref1("ReduceMin", {e}, axes({0}), 11), {1, 0}, {});
}

TEST(RefReduce, Integers) {
  Tensor x = Tensor::from_vector<int32_t>({2, 3}, {1, 2, 4, -1, -2, -4});
  auto run = [&](const std::string& op) {
    return values<int32_t>(run_ref1(op, {x}, axes({1}, 0), 11));
  };
  EXPECT_EQ(run("ReduceSum"), (std::vector<int32_t>{7, -7}));
  EXPECT_EQ(run("ReduceMean"), (std::vector<int32_t>{2, -2}));  // 7/3 truncates
  EXPECT_EQ(run("ReduceMax"), (std::vector<int32_t>{4, -1}));
  EXPECT_EQ(run("ReduceMin"), (std::vector<int32_t>{1, -4}));
  EXPECT_EQ(run("ReduceProd"), (std::vector<int32_t>{8, -8}));
  EXPECT_EQ(run("ReduceL1"), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(run("ReduceSumSquare"), (std::vector<int32_t>{21, 21}));
  // int64 sums stay exact beyond 2^53.
  int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_EQ(values<int64_t>(run_ref1("ReduceSum", {I64({2}, {big, 2})}, {}, 11)),
            (std::vector<int64_t>{big + 2}));
}

TEST(RefReduce, BadAxesThrow) {
  EXPECT_THROW(run_ref1("ReduceSum", {x23()}, axes({2}), 11), Error);
  EXPECT_THROW(run_ref1("ReduceMean", {x23()}, axes({-3}), 11), Error);
  EXPECT_THROW(run_ref1("ArgMax", {x23()}, {{"axis", attr_int(5)}}), Error);
  EXPECT_THROW(run_ref1("CumSum", {x23(), I64({2}, {0, 1})}), Error);
}

TEST(RefReduce, UnsupportedTypesGiveReasons) {
  EXPECT_NE(reason("ReduceSum", {DType::kFloat16}), "");
  EXPECT_NE(reason("ReduceSum", {DType::kFloat32, DType::kFloat32}, 13), "");  // float axes
  EXPECT_NE(reason("ReduceMax", {DType::kBFloat16}), "");
  EXPECT_NE(reason("ArgMax", {DType::kString}), "");
  EXPECT_NE(reason("Softmax", {DType::kInt32}), "");
  EXPECT_NE(reason("Hardmax", {DType::kFloat16}), "");
  EXPECT_NE(reason("CumSum", {DType::kFloat16, DType::kInt64}), "");
  EXPECT_EQ(reason("ReduceSum", {DType::kFloat32, DType::kInt64}, 13), "");
  EXPECT_EQ(reason("Softmax", {DType::kFloat64}), "");
  EXPECT_THROW(run_ref1("ReduceSum", {Tensor(DType::kFloat16, {2})}), Error);
}

// ---------------------------------------------------------------------------------------
// ArgMax / ArgMin.

TEST(RefReduceArg, MaxMin) {
  Tensor x = F({2, 3}, {1, 3, 3, 5, 2, 5});
  Tensor a = run_ref1("ArgMax", {x}, {{"axis", attr_int(1)}});
  EXPECT_EQ(a.dtype(), DType::kInt64);
  EXPECT_EQ(a.shape(), (Dims{2, 1}));
  EXPECT_EQ(values<int64_t>(a), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values<int64_t>(run_ref1("ArgMax", {x},
                                     {{"axis", attr_int(-1)}, {"select_last_index", attr_int(1)}})),
            (std::vector<int64_t>{2, 2}));
  Tensor b = run_ref1("ArgMin", {x}, {{"keepdims", attr_int(0)}});  // axis 0 by default
  EXPECT_EQ(b.shape(), (Dims{3}));
  EXPECT_EQ(values<int64_t>(b), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(values<int64_t>(run_ref1("ArgMin", {Tensor::from_vector<int32_t>({4}, {3, -1, 7, -1})},
                                     {{"select_last_index", attr_int(1)}})),
            (std::vector<int64_t>{3}));
}

// ---------------------------------------------------------------------------------------
// Softmax, LogSoftmax, Hardmax.

std::vector<double> softmax_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::exp(x);
  std::vector<double> r;
  for (double x : v) r.push_back(std::exp(x) / s);
  return r;
}

TEST(RefSoftmax, Opset13AlongOneAxis) {
  // [2, 3]: each row on its own.
  std::vector<double> want = softmax_of({1, 2, 3});
  for (double v : softmax_of({4, 5, 6})) want.push_back(v);
  expect_floats(run_ref1("Softmax", {x23()}), {2, 3}, want);
  // [2, 2, 2] with axis 1: pairs (x[i][0][k], x[i][1][k]).
  Tensor x = F({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 8});
  std::vector<double> w(8);
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 2; ++k) {
      int a = i * 4 + k, b = i * 4 + 2 + k;
      std::vector<double> s = softmax_of({x.data<float>()[a], x.data<float>()[b]});
      w[a] = s[0];
      w[b] = s[1];
    }
  }
  expect_floats(run_ref1("Softmax", {x}, {{"axis", attr_int(1)}}, 13), {2, 2, 2}, w);
}

TEST(RefSoftmax, Opset11CoercesTo2D) {
  Tensor x = F({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 8});
  // axis 1 (the default before 13): each of the 2 rows normalizes over its 4 trailing values.
  std::vector<double> want = softmax_of({0, 1, 2, 3});
  for (double v : softmax_of({4, 5, 6, 8})) want.push_back(v);
  expect_floats(run_ref1("Softmax", {x}, {}, 11), {2, 2, 2}, want);
  expect_floats(run_ref1("Softmax", {x}, {{"axis", attr_int(-2)}}, 11), {2, 2, 2}, want);
  // At opset 13 the default is the last axis only.
  std::vector<double> last;
  for (int r = 0; r < 4; ++r) {
    for (double v : softmax_of({x.data<float>()[2 * r], x.data<float>()[2 * r + 1]})) {
      last.push_back(v);
    }
  }
  expect_floats(run_ref1("Softmax", {x}, {}, 13), {2, 2, 2}, last);
  // axis 0 before 13: one row of all 8 values.
  expect_floats(run_ref1("Softmax", {x}, {{"axis", attr_int(0)}}, 11), {2, 2, 2},
                softmax_of({0, 1, 2, 3, 4, 5, 6, 8}));
}

TEST(RefSoftmax, StableForLargeInputs) {
  double e = std::exp(1.0);
  expect_floats(run_ref1("Softmax", {F({1, 2}, {1000, 1001})}), {1, 2}, {1 / (1 + e), e / (1 + e)});
  expect_floats(run_ref1("LogSoftmax", {F({1, 2}, {1000, 1001})}), {1, 2},
                {-std::log(1 + e), 1 - std::log(1 + e)});
}

TEST(RefSoftmax, LogSoftmax) {
  std::vector<double> want;
  for (double v : softmax_of({1, 2, 3})) want.push_back(std::log(v));
  for (double v : softmax_of({4, 5, 6})) want.push_back(std::log(v));
  expect_floats(run_ref1("LogSoftmax", {x23()}), {2, 3}, want);
  expect_floats(run_ref1("LogSoftmax", {x23()}, {}, 11), {2, 3}, want);
}

TEST(RefSoftmax, Hardmax) {
  Tensor x = F({2, 3}, {1, 3, 3, 0, -1, -2});
  expect_floats(run_ref1("Hardmax", {x}), {2, 3}, {0, 1, 0, 1, 0, 0});
  expect_floats(run_ref1("Hardmax", {x}, {{"axis", attr_int(0)}}), {2, 3}, {1, 1, 1, 0, 0, 0});
  // Before 13, axis 0 flattens everything: one 1 at the first maximum.
  expect_floats(run_ref1("Hardmax", {x}, {{"axis", attr_int(0)}}, 11), {2, 3}, {0, 1, 0, 0, 0, 0});
}

// ---------------------------------------------------------------------------------------
// CumSum.

TEST(RefReduceCumSum, Modes) {
  Tensor x = F({5}, {1, 2, 3, 4, 5});
  Tensor ax = I64({}, {0});
  expect_floats(run_ref1("CumSum", {x, ax}), {5}, {1, 3, 6, 10, 15});
  expect_floats(run_ref1("CumSum", {x, ax}, {{"exclusive", attr_int(1)}}), {5}, {0, 1, 3, 6, 10});
  expect_floats(run_ref1("CumSum", {x, ax}, {{"reverse", attr_int(1)}}), {5}, {15, 14, 12, 9, 5});
  expect_floats(run_ref1("CumSum", {x, ax}, {{"reverse", attr_int(1)}, {"exclusive", attr_int(1)}}),
                {5}, {14, 12, 9, 5, 0});
}

TEST(RefReduceCumSum, Axes) {
  expect_floats(run_ref1("CumSum", {x23(), I64({}, {0})}), {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_floats(run_ref1("CumSum", {x23(), Tensor::from_vector<int32_t>({1}, {-1})}), {2, 3},
                {1, 3, 6, 4, 9, 15});
  Tensor xi = Tensor::from_vector<int64_t>({2, 2}, {1, -2, 3, -4});
  EXPECT_EQ(values<int64_t>(run_ref1("CumSum", {xi, I64({}, {1})})),
            (std::vector<int64_t>{1, -1, 3, -1}));
}

}  // namespace reduce_test
}  // namespace nnfuse
