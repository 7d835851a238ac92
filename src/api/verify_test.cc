// The node-by-node check behind `nnfuse verify --nodes` and the differential fuzzer's quantized
// graphs: each node alone on another run's values, within the tolerance or one quantization step.
#include "api/verify.h"

#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ops/activation.h"

namespace nnfuse {
namespace {

// x -> QuantizeLinear(scale 0.1, zero 0) -> q (int8), marked as fused when `fused`.
std::unique_ptr<Graph> quantize_graph(bool fused) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({4}));
  g->add_input(x);
  Value* s = g->add_value("s");
  s->set_constant(Tensor::scalar<float>(0.1f));
  Value* z = g->add_value("z");
  z->set_constant(Tensor::scalar<int8_t>(0));
  Value* q = g->add_value("q", DType::kInt8, Shape::of({4}));
  Node* n = g->add_node("QuantizeLinear", "quant", {x, s, z}, {q});
  if (fused) n->set_provenance({"quant"}, "SomePass");
  g->add_output(q);
  return g;
}

std::map<std::string, Tensor> values_with_q(std::vector<int8_t> q) {
  return {{"x", Tensor::from_vector<float>({4}, {0.25f, -0.31f, 1.0f, 0.04f})},
          {"q", Tensor::from_vector<int8_t>({4}, std::move(q))}};
}

TEST(OutputStep, IsOneGridUnitForQuantizedOutputsAndTheScaleForAnEpilogue) {
  auto g = quantize_graph(false);
  EXPECT_EQ(output_step(*g->nodes()[0], 0), 1.0);
  EXPECT_EQ(output_step(*g->nodes()[0], 1), 0.0);  // no such output

  Graph c;
  Value* y = c.add_value("y", DType::kFloat32, Shape::of({1}));
  Node* conv = c.add_node("Conv", "conv", {}, {y});
  EXPECT_EQ(output_step(*conv, 0), 0.0);
  conv->set_attr("activation", attr_string(ops::activation_name(ops::ActivationKind::kQuantize)));
  conv->set_attr("activation_alpha", attr_float(0.05f));
  EXPECT_FLOAT_EQ(output_step(*conv, 0), 0.05f);
  conv->set_attr("activation", attr_string(ops::activation_name(ops::ActivationKind::kRelu)));
  EXPECT_EQ(output_step(*conv, 0), 0.0);
}

TEST(QuantizesAtRunTime, OnlyWhenAComputedValueIsQuantized) {
  EXPECT_TRUE(quantizes_at_run_time(*quantize_graph(false)));
  Graph g;
  Value* w = g.add_value("w");
  w->set_constant(Tensor::from_vector<float>({2}, {0.5f, 1.0f}));
  Value* s = g.add_value("s");
  s->set_constant(Tensor::scalar<float>(0.1f));
  g.add_node("QuantizeLinear", "weights", {w, s}, {g.add_value("q")});
  EXPECT_FALSE(quantizes_at_run_time(g));
}

TEST(CheckNodes, OneStepAgreesTwoStepsDepart) {
  PlanOptions opts;
  NodeCheckOptions check;
  check.all_nodes = true;
  // Run alone: 0.25 / 0.1 = 2.5 rounds to 2, -3.1 to -3, 10, 0.4 to 0.
  NodeCheck exact = check_nodes(*quantize_graph(false), values_with_q({2, -3, 10, 0}), opts, check);
  EXPECT_TRUE(exact.pass);
  EXPECT_EQ(exact.checked, 1u);
  EXPECT_EQ(exact.within_step, 0u);

  // The other run rounded 2.5 up: one step, within the bound, and counted as such.
  NodeCheck one = check_nodes(*quantize_graph(false), values_with_q({3, -3, 10, 0}), opts, check);
  EXPECT_TRUE(one.pass);
  EXPECT_EQ(one.within_step, 1u);

  auto g = quantize_graph(false);  // outlives `two`, which points at its node
  NodeCheck two = check_nodes(*g, values_with_q({4, -3, 10, 0}), opts, check);
  EXPECT_FALSE(two.pass);
  ASSERT_NE(two.worst, nullptr);
  EXPECT_EQ(two.worst->name(), "quant");
}

// A conv whose epilogue rounds to a grid of scale 0.0131: its float32 outputs k x 0.0131 differ
// from the other run's by one step plus the products' rounding (found by the differential
// fuzzer: 124 x 0.0131 against 123 x 0.0131 in float32 is 1.0000021 steps apart).
TEST(CheckNodes, OneStepOfAFloatGridIsOneStepWhateverTheProductsRounding) {
  const float s = 0.0131f;
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({1, 1, 1, 2}));
  g->add_input(x);
  Value* w = g->add_value("w");
  w->set_constant(Tensor::from_vector<float>({1, 1, 1, 1}, {1.0f}));
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({1, 1, 1, 2}));
  // A 1x1 conv of weight 1 with the QuantizeDequantize epilogue (int8, zero point 0).
  Node* n = g->add_node("FusedConv", "conv", {x, w}, {y}, "ai.nnfuse");
  n->set_provenance({"conv", "quantize", "dequantize"}, "ConvQuantizeFusionPass");
  n->set_attr("kernel_shape", attr_ints({1, 1}));
  n->set_attr("activation", attr_string(ops::activation_name(ops::ActivationKind::kQuantize)));
  n->set_attr("activation_alpha", attr_float(s));
  n->set_attr("activation_beta", attr_float(-128.0f));
  g->add_output(y);
  ASSERT_FLOAT_EQ(output_step(*n, 0), s);
  const float k123 = 123 * s, k124 = 124 * s, k125 = 125 * s;
  ASSERT_GT(static_cast<double>(k124) - static_cast<double>(k123), 1.000002 * s);
  // Run alone, x = 123.4 steps rounds to 123 x s; the other run had 124 x s (one step), then
  // 125 x s (two).
  std::map<std::string, Tensor> values = {
      {"x", Tensor::from_vector<float>({1, 1, 1, 2}, {123.4f * s, 0.0f})},
      {"y", Tensor::from_vector<float>({1, 1, 1, 2}, {k124, 0.0f})}};
  PlanOptions ref;
  ref.reference_only = true;
  NodeCheck one = check_nodes(*g, values, ref, NodeCheckOptions{});
  EXPECT_TRUE(one.pass);
  EXPECT_EQ(one.within_step, 1u);
  values["y"] = Tensor::from_vector<float>({1, 1, 1, 2}, {k125, 0.0f});
  EXPECT_FALSE(check_nodes(*g, values, ref, NodeCheckOptions{}).pass);
  values["y"] = Tensor::from_vector<float>({1, 1, 1, 2}, {k123, 0.0f});
  NodeCheck same = check_nodes(*g, values, ref, NodeCheckOptions{});
  EXPECT_TRUE(same.pass);
  EXPECT_EQ(same.within_step, 0u);
}

// A fused node's new intermediate (no value of the other run has its name) feeds the next
// node, whose output is compared: the chain is checked from its start.
TEST(CheckNodes, ANewIntermediateFeedsTheNodesThatReadIt) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({3}));
  g->add_input(x);
  Value* mid = g->add_value("packed", DType::kFloat32, Shape::of({3}));
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({3}));
  g->add_node("Relu", "first", {x}, {mid})->set_provenance({"a"}, "SomePass");
  g->add_node("Neg", "second", {mid}, {y})->set_provenance({"b"}, "SomePass");
  g->add_output(y);
  std::map<std::string, Tensor> values = {
      {"x", Tensor::from_vector<float>({3}, {-1.0f, 2.0f, 3.0f})},
      {"y", Tensor::from_vector<float>({3}, {0.0f, -2.0f, -3.0f})}};
  NodeCheck ok = check_nodes(*g, values, PlanOptions{}, NodeCheckOptions{});
  EXPECT_TRUE(ok.pass);
  EXPECT_EQ(ok.checked, 2u);
  EXPECT_EQ(ok.skipped, 0u);
  values["y"] = Tensor::from_vector<float>({3}, {1.0f, -2.0f, -3.0f});
  NodeCheck bad = check_nodes(*g, values, PlanOptions{}, NodeCheckOptions{});
  EXPECT_FALSE(bad.pass);
  ASSERT_NE(bad.worst, nullptr);
  EXPECT_EQ(bad.worst->name(), "second");
}

TEST(CheckNodes, OnlyFusedNodesUnlessAllAndMissingValuesAreSkipped) {
  PlanOptions opts;
  NodeCheckOptions check;
  const auto wrong = values_with_q({4, -3, 10, 0});
  EXPECT_EQ(check_nodes(*quantize_graph(false), wrong, opts, check).checked, 0u);
  NodeCheck fused = check_nodes(*quantize_graph(true), wrong, opts, check);
  EXPECT_EQ(fused.checked, 1u);
  EXPECT_FALSE(fused.pass);

  check.all_nodes = true;
  NodeCheck missing = check_nodes(*quantize_graph(false), {}, opts, check);
  EXPECT_EQ(missing.checked, 0u);
  EXPECT_EQ(missing.skipped, 1u);
  EXPECT_TRUE(missing.pass);
}

}  // namespace
}  // namespace nnfuse
