// HorizontalConvFusionPass: the 1x1 convs that read one input with one geometry and activation
// (an inception block's branch openings) become one FusedConvSplit writing each conv's output;
// a 3x3 conv, a strided one and one with another activation stay apart; fused == unfused; the
// switch file turns it off.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace horizontal_conv_test {

using namespace fusion_test;

// x -> 1x1 convs of widths 16, 24 (no bias) and 8 with Relu, a 1x1 conv without Relu, a strided
// 1x1 conv with Relu and a 3x3 conv with Relu; the branches concatenated (the strided one pooled
// back to x's size first would change nothing the test looks at, so it is an output of its own).
std::unique_ptr<Graph> inception_block(int64_t n) {
  B b;
  const int64_t c = 12, hw = 6;
  Value* x = b.in("x", {n, c, hw, hw});
  auto conv = [&](int64_t m, uint32_t seed, bool bias, bool relu,
                  std::map<std::string, Attribute> attrs, int64_t k, int64_t out_hw,
                  const std::string& name) {
    std::vector<Value*> ins = {x, b.c(random_tensor({m, c, k, k}, seed, -0.3f, 0.3f))};
    if (bias) ins.push_back(b.c(random_tensor({m}, seed + 1)));
    Value* y = b.n("Conv", ins, {n, m, out_hw, out_hw}, attrs, name);
    return relu ? b.n("Relu", {y}, {n, m, out_hw, out_hw}, {}, name + "_relu") : y;
  };
  Value* a = conv(16, 1, true, true, {}, 1, hw, "a");
  Value* bb = conv(24, 3, false, true, {}, 1, hw, "b");
  Value* d = conv(8, 5, true, true, {}, 1, hw, "d");
  Value* plain = conv(4, 7, true, false, {}, 1, hw, "plain");
  Value* strided = conv(4, 9, true, true, {{"strides", ints({2, 2})}}, 1, hw / 2, "strided");
  Value* wide = conv(4, 11, true, true, {{"pads", ints({1, 1, 1, 1})}}, 3, hw, "wide");
  Value* cat =
      b.n("Concat", {a, bb, d, plain, wide}, {n, 56, hw, hw}, {{"axis", attr_int(1)}}, "cat");
  b.out(cat);
  b.out(strided);
  return std::move(b.g);
}

TEST(HorizontalConvFusion, SiblingProductsAreOne) {
  for (int64_t n : {1, 2}) {
    SCOPED_TRACE(n);
    auto f = fuse(inception_block(n));
    ASSERT_EQ(count_op(*f.graph, "FusedConvSplit"), 1u) << graph_to_text(*f.graph);
    for (const Node* node : f.graph->nodes()) {
      if (node->op_type() != "FusedConvSplit") continue;
      EXPECT_EQ(node->num_outputs(), 3u);
      EXPECT_EQ(node->attr_ints("split"), (std::vector<int64_t>{16, 24, 8}));
      EXPECT_EQ(node->attr_string("activation", ""), "Relu");
    }
    // The plain, strided and 3x3 convs stay.
    EXPECT_EQ(count_op(*f.graph, "FusedConv") + count_op(*f.graph, "Conv"), 3u);
    EXPECT_EQ(record(f.report, "HorizontalConvFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), inception_block(n));
  }
}

TEST(HorizontalConvFusion, TheSwitchFileTurnsItOff) {
  FusionSwitches sw = switched_off("HorizontalConvFusionPass");
  auto f = fuse(inception_block(1), &sw);
  EXPECT_EQ(count_op(*f.graph, "FusedConvSplit"), 0u);
  EXPECT_EQ(count_op(*f.graph, "FusedConv") + count_op(*f.graph, "Conv"), 6u);
}

}  // namespace horizontal_conv_test
}  // namespace nnfuse
