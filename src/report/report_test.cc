#include "report/report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace nnfuse {
namespace {

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

}  // namespace
}  // namespace nnfuse
