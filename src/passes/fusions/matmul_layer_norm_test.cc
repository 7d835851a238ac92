// MatMulSkipLayerNormFusionPass: dense layer + bias + residual + LayerNorm as one kernel;
// declined (with the reason) where the sum is needed elsewhere or the dense layer has an
// activation; fused == unfused numerically.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace matmul_layer_norm_test {

using namespace fusion_test;

struct Options {
  bool relu = false;      // an activation between the dense layer and the residual
  bool sum_used = false;  // the residual sum also feeds another node (pre-LN)
  bool swap = false;      // Add(residual, dense) instead of Add(dense, residual)
};

std::unique_ptr<Graph> block(const Options& o) {
  B b;
  const int64_t s = 5, e = 16;
  Value* x = b.in("x", {1, s, e});
  Value* r = b.in("r", {1, s, e});
  Value* y = b.n("MatMul", {x, b.c(random_tensor({e, e}, 1))}, {1, s, e}, {}, "dense");
  y = b.n("Add", {y, b.c(random_tensor({e}, 2))}, {1, s, e}, {}, "bias");
  if (o.relu) y = b.n("Relu", {y}, {1, s, e});
  Value* sum = b.n("Add", o.swap ? std::vector<Value*>{r, y} : std::vector<Value*>{y, r}, {1, s, e},
                   {}, "residual");
  Value* ln = b.n("LayerNormalization",
                  {sum, b.c(random_tensor({e}, 3, 0.5f, 1.5f)), b.c(random_tensor({e}, 4))},
                  {1, s, e}, {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-12f)}}, "ln");
  b.out(ln);
  if (o.sum_used) b.out(b.n("Relu", {sum}, {1, s, e}, {}, "next"));
  return std::move(b.g);
}

TEST(MatMulSkipLayerNormFusion, DenseResidualAndLayerNormBecomeOneKernel) {
  for (bool swap : {false, true}) {
    Options o;
    o.swap = swap;
    auto f = fuse(block(o));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "FusedMatMulLayerNorm");
    EXPECT_EQ(n->fused_by(), "MatMulSkipLayerNormFusionPass");
    EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"dense", "bias", "residual", "ln"}));
    EXPECT_EQ(record(f.report, "MatMulSkipLayerNormFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), block(o));
  }
}

void expect_declined(const Options& o, const std::string& reason) {
  auto f = fuse(block(o));
  EXPECT_EQ(count_op(*f.graph, "FusedMatMulLayerNorm"), 0u) << graph_to_text(*f.graph);
  const PassRecord* r = record(f.report, "MatMulSkipLayerNormFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->rejected.empty()) << graph_to_text(*f.graph);
  EXPECT_NE(r->rejected[0].reason.find(reason), std::string::npos) << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), block(o));
}

TEST(MatMulSkipLayerNormFusion, DeclinedWithReasons) {
  Options relu;
  relu.relu = true;
  expect_declined(relu, "activation");
  Options pre_ln;
  pre_ln.sum_used = true;
  expect_declined(pre_ln, "read elsewhere");
}

// Pre-LN: LayerNorm -> dense layer (+ GELU), the LayerNorm's output read by the dense layer
// alone; with `residual`, also added back (post-LN style), which the fusion declines.
std::unique_ptr<Graph> pre_ln(bool residual) {
  B b;
  const int64_t s = 5, e = 16;
  Value* x = b.in("x", {1, s, e});
  Value* ln = b.n("LayerNormalization",
                  {x, b.c(random_tensor({e}, 3, 0.5f, 1.5f)), b.c(random_tensor({e}, 4))},
                  {1, s, e}, {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-5f)}}, "ln");
  Value* y = b.n("MatMul", {ln, b.c(random_tensor({e, 2 * e}, 1))}, {1, s, 2 * e}, {}, "fc");
  y = b.n("Add", {y, b.c(random_tensor({2 * e}, 2))}, {1, s, 2 * e}, {}, "fc_bias");
  y = b.n("Relu", {y}, {1, s, 2 * e}, {}, "act");
  b.out(y);
  if (residual) b.out(b.n("Add", {ln, x}, {1, s, e}, {}, "residual"));
  return std::move(b.g);
}

TEST(LayerNormMatMulFusion, PreLnLayerNormJoinsTheDenseLayer) {
  auto f = fuse(pre_ln(false));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node* n = f.graph->nodes()[0];
  EXPECT_EQ(n->op_type(), "FusedLayerNormMatMul");
  EXPECT_EQ(n->attr_string("activation", ""), "Relu");
  EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"ln", "fc", "fc_bias", "act"}));
  EXPECT_EQ(record(f.report, "LayerNormMatMulFusionPass")->effect_times, 1);
  expect_same_numbers(std::move(f.graph), pre_ln(false));
}

TEST(LayerNormMatMulFusion, DeclinedWhereTheLayerNormIsReadElsewhere) {
  auto f = fuse(pre_ln(true));
  EXPECT_EQ(count_op(*f.graph, "FusedLayerNormMatMul"), 0u);
  const PassRecord* r = record(f.report, "LayerNormMatMulFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find("does not pay"), std::string::npos);
  expect_same_numbers(std::move(f.graph), pre_ln(true));
}

// An RMSNorm (with its gamma or without) into the dense layer after it: FusedLayerNormMatMul
// with norm "rms" and no beta.
std::unique_ptr<Graph> pre_rms(bool gamma) {
  B b;
  const int64_t s = 5, e = 16;
  Value* x = b.in("x", {1, s, e});
  std::vector<Value*> ins = {x};
  if (gamma) ins.push_back(b.c(random_tensor({e}, 3, 0.5f, 1.5f)));
  Node* rms = b.node("RMSNorm", ins, {1, s, e}, kFusedDomain);
  rms->set_attr("epsilon", attr_float(1e-6f));
  Value* y = b.n("MatMul", {rms->output(0), b.c(random_tensor({e, 2 * e}, 1))}, {1, s, 2 * e});
  b.out(b.n("Add", {y, b.c(random_tensor({2 * e}, 2))}, {1, s, 2 * e}));
  return std::move(b.g);
}

TEST(LayerNormMatMulFusion, RmsNormJoinsTheDenseLayer) {
  for (bool gamma : {true, false}) {
    auto f = fuse(pre_rms(gamma));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "FusedLayerNormMatMul");
    EXPECT_EQ(n->attr_string("norm", ""), "rms");
    EXPECT_EQ(n->num_inputs(), 4u);
    expect_same_numbers(std::move(f.graph), pre_rms(gamma));
  }
}

}  // namespace matmul_layer_norm_test
}  // namespace nnfuse
