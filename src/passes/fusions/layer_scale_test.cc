// LayerScaleFusionPass: ConvNeXt's layer scale (gamma [C, 1, 1] times the permuted output of a
// dense layer) folds into the layer's weights and bias; declined with a reason for a layer
// with an activation or a scale along another axis; fused == unfused numerically.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace layer_scale_test {

using namespace fusion_test;

// x [1, 4, 3, 5] -> Transpose to channels last -> MatMul W [4, 6] + b (-> Relu) -> Transpose
// back -> Mul gamma.
std::unique_ptr<Graph> layer_scale_graph(const Dims& gamma, bool relu) {
  B b;
  Value* x = b.in("x", {1, 4, 3, 5});
  Value* t = b.n("Transpose", {x}, {1, 3, 5, 4}, {{"perm", ints({0, 2, 3, 1})}}, "to_last");
  Value* m = b.n("MatMul", {t, b.c(random_tensor({4, 6}, 1))}, {1, 3, 5, 6}, {}, "mm");
  Value* a = b.n("Add", {m, b.c(random_tensor({6}, 2))}, {1, 3, 5, 6}, {}, "bias");
  if (relu) a = b.n("Relu", {a}, {1, 3, 5, 6}, {}, "relu");
  Value* back = b.n("Transpose", {a}, {1, 6, 3, 5}, {{"perm", ints({0, 3, 1, 2})}}, "to_first");
  b.out(b.n("Mul", {back, b.c(random_tensor(gamma, 3))}, {1, 6, 3, 5}, {}, "scale"));
  return std::move(b.g);
}

TEST(LayerScaleFusion, PerChannelScaleFoldsIntoTheDenseLayer) {
  for (const Dims& gamma : {Dims{6, 1, 1}, Dims{1, 6, 1, 1}}) {
    SCOPED_TRACE(dims_str(gamma));
    auto f = fuse(layer_scale_graph(gamma, false));
    EXPECT_EQ(count_op(*f.graph, "Mul"), 0u) << graph_to_text(*f.graph);
    EXPECT_EQ(count_op(*f.graph, "FusedMatMul"), 1u);
    EXPECT_EQ(record(f.report, "LayerScaleFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), layer_scale_graph(gamma, false));
  }
}

TEST(LayerScaleFusion, DeclinedWhereTheScaleDoesNotCommute) {
  struct Case {
    Dims gamma;
    bool relu;
    std::string reason;
  };
  for (const Case& c :
       {Case{{6, 1, 1}, true, "activation"}, Case{{1, 1, 5}, false, "per output channel"}}) {
    SCOPED_TRACE(c.reason);
    auto f = fuse(layer_scale_graph(c.gamma, c.relu));
    const PassRecord* r = record(f.report, "LayerScaleFusionPass");
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->rejected.empty()) << graph_to_text(*f.graph);
    EXPECT_NE(r->rejected[0].reason.find(c.reason), std::string::npos) << r->rejected[0].reason;
    expect_same_numbers(std::move(f.graph), layer_scale_graph(c.gamma, c.relu));
  }
}

}  // namespace layer_scale_test
}  // namespace nnfuse
