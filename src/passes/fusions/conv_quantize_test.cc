// ConvQuantizeFusionPass: a QuantizeLinear/DequantizeLinear pair after a conv (plain, with a
// residual Add) becomes the FusedConv's epilogue; the fused graph on
// the reference kernels equals the unfused one exactly, and on the fast kernels lies within one
// quantization step of it (a fast conv sums in another order); pairs it cannot state are
// declined with the reason.
#include <gtest/gtest.h>

#include <cmath>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace conv_quantize_test {

using namespace fusion_test;

struct Q {
  float scale = 0.05f;
  float dq_scale = 0.05f;
  bool int8 = false;
  int zp = 3;
};

// Conv(x) [+ r] -> QuantizeLinear -> DequantizeLinear (-> output), channels c, k x k.
std::unique_ptr<Graph> graph(const Q& q, bool residual = false, int64_t c = 4, int64_t k = 3,
                             int64_t hw = 6) {
  B b;
  Value* x = b.in("x", {1, c, hw, hw});
  const int64_t p = k / 2;
  Value* y = b.n("Conv", {x, b.c(random_tensor({c, c, k, k}, 11)), b.c(random_tensor({c}, 12))},
                 {1, c, hw, hw}, {{"pads", ints({p, p, p, p})}}, "conv");
  if (residual) y = b.n("Add", {y, b.in("r", {1, c, hw, hw})}, {1, c, hw, hw}, {}, "add");
  Value* zp = q.int8 ? b.c(Tensor::scalar<int8_t>(static_cast<int8_t>(q.zp)))
                     : b.c(Tensor::scalar<uint8_t>(static_cast<uint8_t>(q.zp)));
  Value* qv =
      b.n("QuantizeLinear", {y, b.c(Tensor::scalar(q.scale)), zp}, {1, c, hw, hw}, {}, "quantize");
  qv->set_dtype(q.int8 ? DType::kInt8 : DType::kUInt8);
  b.out(b.n("DequantizeLinear", {qv, b.c(Tensor::scalar(q.dq_scale)), zp}, {1, c, hw, hw}, {},
            "dequantize"));
  return std::move(b.g);
}

// Both graphs run on `reference` kernels (or the fused one on the fast ones); the largest
// difference in quantization steps.
double steps_apart(std::unique_ptr<Graph> fused, std::unique_ptr<Graph> plain, bool reference,
                   float step, std::string* kernel = nullptr) {
  std::map<std::string, Tensor> feeds;
  uint32_t seed = 1;
  for (const Value* v : plain->runtime_inputs()) {
    feeds[v->name()] = random_tensor(v->shape().static_dims(), seed++, -2.0f, 2.0f);
  }
  PlanOptions ref;
  ref.reference_only = true;
  PlanSession a(std::move(fused), reference ? ref : PlanOptions{});
  PlanSession b(std::move(plain), ref);
  const Tensor x = a.run(feeds)[0], y = b.run(feeds)[0];
  for (const PlanStep& st : a.plan().steps()) {
    if (kernel && st.kind == PlanStep::Kind::kKernel) *kernel = st.kernel_name;
  }
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    worst = std::max(worst, std::fabs(double(x.data<float>()[i]) - y.data<float>()[i]) / step);
  }
  return worst;
}

TEST(ConvQuantizeFusion, PairBecomesTheConvsEpilogue) {
  for (const Q& q : {Q{}, Q{.int8 = true, .zp = -5}}) {
    SCOPED_TRACE(q.int8 ? "int8" : "uint8");
    auto f = fuse(graph(q));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "FusedConv");
    EXPECT_EQ(n->attr_string("activation", ""), "QuantizeDequantize");
    EXPECT_EQ(n->attr_float("activation_alpha", 0), q.scale);
    EXPECT_EQ(n->attr_float("activation_beta", 0), (q.int8 ? -128.0f : 0.0f) - q.zp);
    EXPECT_EQ(record(f.report, "ConvQuantizeFusionPass")->effect_times, 1);
    EXPECT_EQ(steps_apart(std::move(f.graph), graph(q), true, q.scale), 0.0);
    std::string kernel;
    EXPECT_LE(steps_apart(fuse(graph(q)).graph, graph(q), false, q.scale, &kernel), 1.0);
    EXPECT_EQ(kernel, "onednn.fused_conv");  // the post-ops with the division
  }
}

TEST(ConvQuantizeFusion, ResidualSumThenQuantize) {
  auto f = fuse(graph(Q{}, /*residual=*/true));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->nodes()[0]->attr_string("activation", ""), "QuantizeDequantize");
  EXPECT_EQ(steps_apart(std::move(f.graph), graph(Q{}, true), true, 0.05f), 0.0);
  EXPECT_LE(steps_apart(fuse(graph(Q{}, true)).graph, graph(Q{}, true), false, 0.05f), 1.0);
}

// oneDNN's post-ops (a division, round, clip, a product) give exactly the conv's own float
// outputs rounded to the grid: the same numbers as its QuantizeLinear and DequantizeLinear.
TEST(ConvQuantizeFusion, PostOpsRoundTheConvsOwnOutputs) {
  const Q q{.scale = 0.01f, .dq_scale = 0.01f, .zp = 100};
  auto conv_only = [] {
    B b;
    Value* x = b.in("x", {1, 8, 9, 9});
    b.out(b.n("Conv", {x, b.c(random_tensor({8, 8, 3, 3}, 11)), b.c(random_tensor({8}, 12))},
              {1, 8, 9, 9}, {{"pads", ints({1, 1, 1, 1})}}, "conv"));
    return std::move(b.g);
  };
  std::map<std::string, Tensor> feeds{{"x", random_tensor({1, 8, 9, 9}, 1, -2.0f, 2.0f)}};
  PlanSession plain(fuse(conv_only()).graph);
  auto f = fuse(graph(q, false, 8, 3, 9));
  ASSERT_EQ(f.graph->num_nodes(), 1u);
  PlanSession fused(std::move(f.graph));
  const Tensor y = plain.run(feeds)[0], r = fused.run(feeds)[0];
  const float lo = -static_cast<float>(q.zp);
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_EQ(r.data<float>()[i], ops::quantize_dequantize(y.data<float>()[i], q.scale, lo))
        << "at " << i;
  }
}

TEST(ConvQuantizeFusion, DeclinesPairsItCannotState) {
  expect_declined(fuse(graph(Q{.dq_scale = 0.1f})), "ConvQuantizeFusionPass",
                  "the DequantizeLinear's scale is not the QuantizeLinear's",
                  graph(Q{.dq_scale = 0.1f}));
}

TEST(ConvQuantizeFusion, IsSwitchable) {
  const FusionSwitches off = switched_off("ConvQuantizeFusionPass");
  auto f = fuse(graph(Q{}), &off);
  EXPECT_EQ(count_op(*f.graph, "QuantizeLinear"), 1u);
  EXPECT_EQ(count_op(*f.graph, "DequantizeLinear"), 1u);
}

}  // namespace conv_quantize_test
}  // namespace nnfuse
