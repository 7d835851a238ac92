#include "runtime/reference_fallback.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "runtime/control_flow_test_util.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace nnfuse {
namespace reference_fallback_test {

// [1, 3, h, w]: rank and channels known, spatial dims symbolic.
Shape nchw_with_symbolic_hw() {
  Shape s = Shape::of({1, 3, 1, 1});
  s.dims[2] = Dim{-1, "h"};
  s.dims[3] = Dim{-1, "w"};
  return s;
}

// x -> Conv (3x3 weight, pads 1) -> y, x of shape `x_shape`.
std::unique_ptr<Graph> conv_graph(const Shape& x_shape, const Shape& y_shape) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, x_shape);
  g->add_input(x);
  Value* w = g->add_value("w");
  w->set_constant(Tensor(DType::kFloat32, {4, 3, 3, 3}));
  Value* y = g->add_value("y", DType::kFloat32, y_shape);
  Node* conv = g->add_node("Conv", "conv3", {x, w}, {y});
  Attribute pads;
  pads.kind = Attribute::Kind::kInts;
  pads.ints = {1, 1, 1, 1};
  conv->set_attr("pads", pads);
  g->add_output(y);
  return g;
}

PlanOptions quiet() {
  PlanOptions o;
  o.warn_fallbacks = false;
  return o;
}

TEST(ReferenceFallback, ConvWithoutStaticShapeIsRecordedWithTheReason) {
  auto g = conv_graph(nchw_with_symbolic_hw(), Shape::unknown());
  ExecutionPlan plan(*g, quiet());
  ASSERT_EQ(plan.reference_fallbacks().size(), 1u);
  const ReferenceFallback& f = plan.reference_fallbacks()[0];
  EXPECT_EQ(f.node, "conv3");
  EXPECT_EQ(f.op_type, "Conv");
  EXPECT_TRUE(f.compute_op);
  EXPECT_EQ(f.shapes, "float32[1, 3, h, w] -> float32?");
  // Every fast kernel of Conv's table, in order; those declining for the same reason are named
  // together in the message.
  const std::vector<std::string> kernels = {"cpu.winograd", "cpu.depthwise", "onednn.winograd",
                                            "onednn.conv", "onednn.conv_batch"};
  ASSERT_EQ(f.declined.size(), kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(f.declined[i].first, kernels[i]);
    EXPECT_EQ(f.declined[i].second, i + 1 < kernels.size()
                                        ? "input 'x' has no static shape (float32[1, 3, h, w])"
                                        : "X's batch is static, its other dims are not");
  }
  EXPECT_EQ(f.message(),
            "Conv 'conv3' (float32[1, 3, h, w] -> float32?) runs on the reference kernel: "
            "cpu.winograd, cpu.depthwise, onednn.winograd, onednn.conv: input 'x' has no static "
            "shape (float32[1, 3, h, w]); "
            "onednn.conv_batch: X's batch is static, its other dims are not");
  // The step itself is marked, for bench and profile.
  size_t marked = 0;
  for (const PlanStep& s : plan.steps()) marked += s.reference_fallback;
  EXPECT_EQ(marked, 1u);
}

TEST(ReferenceFallback, StaticConvRecordsNone) {
  auto g = conv_graph(Shape::of({1, 3, 8, 8}), Shape::of({1, 4, 8, 8}));
  ExecutionPlan plan(*g, quiet());
  EXPECT_TRUE(plan.reference_fallbacks().empty());
  EXPECT_EQ(plan.kernel_histogram().count("ref"), 0u);
  EXPECT_EQ(plan.kernel_histogram().at("onednn.conv"), 1);
}

TEST(ReferenceFallback, TheOracleRecordsNone) {
  auto g = conv_graph(nchw_with_symbolic_hw(), Shape::unknown());
  PlanOptions o = quiet();
  o.reference_only = true;
  ExecutionPlan plan(*g, o);
  EXPECT_TRUE(plan.reference_fallbacks().empty());
  EXPECT_EQ(plan.kernel_histogram().at("ref"), 1);
}

TEST(ReferenceFallback, MatMulWithRuntimeWeightOfUnknownShape) {
  auto graph = [](DType t) {
    auto g = std::make_unique<Graph>();
    g->opsets[""] = 17;
    Value* a = g->add_value("a", t, Shape::of({2, 4}));
    Value* b = g->add_value("b", t, Shape::unknown());
    g->add_input(a);
    g->add_input(b);
    Value* y = g->add_value("y", t, Shape::unknown());
    g->add_node("MatMul", "mm", {a, b}, {y});
    g->add_output(y);
    return g;
  };
  // float32: the run-time kernel takes it.
  auto f32 = graph(DType::kFloat32);
  ExecutionPlan ok(*f32, quiet());
  EXPECT_TRUE(ok.reference_fallbacks().empty());
  EXPECT_EQ(ok.kernel_histogram().at("onednn.matmul_runtime"), 1);
  // float64: every fast kernel declines, each with its reason.
  auto f64 = graph(DType::kFloat64);
  ExecutionPlan plan(*f64, quiet());
  ASSERT_EQ(plan.reference_fallbacks().size(), 1u);
  const ReferenceFallback& f = plan.reference_fallbacks()[0];
  EXPECT_EQ(f.node, "mm");
  EXPECT_EQ(f.shapes, "float64[2, 4], float64? -> float64?");
  ASSERT_EQ(f.declined.size(), 3u);
  EXPECT_EQ(f.declined[0].first, "onednn.matmul");
  EXPECT_EQ(f.declined[1].first, "onednn.matmul_rows");
  EXPECT_EQ(f.declined[2].first, "onednn.matmul_runtime");
  EXPECT_EQ(f.declined[2].second, "input 'a' is not float32");
}

TEST(ReferenceFallback, ConvWithRuntimeWeightNamesTheWeight) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({1, 3, 8, 8}));
  Value* w = g->add_value("w", DType::kFloat32, Shape::of({4, 3, 3, 3}));
  g->add_input(x);
  g->add_input(w);
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({1, 4, 6, 6}));
  g->add_node("Conv", "conv", {x, w}, {y});
  g->add_output(y);
  ExecutionPlan plan(*g, quiet());
  ASSERT_EQ(plan.reference_fallbacks().size(), 1u);
  EXPECT_EQ(plan.reference_fallbacks()[0].declined[0].second,
            "the weight input 'w' is not a constant");
}

// An int16 Add falls back too, but is no compute op: --strict allows it.
std::unique_ptr<Graph> int_add_graph() {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* a = g->add_value("a", DType::kInt16, Shape::of({3}));
  g->add_input(a);
  Value* y = g->add_value("y", DType::kInt16, Shape::of({3}));
  g->add_node("Add", "add", {a, a}, {y});
  g->add_output(y);
  return g;
}

TEST(ReferenceFallback, NonComputeOpGetsAGenericReason) {
  auto g = int_add_graph();
  ExecutionPlan plan(*g, quiet());
  ASSERT_EQ(plan.reference_fallbacks().size(), 1u);
  const ReferenceFallback& f = plan.reference_fallbacks()[0];
  EXPECT_FALSE(f.compute_op);
  EXPECT_EQ(f.declined[0].first, "cpu.binary");
  EXPECT_EQ(f.declined[0].second, "does not support this configuration (input 'a' is int16)");
  PlanOptions strict = quiet();
  strict.strict = true;
  EXPECT_NO_THROW(PlanSession(int_add_graph(), strict));
}

TEST(ReferenceFallback, OpsWithOnlyAReferenceKernelRecordNone) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::unknown());
  g->add_input(x);
  Value* y = g->add_value("y", DType::kFloat32, Shape::unknown());
  g->add_node("Floor", "floor", {x}, {y});
  g->add_output(y);
  ExecutionPlan plan(*g, quiet());
  EXPECT_TRUE(plan.reference_fallbacks().empty());
}

// A compute op with no fast kernel at all (Einsum) is recorded too: runs say it is slow, and
// strict refuses it.
TEST(ReferenceFallback, ComputeOpWithoutAFastKernelIsRecorded) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({2, 3}));
  g->add_input(x);
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({3, 2}));
  Node* e = g->add_node("Einsum", "einsum", {x}, {y});
  Attribute eq;
  eq.kind = Attribute::Kind::kString;
  eq.s = "ij->ji";
  e->set_attr("equation", eq);
  g->add_output(y);
  ExecutionPlan plan(*g, quiet());
  ASSERT_EQ(plan.reference_fallbacks().size(), 1u);
  const ReferenceFallback& f = plan.reference_fallbacks()[0];
  EXPECT_TRUE(f.compute_op);
  EXPECT_EQ(f.message(),
            "Einsum 'einsum' (float32[2, 3] -> float32[3, 2]) runs on the reference kernel: "
            "fast kernels: there is none for Einsum yet");
}

// An If whose branches give a constant (`op` "Identity") or a Softmax of it: the If is a compute
// op only when a branch holds one.
std::unique_ptr<Graph> if_graph(const std::string& op) {
  return testing::constant_if_graph("Identity", op);
}

TEST(ReferenceFallback, ControlFlowIsAComputeOpOnlyWhenItsSubgraphsHoldOne) {
  EXPECT_FALSE(is_compute_node(*if_graph("Identity")->nodes()[0]));
  EXPECT_TRUE(is_compute_node(*if_graph("Softmax")->nodes()[0]));
  // Either runs its branches on planned kernels (cpu.control_flow): the Softmax on cpu.softmax.
  PlanOptions strict = quiet();
  strict.strict = true;
  for (const char* op : {"Identity", "Softmax"}) {
    auto g = if_graph(op);
    ExecutionPlan plan(*g, quiet());
    EXPECT_TRUE(plan.reference_fallbacks().empty()) << op;
    EXPECT_EQ(plan.kernel_histogram().at("cpu.control_flow"), 1) << op;
    PlanSession ok(if_graph(op), strict);
    EXPECT_EQ(ok.run({{"c", Tensor::from_vector<bool>({}, {true})}})[0].data<float>()[1], 2.0f);
  }
}

TEST(ReferenceFallback, StrictRefusesAComputeOpNamingNodeShapesAndReason) {
  PlanOptions o = quiet();
  o.strict = true;
  try {
    PlanSession s(conv_graph(nchw_with_symbolic_hw(), Shape::unknown()), o);
    FAIL() << "a Conv on the reference kernel was accepted under strict";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Conv 'conv3'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float32[1, 3, h, w]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("onednn.conv: input 'x' has no static shape"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu.winograd, cpu.depthwise, onednn.winograd, onednn.conv:"),
              std::string::npos)
        << msg;
  }
  // Without strict it runs.
  PlanSession s(conv_graph(nchw_with_symbolic_hw(), Shape::unknown()), quiet());
  auto out = s.run({{"x", Tensor(DType::kFloat32, {1, 3, 5, 6})}});
  EXPECT_EQ(out[0].shape(), (Dims{1, 4, 5, 6}));
}

TEST(ReferenceFallback, SessionWarnsOncePerNodeUnlessReferenceOnly) {
  ::testing::internal::CaptureStderr();
  { PlanSession s(conv_graph(nchw_with_symbolic_hw(), Shape::unknown())); }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "nnfuse: warning: Conv 'conv3' (float32[1, 3, h, w] -> float32?) runs on the "
            "reference kernel: cpu.winograd, cpu.depthwise, onednn.winograd, onednn.conv: input "
            "'x' has no static shape (float32[1, 3, h, w]); "
            "onednn.conv_batch: X's batch is static, its other dims are not\n");
  PlanOptions ref;
  ref.reference_only = true;
  ::testing::internal::CaptureStderr();
  { PlanSession s(conv_graph(nchw_with_symbolic_hw(), Shape::unknown()), ref); }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(ReferenceFallback, ManyFallbacksAreSummarizedAfterTheLimit) {
  std::vector<ReferenceFallback> many(4);
  for (size_t i = 0; i < many.size(); ++i) {
    many[i].node = "n" + std::to_string(i);
    many[i].op_type = i < 2 ? "Conv" : "Add";
    many[i].shapes = "float32? -> float32?";
    many[i].declined = {{"k", "why"}};
  }
  ::testing::internal::CaptureStderr();
  warn_reference_fallbacks(many, 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "nnfuse: warning: Conv 'n0' (float32? -> float32?) runs on the reference kernel: k: "
            "why\nnnfuse: warning: 3 more nodes run on the reference kernel (Add 2, Conv 1)\n");
}

}  // namespace reference_fallback_test
}  // namespace nnfuse
