// ExpandDepthwiseFusionPass: a 1x1 expansion or a stem conv (with its BatchNorm and
// activation) and the depthwise conv that alone reads it become one ExpandDepthwise where the
// expanded tensor is large; a small one, or one expanding many input channels, is declined as not
// paying (NNFUSE_EXPAND_DEPTHWISE=force fuses it anyway); an expansion read elsewhere, a dilated or
// unevenly padded depthwise conv keep the nodes, with the reason; other chains of two convs are not
// matches; fused == unfused; the switch file turns it off.
#include <gtest/gtest.h>

#include <cstdlib>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace expand_depthwise_test {

using namespace fusion_test;

struct Block {
  int64_t n = 1, c = 8, e = 48, hw = 10, k = 3, s = 1;
  int64_t k1 = 1, s1 = 1;  // the expansion's kernel and stride (padded to keep hw x hw)
  bool dilated_expansion = false;
  std::string act = "Relu";  // both parts'; "" for none
  bool bn = true;
  bool expanded_read_elsewhere = false;
  bool dilated = false;
  bool uneven_pads = false;
  bool dense_second = false;  // a 3x3 conv over all channels instead of a depthwise one
};

// x -> k1 x k1 Conv (-> BN) (-> act) -> depthwise k x k Conv (-> BN) (-> act) -> y.
std::unique_ptr<Graph> block(const Block& k) {
  B b;
  const int64_t in = (k.hw - 1) * k.s1 + 1;  // the expansion's output is hw x hw
  Value* x = b.in("x", {k.n, k.c, in, in});
  const Dims es = {k.n, k.e, k.hw, k.hw};
  auto bn = [&](Value* v, const Dims& shape, uint32_t seed, const std::string& name) {
    if (!k.bn) return v;
    return b.n(
        "BatchNormalization",
        {v, b.c(random_tensor({k.e}, seed, 0.5f, 1.5f)), b.c(random_tensor({k.e}, seed + 1)),
         b.c(random_tensor({k.e}, seed + 2)), b.c(random_tensor({k.e}, seed + 3, 0.5f, 1.5f))},
        shape, {}, name);
  };
  auto act = [&](Value* v, const Dims& shape, const std::string& name) {
    if (k.act.empty()) return v;
    if (k.act != "Clip") return b.n(k.act, {v}, shape, {}, name);
    return b.n("Clip", {v, b.c(Tensor::scalar(0.0f)), b.c(Tensor::scalar(6.0f))}, shape, {}, name);
  };
  const int64_t p1 = k.dilated_expansion ? k.k1 / 2 * 2 : k.k1 / 2;
  std::map<std::string, Attribute> expand_attrs = {{"strides", ints({k.s1, k.s1})},
                                                   {"pads", ints({p1, p1, p1, p1})}};
  if (k.dilated_expansion) expand_attrs["dilations"] = ints({2, 2});
  Value* a = b.n("Conv", {x, b.c(random_tensor({k.e, k.c, k.k1, k.k1}, 1, -0.5f, 0.5f))}, es,
                 expand_attrs, "expand");
  a = act(bn(a, es, 10, "expand_bn"), es, "expand_act");
  const int64_t pad = k.dilated ? k.k / 2 * 2 : k.k / 2;
  const int64_t out = (k.hw + 2 * pad - (k.dilated ? 2 * (k.k - 1) + 1 : k.k)) / k.s + 1;
  const Dims ys = {k.n, k.e, out, out};
  std::map<std::string, Attribute> attrs = {{"group", attr_int(k.dense_second ? 1 : k.e)},
                                            {"strides", ints({k.s, k.s})},
                                            {"pads", ints({pad, pad, pad, pad})}};
  if (k.dilated) attrs["dilations"] = ints({2, 2});
  if (k.uneven_pads) attrs["pads"] = ints({0, 0, 2, 2});
  const Dims w2 = {k.e, k.dense_second ? k.e : 1, k.k, k.k};
  Value* y = b.n("Conv", {a, b.c(random_tensor(w2, 2, -0.5f, 0.5f))}, ys, attrs, "depthwise");
  y = act(bn(y, ys, 20, "depthwise_bn"), ys, "depthwise_act");
  b.out(y);
  if (k.expanded_read_elsewhere) b.out(a);
  return std::move(b.g);
}

// Sets NNFUSE_EXPAND_DEPTHWISE=force for one scope.
struct Forced {
  Forced() { setenv("NNFUSE_EXPAND_DEPTHWISE", "force", 1); }
  ~Forced() { unsetenv("NNFUSE_EXPAND_DEPTHWISE"); }
};

TEST(ExpandDepthwiseFusion, ALargeExpansionIsOneKernel) {
  // 96 channels of 64x64: 1.5 MiB expanded, over the rule's 1 MiB.
  Block k;
  k.c = 16;
  k.e = 96;
  k.hw = 64;
  k.s = 2;
  k.act = "Clip";
  auto f = fuse(block(k));
  const PassRecord* r = record(f.report, "ExpandDepthwiseFusionPass");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->effect_times, 1) << (r->rejected.empty() ? "" : r->rejected[0].reason);
  EXPECT_EQ(count_op(*f.graph, "ExpandDepthwise"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "FusedConv") + count_op(*f.graph, "Conv"), 0u);
  expect_same_numbers(std::move(f.graph), block(k));
}

// The block is left unfused, its one match declined with a reason holding `reason`.
void expect_declined_once(const Block& k, const std::string& reason) {
  auto f = fuse(block(k));
  EXPECT_EQ(count_op(*f.graph, "ExpandDepthwise"), 0u);
  const PassRecord* r = record(f.report, "ExpandDepthwiseFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->rejected.size(), 1u);
  EXPECT_NE(r->rejected[0].reason.find(reason), std::string::npos) << r->rejected[0].reason;
}

TEST(ExpandDepthwiseFusion, ASmallExpansionDoesNotPay) {
  expect_declined_once(Block{}, "does not pay: the expanded tensor (18 KiB)");
}

TEST(ExpandDepthwiseFusion, AWideInputExpansionDoesNotPay) {
  // 1.5 MiB expanded, but from 96 input channels: a product oneDNN computes faster.
  Block k;
  k.c = 96;
  k.e = 96;
  k.hw = 64;
  expect_declined_once(k, "the expansion reads 96 inputs a pixel");
}

// A stem: a 3x3 conv of stride 2 over 3 channels (27 inputs a pixel) to 32 at 112 x 112 (1.5
// MiB), then a depthwise 3x3: one kernel, gathering the stem's taps.
Block stem() {
  Block k;
  k.c = 3;
  k.e = 32;
  k.hw = 112;
  k.k1 = 3;
  k.s1 = 2;
  k.act = "Clip";
  return k;
}

TEST(ExpandDepthwiseFusion, AStemAndItsDepthwiseConvAreOneKernel) {
  auto f = fuse(block(stem()));
  EXPECT_EQ(count_op(*f.graph, "ExpandDepthwise"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->nodes().size(), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(record(f.report, "ExpandDepthwiseFusionPass")->effect_times, 1);
  expect_same_numbers(std::move(f.graph), block(stem()));
}

TEST(ExpandDepthwiseFusion, AStemOfManyInputsDoesNotPay) {
  // 3x3 taps over 8 channels: 72 inputs a pixel.
  Block k = stem();
  k.c = 8;
  expect_declined_once(k, "the expansion reads 72 inputs a pixel");
}

TEST(ExpandDepthwiseFusion, ForcedEveryVariantFusesAndMatches) {
  Forced forced;
  std::vector<Block> blocks(8);
  blocks[1].k = 5;
  blocks[1].s = 2;
  blocks[1].act = "HardSwish";
  blocks[2].bn = false;  // plain Convs, no activation: the pattern's Conv form
  blocks[2].act = "";
  blocks[3].n = 2;
  blocks[3].e = 40;  // off the 16-float vectors
  blocks[3].hw = 9;
  blocks[4].act = "Sigmoid";
  blocks[5].hw = 2;  // smaller than the window
  blocks[6].c = 3;   // stems: 3x3 of stride 2, 5x5 of stride 1
  blocks[6].k1 = 3;
  blocks[6].s1 = 2;
  blocks[6].e = 24;
  blocks[7].c = 2;
  blocks[7].k1 = 5;
  blocks[7].s = 2;
  blocks[7].act = "HardSwish";
  for (const Block& k : blocks) {
    SCOPED_TRACE("k1 " + std::to_string(k.k1) + " s1 " + std::to_string(k.s1) + " k" +
                 std::to_string(k.k) + " s" + std::to_string(k.s) + " " + k.act +
                 " n=" + std::to_string(k.n) + " e=" + std::to_string(k.e));
    auto f = fuse(block(k));
    EXPECT_EQ(count_op(*f.graph, "ExpandDepthwise"), 1u) << graph_to_text(*f.graph);
    EXPECT_EQ(record(f.report, "ExpandDepthwiseFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), block(k));
  }
}

TEST(ExpandDepthwiseFusion, DeclinedWithTheReason) {
  Forced forced;
  struct Case {
    Block k;
    std::string reason;
  };
  Block read_elsewhere, dilated, uneven, dilated_stem = stem();
  read_elsewhere.expanded_read_elsewhere = true;
  dilated.dilated = true;
  uneven.uneven_pads = true;
  dilated_stem.hw = 12;
  dilated_stem.dilated_expansion = true;
  for (const Case& c : {Case{read_elsewhere, "graph output"}, Case{dilated, "dilated"},
                        Case{uneven, "not padded by 1 on every side"},
                        Case{dilated_stem, "expansion is dilated"}}) {
    SCOPED_TRACE(c.reason);
    auto f = fuse(block(c.k));
    EXPECT_EQ(count_op(*f.graph, "ExpandDepthwise"), 0u) << graph_to_text(*f.graph);
    const PassRecord* r = record(f.report, "ExpandDepthwiseFusionPass");
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->rejected.empty());
    EXPECT_NE(r->rejected[0].reason.find(c.reason), std::string::npos) << r->rejected[0].reason;
    expect_same_numbers(std::move(f.graph), block(c.k));
  }
}

TEST(ExpandDepthwiseFusion, OtherConvChainsAreNotMatches) {
  Forced forced;
  Block dense;
  dense.dense_second = true;
  auto f = fuse(block(dense));
  EXPECT_EQ(count_op(*f.graph, "ExpandDepthwise"), 0u);
  const PassRecord* r = record(f.report, "ExpandDepthwiseFusionPass");
  EXPECT_TRUE(r == nullptr || (r->match_times == 0 && r->rejected.empty()));
}

TEST(ExpandDepthwiseFusion, TheSwitchFileTurnsItOff) {
  Forced forced;
  FusionSwitches sw = switched_off("ExpandDepthwiseFusionPass");
  auto f = fuse(block(Block{}), &sw);
  EXPECT_EQ(count_op(*f.graph, "ExpandDepthwise"), 0u);
  EXPECT_EQ(count_op(*f.graph, "FusedConv"), 2u);
}

}  // namespace expand_depthwise_test
}  // namespace nnfuse
