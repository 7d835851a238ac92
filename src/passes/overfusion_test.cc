#include "passes/overfusion.h"

#include <gtest/gtest.h>

#include "ops/region.h"

namespace nnfuse {
namespace overfusion_test {

using codegen::OpKind;

// A FusedRegion node running `r` over inputs of its shapes.
Node* add_region(Graph& g, const codegen::Region& r, const std::string& name) {
  std::vector<Value*> in;
  for (size_t i = 0; i < r.input_shapes.size(); ++i) {
    in.push_back(g.add_value(name + "_in" + std::to_string(i), DType::kFloat32,
                             Shape::of(r.input_shapes[i])));
  }
  Value* out = g.add_value(name + "_out", DType::kFloat32, Shape::of(r.output_shape));
  Node* n = g.add_node("FusedRegion", name, in, {out}, kFusedDomain);
  for (auto& [k, a] : ops::fused_region_attrs(r)) n->set_attr(k, a);
  return n;
}

// x * c0 + x * c1 + ... over `terms` products all made before they are summed: `terms` values
// live at once.
codegen::Region wide_sum(int terms) {
  codegen::Region r;
  r.input_shapes = {{4, 64}};
  r.output_shape = {4, 64};
  const int x = r.add_input(0);
  std::vector<int> products;
  for (int i = 0; i < terms; ++i) {
    products.push_back(r.add_binary(OpKind::kMul, x, r.add_const(static_cast<float>(i + 1))));
  }
  int acc = products[0];
  for (int i = 1; i < terms; ++i)
    acc = r.add_binary(OpKind::kAdd, acc, products[static_cast<size_t>(i)]);
  r.output = acc;
  return r;
}

// softmax-like: exp(x - max(x)) per row of `row` elements.
codegen::Region row_region(int64_t row) {
  codegen::Region r;
  r.input_shapes = {{8, row}};
  r.output_shape = {8, row};
  const int x = r.add_input(0);
  const int m = r.add_reduction(OpKind::kReduceMax, x);
  r.output = r.add_unary(OpKind::kExp, r.add_binary(OpKind::kSub, x, m));
  return r;
}

TEST(OverFusion, TooManyLiveValuesForTheRegistersIsWarnedByName) {
  Graph g;
  add_region(g, wide_sum(40), "wide");
  add_region(g, wide_sum(4), "narrow");
  const std::vector<FusionWarning> w = overfusion_warnings(g, int64_t{1} << 20, 32);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].kind, "over-fusion");
  EXPECT_EQ(w[0].node, "wide");
  EXPECT_NE(w[0].message.find("more than the 32 vector registers"), std::string::npos)
      << w[0].message;
  // With 16 registers the narrow one still fits.
  EXPECT_EQ(overfusion_warnings(g, int64_t{1} << 20, 16).size(), 1u);
}

TEST(OverFusion, ARowLargerThanTheCacheIsWarned) {
  Graph g;
  add_region(g, row_region(1 << 18), "long_rows");  // 1 MiB per row
  add_region(g, row_region(1024), "short_rows");    // 4 KiB
  const std::vector<FusionWarning> w = overfusion_warnings(g, 512 * 1024, 32);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].node, "long_rows");
  EXPECT_NE(w[0].message.find("1024 KiB"), std::string::npos) << w[0].message;
  EXPECT_NE(w[0].message.find("512 KiB L2"), std::string::npos) << w[0].message;
  EXPECT_TRUE(overfusion_warnings(g, int64_t{4} << 20, 32).empty());
}

TEST(OverFusion, MachineFiguresArePlausible) {
  EXPECT_GE(l2_cache_bytes(), 64 * 1024);
  const int regs = vector_registers();
  EXPECT_TRUE(regs == 16 || regs == 32) << regs;
}

}  // namespace overfusion_test
}  // namespace nnfuse
