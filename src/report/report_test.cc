#include "report/report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace nnfuse {
namespace report_test {

FusionReport sample_report() {
  FusionReport r;
  PassRecord& bn = r.record("ConvBatchnormFusionPass");
  bn.match_times = 2;
  bn.effect_times = 1;
  bn.rejected.push_back({{"conv2", "bn2"}, "bn2's input has another consumer"});
  PassRecord& gelu = r.record("GeluFusionPass");
  gelu.match_times = 1;
  gelu.effect_times = 1;
  r.fused.push_back({"conv1_bn1", "ConvBatchnormFusionPass", {"conv1", "bn1"}, 4096, 1});
  r.fused.push_back({"gelu_0", "GeluFusionPass", {"div", "erf", "add", "mul", "mul2"}, 800, 4});
  return r;
}

TEST(Report, RecordCreatesOnceInOrder) {
  FusionReport r;
  r.record("B").match_times = 2;
  r.record("A");
  r.record("B").effect_times = 1;
  ASSERT_EQ(r.passes.size(), 2u);
  EXPECT_EQ(r.passes[0].name, "B");
  EXPECT_EQ(r.passes[0].match_times, 2);
  EXPECT_EQ(r.passes[0].effect_times, 1);
  EXPECT_EQ(r.passes[1].name, "A");
}

TEST(Report, JsonHasGeShape) {
  nlohmann::json j = fusion_report_json(sample_report());
  ASSERT_TRUE(j.contains("graph_fusion"));
  const auto& cb = j["graph_fusion"]["ConvBatchnormFusionPass"];
  EXPECT_EQ(cb["match_times"], 2);
  EXPECT_EQ(cb["effect_times"], 1);
  ASSERT_EQ(cb["rejected"].size(), 1u);
  EXPECT_EQ(cb["rejected"][0]["nodes"], nlohmann::json({"conv2", "bn2"}));
  EXPECT_EQ(cb["rejected"][0]["reason"], "bn2's input has another consumer");
  EXPECT_EQ(j["graph_fusion"]["GeluFusionPass"]["match_times"], 1);
  EXPECT_TRUE(j["graph_fusion"]["GeluFusionPass"]["rejected"].empty());

  ASSERT_EQ(j["fused_nodes"].size(), 2u);
  const auto& f = j["fused_nodes"][1];
  EXPECT_EQ(f["node"], "gelu_0");
  EXPECT_EQ(f["pass"], "GeluFusionPass");
  EXPECT_EQ(f["fused_from"].size(), 5u);
  EXPECT_EQ(f["bytes_saved"], 800);
  EXPECT_EQ(f["kernels_saved"], 4);

  const auto& s = j["summary"];
  EXPECT_EQ(s["matches"], 3);
  EXPECT_EQ(s["effects"], 2);
  EXPECT_EQ(s["kernels_saved"], 5);
  EXPECT_EQ(s["bytes_saved"], 4896);
}

TEST(Report, JsonHasTheBenefitFiguresEstimatedAndMeasured) {
  FusionReport r = sample_report();
  FusionBenefit& b = r.fused[0];
  b.flops = 1000;
  b.bytes_before = 8000;
  b.bytes_after = 2000;
  b.seconds_before = 4e-6;
  b.seconds_after = 2e-6;
  b.measured_ms_before = 0.006;
  b.measured_ms_after = 0.003;
  b.max_rel_error = 1e-7;
  r.before = {10, 5000, 100000, 2e-5};
  r.after = {4, 5000, 40000, 1e-5};
  r.peak_gflops = 400;
  r.bandwidth_gbps = 50;
  r.launch_us = 2;
  r.machine_source = "calibrated on X";
  r.measured_ms_before = 2.0;
  r.measured_ms_after = 1.6;
  r.warnings.push_back({"over-fusion", "gelu_0", "spills"});
  const nlohmann::json j = fusion_report_json(r);
  const auto& f = j["fused_nodes"][0];
  EXPECT_EQ(f["kernels_before"], 2);
  EXPECT_EQ(f["kernels_after"], 1);
  EXPECT_DOUBLE_EQ(f["kernel_reduction"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(f["mem_reduction"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(f["estimated_speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(f["measured_speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(f["measured_us_after"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(f["max_relative_error"].get<double>(), 1e-7);
  // Not estimated, not measured: the figures are absent, not zero.
  EXPECT_FALSE(j["fused_nodes"][1].contains("estimated_speedup"));
  EXPECT_FALSE(j["fused_nodes"][1].contains("measured_speedup"));
  const auto& s = j["summary"];
  EXPECT_EQ(s["kernels_before"], 10);
  EXPECT_EQ(s["kernels_after"], 4);
  EXPECT_DOUBLE_EQ(s["kernel_reduction"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(s["mem_reduction"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(s["estimated_speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(s["measured_speedup"].get<double>(), 1.25);
  EXPECT_EQ(s["machine"]["source"], "calibrated on X");
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_EQ(j["warnings"][0]["node"], "gelu_0");
}

TEST(Report, EmptyReportHasAllSections) {
  nlohmann::json j = fusion_report_json(FusionReport{});
  EXPECT_TRUE(j["graph_fusion"].is_object());
  EXPECT_TRUE(j["fused_nodes"].is_array());
  EXPECT_EQ(j["summary"]["matches"], 0);
  EXPECT_EQ(j["summary"]["bytes_saved"], 0);
}

TEST(Report, WriteRoundTripsAndNamesBadPath) {
  std::string path = ::testing::TempDir() + "report_test_fusion_result.json";
  FusionReport r = sample_report();
  write_fusion_report(r, path);
  std::ifstream in(path);
  nlohmann::json back = nlohmann::json::parse(in);
  EXPECT_EQ(back, fusion_report_json(r));
  std::remove(path.c_str());

  std::string bad = ::testing::TempDir() + "no/such/dir/fusion_result.json";
  try {
    write_fusion_report(r, bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

}  // namespace report_test
}  // namespace nnfuse
