// GlobalResponseNormFusionPass: the GRN export (ReduceL2, ReduceMean, Add, Div, Mul, Mul, Add,
// Add), channels last and first, becomes one GlobalResponseNorm; the norm written out
// (Sqrt(ReduceSum(x^2))) too; declined with a reason for a norm over other axes and for a gamma
// that is not one value per channel; fused == unfused numerically; the switch file turns the
// pass off.
#include <gtest/gtest.h>

#include "config/switches.h"
#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace response_norm_test {

using namespace fusion_test;

struct Form {
  bool last = true;          // [1, H, W, C] (else [1, C, H, W])
  bool written_out = false;  // Sqrt(ReduceSum(Pow(x, 2))) for ReduceL2
  Dims norm_axes = {};       // default: the spatial axes
  Dims gamma_shape = {};     // default: [1, 1, 1, C] or [1, C, 1, 1]
};

// x [1, 5, 6, 8] (or [1, 8, 5, 6]) through the GRN, as torch.onnx exports it at opset 14.
std::unique_ptr<Graph> grn_graph(const Form& f) {
  B b;
  const int64_t c = 8;
  const Dims shape = f.last ? Dims{1, 5, 6, c} : Dims{1, c, 5, 6};
  const Dims axes = !f.norm_axes.empty() ? f.norm_axes : f.last ? Dims{1, 2} : Dims{2, 3};
  const int64_t channel = f.last ? 3 : 1;
  Dims pooled = shape;
  for (int64_t a : axes) pooled[a] = 1;
  Value* x = b.in("x", shape);
  Value* g = nullptr;
  if (f.written_out) {
    Value* sq = b.n("Pow", {x, b.c(Tensor::scalar(2.0f))}, shape, {}, "sq");
    Value* s = b.n("ReduceSum", {sq, b.c(Tensor::from_vector<int64_t>({2}, axes))}, pooled,
                   {{"keepdims", attr_int(1)}}, "sum");
    g = b.n("Sqrt", {s}, pooled, {}, "norm");
  } else {
    g = b.n("ReduceL2", {x}, pooled, {{"axes", ints(axes)}, {"keepdims", attr_int(1)}}, "norm");
  }
  Dims one = pooled;
  one[channel] = 1;
  Value* mean =
      b.n("ReduceMean", {g}, one, {{"axes", ints({channel})}, {"keepdims", attr_int(1)}}, "mean");
  Value* denom = b.n("Add", {mean, b.c(Tensor::scalar(1e-6f))}, one, {}, "eps");
  Value* nx = b.n("Div", {g, denom}, pooled, {}, "nx");
  Value* xn = b.n("Mul", {x, nx}, shape, {}, "xn");
  Dims gs = f.gamma_shape;
  if (gs.empty()) gs = f.last ? Dims{1, 1, 1, c} : Dims{1, c, 1, 1};
  Value* scaled = b.n("Mul", {b.c(random_tensor(gs, 1)), xn}, shape, {}, "gamma");
  Value* shifted = b.n("Add", {scaled, b.c(random_tensor(gs, 2))}, shape, {}, "beta");
  b.out(b.n("Add", {shifted, x}, shape, {}, "residual"));
  return std::move(b.g);
}

TEST(ResponseNormFusion, BothLayoutsAndTheWrittenOutNormAreOneNode) {
  for (const Form& form : {Form{}, Form{.last = false}, Form{.written_out = true}}) {
    SCOPED_TRACE(std::string(form.last ? "channels last" : "channels first") +
                 (form.written_out ? ", norm written out" : ""));
    auto f = fuse_without_auto_fusion(grn_graph(form));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node& n = *f.graph->nodes()[0];
    EXPECT_TRUE(n.is(Op::kGlobalResponseNorm));
    EXPECT_EQ(n.attr_int("channels_last", -1), form.last ? 1 : 0);
    EXPECT_FLOAT_EQ(n.attr_float("epsilon", 0), 1e-6f);
    EXPECT_EQ(record(f.report, "GlobalResponseNormFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), grn_graph(form));
  }
}

TEST(ResponseNormFusion, DeclinesOtherAxesAndOtherParameters) {
  const Form axes{.norm_axes = {1}}, gamma{.gamma_shape = {1, 1, 6, 8}};
  expect_declined(fuse_without_auto_fusion(grn_graph(axes)), "GlobalResponseNormFusionPass",
                  "the norm is not over every axis", grn_graph(axes));
  expect_declined(fuse_without_auto_fusion(grn_graph(gamma)), "GlobalResponseNormFusionPass",
                  "gamma or beta is not one value per channel", grn_graph(gamma));
}

TEST(ResponseNormFusion, SwitchedOffInTheSwitchFile) {
  FusionSwitches sw = switched_off("GlobalResponseNormFusionPass");
  auto f = fuse(grn_graph({}), &sw);
  EXPECT_EQ(count_op(*f.graph, "GlobalResponseNorm"), 0u);
}

}  // namespace response_norm_test
}  // namespace nnfuse
