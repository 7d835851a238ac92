// SqueezeExciteFusionPass: a squeeze-and-excitation scale (GlobalAveragePool, two 1x1 convs with
// their activations) becomes one SqueezeExcite whatever the activations and biases; a pooled or
// squeezed value read elsewhere, a runtime bias or a padded part keeps the nodes, with the
// reason; fused == unfused; the switch file turns it off. SqueezeExciteScaleFusionPass: the Mul
// of the pooled tensor by that scale joins the kernel (apply), the Mul of another one does not.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace squeeze_excite_test {

using namespace fusion_test;

struct Block {
  int64_t n = 1, c = 24, squeezed = 6, hw = 5;
  std::string squeeze_act = "Relu", excite_act = "Sigmoid";  // "" for none
  bool biases = true;
  bool pooled_read_elsewhere = false;
  bool runtime_bias = false;
  bool padded = false;
  bool scale_first = false;   // Mul(scale, x) rather than Mul(x, scale)
  bool scales_other = false;  // the Mul scales the graph input, not the pooled tensor
};

// x -> dw conv -> [GlobalAveragePool -> Conv -> act -> Conv -> act] -> Mul(x, scale).
std::unique_ptr<Graph> se_block(const Block& k) {
  B b;
  const Dims xs = {k.n, k.c, k.hw, k.hw};
  Value* x = b.in("x", xs);
  Value* a = b.n("Conv", {x, b.c(random_tensor({k.c, 1, 3, 3}, 1))}, xs,
                 {{"group", attr_int(k.c)}, {"pads", ints({1, 1, 1, 1})}}, "dw");
  Value* g = b.n("GlobalAveragePool", {a}, {k.n, k.c, 1, 1}, {}, "gap");
  Value* b1 = k.runtime_bias ? b.in("b1", {k.squeezed})
              : k.biases     ? b.c(random_tensor({k.squeezed}, 4))
                             : nullptr;
  std::vector<Value*> ins1 = {g, b.c(random_tensor({k.squeezed, k.c, 1, 1}, 3))};
  if (b1) ins1.push_back(b1);
  const int64_t sq_hw = k.padded ? 3 : 1;
  std::map<std::string, Attribute> a1;
  if (k.padded) a1["pads"] = ints({1, 1, 1, 1});
  Value* e = b.n("Conv", ins1, {k.n, k.squeezed, sq_hw, sq_hw}, a1, "squeeze");
  if (!k.squeeze_act.empty())
    e = b.n(k.squeeze_act, {e}, {k.n, k.squeezed, sq_hw, sq_hw}, {}, "squeeze_act");
  std::vector<Value*> ins2 = {e, b.c(random_tensor({k.c, k.squeezed, 1, 1}, 5))};
  if (k.biases) ins2.push_back(b.c(random_tensor({k.c}, 6)));
  Value* s = b.n("Conv", ins2, {k.n, k.c, sq_hw, sq_hw}, {}, "excite");
  if (!k.excite_act.empty()) s = b.n(k.excite_act, {s}, {k.n, k.c, sq_hw, sq_hw}, {}, "gate");
  if (k.padded) s = b.n("GlobalAveragePool", {s}, {k.n, k.c, 1, 1}, {}, "gap2");
  Value* t = k.scales_other ? x : a;
  Value* y = b.n("Mul", k.scale_first ? std::vector<Value*>{s, t} : std::vector<Value*>{t, s}, xs,
                 {}, "scale");
  b.out(y);
  if (k.pooled_read_elsewhere) b.out(g);
  return std::move(b.g);
}

TEST(SqueezeExciteFusion, TheScaleIsOneKernel) {
  std::vector<Block> blocks(5);
  blocks[1].squeeze_act = "HardSwish";  // any activation the conv epilogue takes
  blocks[1].excite_act = "HardSigmoid";
  blocks[2].biases = false;
  blocks[2].squeeze_act = "";
  blocks[3].n = 2;
  blocks[3].c = 70;
  blocks[3].squeezed = 66;
  blocks[4].excite_act = "";
  for (const Block& k : blocks) {
    SCOPED_TRACE(k.squeeze_act + "/" + k.excite_act + " n=" + std::to_string(k.n));
    auto f = fuse(se_block(k));
    EXPECT_EQ(count_op(*f.graph, "SqueezeExcite"), 1u) << graph_to_text(*f.graph);
    EXPECT_EQ(count_op(*f.graph, "GlobalAveragePool"), 0u);
    EXPECT_EQ(count_op(*f.graph, "FusedConv") + count_op(*f.graph, "Conv"), 1u);  // the dw conv
    EXPECT_EQ(record(f.report, "SqueezeExciteFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), se_block(k));
  }
}

TEST(SqueezeExciteFusion, DeclinedWithTheReason) {
  struct Case {
    Block k;
    std::string reason;
  };
  Block read_elsewhere, runtime_bias, padded;
  read_elsewhere.pooled_read_elsewhere = true;
  runtime_bias.runtime_bias = true;
  runtime_bias.squeeze_act = "";  // so that the squeeze Conv reads the excite Conv directly
  padded.padded = true;
  for (const Case& c : {Case{read_elsewhere, "graph output"},
                        Case{runtime_bias, "bias is not a constant"}, Case{padded, "is padded"}}) {
    SCOPED_TRACE(c.reason);
    auto f = fuse(se_block(c.k));
    EXPECT_EQ(count_op(*f.graph, "SqueezeExcite"), 0u) << graph_to_text(*f.graph);
    const PassRecord* r = record(f.report, "SqueezeExciteFusionPass");
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->rejected.empty());
    EXPECT_NE(r->rejected[0].reason.find(c.reason), std::string::npos) << r->rejected[0].reason;
    expect_same_numbers(std::move(f.graph), se_block(c.k));
  }
}

TEST(SqueezeExciteFusion, TheMulByTheScaleJoinsTheKernel) {
  // No projection conv reads the scaled tensor (ScaledConvFusionPass has nothing to fold into):
  // the Mul becomes the kernel's last step, in either operand order, for one image or several.
  for (bool scale_first : {false, true}) {
    for (int64_t n : {1, 2}) {
      Block k;
      k.scale_first = scale_first;
      k.n = n;
      SCOPED_TRACE(std::string(scale_first ? "Mul(scale, x)" : "Mul(x, scale)") +
                   " n=" + std::to_string(n));
      auto f = fuse(se_block(k));
      EXPECT_EQ(count_op(*f.graph, "Mul"), 0u) << graph_to_text(*f.graph);
      ASSERT_EQ(count_op(*f.graph, "SqueezeExcite"), 1u);
      for (const Node* node : f.graph->nodes()) {
        if (node->op_type() == "SqueezeExcite") {
          EXPECT_EQ(node->attr_int("apply", 0), 1);
        }
      }
      EXPECT_EQ(record(f.report, "SqueezeExciteScaleFusionPass")->effect_times, 1);
      expect_same_numbers(std::move(f.graph), se_block(k));
    }
  }
}

TEST(SqueezeExciteFusion, TheScaleOfAnotherTensorStaysApart) {
  Block k;
  k.scales_other = true;
  auto f = fuse(se_block(k));
  EXPECT_EQ(count_op(*f.graph, "Mul"), 1u) << graph_to_text(*f.graph);
  const PassRecord* r = record(f.report, "SqueezeExciteScaleFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find("another tensor"), std::string::npos)
      << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), se_block(k));
}

TEST(SqueezeExciteFusion, TheSwitchFileTurnsTheMulFusionOff) {
  FusionSwitches sw = switched_off("SqueezeExciteScaleFusionPass");
  auto f = fuse(se_block(Block{}), &sw);
  EXPECT_EQ(count_op(*f.graph, "SqueezeExcite"), 1u);
  EXPECT_EQ(count_op(*f.graph, "Mul"), 1u);
}

TEST(SqueezeExciteFusion, TheSwitchFileTurnsItOff) {
  FusionSwitches sw = switched_off("SqueezeExciteFusionPass");
  auto f = fuse(se_block(Block{}), &sw);
  EXPECT_EQ(count_op(*f.graph, "SqueezeExcite"), 0u);
  EXPECT_EQ(count_op(*f.graph, "GlobalAveragePool"), 1u);
}

}  // namespace squeeze_excite_test
}  // namespace nnfuse
