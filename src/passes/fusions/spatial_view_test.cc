// SpatialTransposeViewPass: a feature map flattened to tokens and folded back (Reshape and
// Transpose [0, 2, 1]) is rewritten as a channels-last Transpose and a Reshape (and the reverse);
// a Reshape that is not the flatten of [N, C, H, W] is declined with a reason; fused == unfused.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace spatial_view_test {

using namespace fusion_test;

// x [1, 8, 4, 6] -> Conv -> Reshape `flat` -> Transpose [0, 2, 1] -> MatMul [.., 8] x [8, 8]
// -> Transpose [0, 2, 1] -> Reshape [1, 8, 4, 6] -> + the conv's output.
std::unique_ptr<Graph> tokens_graph(const Dims& flat) {
  B b;
  Value* x = b.in("x", {1, 8, 4, 6});
  Value* c = b.n("Conv", {x, b.c(random_tensor({8, 8, 1, 1}, 1))}, {1, 8, 4, 6},
                 {{"kernel_shape", ints({1, 1})}}, "conv");
  Value* r = b.n("Reshape", {c, b.c(shape_tensor(flat))}, flat, {}, "flat");
  Value* t =
      b.n("Transpose", {r}, {flat[0], flat[2], flat[1]}, {{"perm", ints({0, 2, 1})}}, "to_tokens");
  Value* m = b.n("MatMul", {t, b.c(random_tensor({flat[1], flat[1]}, 2))},
                 {flat[0], flat[2], flat[1]}, {}, "mm");
  Value* back = b.n("Transpose", {m}, flat, {{"perm", ints({0, 2, 1})}}, "to_channels");
  Value* map = b.n("Reshape", {back, b.c(shape_tensor({1, 8, 4, 6}))}, {1, 8, 4, 6}, {}, "fold");
  b.out(b.n("Add", {c, map}, {1, 8, 4, 6}, {}, "residual"));
  return std::move(b.g);
}

TEST(SpatialTransposeView, FlattenAndFoldBecomeChannelsLastTransposes) {
  auto f = fuse_without_auto_fusion(tokens_graph({1, 8, 24}));
  EXPECT_EQ(record(f.report, "SpatialTransposeViewPass")->effect_times, 2);
  std::vector<std::vector<int64_t>> perms;
  for (const Node* n : f.graph->nodes()) {
    if (n->op_type() == "Transpose") perms.push_back(n->attr_ints("perm", {}));
  }
  EXPECT_EQ(perms, (std::vector<std::vector<int64_t>>{{0, 2, 3, 1}, {0, 3, 1, 2}}))
      << graph_to_text(*f.graph);
  expect_same_numbers(std::move(f.graph), tokens_graph({1, 8, 24}));
}

TEST(SpatialTransposeView, DeclinesAReshapeThatIsNotTheFlattenOfAFeatureMap) {
  // [1, 8, 4, 6] as [1, 16, 12]: not [N, C, H*W].
  auto f = fuse_without_auto_fusion(tokens_graph({1, 16, 12}));
  const PassRecord* r = record(f.report, "SpatialTransposeViewPass");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->effect_times, 0);
  ASSERT_EQ(r->rejected.size(), 2u) << graph_to_text(*f.graph);
  EXPECT_NE(r->rejected[0].reason.find("[N, H*W, C]"), std::string::npos) << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), tokens_graph({1, 16, 12}));
}

}  // namespace spatial_view_test
}  // namespace nnfuse
