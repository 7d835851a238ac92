#include "cost/cost.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace nnfuse {
namespace cost_test {

TEST(Cost, IntermediateBytesCountsStaticSizesTwice) {
  Graph g;
  Value* a = g.add_value("a", DType::kFloat32, Shape::of({2, 3}));     // 24 bytes
  Value* b = g.add_value("b", DType::kInt64, Shape::of({4}));          // 32 bytes
  Value* c = g.add_value("c", DType::kFloat16, Shape::of({1, 8, 1}));  // 16 bytes
  Value* unknown = g.add_value("u", DType::kFloat32);                  // no shape: 0
  Shape sym = Shape::of({1, 3});
  sym.dims[0] = Dim{-1, "batch"};
  Value* symbolic = g.add_value("s", DType::kFloat32, sym);              // symbolic dim: 0
  Value* untyped = g.add_value("t", DType::kUndefined, Shape::of({5}));  // no dtype: 0
  EXPECT_EQ(cost::intermediate_bytes({a, b, c}), 2 * (24 + 32 + 16));
  EXPECT_EQ(cost::intermediate_bytes({a, unknown, symbolic, untyped, nullptr}), 48);
  EXPECT_EQ(cost::intermediate_bytes({a, a}), 48);  // one value is written once
  EXPECT_EQ(cost::intermediate_bytes({}), 0);
}

TEST(Cost, FusionBenefitAndFlops) {
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, 3, 8, 8}));
  Value* w = g.add_value("w", DType::kFloat32, Shape::of({4, 3, 3, 3}));
  Value* c = g.add_value("c", DType::kFloat32, Shape::of({1, 4, 8, 8}));
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({1, 4, 8, 8}));
  Node* conv = g.add_node("Conv", "conv", {x, w}, {c});
  Node* relu = g.add_node("Relu", "relu", {c}, {y});
  // The conv's output stays inside: 256 floats not written and read back; one launch saved.
  const cost::Benefit b = cost::fusion_benefit({conv, relu}, {y});
  EXPECT_EQ(b.bytes_saved, 2 * 256 * 4);
  EXPECT_EQ(b.kernels_saved, 1);
  // 256 outputs, each 3 * 3 * 3 multiply-adds.
  EXPECT_EQ(cost::flops(*conv), 2 * 256 * 27);
  EXPECT_EQ(cost::flops(*relu), 256);
  Value* a = g.add_value("a", DType::kFloat32, Shape::of({5, 6}));
  Value* bm = g.add_value("b", DType::kFloat32, Shape::of({6, 7}));
  Value* m = g.add_value("m", DType::kFloat32, Shape::of({5, 7}));
  EXPECT_EQ(cost::flops(*g.add_node("MatMul", "mm", {a, bm}, {m})), 2 * 35 * 6);
  Value* u = g.add_value("u", DType::kFloat32);
  EXPECT_EQ(cost::flops(*g.add_node("Relu", "r2", {a}, {u})), -1);  // unknown output shape
}

TEST(Cost, ConvWithAZeroSizedWeightDimCountsNoFlops) {
  // A model may carry an empty weight; the estimate divides by its leading dims.
  for (const auto& op : {"Conv", "ConvTranspose"}) {
    for (const auto& wdims : {std::vector<int64_t>{0, 3, 3, 3}, std::vector<int64_t>{4, 0, 3, 3},
                              std::vector<int64_t>{4, 3, 0, 3}}) {
      Graph g;
      Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, 3, 8, 8}));
      Value* w = g.add_value("w", DType::kFloat32, Shape::of(wdims));
      Value* y = g.add_value("y", DType::kFloat32, Shape::of({1, 4, 8, 8}));
      EXPECT_EQ(cost::flops(*g.add_node(op, "c", {x, w}, {y})), 0) << op;
    }
  }
}

TEST(Cost, HugeDeclaredShapesSaturateInsteadOfOverflowing) {
  // Each tensor's 2^62 bytes fit in 64 bits; an input and an output together do not (found by
  // fuzz_model: UBSan signed overflow in graph_cost).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({int64_t{1} << 60}));
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({int64_t{1} << 60}));
  Node* relu = g.add_node("Relu", "relu", {x}, {y});
  EXPECT_EQ(cost::bytes_moved(*relu), kMax);
  EXPECT_EQ(cost::graph_cost(g, cost::Machine{}).bytes_moved, kMax);
  EXPECT_EQ(cost::intermediate_bytes({x, y}), kMax);
  Value* a = g.add_value("a", DType::kFloat32, Shape::of({int64_t{1} << 30, int64_t{1} << 20}));
  Value* b = g.add_value("b", DType::kFloat32, Shape::of({int64_t{1} << 20, int64_t{1} << 30}));
  Value* m = g.add_value("m", DType::kFloat32, Shape::of({int64_t{1} << 30, int64_t{1} << 30}));
  EXPECT_EQ(cost::flops(*g.add_node("MatMul", "mm", {a, b}, {m})), kMax);
  EXPECT_EQ(sat_add(kMax, 1), kMax);
  EXPECT_EQ(sat_mul(int64_t{1} << 40, int64_t{1} << 40), kMax);
  EXPECT_EQ(sat_add(2, 3), 5);
}

TEST(Cost, BytesMovedRooflineAndEstimatedSpeedup) {
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, 1024}));  // 4 KiB each
  Value* a = g.add_value("a", DType::kFloat32, Shape::of({1, 1024}));
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({1, 1024}));
  Node* relu = g.add_node("Relu", "relu", {x}, {a});
  Node* neg = g.add_node("Neg", "neg", {a}, {y});
  EXPECT_EQ(cost::bytes_moved(*relu), 2 * 4096);
  EXPECT_EQ(cost::bytes_moved(*g.add_node(
                "Add", "twice", {x, x}, {g.add_value("s", DType::kFloat32, Shape::of({1, 1024}))})),
            2 * 4096);  // x read once
  const cost::Machine m{1e9, 1e9, 1e-6};
  EXPECT_DOUBLE_EQ(cost::roofline_seconds(2000, 8000, m), 8e-6 + 1e-6);   // memory bound
  EXPECT_DOUBLE_EQ(cost::roofline_seconds(90000, 8000, m), 9e-5 + 1e-6);  // compute bound
  const cost::Benefit b = cost::fusion_benefit({relu, neg}, {y}, m);
  EXPECT_EQ(b.flops, 2048);
  EXPECT_EQ(b.bytes_before, 4 * 4096);
  EXPECT_EQ(b.bytes_after, 2 * 4096);  // the intermediate is neither written nor read
  // Before: two kernels of 8 KiB each; after: one of 8 KiB.
  EXPECT_DOUBLE_EQ(b.seconds_before, 2 * (8192e-9 + 1e-6));
  EXPECT_DOUBLE_EQ(b.seconds_after, 8192e-9 + 1e-6);
  EXPECT_DOUBLE_EQ(b.estimated_speedup(), 2.0);
}

TEST(Cost, RecomputationOfBroadcastMembers) {
  Graph g;
  Value* row = g.add_value("row", DType::kFloat32, Shape::of({1, 8}));
  Value* e = g.add_value("e", DType::kFloat32, Shape::of({1, 8}));
  Value* big = g.add_value("big", DType::kFloat32, Shape::of({4, 8}));
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({4, 8}));
  Node* exp = g.add_node("Exp", "exp", {row}, {e});
  Node* add = g.add_node("Add", "add", {big, e}, {y});
  EXPECT_EQ(cost::domain_elements({exp, add}), 32);
  // The Exp's 8 elements are computed again at each of the 32 positions: 24 more, at 16 each.
  const cost::Recompute r = cost::recomputation({exp, add});
  EXPECT_EQ(r.elements, 24);
  EXPECT_EQ(r.cost, 24 * 16);
  EXPECT_EQ(cost::recomputation({exp, add}, 8).elements, 0);  // made once per row
}

}  // namespace cost_test
}  // namespace nnfuse
