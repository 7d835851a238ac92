// The rule driver: a declined rewrite leaves the graph as it was (its constants and nodes
// removed), a rewrite that throws is declined with the message, and the shared guards and
// result builders (per_feature, scalar, unused_output, feature, rewire) do what rule.h says.
#include "passes/fusions/rule.h"

#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace rule_test {

using namespace fusion_test;

// x [2, 4] -> Relu -> Add(·, p) -> y, with `p` a constant of shape `pd` (or a graph input).
std::unique_ptr<Graph> add_graph(const Dims& pd, bool constant = true) {
  B b;
  Value* x = b.in("x", {2, 4});
  Value* r = b.n("Relu", {x}, {2, 4}, {}, "relu");
  Value* p = constant ? b.cst("p", random_tensor(pd, 1)) : b.in("p", pd);
  b.out(b.n("Add", {r, p}, {2, 4}, {}, "add"));
  return std::move(b.g);
}

pattern::Pat relu_add() {
  using namespace pattern;
  return op("Add", {op("Relu", {any("x")}).named("relu"), any("p")}).named("add");
}

struct Outcome {
  std::unique_ptr<Graph> g;
  FusionReport report;
  const PassRecord* record() const { return fusion_test::record(report, "TestRule"); }
  std::string reason() const {
    const PassRecord* r = record();
    return r && !r->rejected.empty() ? r->rejected[0].reason : "";
  }
};

Outcome run_rule(std::unique_ptr<Graph> g, Rule rule) {
  Outcome r{std::move(g), {}};
  PassContext ctx{r.report};
  make_rule_pass(std::move(rule))->run(*r.g, ctx);
  return r;
}

TEST(RuleDriver, ADeclinedRewriteLeavesNothingBehind) {
  Rule rule{.name = "TestRule",
            .patterns = {{"", relu_add()}},
            .rewrite = [](const RuleMatch& m) -> std::string {
              Value* c = m.add_constant("scratch", random_tensor({4}, 2));
              m.op(ops::NodeSpec{Op::kMul, {m["x"], c}, {}}, "scratch_mul", m["x"]);
              return "declined after building";
            }};
  std::unique_ptr<Graph> g = add_graph({4});
  const size_t nodes = g->num_nodes(), values = g->values().size();
  Outcome r = run_rule(std::move(g), std::move(rule));
  EXPECT_EQ(r.g->num_nodes(), nodes);
  EXPECT_EQ(r.g->values().size(), values) << graph_to_text(*r.g);
  EXPECT_EQ(r.reason(), "declined after building");
  EXPECT_EQ(r.record()->effect_times, 0);
  verify_graph(*r.g);
}

TEST(RuleDriver, ARewriteThatThrowsIsDeclinedWithItsMessage) {
  Rule rule{.name = "TestRule",
            .patterns = {{"", relu_add()}},
            .rewrite = [](const RuleMatch&) -> std::string {
              fail(ErrorKind::kInvalidModel, "no such thing");
            }};
  Outcome r = run_rule(add_graph({4}), std::move(rule));
  EXPECT_NE(r.reason().find("no such thing"), std::string::npos) << r.reason();
  EXPECT_EQ(r.g->num_nodes(), 2u);
}

// The rule fusing Relu + Add(p) into one node when p passes guard::per_feature over x's last
// axis; the fused node reads p as m.feature() gives it.
Rule per_feature_rule(bool runtime) {
  return {.name = "TestRule",
          .patterns = {{"", relu_add()}},
          .guards = {guard::per_feature({"p"}, width::features("x"), "x", runtime)},
          .rewrite = [](const RuleMatch& m) -> std::string {
            return m.fuse(ops::NodeSpec{Op::kSum, {m["x"], m.feature("p", 4)}, {}});
          }};
}

TEST(RuleGuards, PerFeatureAcceptsOneValuePerFeature) {
  for (const Dims& d : {Dims{4}, Dims{1, 4}, Dims{1}}) {
    SCOPED_TRACE(dims_str(d));
    Outcome r = run_rule(add_graph(d), per_feature_rule(false));
    ASSERT_EQ(r.record()->effect_times, 1) << r.reason();
    const Node* fused = r.g->nodes().back();
    ASSERT_EQ(fused->op_type(), "Sum");
    const Tensor* p = pattern::constant_value(fused->input(1));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->shape(), Dims{4});  // [1, 4] and [1] become [4]
  }
}

TEST(RuleGuards, PerFeatureDeclinesOtherShapesWithTheParameterNamed) {
  for (const Dims& d : {Dims{2, 4}, Dims{4, 1}, Dims{1, 1, 4}}) {
    SCOPED_TRACE(dims_str(d));
    Outcome r = run_rule(add_graph(d), per_feature_rule(false));
    EXPECT_EQ(r.record()->effect_times, 0);
    EXPECT_NE(r.reason().find("p 'p' of shape"), std::string::npos) << r.reason();
    EXPECT_NE(r.reason().find("not one value per feature (4)"), std::string::npos) << r.reason();
  }
  Outcome in = run_rule(add_graph({4}, false), per_feature_rule(false));
  EXPECT_EQ(in.reason(), "p 'p' is not a constant");
  Outcome runtime = run_rule(add_graph({1, 4}, false), per_feature_rule(true));
  EXPECT_EQ(runtime.record()->effect_times, 1) << runtime.reason();
}

TEST(RuleGuards, ScalarAndUnusedOutput) {
  Rule scalar{.name = "TestRule",
              .patterns = {{"", relu_add()}},
              .guards = {guard::scalar("p", "epsilon")},
              .rewrite = [](const RuleMatch& m) -> std::string {
                EXPECT_FLOAT_EQ(m.scalar("p"), m.constant("p")->data<float>()[0]);
                return m.fuse(ops::NodeSpec{Op::kSum, {m["x"], m["p"]}, {}});
              }};
  EXPECT_EQ(run_rule(add_graph({1}), scalar).record()->effect_times, 1);
  EXPECT_EQ(run_rule(add_graph({4}), scalar).reason(), "epsilon 'p' is not one float (float32[4])");
  EXPECT_EQ(run_rule(add_graph({4}, false), scalar).reason(), "epsilon 'p' is not a constant");

  // Relu's output 0 is read by the Add only; Add's is a graph output.
  Rule unused{.name = "TestRule",
              .patterns = {{"", relu_add()}},
              .guards = {guard::unused_output("add", 0)},
              .rewrite = [](const RuleMatch&) -> std::string { return ""; }};
  EXPECT_NE(run_rule(add_graph({4}), unused).reason().find("Add 'add''s output"),
            std::string::npos);
}

// rewire: the Relu is replaced by a new node that the Add reads in its place.
TEST(RuleResultBuilder, RewireFeedsTheConsumerAndReportsTheNewNode) {
  Rule rule{.name = "TestRule",
            .patterns = {{"", relu_add()}},
            .rewrite = [](const RuleMatch& m) -> std::string {
              Value* y = m.op(ops::NodeSpec{Op::kAbs, {m["x"]}, {}}, "abs", DType::kFloat32,
                              m["x"]->shape(), {m.node("relu")});
              return m.rewire(m.root(), ops::NodeSpec{Op::kAdd, {y}, {{"tag", attr_int(1)}}},
                              y->producer(), {m.node("relu")});
            }};
  Outcome r = run_rule(add_graph({4}), std::move(rule));
  ASSERT_EQ(r.record()->effect_times, 1) << r.reason();
  verify_graph(*r.g);
  EXPECT_EQ(count_op(*r.g, "Relu"), 0u);
  const Node* add = r.g->nodes().back();
  ASSERT_EQ(add->op_type(), "Add");
  EXPECT_EQ(add->input(0)->producer()->op_type(), "Abs");
  EXPECT_EQ(add->attr_int("tag", 0), 1);
  ASSERT_EQ(r.report.fused.size(), 1u);
  EXPECT_EQ(r.report.fused[0].fused_from, std::vector<std::string>{"relu"});
}

}  // namespace rule_test
}  // namespace nnfuse
