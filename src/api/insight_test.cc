#include "api/insight.h"

#include <gtest/gtest.h>

#include "api/compile.h"

namespace nnfuse {
namespace insight_test {

const std::string kModel = std::string(NNFUSE_SOURCE_DIR) + "/models/tiny_resnet.onnx";

GraphMaker maker() {
  return [](bool fused) {
    CompileOptions o;
    o.fusion = fused;
    return compile_model_file(kModel, o).graph;
  };
}

TEST(Insight, EveryFusedNodeIsTimedAndCheckedAgainstTheUnfusedNodes) {
  CompileResult r = compile_model_file(kModel);
  ASSERT_FALSE(r.report.fused.empty());
  MeasureOptions o;
  o.runs = 3;
  o.warmup = 1;
  o.threads = 1;
  const Measurement m = measure_fusion(maker(), r.report, o);
  EXPECT_EQ(m.unfused.runs, 3);
  EXPECT_GT(r.report.measured_ms_before, 0.0);
  EXPECT_GT(r.report.measured_ms_after, 0.0);
  for (const FusionBenefit& b : r.report.fused) {
    SCOPED_TRACE(b.node);
    EXPECT_GT(b.measured_ms_after, 0.0);   // its kernel ran in the fused profile
    EXPECT_GT(b.measured_ms_before, 0.0);  // its original nodes' kernels ran unfused
    EXPECT_GE(b.max_rel_error, 0.0);
    EXPECT_LE(b.max_rel_error, 1e-4);
  }
  EXPECT_TRUE(r.report.warnings.empty());
}

TEST(Insight, AFusedNodeOverTheToleranceIsWarnedByName) {
  CompileResult r = compile_model_file(kModel);
  MeasureOptions o;
  o.runs = 1;
  o.warmup = 0;
  o.threads = 1;
  o.tolerance = -1;  // every difference, even 0, is over it
  measure_fusion(maker(), r.report, o);
  ASSERT_EQ(r.report.warnings.size(), r.report.fused.size());
  for (size_t i = 0; i < r.report.fused.size(); ++i) {
    EXPECT_EQ(r.report.warnings[i].kind, "precision");
    EXPECT_EQ(r.report.warnings[i].node, r.report.fused[i].node);
    EXPECT_NE(r.report.warnings[i].message.find("over the tolerance"), std::string::npos);
  }
}

TEST(Insight, TheReportCarriesEstimatesForTheWholeGraph) {
  CompileResult r = compile_model_file(kModel);
  EXPECT_EQ(r.report.before.kernels, 22);
  EXPECT_EQ(r.report.after.kernels, static_cast<int64_t>(r.graph->num_nodes()));
  EXPECT_LT(r.report.after.bytes_moved, r.report.before.bytes_moved);
  EXPECT_GT(r.report.before.flops, 0);
  EXPECT_GT(r.report.before.seconds, r.report.after.seconds);
  EXPECT_GT(r.report.peak_gflops, 0.0);
  EXPECT_FALSE(r.report.machine_source.empty());
}

}  // namespace insight_test
}  // namespace nnfuse
