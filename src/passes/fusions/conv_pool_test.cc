// ConvMaxPoolFusionPass: VGG's conv -> BN -> ReLU -> MaxPool becomes one FusedConvPool where
// the conv runs Winograd; declined with a reason elsewhere; fused == unfused numerically,
// including the plain output written for a Flatten -> Gemm classifier.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace conv_pool_test {

using namespace fusion_test;

struct VggOptions {
  int64_t c = 32, m = 64, k = 3, hw = 28;
  bool indices = false, extra_use = false, head = false;
};

// x -> Conv(kxk, pad) -> BN -> Relu -> MaxPool 2x2 [-> Flatten -> Gemm]
std::unique_ptr<Graph> vgg_block(const VggOptions& o) {
  B b;
  const int64_t p = o.k / 2, h = o.hw, hp = o.hw / 2;
  Value* x = b.in("x", {1, o.c, h, h});
  Value* y = b.n(
      "Conv",
      {x, b.c(random_tensor({o.m, o.c, o.k, o.k}, 1, -0.2f, 0.2f)), b.c(random_tensor({o.m}, 2))},
      {1, o.m, h, h}, {{"pads", ints({p, p, p, p})}}, "conv");
  y = b.n("BatchNormalization",
          {y, b.c(random_tensor({o.m}, 3, 0.5, 1.5)), b.c(random_tensor({o.m}, 4)),
           b.c(random_tensor({o.m}, 5)), b.c(random_tensor({o.m}, 6, 0.5, 2))},
          {1, o.m, h, h}, {}, "bn");
  y = b.n("Relu", {y}, {1, o.m, h, h}, {}, "relu");
  if (o.extra_use) b.out(y);
  Value* pooled = b.g->add_value("pool_out", DType::kFloat32, Shape::of({1, o.m, hp, hp}));
  std::vector<Value*> outs = {pooled};
  if (o.indices) outs.push_back(b.g->add_value("idx", DType::kInt64, Shape::of({1, o.m, hp, hp})));
  Node* pool = b.g->add_node("MaxPool", "pool", {y}, outs);
  pool->set_attr("kernel_shape", ints({2, 2}));
  pool->set_attr("strides", ints({2, 2}));
  if (o.indices) b.out(outs[1]);
  if (o.head) {
    Value* f = b.n("Flatten", {pooled}, {1, o.m * hp * hp}, {{"axis", attr_int(1)}}, "flatten");
    pooled = b.n("Gemm", {f, b.c(random_tensor({10, o.m * hp * hp}, 7, -0.1f, 0.1f))}, {1, 10},
                 {{"transB", attr_int(1)}}, "gemm");
  }
  b.out(pooled);
  return std::move(b.g);
}

TEST(ConvMaxPoolFusion, WinogradConvTakesThePool) {
  for (bool head : {false, true}) {
    VggOptions o;
    o.head = head;
    auto f = fuse(vgg_block(o));
    EXPECT_EQ(count_op(*f.graph, "FusedConvPool"), 1u) << graph_to_text(*f.graph);
    EXPECT_EQ(count_op(*f.graph, "MaxPool"), 0u);
    for (const Node* n : f.graph->nodes()) {
      if (n->op_type() != "FusedConvPool") continue;
      EXPECT_EQ(n->fused_by(), "ConvMaxPoolFusionPass");
      EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"conv", "bn", "relu", "pool"}));
      EXPECT_EQ(n->attr_string("activation", ""), "Relu");
      EXPECT_EQ(n->attr_ints("pool_kernel_shape"), (std::vector<int64_t>{2, 2}));
    }
    EXPECT_EQ(record(f.report, "ConvMaxPoolFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), vgg_block(o));
  }
}

void expect_declined(const VggOptions& o, const std::string& reason) {
  auto f = fuse(vgg_block(o));
  EXPECT_EQ(count_op(*f.graph, "FusedConvPool"), 0u);
  EXPECT_EQ(count_op(*f.graph, "MaxPool"), 1u);
  const PassRecord* r = record(f.report, "ConvMaxPoolFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find(reason), std::string::npos) << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), vgg_block(o));
}

TEST(ConvMaxPoolFusion, DeclinedWhereItDoesNotPay) {
  VggOptions few;
  few.c = 8;
  expect_declined(few, "does not pay");
  VggOptions one_by_one;
  one_by_one.k = 1;
  expect_declined(one_by_one, "does not pay");
}

TEST(ConvMaxPoolFusion, GuardsRejectEscapesAndIndices) {
  VggOptions extra;
  extra.extra_use = true;  // the conv's output is also a graph output
  auto f = fuse(vgg_block(extra));
  EXPECT_EQ(count_op(*f.graph, "MaxPool"), 1u);
  expect_same_numbers(std::move(f.graph), vgg_block(extra));
  VggOptions indices;
  indices.indices = true;
  auto g = fuse(vgg_block(indices));
  EXPECT_EQ(count_op(*g.graph, "MaxPool"), 1u);
  const PassRecord* r = record(g.report, "ConvMaxPoolFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find("Indices"), std::string::npos) << r->rejected[0].reason;
}

}  // namespace conv_pool_test
}  // namespace nnfuse
