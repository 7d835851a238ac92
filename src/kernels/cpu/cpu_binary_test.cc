#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_binary_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

// Pairs of broadcastable shapes covering each fast path and the general case.
const std::vector<std::pair<Dims, Dims>> kPairs = {
    {{1000}, {1000}},                    // same shape
    {{}, {}},                            // scalars
    {{7, 33}, {}},                       // scalar right
    {{}, {7, 33}},                       // scalar left
    {{1}, {33}},                         // one-element vector
    {{5, 33}, {33}},                     // row bias
    {{33}, {5, 33}},                     // row bias on the left
    {{5, 1}, {5, 33}},                   // column
    {{5, 33}, {5, 1}},                   // column on the right
    {{2, 1, 4}, {3, 1}},                 // both broadcast
    {{1, 3, 1, 5}, {2, 1, 4, 1}},        // alternating
    {{2, 1, 3, 1, 5}, {3, 4, 1}},        // rank 5
    {{2, 3, 4, 5, 6}, {2, 3, 4, 5, 6}},  // rank 5 same
    {{300, 1000}, {1000}},               // large row bias: parallel rows
    {{1000, 300}, {1000, 1}},            // large column
    {{200001}, {}},                      // large scalar: parallel pieces of one run
    {{4, 1, 70000}, {1, 3, 1}},          // few long rows with scalar inner
    {{1, 7}, {7, 1}},                    // outer product
    {{0, 3}, {3}},                       // empty
};

struct ArithCase {
  const char* op;
  float alo, ahi, blo, bhi;
};
const ArithCase kArith[] = {
    {"Add", -2, 2, -2, 2}, {"Sub", -2, 2, -2, 2}, {"Mul", -2, 2, -2, 2},   {"Div", -2, 2, 0.5f, 2},
    {"Max", -2, 2, -2, 2}, {"Min", -2, 2, -2, 2}, {"Pow", 0.1f, 3, -2, 2},
};

TEST(CpuBinary, ArithmeticMatchesReferenceOverBroadcasts) {
  uint32_t seed = 1;
  for (const ArithCase& c : kArith) {
    for (const auto& [sa, sb] : kPairs) {
      SCOPED_TRACE(std::string(c.op) + " " + dims_str(sa) + " " + dims_str(sb));
      expect_matches_ref(
          "cpu.binary", c.op,
          {{random_tensor(sa, seed++, c.alo, c.ahi)}, {random_tensor(sb, seed++, c.blo, c.bhi)}});
    }
  }
}

// PRelu: the slope broadcast to X (per channel, one value, per row, the same shape), also onto a
// conv's channels-last output and in place; a slope X does not contain is declined.
TEST(CpuBinary, PReluSlopesBroadcastToX) {
  uint32_t seed = 300;
  const std::vector<std::pair<Dims, Dims>> pairs = {
      {{2, 3, 4, 5}, {3, 1, 1}}, {{2, 3, 4, 5}, {1}}, {{5, 33}, {33}},
      {{300, 1000}, {1000}},     {{7, 9}, {7, 9}},    {{4, 16, 7, 7}, {16, 1, 1}}};
  for (const auto& [sx, ss] : pairs) {
    SCOPED_TRACE(dims_str(sx) + " " + dims_str(ss));
    Tensor x = random_tensor(sx, seed++, -2, 2), slope = random_tensor(ss, seed++, -1, 1);
    expect_matches_ref("cpu.binary", "PRelu", {{x}, {slope, true}});
    expect_matches_ref("cpu.binary", "PRelu", {{x}, {slope}});
    expect_in_place_matches_ref("cpu.binary", "PRelu", {{x}, {slope, true}}, 0);
  }
  expect_matches_ref("cpu.binary", "PRelu",
                     {{random_tensor({2, 16, 5, 5}, seed++, -2, 2), false, Layout::kNHWC},
                      {random_tensor({16, 1, 1}, seed++, -1, 1), true}});
  EXPECT_FALSE(fast_accepts("cpu.binary", "PRelu",
                            {{random_tensor({33}, 1, -1, 1)}, {random_tensor({5, 33}, 2, -1, 1)}}));
}

TEST(CpuBinary, ConstantOperands) {
  Tensor a = random_tensor({6, 40}, 7), b = random_tensor({40}, 8);
  expect_matches_ref("cpu.binary", "Add", {{a}, {b, true}});
  expect_matches_ref("cpu.binary", "Mul", {{b, true}, {a}});
}

TEST(CpuBinary, PowByConstantExponents) {
  Tensor x = random_tensor({3, 501}, 9, -3, 3);
  Tensor pos = random_tensor({3, 501}, 10, 0, 3);
  for (float e : {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 1.5f}) {
    SCOPED_TRACE(e);
    const Tensor& base = e == 0.5f || e == 1.5f ? pos : x;
    expect_matches_ref("cpu.binary", "Pow", {{base}, {Tensor::scalar<float>(e), true}});
    expect_matches_ref("cpu.binary", "Pow",
                       {{base}, {Tensor::from_vector<float>({1, 1, 1}, {e}), true}});
  }
  // Pow(x, 0.5) at -0 and -inf follows pow, not sqrt.
  const float inf = std::numeric_limits<float>::infinity();
  Tensor special = Tensor::from_vector<float>({3}, {-0.0f, 0.0f, 4.0f});
  expect_matches_ref("cpu.binary", "Pow", {{special}, {Tensor::scalar<float>(0.5f), true}});
  Tensor neg_inf = Tensor::from_vector<float>({1}, {-inf});
  Tensor r = testing::run_kernel("Pow", {{neg_inf}, {Tensor::scalar<float>(0.5f), true}}, {}, 1,
                                 "cpu.binary")
                 .outputs[0];
  EXPECT_EQ(r.data<float>()[0], inf);
  expect_in_place_matches_ref("cpu.binary", "Pow", {{x}, {Tensor::scalar<float>(2.0f), true}}, 0);
}

TEST(CpuBinary, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = Tensor::from_vector<float>({4}, {nan, 1, nan, 2});
  Tensor b = Tensor::from_vector<float>({4}, {1, nan, nan, 3});
  for (const char* op : {"Max", "Min"}) {
    Tensor y = testing::run_kernel(op, {{a}, {b}}, {}, 1, "cpu.binary").outputs[0];
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(y.data<float>()[i])) << op << " " << i;
    EXPECT_EQ(y.data<float>()[3], std::string(op) == "Max" ? 3.0f : 2.0f);
  }
}

TEST(CpuBinary, ChannelsLast) {
  const Dims x = {2, 3, 4, 5};
  uint32_t seed = 20;
  const std::vector<std::pair<FastInput, FastInput>> cases = {
      {{random_tensor(x, seed++), false, Layout::kNHWC},
       {random_tensor(x, seed++), false, Layout::kNHWC}},
      {{random_tensor(x, seed++), false, Layout::kNHWC}, {random_tensor({3, 1, 1}, seed++), true}},
      {{random_tensor({1, 3, 1, 1}, seed++), true},
       {random_tensor(x, seed++), false, Layout::kNHWC}},
      {{random_tensor(x, seed++), false, Layout::kNHWC}, {random_tensor({2, 3, 1, 1}, seed++)}},
      {{random_tensor(x, seed++), false, Layout::kNHWC}, {testing::scalar_f(0.75f), true}},
      {{random_tensor(x, seed++), false, Layout::kNHWC}, {random_tensor({1}, seed++)}},
      {{random_tensor(x, seed++), false, Layout::kNHWC},
       {random_tensor({2, 3, 1, 1}, seed++), false, Layout::kNHWC}},
      {{random_tensor({1, 3, 4, 5}, seed++), false, Layout::kNHWC},
       {random_tensor({2, 3, 1, 1}, seed++), false, Layout::kNHWC}},
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max"}) {
    for (const auto& [a, b] : cases) {
      SCOPED_TRACE(std::string(op) + " " + dims_str(a.value.shape()) + " " +
                   dims_str(b.value.shape()));
      expect_matches_ref("cpu.binary", op, {a, b});
      testing::OneNode one(op, {a, b}, {});
      EXPECT_EQ(testing::find_factory(op, "cpu.binary")->output_layout(one.info(), 0),
                Layout::kNHWC);
    }
  }
}

// Channels-last of rank 3 (a 1-D conv's NWC) and 5 (a 3-D conv's NDHWC): a residual, a
// per-channel vector.
TEST(CpuBinary, ChannelsLastOfRanksThreeAndFive) {
  uint32_t seed = 60;
  for (const Dims& x : {Dims{2, 6, 9}, Dims{1, 4, 3, 5, 6}}) {
    Dims per_channel(x.size() - 1, 1);
    per_channel[0] = x[1];
    const std::vector<std::pair<FastInput, FastInput>> cases = {
        {{random_tensor(x, seed++), false, Layout::kNHWC},
         {random_tensor(x, seed++), false, Layout::kNHWC}},
        {{random_tensor(x, seed++), false, Layout::kNHWC},
         {random_tensor(per_channel, seed++), true}},
    };
    for (const auto& [a, b] : cases) {
      SCOPED_TRACE(dims_str(a.value.shape()) + " " + dims_str(b.value.shape()));
      expect_matches_ref("cpu.binary", "Add", {a, b});
      testing::OneNode one("Add", {a, b}, {});
      EXPECT_EQ(testing::find_factory("Add", "cpu.binary")->output_layout(one.info(), 0),
                Layout::kNHWC);
    }
    // Broadcast along the last dim is not channels-last storage order.
    EXPECT_FALSE(fast_accepts(
        "cpu.binary", "Add",
        {{random_tensor(x, seed++), false, Layout::kNHWC}, {random_tensor({x.back()}, seed++)}}));
  }
}

TEST(CpuBinary, ChannelsLastDeclinesOtherBroadcasts) {
  FastInput x{random_tensor({2, 3, 4, 5}, 30), false, Layout::kNHWC};
  // [5] broadcasts along W: not the storage order of NHWC; plain inputs are needed.
  FastInput w{random_tensor({5}, 31)};
  EXPECT_FALSE(fast_accepts("cpu.binary", "Add", {x, w}));
  EXPECT_TRUE(fast_accepts("cpu.binary", "Add", {{x.value}, w}));
  EXPECT_FALSE(fast_accepts("cpu.binary", "Add", {x, {random_tensor({1, 1, 3, 1, 1}, 32)}}));
  // Planned through the table, the runtime's plain fallback gives the right answer.
  expect_matches_ref("cpu.binary", "Add", {{x.value}, w});
}

TEST(CpuBinary, InPlace) {
  Tensor a = random_tensor({64, 130}, 40), b = random_tensor({130}, 41);
  expect_in_place_matches_ref("cpu.binary", "Add", {{a}, {a.clone()}}, 0);
  expect_in_place_matches_ref("cpu.binary", "Sub", {{b}, {a}}, 1);
  expect_in_place_matches_ref("cpu.binary", "Mul", {{a}, {b, true}}, 0);
  expect_in_place_matches_ref("cpu.binary", "Div", {{random_tensor({64, 1}, 42)}, {a}}, 1);
  expect_in_place_matches_ref(
      "cpu.binary", "Add",
      {{random_tensor({2, 8, 5, 5}, 43), false, Layout::kNHWC}, {random_tensor({8, 1, 1}, 44)}}, 0);
  // A broadcast input can't be overwritten, and bool outputs never alias float inputs.
  testing::OneNode one("Add", {{b}, {b}}, {});
  EXPECT_EQ(testing::find_factory("Add", "cpu.binary")->in_place_input(one.info(), 0), 0);
  testing::OneNode cmp("Less", {{a}, {a}}, {});
  EXPECT_EQ(testing::find_factory("Less", "cpu.compare")->in_place_input(cmp.info(), 0), -1);
}

TEST(CpuBinary, Comparisons) {
  uint32_t seed = 50;
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    for (const auto& [sa, sb] : kPairs) {
      SCOPED_TRACE(std::string(op) + " " + dims_str(sa) + " " + dims_str(sb));
      // Few distinct values, so ties happen.
      Tensor a = random_tensor(sa, seed++, 0, 4), b = random_tensor(sb, seed++, 0, 4);
      for (Tensor* t : {&a, &b}) {
        for (int64_t i = 0; i < t->numel(); ++i)
          t->data<float>()[i] = std::floor(t->data<float>()[i]);
      }
      expect_matches_ref("cpu.compare", op, {{a}, {b}});
    }
  }
}

TEST(CpuBinary, Where) {
  uint32_t seed = 60;
  const std::vector<std::array<Dims, 3>> shapes = {
      {{{100}, {100}, {100}}},
      {{{1, 1, 8, 8}, {2, 3, 8, 8}, {}}},  // attention mask with a scalar fill
      {{{8}, {}, {5, 8}}},
      {{{5, 1}, {5, 8}, {8}}},
      {{{}, {3, 4}, {3, 4}}},
      {{{2, 1, 3}, {1, 4, 1}, {2, 4, 3}}},
      {{{300, 400}, {300, 400}, {}}},
  };
  for (const auto& s : shapes) {
    SCOPED_TRACE(dims_str(s[0]) + dims_str(s[1]) + dims_str(s[2]));
    Tensor c(DType::kBool, s[0]);
    Tensor r = random_tensor(s[0], seed++);
    for (int64_t i = 0; i < c.numel(); ++i) c.data<bool>()[i] = r.data<float>()[i] > 0;
    expect_matches_ref("cpu.where", "Where",
                       {{c}, {random_tensor(s[1], seed++)}, {random_tensor(s[2], seed++)}});
  }
  Tensor c(DType::kBool, {4, 9});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<bool>()[i] = i % 3 == 0;
  expect_in_place_matches_ref("cpu.where", "Where",
                              {{c}, {random_tensor({9}, 70)}, {random_tensor({4, 9}, 71)}}, 2);
}

// Integers in [lo, hi] of type t (int32 or int64); zeros replaced by `zero` (divisors).
Tensor random_ints(const Dims& shape, uint32_t seed, int64_t lo, int64_t hi, DType t,
                   int64_t zero = 0) {
  Tensor r = random_tensor(shape, seed, static_cast<float>(lo), static_cast<float>(hi) + 1);
  Tensor v(DType::kInt64, shape);
  for (int64_t i = 0; i < v.numel(); ++i) {
    const int64_t x = std::min<int64_t>(hi, static_cast<int64_t>(std::floor(r.data<float>()[i])));
    v.data<int64_t>()[i] = x == 0 ? zero : x;
  }
  return t == DType::kInt64 ? v : testing::run_ref1("Cast", {v}, {{"to", attr_int(6)}});
}

TEST(CpuBinary, IntegersMatchReferenceOverBroadcasts) {
  uint32_t seed = 90;
  for (DType t : {DType::kInt64, DType::kInt32}) {
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater",
                           "LessOrEqual", "GreaterOrEqual"}) {
      const std::string kernel =
          std::string(op).find_first_of("EGL") == 0 ? "cpu.compare" : "cpu.binary";
      for (const auto& [sa, sb] : kPairs) {
        SCOPED_TRACE(std::string(op) + " " + dtype_name(t) + " " + dims_str(sa) + " " +
                     dims_str(sb));
        expect_matches_ref(kernel, op,
                           {{random_ints(sa, seed++, -40, 40, t)},
                            {random_ints(sb, seed++, -6, 6, t, std::string(op) == "Div" ? 3 : 0)}},
                           {}, 1, 0.0f, 0.0f);
      }
    }
    Tensor c(DType::kBool, {5, 8});
    for (int64_t i = 0; i < c.numel(); ++i) c.data<bool>()[i] = i % 3 != 1;
    expect_matches_ref(
        "cpu.where", "Where",
        {{c}, {random_ints({5, 8}, seed++, -9, 9, t)}, {random_ints({8}, seed++, 0, 9, t)}}, {}, 1,
        0.0f, 0.0f);
  }
}

// Overflow wraps, division truncates toward zero (the lowest value divided by -1 wraps), and a
// zero divisor is an error naming the node.
TEST(CpuBinary, IntegerEdgeCases) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const Tensor a = Tensor::from_vector<int64_t>({6}, {hi, lo, -7, 7, lo, -1});
  const Tensor b = Tensor::from_vector<int64_t>({6}, {1, -1, 2, -2, 3, 5});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(op);
    expect_matches_ref("cpu.binary", op, {{a}, {b}}, {}, 1, 0.0f, 0.0f);
  }
  const Tensor q = testing::run_kernel("Div", {{a}, {b}}, {}, 1, "cpu.binary").outputs[0];
  EXPECT_EQ(q.data<int64_t>()[1], lo);  // lo / -1 wraps
  EXPECT_EQ(q.data<int64_t>()[2], -3);
  EXPECT_EQ(q.data<int64_t>()[3], -3);
  try {
    testing::run_kernel("Div", {{a}, {Tensor::from_vector<int64_t>({6}, {1, 1, 0, 1, 1, 1})}}, {},
                        1, "cpu.binary");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

TEST(CpuBinary, DeclinesOtherTypesAndArities) {
  for (DType t : {DType::kFloat16, DType::kFloat64, DType::kUInt8}) {
    Tensor a(t, {4});
    EXPECT_FALSE(fast_accepts("cpu.binary", "Add", {{a}, {a}})) << dtype_name(t);
    EXPECT_FALSE(fast_accepts("cpu.compare", "Less", {{a}, {a}})) << dtype_name(t);
  }
  Tensor i64(DType::kInt64, {4}), i32(DType::kInt32, {4});
  EXPECT_TRUE(fast_accepts("cpu.binary", "Add", {{i64}, {i64}}));
  EXPECT_FALSE(fast_accepts("cpu.binary", "Pow", {{i64}, {i64}}));
  EXPECT_FALSE(fast_accepts("cpu.binary", "Add", {{i64}, {i32}}));
  Tensor f = random_tensor({4}, 80);
  EXPECT_TRUE(fast_accepts("cpu.binary", "Add", {{f}, {f}}));
  EXPECT_FALSE(fast_accepts("cpu.binary", "Pow", {{f}, {Tensor::scalar<int64_t>(2)}}));
  EXPECT_FALSE(fast_accepts("cpu.binary", "Max", {{f}, {f}, {f}}));
  EXPECT_FALSE(fast_accepts("cpu.binary", "Max", {{f}}));
  EXPECT_FALSE(fast_accepts("cpu.where", "Where", {{f}, {f}, {f}}));
}

TEST(CpuBinary, IncompatibleShapesThrow) {
  EXPECT_THROW(testing::run_kernel("Add", {{random_tensor({3}, 1)}, {random_tensor({4}, 2)}}, {}, 1,
                                   "cpu.binary"),
               Error);
  EXPECT_THROW(testing::run_kernel("Add", {{random_tensor({3}, 1)}, {Tensor(DType::kInt64, {3})}},
                                   {}, 1, "cpu.binary"),
               Error);
}

}  // namespace cpu_binary_test
}  // namespace nnfuse
