// Automatic fusion and user rules on hand-built graphs: what becomes a FusedRegion, the
// precision guard and limits on real graphs, every lowering against the reference kernels
// (1e-5), and the fallback when no code can be built.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>

#include "codegen/test_cache_dir.h"
#include "ops/region.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace auto_fusion_test {

using namespace fusion_test;
using Build = std::function<std::unique_ptr<Graph>()>;

constexpr const char* kAuto = "AutoFusionPass";

class AutoFusion : public codegen::CacheDirTest {};

Tensor scalar(float v) { return Tensor::scalar<float>(v); }

// x * 2 + 1 -> tanh -> - x
std::unique_ptr<Graph> chain_graph() {
  B b;
  Value* x = b.in("x", {4, 33});
  Value* a = b.n("Mul", {x, b.c(scalar(2))}, {4, 33}, {}, "mul");
  Value* c = b.n("Add", {a, b.c(scalar(1))}, {4, 33}, {}, "add");
  Value* t = b.n("Tanh", {c}, {4, 33}, {}, "tanh");
  b.out(b.n("Sub", {t, x}, {4, 33}, {}, "sub"));
  return std::move(b.g);
}

// softmax over the last axis, written out
std::unique_ptr<Graph> softmax_graph() {
  B b;
  Value* x = b.in("x", {2, 3, 70});
  Value* m = b.n("ReduceMax", {x}, {2, 3, 1}, {{"axes", ints({-1})}}, "max");
  Value* e = b.n("Exp", {b.n("Sub", {x, m}, {2, 3, 70}, {}, "sub")}, {2, 3, 70}, {}, "exp");
  Value* s =
      b.n("ReduceSum", {e, b.c(Tensor::from_vector<int64_t>({1}, {-1}))}, {2, 3, 1}, {}, "sum");
  b.out(b.n("Div", {e, s}, {2, 3, 70}, {}, "div"));
  return std::move(b.g);
}

void expect_fused(const Build& build, size_t regions, size_t nodes_left) {
  Fused f = fuse(build());
  EXPECT_EQ(count_op(*f.graph, "FusedRegion"), regions) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->num_nodes(), nodes_left) << graph_to_text(*f.graph);
  EXPECT_TRUE(f.report.fallbacks.empty());
  expect_same_numbers(std::move(f.graph), build(), 1e-5);
}

TEST_F(AutoFusion, ChainBecomesOneGeneratedKernel) {
  Fused f = fuse(chain_graph());
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node* n = f.graph->nodes()[0];
  EXPECT_EQ(n->op_type(), "FusedRegion");
  EXPECT_EQ(n->domain(), kFusedDomain);
  EXPECT_EQ(n->fused_by(), kAuto);
  EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"mul", "add", "tanh", "sub"}));
  const PassRecord* rec = record(f.report, kAuto);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->match_times, 1);
  EXPECT_EQ(rec->effect_times, 1);
  ASSERT_EQ(f.report.fused.size(), 1u);
  EXPECT_EQ(f.report.fused[0].kernels_saved, 3);
  EXPECT_EQ(f.report.fused[0].bytes_saved, 3 * 2 * 4 * 33 * 4);
  expect_same_numbers(std::move(f.graph), chain_graph(), 1e-5);
}

TEST_F(AutoFusion, SoftmaxSplitsWhereAValueIsNeededAcrossAReduction) {
  Fused f = fuse(softmax_graph());
  ASSERT_EQ(count_op(*f.graph, "FusedRegion"), 2u) << graph_to_text(*f.graph);
  std::vector<std::vector<std::string>> from;
  for (const Node* n : f.graph->nodes()) from.push_back(n->fused_from());
  EXPECT_EQ(from, (std::vector<std::vector<std::string>>{{"max", "sub", "exp"}, {"sum", "div"}}));
  expect_same_numbers(std::move(f.graph), softmax_graph(), 1e-5);
}

TEST_F(AutoFusion, NormDenominatorIsARowRegion) {
  // sqrt(mean(x * x) + eps): one value per row.
  Build build = [] {
    B b;
    Value* x = b.in("x", {3, 5, 40});
    Value* sq = b.n("Mul", {x, x}, {3, 5, 40});
    Value* m = b.n("ReduceMean", {sq}, {3, 5, 1}, {{"axes", ints({-1})}});
    b.out(b.n("Sqrt", {b.n("Add", {m, b.c(scalar(1e-5f))}, {3, 5, 1})}, {3, 5, 1}));
    return std::move(b.g);
  };
  expect_fused(build, 1, 1);
}

TEST_F(AutoFusion, StopsAtOpsWithoutALowering) {
  // Relu | Transpose | Exp -> Neg: the Transpose has no lowering, a lone Relu is no region.
  Build build = [] {
    B b;
    Value* x = b.in("x", {6, 10});
    Value* r = b.n("Relu", {x}, {6, 10});
    Value* t = b.n("Transpose", {r}, {10, 6}, {{"perm", ints({1, 0})}});
    b.out(b.n("Neg", {b.n("Exp", {t}, {10, 6})}, {10, 6}));
    return std::move(b.g);
  };
  expect_fused(build, 1, 3);
}

TEST_F(AutoFusion, LongChainsAreCutAtTheOpLimit) {
  Build build = [] {
    B b;
    Value* v = b.in("x", {8, 16});
    for (int i = 0; i < 40; ++i) {
      v = b.n(i % 2 ? "Add" : "Mul", {v, b.c(scalar(i % 2 ? 0.01f : 0.99f))}, {8, 16});
    }
    b.out(v);
    return std::move(b.g);
  };
  Fused f = fuse(build());
  ASSERT_EQ(count_op(*f.graph, "FusedRegion"), 2u);
  std::vector<size_t> sizes;
  for (const Node* n : f.graph->nodes()) sizes.push_back(n->fused_from().size());
  EXPECT_EQ(sizes, (std::vector<size_t>{8, 32}));
  expect_same_numbers(std::move(f.graph), build(), 1e-5);
}

TEST_F(AutoFusion, RegionsThatWouldRecomputeABroadcastValueAreDeclined) {
  Build build = [] {
    B b;
    Value* e = b.n("Exp", {b.in("w", {1, 256})}, {1, 256}, {}, "exp");
    b.out(b.n("Add", {b.in("x", {1024, 256}), e}, {1024, 256}, {}, "add"));
    return std::move(b.g);
  };
  Fused f = fuse(build());
  EXPECT_EQ(count_op(*f.graph, "FusedRegion"), 0u);
  const PassRecord* rec = record(f.report, kAuto);
  ASSERT_EQ(rec->rejected.size(), 1u);
  EXPECT_EQ(rec->rejected[0].reason.rfind("does not pay: broadcasting would recompute", 0), 0u)
      << rec->rejected[0].reason;
}

// Each lowered op, in a region with an Add after it, against its reference kernel.
TEST_F(AutoFusion, EveryLoweringMatchesTheReference) {
  struct Op {
    std::string type;
    std::map<std::string, Attribute> attrs;
    int extra_inputs = 0;  // further [5, 12] inputs
    std::vector<float> constants = {};
  };
  const std::vector<Op> ops = {
      {"Relu", {}},
      {"Neg", {}},
      {"Abs", {}},
      {"Exp", {}},
      {"Log", {}},
      {"Sqrt", {}},
      {"Tanh", {}},
      {"Sigmoid", {}},
      {"Erf", {}},
      {"Reciprocal", {}},
      {"Softplus", {}},
      {"LeakyRelu", {{"alpha", attr_float(0.3f)}}},
      {"HardSigmoid", {}},
      {"HardSigmoid", {{"alpha", attr_float(0.4f)}, {"beta", attr_float(0.1f)}}},
      {"HardSwish", {}},
      {"Identity", {}},
      {"Clip", {}, 0, {-0.5f, 0.25f}},
      {"Add", {}, 1},
      {"Sub", {}, 1},
      {"Mul", {}, 1},
      {"Div", {}, 1},
      {"Max", {}, 2},
      {"Min", {}, 1},
      {"Sum", {}, 2},
      {"Mean", {}, 2},
      {"Pow", {}, 0, {2.0f}},
      {"Pow", {}, 0, {3.0f}},
      {"Pow", {}, 1},
  };
  for (const Op& op : ops) {
    SCOPED_TRACE(op.type);
    Build build = [&] {
      B b;
      // Positive inputs, so Log, Sqrt, Reciprocal and Pow stay finite.
      Value* x = b.c(random_tensor({5, 12}, 3, 0.1f, 2.0f));
      std::vector<Value*> ins{b.in("x", {5, 12})};
      Value* shift = b.c(random_tensor({5, 12}, 4, 0.1f, 2.0f));
      ins[0] = b.n("Add", {ins[0], shift}, {5, 12});  // > -0.9: keep Log and Sqrt in range
      ins[0] = b.n("Abs", {ins[0]}, {5, 12});
      for (int i = 0; i < op.extra_inputs; ++i)
        ins.push_back(b.c(random_tensor({12}, 7 + i, 0.5f, 1.5f)));
      for (float c : op.constants) ins.push_back(b.c(scalar(c)));
      Value* y = b.n(op.type, ins, {5, 12}, op.attrs, "op");
      b.out(b.n("Add", {y, x}, {5, 12}));
      return std::move(b.g);
    };
    Fused f = fuse(build());
    EXPECT_EQ(count_op(*f.graph, "FusedRegion"), 1u) << graph_to_text(*f.graph);
    EXPECT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    expect_same_numbers(std::move(f.graph), build(), 1e-5);
  }
}

TEST_F(AutoFusion, ACompilerThatFailsLeavesTheNodesUnfusedAndSaysFallback) {
  setenv("NNFUSE_CXX", "false", 1);
  ::testing::internal::CaptureStderr();
  Fused f = fuse(chain_graph());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_op(*f.graph, "FusedRegion"), 0u);
  EXPECT_EQ(f.graph->num_nodes(), 4u);
  ASSERT_EQ(f.report.fallbacks.size(), 1u);
  EXPECT_EQ(f.report.fallbacks[0].region, "sub");
  EXPECT_EQ(f.report.fallbacks[0].pass, kAuto);
  EXPECT_EQ(f.report.fallbacks[0].nodes, (std::vector<std::string>{"mul", "add", "tanh", "sub"}));
  EXPECT_FALSE(f.report.fallbacks[0].reason.empty());
  EXPECT_NE(err.find("fallback"), std::string::npos) << err;
  EXPECT_NE(err.find("'sub'"), std::string::npos) << err;
  const PassRecord* rec = record(f.report, kAuto);
  ASSERT_EQ(rec->rejected.size(), 1u);
  EXPECT_EQ(rec->rejected[0].reason.rfind("fallback", 0), 0u) << rec->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), chain_graph(), 1e-5);
}

TEST_F(AutoFusion, TheCudaTargetFusesWithoutBuilding) {
  setenv("NNFUSE_CXX", "false", 1);
  auto g = chain_graph();
  PipelineOptions o;
  o.target = "cuda";
  FusionReport r = run_pipeline(*g, o);
  EXPECT_EQ(count_op(*g, "FusedRegion"), 1u);
  EXPECT_TRUE(r.fallbacks.empty());
}

TEST_F(AutoFusion, AFusedModelWhoseCodeCannotBuildRunsOnTheReference) {
  // Fused (and built) here; then the compiler disappears and the cache is emptied: a fresh
  // session falls back to the region's reference evaluator, with a warning.
  Build build = [] {
    B b;
    Value* x = b.in("x", {7, 9});
    b.out(b.n("Mul", {b.n("Exp", {x}, {7, 9}), b.c(scalar(0.123456f))}, {7, 9}));
    return std::move(b.g);
  };
  Fused f = fuse(build());
  ASSERT_EQ(count_op(*f.graph, "FusedRegion"), 1u);
  std::filesystem::remove_all(dir_);
  setenv("NNFUSE_CXX", "false", 1);
  ::testing::internal::CaptureStderr();
  expect_same_numbers(std::move(f.graph), build(), 1e-5);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fallback"), std::string::npos) << err;
}

// --- user rules ---

std::unique_ptr<Graph> silu_graph() {
  B b;
  Value* x = b.in("x", {3, 20});
  Value* s = b.n("Sigmoid", {x}, {3, 20}, {}, "sig");
  b.out(b.n("Mul", {x, s}, {3, 20}, {}, "mul"));
  return std::move(b.g);
}

FusionSwitches rules(std::vector<UserRule> r) {
  std::string text = R"({"rules":[)";
  for (size_t i = 0; i < r.size(); ++i) {
    text += std::string(i ? "," : "") + R"({"name":")" + r[i].name + R"(","ops":[)";
    for (size_t k = 0; k < r[i].ops.size(); ++k) text += (k ? ",\"" : "\"") + r[i].ops[k] + "\"";
    text += R"(],"action":"fuse"})";
  }
  text += "]}";
  return FusionSwitches::parse(text, "rules.json", list_passes(), pass_op_lists());
}

TEST_F(AutoFusion, AUserRuleFusesItsChainBeforeTheBuiltInPasses) {
  const FusionSwitches sw = rules({{"my_silu", {"Sigmoid", "Mul"}}});
  Fused f = fuse(silu_graph(), &sw);
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->nodes()[0]->op_type(), "FusedRegion");
  EXPECT_EQ(f.graph->nodes()[0]->fused_by(), "my_silu");
  const PassRecord* rec = record(f.report, "my_silu");
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->match_times, 1);
  EXPECT_EQ(rec->effect_times, 1);
  EXPECT_EQ(record(f.report, "GeluFusionPass")->match_times, 0);
  expect_same_numbers(std::move(f.graph), silu_graph(), 1e-5);
}

TEST_F(AutoFusion, UserRulesRunWithEveryBuiltInPassOff) {
  FusionSwitches sw = rules({{"my_silu", {"Sigmoid", "Mul"}}});
  sw.set_all(false);
  Fused f = fuse(silu_graph(), &sw);
  EXPECT_EQ(count_op(*f.graph, "FusedRegion"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(record(f.report, "my_silu")->effect_times, 1);
  EXPECT_EQ(record(f.report, kAuto), nullptr);
}

TEST_F(AutoFusion, AUserRuleDeclinesAChainWhoseInnerValueEscapes) {
  const FusionSwitches sw = rules({{"my_silu", {"Sigmoid", "Mul"}}});
  auto g = silu_graph();
  g->add_output(g->find_value("sig_out"));
  Fused f = fuse(std::move(g), &sw);
  const PassRecord* rec = record(f.report, "my_silu");
  ASSERT_EQ(rec->rejected.size(), 1u);
  EXPECT_NE(rec->rejected[0].reason.find("graph output"), std::string::npos)
      << rec->rejected[0].reason;
  EXPECT_EQ(rec->effect_times, 0);
}

TEST_F(AutoFusion, AUserRuleMatchesEveryChain) {
  Build build = [] {
    B b;
    Value* v = b.in("x", {2, 8});
    for (int i = 0; i < 3; ++i) {
      v = b.n("Mul", {v, b.n("Sigmoid", {b.n("Exp", {v}, {2, 8})}, {2, 8})}, {2, 8});
    }
    b.out(v);
    return std::move(b.g);
  };
  const FusionSwitches sw = rules({{"exp_sig_mul", {"Exp", "Sigmoid", "Mul"}}});
  Fused f = fuse(build(), &sw);
  EXPECT_EQ(record(f.report, "exp_sig_mul")->effect_times, 3);
  EXPECT_EQ(count_op(*f.graph, "FusedRegion"), 3u) << graph_to_text(*f.graph);
  expect_same_numbers(std::move(f.graph), build(), 1e-5);
}

TEST(UserRules, RulesNamingOpsWithoutALoweringAreRefused) {
  std::string why = user_rule_problem({"conv_relu", {"Conv", "Relu"}});
  EXPECT_NE(why.find("'Conv' cannot be fused into a generated kernel"), std::string::npos) << why;
  why = user_rule_problem({"x", {"Sigmoid", "Frobnicate"}});
  EXPECT_NE(why.find("'Frobnicate' is not an ONNX op"), std::string::npos) << why;
  why = user_rule_problem({"x", {"Sigmoid"}});
  EXPECT_NE(why.find("at least two"), std::string::npos) << why;
  EXPECT_EQ(user_rule_problem({"my_silu", {"Sigmoid", "Mul"}}), "");
  EXPECT_EQ(user_rule_problem({"norm", {"Mul", "ReduceMean", "Add", "Sqrt"}}), "");
}

}  // namespace auto_fusion_test
}  // namespace nnfuse
