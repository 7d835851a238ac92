// MatMulResidualFusionPass: a dense layer (with or without its bias) and the residual Add
// after it become one FusedMatMulResidual; declined with a reason for a broadcasting or
// constant addend and for a layer with an activation; fused == unfused numerically.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace matmul_residual_test {

using namespace fusion_test;

const char* const kPass = "MatMulResidualFusionPass";

struct Block {
  bool bias = false;
  bool relu = false;  // an activation between the layer and the Add
  Dims residual = {2, 5, 24};
  bool constant = false;  // the addend a constant
};

// x [2, 5, 16] -> MatMul W [16, 24] (+ b) (-> Relu) -> Add r -> y.
std::unique_ptr<Graph> block(const Block& c) {
  B b;
  Value* x = b.in("x", {2, 5, 16});
  Value* r = c.constant ? b.c(random_tensor(c.residual, 7)) : b.in("r", c.residual);
  Value* h = b.n("MatMul", {x, b.c(random_tensor({16, 24}, 1))}, {2, 5, 24});
  if (c.bias) h = b.n("Add", {h, b.c(random_tensor({24}, 2))}, {2, 5, 24});
  if (c.relu) h = b.n("Relu", {h}, {2, 5, 24});
  b.out(b.n("Add", {r, h}, {2, 5, 24}));
  return std::move(b.g);
}

TEST(MatMulResidualFusion, TheResidualAddJoinsTheProduct) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    auto f = fuse_without_auto_fusion(block({bias}));
    EXPECT_EQ(record(f.report, kPass)->effect_times, 1);
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "FusedMatMulResidual");
    EXPECT_EQ(n->input(2) != nullptr, bias);
    EXPECT_EQ(n->input(3)->name(), "r");
    expect_same_numbers(std::move(f.graph), block({bias}));
  }
}

TEST(MatMulResidualFusion, DeclinedWithAReason) {
  struct Case {
    Block b;
    std::string reason;
  };
  Block broadcast, constant, activation;
  broadcast.residual = {1, 1, 24};
  constant.constant = true;
  activation.bias = activation.relu = true;
  const std::vector<Case> cases = {{broadcast, "broadcasting Adds are not fused"},
                                   {constant, "is a constant, not a residual"},
                                   {activation, "already applies the activation Relu"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    expect_declined(fuse_without_auto_fusion(block(c.b)), kPass, c.reason, block(c.b));
  }
}

}  // namespace matmul_residual_test
}  // namespace nnfuse
