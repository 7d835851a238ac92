// Which reductions are over the last axis alone, the ones automatic fusion's row regions take.
#include "passes/auto_fuse/op_class.h"

#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace op_class_test {

using fusion_test::B;
using fusion_test::ints;

TEST(OpClass, LastAxisReductions) {
  B b;
  Value* x = b.in("x", {2, 3, 4});
  Value* v = b.in("v", {5});
  Value* m = b.in("m", {2, 6});
  auto last = [&](Value* out, int64_t opset = 17) {
    return is_last_axis_reduction(*out->producer(), opset);
  };
  Value* minus1 = b.c(Tensor::from_vector<int64_t>({1}, {-1}));
  Value* one = b.c(Tensor::from_vector<int64_t>({1}, {1}));
  EXPECT_TRUE(last(b.n("ReduceSum", {x, minus1}, {2, 3, 1})));
  EXPECT_FALSE(last(b.n("ReduceSum", {x, one}, {2, 1, 4})));
  EXPECT_FALSE(last(b.n("ReduceSum", {x, b.in("axes", {1})}, {2, 3, 1})));  // not constant
  EXPECT_TRUE(last(b.n("ReduceMean", {x}, {2, 3, 1}, {{"axes", ints({2})}})));
  EXPECT_FALSE(last(b.n("ReduceMean", {x}, {2, 1, 1}, {{"axes", ints({1, 2})}})));
  EXPECT_FALSE(last(b.n("ReduceMax", {x}, {1, 1, 1})));  // every axis
  EXPECT_TRUE(last(b.n("ReduceMax", {v}, {1})));         // every axis of a vector
  EXPECT_TRUE(last(b.n("Softmax", {x}, {2, 3, 4})));     // axis -1 from opset 13
  Attribute axis1;
  axis1.i = 1;
  EXPECT_FALSE(last(b.n("Softmax", {x}, {2, 3, 4}, {{"axis", axis1}})));
  EXPECT_TRUE(last(b.n("LogSoftmax", {m}, {2, 6}), 11));      // axis 1 of a matrix
  EXPECT_FALSE(last(b.n("LogSoftmax", {x}, {2, 3, 4}), 11));  // axis 1 of rank 3
  EXPECT_FALSE(last(b.n("ArgMax", {m}, {1, 6})));             // axis 0
  Attribute minus;
  minus.i = -1;
  EXPECT_TRUE(last(b.n("ArgMax", {m}, {2, 1}, {{"axis", minus}})));
  EXPECT_FALSE(last(b.n("Relu", {m}, {2, 6})));  // not a reduction
}

}  // namespace op_class_test
}  // namespace nnfuse
