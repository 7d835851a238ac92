#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_softmax_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::random_tensor;

struct Case {
  Dims shape;
  int64_t axis;
};

const std::vector<Case> kCases = {
    {{1, 12, 128, 128}, -1},  // attention scores
    {{7}, 0},
    {{33, 1000}, -1},
    {{33, 1000}, 0},
    {{2, 3, 4, 5}, 1},
    {{2, 3, 4, 5}, -2},
    {{2, 3, 4, 5}, 0},
    {{5, 1}, -1},
    {{4, 300, 7}, 1},  // strided columns, several column chunks
    {{2, 1, 3, 1, 600}, 3},
    {{3, 0, 4}, -1},
};

TEST(CpuSoftmax, Opset13AlongAxis) {
  uint32_t seed = 1;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(op) + " " + dims_str(c.shape) + " axis " + std::to_string(c.axis));
      expect_matches_ref("cpu.softmax", op, {{random_tensor(c.shape, seed++, -10, 10)}},
                         {{"axis", attr_int(c.axis)}});
    }
    expect_matches_ref("cpu.softmax", op, {{random_tensor({6, 9}, seed++, -10, 10)}});
  }
}

TEST(CpuSoftmax, Opset11CoercesTo2D) {
  uint32_t seed = 100;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const Case& c : kCases) {
      for (int64_t axis : {c.axis, int64_t{0}, static_cast<int64_t>(c.shape.size())}) {
        SCOPED_TRACE(std::string(op) + " " + dims_str(c.shape) + " axis " + std::to_string(axis));
        expect_matches_ref("cpu.softmax", op, {{random_tensor(c.shape, seed++, -10, 10)}},
                           {{"axis", attr_int(axis)}}, 1, 1e-5f, 1e-4f, /*opset=*/11);
      }
    }
    // Default axis 1 before opset 13.
    expect_matches_ref("cpu.softmax", op, {{random_tensor({2, 3, 4}, seed++, -10, 10)}}, {}, 1,
                       1e-5f, 1e-4f, 11);
  }
}

TEST(CpuSoftmax, LargeMagnitudesStayStable) {
  Tensor x = random_tensor({4, 50}, 200, -1000, 1000);
  expect_matches_ref("cpu.softmax", "Softmax", {{x}});
  expect_matches_ref("cpu.softmax", "LogSoftmax", {{x}}, {}, 1, 1e-3f, 1e-5f);
  expect_matches_ref("cpu.softmax", "Softmax", {{x}}, {{"axis", attr_int(0)}});
}

TEST(CpuSoftmax, InPlace) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    expect_in_place_matches_ref("cpu.softmax", op, {{random_tensor({12, 128}, 300, -5, 5)}}, 0);
    expect_in_place_matches_ref("cpu.softmax", op, {{random_tensor({12, 300, 5}, 301, -5, 5)}}, 0,
                                {{"axis", attr_int(1)}});
  }
}

TEST(CpuSoftmax, DeclinesAndErrors) {
  EXPECT_FALSE(fast_accepts("cpu.softmax", "Softmax", {{Tensor(DType::kFloat16, {4})}}));
  EXPECT_FALSE(fast_accepts("cpu.softmax", "Softmax", {{Tensor(DType::kInt64, {4})}}));
  EXPECT_FALSE(fast_accepts("cpu.softmax", "Softmax",
                            {{random_tensor({1, 2, 3, 4}, 1), false, Layout::kNHWC}}));
  EXPECT_THROW(testing::run_kernel("Softmax", {{random_tensor({4, 4}, 2)}}, {{"axis", attr_int(2)}},
                                   1, "cpu.softmax"),
               Error);
}

}  // namespace cpu_softmax_test
}  // namespace nnfuse
