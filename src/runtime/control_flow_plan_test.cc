// If, Loop and Scan in a plan: their subgraphs run on kernels chosen once, when the plan is
// built (kernels/cpu/cpu_control_flow.cc), agree with the reference kernels, plan nothing per
// iteration, and name the subgraph nodes left on a reference kernel.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/builder.h"
#include "kernels/kernel.h"
#include "runtime/control_flow_test_util.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "testing/numeric.h"

namespace nnfuse {
namespace control_flow_plan_test {

Tensor ramp(const Dims& d, float scale) {
  Tensor t(DType::kFloat32, d);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = scale * static_cast<float>((i * 7) % 13 - 6);
  }
  return t;
}

// y = Loop(n) { y = tanh(y W) + y; kv = Concat(kv, y[:1]) } over x [2, 8], with W [8, 8] an
// outer initializer the body captures; outputs y, the grown kv and the stacked y of every trip.
std::unique_ptr<Graph> loop_graph(const Shape& body_y) {
  auto body = std::make_shared<Graph>();
  body->opsets[""] = 17;
  Value* iter = body->add_value("iter", DType::kInt64, Shape::of({}));
  Value* cond = body->add_value("cond", DType::kBool, Shape::of({}));
  Value* y = body->add_value("y_in", DType::kFloat32, body_y);
  Value* kv = body->add_value("kv_in", DType::kFloat32, Shape::unknown());
  Value* w = body->add_value("w_cap", DType::kFloat32, Shape::of({8, 8}));
  for (Value* v : {iter, cond, y, kv, w}) body->add_input(v);
  body->num_captures = 1;
  Value* mm = body->add_value("mm", DType::kFloat32, body_y);
  Value* t = body->add_value("t", DType::kFloat32, body_y);
  Value* y2 = body->add_value("y_out", DType::kFloat32, body_y);
  Value* starts = body->add_value("starts");
  starts->set_constant(Tensor::from_vector<int64_t>({1}, {0}));
  Value* ends = body->add_value("ends");
  ends->set_constant(Tensor::from_vector<int64_t>({1}, {1}));
  Value* row = body->add_value("row", DType::kFloat32, Shape::unknown());
  Value* kv2 = body->add_value("kv_out", DType::kFloat32, Shape::unknown());
  Value* cond2 = body->add_value("cond_out", DType::kBool, Shape::of({}));
  Value* scan = body->add_value("scan", DType::kFloat32, body_y);
  body->add_node("MatMul", "mm", {y, w}, {mm});
  body->add_node("Tanh", "tanh", {mm}, {t});
  body->add_node("Add", "add", {t, y}, {y2});
  body->add_node("Slice", "slice", {y2, starts, ends}, {row});
  Node* cat = body->add_node("Concat", "cat", {kv, row}, {kv2});
  cat->set_attr("axis", attr_int(0));
  body->add_node("Identity", "cond_id", {cond}, {cond2});
  body->add_node("Identity", "scan_id", {y2}, {scan});
  for (Value* v : {cond2, y2, kv2, scan}) body->add_output(v);

  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* n = g->add_value("n", DType::kInt64, Shape::of({}));
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({2, 8}));
  Value* kv0 = g->add_value("kv0", DType::kFloat32, Shape::of({1, 8}));
  for (Value* v : {n, x, kv0}) g->add_input(v);
  Value* wv = g->add_value("w");
  wv->set_constant(ramp({8, 8}, 0.05f));
  Value* yo = g->add_value("y", DType::kFloat32, Shape::of({2, 8}));
  Value* kvo = g->add_value("kv", DType::kFloat32, Shape::unknown());
  Value* ys = g->add_value("ys", DType::kFloat32, Shape::unknown());
  Node* loop = g->add_node("Loop", "loop", {n, nullptr, x, kv0, wv}, {yo, kvo, ys});
  loop->set_attr("body", testing::graph_attr(body));
  for (Value* v : {yo, kvo, ys}) g->add_output(v);
  return g;
}

PlanOptions options(bool reference_only) {
  PlanOptions o;
  o.warn_fallbacks = false;
  o.reference_only = reference_only;
  o.threads = 2;
  return o;
}

std::map<std::string, Tensor> feeds(int64_t trips) {
  return {{"n", Tensor::from_vector<int64_t>({}, {trips})},
          {"x", ramp({2, 8}, 0.1f)},
          {"kv0", ramp({1, 8}, 0.2f)}};
}

TEST(ControlFlowPlan, LoopBodyRunsOnKernelsPlannedOnceAndMatchesTheReference) {
  for (const Shape& body_y : {Shape::of({2, 8}), Shape::unknown()}) {
    SCOPED_TRACE("body y " + body_y.str());
    PlanSession ref(loop_graph(body_y), options(true));
    PlanOptions strict = options(false);
    strict.strict = true;  // the body's MatMul, Tanh, Add, Slice and Concat are all fast
    PlanSession fast(loop_graph(body_y), strict);
    EXPECT_EQ(fast.plan().kernel_histogram().at("cpu.control_flow"), 1);
    EXPECT_TRUE(fast.plan().reference_fallbacks().empty());
    const size_t planned = subgraph_plans_made();
    for (int64_t trips : {0, 1, 32}) {
      SCOPED_TRACE("trips " + std::to_string(trips));
      const std::vector<Tensor> want = ref.run(feeds(trips));
      const std::vector<Tensor> got = fast.run(feeds(trips));
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].shape(), want[k].shape()) << "output " << k;
        testing::expect_close(got[k], want[k], 1e-5f, 1e-5f);
      }
      EXPECT_EQ(got[1].dim(0), 1 + trips);  // kv grew by a row a trip
    }
    EXPECT_EQ(subgraph_plans_made(), planned) << "a body was planned while running";
  }
}

// If(c) { Einsum "i->i" of a constant } else { Softmax of it }: the Einsum has no fast kernel
// and is named under the If; the Softmax branch runs on cpu.softmax.
std::unique_ptr<Graph> if_graph() { return testing::constant_if_graph("Einsum", "Softmax"); }

TEST(ControlFlowPlan, SubgraphNodesOnTheReferenceKernelAreNamedUnderTheirNode) {
  ExecutionPlan plan(*if_graph(), options(false));
  EXPECT_EQ(plan.kernel_histogram().at("cpu.control_flow"), 1);
  ASSERT_EQ(plan.reference_fallbacks().size(), 1u);
  const ReferenceFallback& f = plan.reference_fallbacks()[0];
  EXPECT_EQ(f.node, "if/then_Einsum");
  EXPECT_TRUE(f.compute_op);
  EXPECT_EQ(f.declined[0].second, "there is none for Einsum yet");
  PlanOptions strict = options(false);
  strict.strict = true;
  EXPECT_THROW(PlanSession(if_graph(), strict), Error);
  PlanSession s(if_graph(), options(false));
  const Tensor soft = s.run({{"c", Tensor::from_vector<bool>({}, {false})}})[0];
  EXPECT_NEAR(soft.data<float>()[1], 1.0f / (1.0f + std::exp(-1.0f)), 1e-6f);
  EXPECT_EQ(s.run({{"c", Tensor::from_vector<bool>({}, {true})}})[0].data<float>()[1], 2.0f);
}

}  // namespace control_flow_plan_test
}  // namespace nnfuse
