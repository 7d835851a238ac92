#include "passes/fusions/fusion_records.h"

#include <gtest/gtest.h>

namespace nnfuse {
namespace fusion_records_test {

// Two fused projections (mm + add each) later packed into one node by a rewrite that did not
// record it, and a third whose record stands.
TEST(FusionRecords, RecordsOfAbsorbedNodesFoldIntoTheNodeThatHoldsThem) {
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({2, 4}));
  g.add_input(x);
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({2, 8}));
  Value* z = g.add_value("z", DType::kFloat32, Shape::of({2, 8}));
  Node* packed = g.add_node("MatMul", "qk", {x}, {y});
  packed->set_provenance({"q_mm", "q_add", "k_mm", "k_add"}, "QkvPackingPass");
  Node* gelu = g.add_node("Gelu", "gelu", {y}, {z});
  gelu->set_provenance({"g0", "g1", "g2"}, "GeluFusionPass");
  g.add_output(z);
  FusionReport r;
  r.fused.push_back(
      {"q_add", "MatMulBiasAddFusionPass", {"q_mm", "q_add"}, 64, 1, 100, 400, 300, 2e-6, 1e-6});
  r.fused.push_back(
      {"k_add", "MatMulBiasAddFusionPass", {"k_mm", "k_add"}, 64, 1, 100, 400, 300, 2e-6, 1e-6});
  r.fused.push_back({"gelu", "GeluFusionPass", {"g0", "g1", "g2"}, 128, 2});
  r.fused.push_back({"gone", "SomePass", {"folded"}, 8, 1});  // no fused node holds it
  // The original nodes' costs as imported (the packed node moves x and y: 24 floats).
  std::map<std::string, OriginalCost> originals = {{"q_mm", {100, 300, 1e-6}},
                                                   {"q_add", {16, 200, 1e-6}},
                                                   {"k_mm", {100, 300, 1e-6}},
                                                   {"k_add", {16, 200, 1e-6}},
                                                   {"g0", {8, 64, 1e-6}}};
  settle_fusion_records(g, r, originals, cost::Machine{});
  ASSERT_EQ(r.fused.size(), 3u);
  EXPECT_EQ(r.fused[0].node, "gelu");
  EXPECT_EQ(r.fused[0].kernels_saved, 2);
  EXPECT_EQ(r.fused[1].node, "qk");
  EXPECT_EQ(r.fused[1].pass, "MatMulBiasAddFusionPass+QkvPackingPass");
  EXPECT_EQ(r.fused[1].fused_from.size(), 4u);
  EXPECT_EQ(r.fused[1].kernels_saved, 3);  // four nodes run as one
  EXPECT_EQ(r.fused[1].bytes_saved, 128);
  // Estimated: its original nodes as imported against the packed node itself (x in, y out).
  EXPECT_EQ(r.fused[1].flops, 232);
  EXPECT_EQ(r.fused[1].bytes_before, 1000);
  EXPECT_DOUBLE_EQ(r.fused[1].seconds_before, 4e-6);
  EXPECT_EQ(r.fused[1].bytes_after, (8 + 16) * 4);
  EXPECT_DOUBLE_EQ(r.fused[1].seconds_after,
                   cost::roofline_seconds(232, (8 + 16) * 4, cost::Machine{}));
  // The gelu record had no estimate (a rewired node): made from g0 alone, the others unknown.
  EXPECT_DOUBLE_EQ(r.fused[0].seconds_before, 1e-6);
  EXPECT_EQ(r.fused[0].bytes_after, 2 * 16 * 4);
  EXPECT_EQ(r.fused[2].node, "gone");  // kept as it was
}

}  // namespace fusion_records_test
}  // namespace nnfuse
