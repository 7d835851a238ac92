#include "passes/auto_fuse/cost.h"

#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace cost_test {

using fusion_test::B;

// x[4, 8] -> Relu -> Exp -> Neg: two float32 intermediates of 32 elements.
std::unique_ptr<Graph> chain() {
  B b;
  Value* y = b.n("Relu", {b.in("x", {4, 8})}, {4, 8}, {}, "a");
  y = b.n("Exp", {y}, {4, 8}, {}, "b");
  b.out(b.n("Neg", {y}, {4, 8}, {}, "c"));
  return std::move(b.g);
}

Region only_region(const Graph& g) {
  std::vector<Region> r = find_regions(g);
  EXPECT_EQ(r.size(), 1u);
  return r.empty() ? Region{} : r[0];
}

TEST(Cost, ExactBytesOfAChain) {
  std::unique_ptr<Graph> g = chain();
  RegionCost c = region_cost(only_region(*g));
  EXPECT_EQ(c.kernels_saved, 2);
  EXPECT_EQ(c.intermediates, 2);
  EXPECT_EQ(c.unknown_intermediates, 0);
  EXPECT_EQ(c.bytes_saved, 2 * 2 * 32 * 4);  // write + read of two [4, 8] float32 values
}

TEST(Cost, DtypeSizesAndUnknownShapes) {
  std::unique_ptr<Graph> g = chain();
  g->find_value("b_out")->set_dtype(DType::kFloat64);
  EXPECT_EQ(region_cost(only_region(*g)).bytes_saved, 2 * 32 * 4 + 2 * 32 * 8);
  g->find_value("a_out")->set_shape(Shape::unknown());
  RegionCost c = region_cost(only_region(*g));
  EXPECT_EQ(c.bytes_saved, 2 * 32 * 8);
  EXPECT_EQ(c.intermediates, 2);
  EXPECT_EQ(c.unknown_intermediates, 1);
}

TEST(Cost, DiamondCountsEachIntermediateOnce) {
  // p feeds two members: written once, read back once, still one intermediate.
  B b;
  Value* p = b.n("Neg", {b.in("x", {2, 5})}, {2, 5}, {}, "p");
  Value* l = b.n("Relu", {p}, {2, 5}, {}, "l");
  Value* r = b.n("Exp", {p}, {2, 5}, {}, "r");
  b.out(b.n("Add", {l, r}, {2, 5}, {}, "add"));
  RegionCost c = region_cost(only_region(*b.g));
  EXPECT_EQ(c.kernels_saved, 3);
  EXPECT_EQ(c.intermediates, 3);
  EXPECT_EQ(c.bytes_saved, 3 * 2 * 10 * 4);
}

TEST(Cost, PaysOnBothSidesOfTheThreshold) {
  std::unique_ptr<Graph> g = chain();
  RegionCost c = region_cost(only_region(*g));  // 512 bytes, 2 kernels
  EXPECT_TRUE(pays(c));
  CostOptions o;
  o.min_bytes_saved = 512;
  EXPECT_TRUE(pays(c, o));
  o.min_bytes_saved = 513;
  EXPECT_FALSE(pays(c, o));
  // No kernel saved never pays, even with bytes (and with a threshold of 0).
  RegionCost none;
  none.bytes_saved = 1000;
  EXPECT_FALSE(pays(none));
  EXPECT_EQ(region_cost(Region{}).kernels_saved, 0);
}

TEST(Cost, BroadcastRecomputationIsCountedAndCanRefuse) {
  // op(w) with w [1, 768], added to x [rows, 768]: fused, op runs rows * 768 times.
  auto graph = [](const std::string& op, int64_t rows) {
    B b;
    Value* e = b.n(op, {b.in("w", {1, 768})}, {1, 768}, {}, "op");
    b.out(b.n("Add", {b.in("x", {rows, 768}), e}, {rows, 768}, {}, "add"));
    return std::move(b.g);
  };
  std::unique_ptr<Graph> g = graph("Exp", 1);
  RegionCost c = region_cost(only_region(*g));
  EXPECT_EQ(c.recomputed, 0);
  EXPECT_TRUE(pays(c)) << why_not_paying(c);
  g = graph("Neg", 2);  // a cheap op recomputed once more: the saved launch is worth it
  c = region_cost(only_region(*g));
  EXPECT_EQ(c.recomputed, 768);
  EXPECT_EQ(c.recomputed_cost, 768);
  EXPECT_TRUE(pays(c)) << why_not_paying(c);
  g = graph("Exp", 512);
  c = region_cost(only_region(*g));
  EXPECT_EQ(c.recomputed, 511 * 768);
  EXPECT_EQ(c.recomputed_cost, 511 * 768 * 16);
  EXPECT_FALSE(pays(c));
  EXPECT_NE(why_not_paying(c).find("recompute 392448 elements"), std::string::npos)
      << why_not_paying(c);
}

}  // namespace cost_test
}  // namespace nnfuse
