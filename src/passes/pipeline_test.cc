// The pipeline's order against the constraints its passes and phases state, the checker on it
// (each swap of a constrained pair is caught, with its reason), what list-passes lists, and the
// dump files run_pipeline writes.
#include "passes/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "ops/user_pattern.h"
#include "testing/graph_builder.h"

namespace nnfuse {
namespace pipeline_test {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const PassRecord* record(const FusionReport& r, const std::string& pass) {
  for (const PassRecord& p : r.passes) {
    if (p.name == pass) return &p;
  }
  return nullptr;
}

size_t index_of(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

// Whether `first` runs before `then` is one of the constraints, for `reason` when it is given.
bool constrained(const std::string& first, const std::string& then,
                 const std::string& reason = "") {
  for (const OrderConstraint& c : order_constraints(pipeline())) {
    if (c.first == first && c.then == then && (reason.empty() || c.reason == reason)) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string r;
  for (const std::string& s : v) r += s + "\n";
  return r;
}

TEST(PipelineOrder, SatisfiesEveryConstraint) {
  const std::vector<OrderConstraint> c = order_constraints(pipeline());
  EXPECT_GT(c.size(), 300u);  // the phases' constraints stand for one per pair of passes
  const std::vector<std::string> broken = order_violations(pass_order(pipeline()), c);
  EXPECT_TRUE(broken.empty()) << joined(broken);
}

TEST(PipelineOrder, EveryNameAConstraintGivesIsAPassOrAPhase) {
  std::set<std::string> known;
  for (const Phase& ph : pipeline()) {
    known.insert(ph.name);
    for (const PhasePass& p : ph.passes) known.insert(p.pass->info().name);
  }
  const std::vector<std::string> order = pass_order(pipeline());
  for (const Phase& ph : pipeline()) {
    std::vector<const Order*> stated;
    for (const Order& o : ph.order) stated.push_back(&o);
    for (const PhasePass& p : ph.passes) {
      for (const Order& o : p.order) stated.push_back(&o);
    }
    for (const Order* o : stated) {
      EXPECT_FALSE(o->others.empty()) << o->reason;
      EXPECT_FALSE(o->reason.empty());
      for (const std::string& name : o->others) EXPECT_TRUE(known.count(name)) << name;
    }
  }
  for (const OrderConstraint& c : order_constraints(pipeline())) {
    EXPECT_TRUE(has(order, c.first)) << c.first;
    EXPECT_TRUE(has(order, c.then)) << c.then;
  }
}

TEST(PipelineOrder, SwappingAnyConstrainedPairIsCaughtWithItsReason) {
  const std::vector<OrderConstraint> constraints = order_constraints(pipeline());
  const std::vector<std::string> order = pass_order(pipeline());
  for (const OrderConstraint& c : constraints) {
    std::vector<std::string> swapped = order;
    std::swap(swapped[index_of(order, c.first)], swapped[index_of(order, c.then)]);
    const std::vector<std::string> broken = order_violations(swapped, constraints);
    const std::string expected =
        c.then + " runs before " + c.first + ", but must run after it: " + c.reason;
    EXPECT_TRUE(has(broken, expected)) << expected << "\nreported:\n" << joined(broken);
  }
}

TEST(PipelineOrder, NamedSwapsReportTheirReasons) {
  const std::vector<OrderConstraint> constraints = order_constraints(pipeline());
  const std::vector<std::string> order = pass_order(pipeline());
  auto broken_by_swap = [&](const std::string& a, const std::string& b) {
    std::vector<std::string> swapped = order;
    std::swap(swapped[index_of(order, a)], swapped[index_of(order, b)]);
    return joined(order_violations(swapped, constraints));
  };
  std::string r = broken_by_swap("EmbedLayerNormFusionPass", "SkipLayerNormFusionPass");
  EXPECT_NE(r.find("SkipLayerNormFusionPass runs before EmbedLayerNormFusionPass, but must run "
                   "after it: SkipLayerNormFusionPass would take the embeddings' last Add"),
            std::string::npos)
      << r;
  r = broken_by_swap("ScaledConvFusionPass", "ConvSkipConvFusionPass");
  EXPECT_NE(r.find("ConvSkipConvFusionPass runs before ScaledConvFusionPass, but must run after "
                   "it: the passes that read a FusedConv's plain form run first"),
            std::string::npos)
      << r;
  r = broken_by_swap("MatMulBiasAddFusionPass", "GeluFusionPass");
  EXPECT_NE(r.find("GeluFusionPass runs before MatMulBiasAddFusionPass"), std::string::npos) << r;
  // A user pass after a built-in fusion: the phase's constraint, for each pass of the phase.
  r = broken_by_swap("user_rules", "LayerNormFusionPass");
  EXPECT_NE(r.find("LayerNormFusionPass runs before user_rules, but must run after it: what a "
                   "user asked for takes precedence"),
            std::string::npos)
      << r;
  r = broken_by_swap("ConstantFoldingPass", "AutoFusionPass");
  EXPECT_NE(r.find("AutoFusionPass runs before ConstantFoldingPass"), std::string::npos) << r;
}

TEST(PipelineOrder, TheCommentedConstraintsAreData) {
  // Canonicalization first; the user's fusions before the built-in ones; automatic fusion last.
  for (const char* fusion : {"LayerNormFusionPass", "ConvBatchnormFusionPass",
                             "MatMulBiasAddFusionPass", "SpatialTransposeViewPass"}) {
    EXPECT_TRUE(constrained("IdentityEliminationPass", fusion)) << fusion;
    EXPECT_TRUE(constrained("fusion_patterns", fusion)) << fusion;
    EXPECT_TRUE(constrained(fusion, "AutoFusionPass")) << fusion;
  }
  EXPECT_TRUE(constrained("ConstantFoldingPass", "EinsumLoweringPass"));
  EXPECT_TRUE(constrained("EinsumLoweringPass", "AttentionFusionPass"));
  EXPECT_TRUE(constrained("LayerNormFusionPass", "ConvAddFusionPass"));
  EXPECT_TRUE(constrained("GroupNormFusionPass", "GeluFusionPass"));
  EXPECT_TRUE(constrained("GroupNormFusionPass", "AutoFusionPass"));
  EXPECT_TRUE(constrained("LayerNormFusionPass", "EmbedLayerNormFusionPass"));
  EXPECT_TRUE(constrained("EmbedLayerNormFusionPass", "SkipLayerNormFusionPass"));
  EXPECT_TRUE(constrained("ConvBatchnormFusionPass", "ConvAddFusionPass"));
  EXPECT_TRUE(constrained("ConvAddFusionPass", "ConvActivationFusionPass"));
  EXPECT_TRUE(constrained("ConvBatchnormFusionPass", "BatchNormScaleShiftPass"));
  EXPECT_TRUE(constrained("ConvActivationFusionPass", "SqueezeExciteFusionPass"));
  EXPECT_TRUE(constrained("ConvActivationFusionPass", "ScaledConvFusionPass"));
  EXPECT_TRUE(constrained("SqueezeExciteFusionPass", "ScaledConvFusionPass"));
  EXPECT_TRUE(constrained("ScaledConvFusionPass", "SqueezeExciteScaleFusionPass"));
  for (const char* reader :
       {"ConvMaxPoolFusionPass", "SqueezeExciteFusionPass", "ScaledConvFusionPass"}) {
    EXPECT_TRUE(constrained(reader, "ConvSkipConvFusionPass")) << reader;
    EXPECT_TRUE(constrained(reader, "HorizontalConvFusionPass")) << reader;
    EXPECT_TRUE(constrained(reader, "ExpandDepthwiseFusionPass")) << reader;
  }
  EXPECT_TRUE(constrained("ConvSkipConvFusionPass", "HorizontalConvFusionPass"));
  EXPECT_TRUE(constrained("ConvActivationFusionPass", "ExpandDepthwiseFusionPass"));
  EXPECT_TRUE(constrained("GlobalPoolGemmFusionPass", "GemmActivationFusionPass"));
  EXPECT_TRUE(constrained("MatMulBiasAddFusionPass", "AttentionFusionPass"));
  EXPECT_TRUE(constrained("AttentionFusionPass", "QKVProjectionFusionPass"));
  EXPECT_TRUE(constrained("MatMulBiasAddFusionPass", "GeluFusionPass"));
  EXPECT_TRUE(constrained("GeluFusionPass", "GatedFFNFusionPass"));
  EXPECT_TRUE(constrained("GatedFFNChunkFusionPass", "LayerNormMatMulFusionPass"));
  EXPECT_TRUE(constrained("LayerNormMatMulFusionPass", "SkipLayerNormFusionPass"));
  EXPECT_TRUE(constrained("MatMulBiasAddFusionPass", "SkipLayerNormFusionPass"));
  EXPECT_TRUE(constrained("MatMulSkipLayerNormFusionPass", "MatMulResidualFusionPass"));
}

TEST(PipelineOrder, ListedPassesAreThePipelineLessTheUserPhase) {
  std::vector<std::string> listed;
  for (const PassInfo& p : list_passes()) listed.push_back(p.name);
  const size_t patterns = fusion_patterns().size();
  std::vector<std::string> expected;
  for (const Phase& ph : pipeline()) {
    for (const PhasePass& p : ph.passes) {
      if (ph.listed) expected.push_back(p.pass->info().name);
      // The number dumps and the progress line give each pass: its place among the listed
      // passes, or for an unlisted one, that of the listed pass after it.
      EXPECT_EQ(p.number, static_cast<int>(index_of(expected, p.pass->info().name) + 1))
          << p.pass->info().name;
    }
  }
  EXPECT_EQ(
      std::vector<std::string>(listed.begin() + static_cast<ptrdiff_t>(patterns), listed.end()),
      expected);
  EXPECT_FALSE(has(listed, "user_rules"));
  EXPECT_FALSE(has(listed, "fusion_patterns"));
}

// The graph dumped as imported, after each pass that ran, numbered by the pass, the user
// phase's files by the built-in pass after them.
TEST(PipelineDumps, NamesEachFileByItsPass) {
  testing::GraphBuilder b;
  Value* x = b.in("x", {2, 3});
  b.out(b.n("Sigmoid", {b.n("Relu", {x}, {2, 3})}, {2, 3}));
  const FusionSwitches sw = FusionSwitches::parse(
      R"({"rules":[{"name":"relu_sigmoid","ops":["Relu","Sigmoid"],"action":"fuse"}]})",
      "rules.json", list_passes(), pass_op_lists());
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "nnfuse_pipeline_dumps";
  std::filesystem::remove_all(dir);
  PipelineOptions o;
  o.switches = &sw;
  o.dump_format = "yaml";
  o.dump_dir = dir.string();
  const FusionReport r = run_pipeline(*b.g, o);
  ASSERT_TRUE(record(r, "relu_sigmoid"));
  EXPECT_EQ(record(r, "relu_sigmoid")->effect_times, 1);
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    files.insert(e.path().filename().string());
  }
  auto file = [](size_t number, const std::string& pass) {
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02zu_", number);
    return prefix + pass + ".yaml";
  };
  const size_t patterns = fusion_patterns().size();
  const std::vector<PassInfo> listed = list_passes();
  std::set<std::string> expected = {"00_imported.yaml"};
  size_t first_fusion = 0;  // the number of the first built-in fusion pass
  for (size_t i = patterns; i < listed.size(); ++i) {
    if (listed[i].fusion && !first_fusion) first_fusion = i - patterns + 1;
    if (sw.enabled(listed[i])) expected.insert(file(i - patterns + 1, listed[i].name));
  }
  expected.insert(file(first_fusion, "user_rules"));
  if (patterns) expected.insert(file(first_fusion, "fusion_patterns"));
  EXPECT_EQ(files, expected);
  // As the files have always been named.
  EXPECT_TRUE(files.count("06_user_rules.yaml"));
  EXPECT_TRUE(files.count("06_LayerNormFusionPass.yaml"));
  std::filesystem::remove_all(dir);
}

}  // namespace pipeline_test
}  // namespace nnfuse
