// The fusion CLI end to end on the bundled model: compile (and its atc-style spelling),
// fusion_result.json, graph dumps, switch files, verify.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/test_support.h"

namespace nnfuse {
namespace {

namespace fs = std::filesystem;
std::string g_nnfuse, g_source;

class FusionCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir("nnfuse-fusion"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& f) const { return (fs::path(dir_) / f).string(); }
  std::string model() const { return g_source + "/models/tiny_resnet.onnx"; }
  testing::CommandResult nnfuse(std::vector<std::string> args) {
    args.insert(args.begin(), g_nnfuse);
    return testing::run_command(args, 120);
  }
  void write(const std::string& f, const std::string& text) { std::ofstream(path(f)) << text; }
  std::string dir_;
};

TEST_F(FusionCli, CompileWritesARunnableFusedModelAndReport) {
  auto r = nnfuse(
      {"compile", model(), "-o", path("fused.onnx"), "--report", path("fusion_result.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(path("fusion_result.json"));
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["graph_fusion"]["ConvBatchnormFusionPass"]["match_times"], 6);
  EXPECT_EQ(j["graph_fusion"]["ConvBatchnormFusionPass"]["effect_times"], 6);
  EXPECT_GT(j["summary"]["kernels_saved"].get<int>(), 10);
  auto info = nnfuse({"info", path("fused.onnx")});
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("ai.nnfuse.FusedConv"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("all nodes are supported"), std::string::npos) << info.output;
  auto run = nnfuse({"run", path("fused.onnx"), "--input",
                     "input=" + g_source + "/models/tiny_resnet_input.npy", "-o", path("out")});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::exists(path("out/logits.npy")));
}

TEST_F(FusionCli, ShapeFlagIsCheckedAndNamed) {
  for (std::string bad : {"input", "=1,3", "input=1,x,3", "input=1,-3", "nope=1,3,32,32"}) {
    auto r = nnfuse({"bench", model(), "--runs", "1", "--shape", bad});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_TRUE(r.output.find("--shape") != std::string::npos ||
                r.output.find("nope") != std::string::npos)
        << bad << ": " << r.output;
  }
  // "NAME=" is a scalar: refused for a rank-4 input, naming it and both ranks.
  auto r = nnfuse({"bench", model(), "--runs", "1", "--shape", "input="});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("input 'input' has rank 4, the shape given has 0 dims"),
            std::string::npos)
      << r.output;
}

TEST_F(FusionCli, AtcStyleSpellingAndDumps) {
  auto r = nnfuse({"--model", model(), "--output", path("atc"), "--dump_graph", "dot",
                   "--debug_path", path("dumps")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(path("atc.onnx")));
  int dots = 0;
  for (auto& e : fs::directory_iterator(path("dumps"))) dots += e.path().extension() == ".dot";
  EXPECT_GE(dots, 5);  // the imported graph and one per pass that ran
}

TEST_F(FusionCli, SwitchFileTurnsPassesOff) {
  write("off.json", R"({"Switch":{"GraphFusion":{"ALL":"off"}}})");
  auto r = nnfuse({"bench", model(), "--runs", "1", "--warmup", "0", "--json",
                   "--fusion_switch_file", path("off.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json off = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  r = nnfuse({"bench", model(), "--runs", "1", "--warmup", "0", "--json"});
  nlohmann::json on = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_LT(on["kernels"].get<int>(), off["kernels"].get<int>());
  write("legacy.txt", "ConvBatchnormFusionPass:off\n");
  r = nnfuse({"compile", model(), "-o", path("x"), "--fusion_switch_file", path("legacy.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ConvAddFusionPass"), std::string::npos);
  EXPECT_EQ(r.output.find("ConvBatchnormFusionPass"), std::string::npos) << r.output;
}

TEST_F(FusionCli, BadSwitchFilesAreErrors) {
  write("unknown.txt", "NoSuchPass:off\n");
  auto r =
      nnfuse({"compile", model(), "-o", path("x"), "--fusion_switch_file", path("unknown.txt")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("NoSuchPass"), std::string::npos) << r.output;
  // A user rule must name ops a generated kernel can run.
  write("rule.json", R"({"rules":[{"name":"conv_relu6","ops":["Conv","Clip"],"action":"fuse"}]})");
  r = nnfuse({"compile", model(), "-o", path("x"), "--fusion_switch_file", path("rule.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("rule 'conv_relu6': op 'Conv' cannot be fused"), std::string::npos)
      << r.output;
}

TEST_F(FusionCli, ProfileNamesEachConvsKernel) {
  // The bundled model's 3x3 convs on the project's Winograd kernel, then on the direct one.
  setenv("NNFUSE_WINOGRAD", "own", 1);
  auto r = nnfuse({"profile", model(), "--runs", "2", "--warmup", "0", "--top", "50"});
  unsetenv("NNFUSE_WINOGRAD");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(cpu.winograd)"), std::string::npos) << r.output;
  setenv("NNFUSE_WINOGRAD", "0", 1);
  r = nnfuse({"profile", model(), "--runs", "2", "--warmup", "0", "--top", "50"});
  unsetenv("NNFUSE_WINOGRAD");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("winograd"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(onednn.fused_conv)"), std::string::npos) << r.output;
}

TEST_F(FusionCli, VerifyPassesAndBisects) {
  auto r = nnfuse({"verify", model(), "--bisect", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_TRUE(j["pass"].get<bool>());
  EXPECT_LE(j["outputs"][0]["relative_error"].get<double>(), 1e-4);
  r = nnfuse({"list-passes"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("ConvBatchnormFusionPass  [on]"), std::string::npos) << r.output;
}

TEST_F(FusionCli, ExplainSaysWhatFusedANodeAndWhyAnotherDidNot) {
  auto r = nnfuse({"explain", model(), "/stem/stem.1/BatchNormalization"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fused: into FusedConv '/stem/stem.2/Relu' by ConvActivationFusionPass,"
                          " with 2 other nodes: /stem/stem.0/Conv, "
                          "/stem/stem.1/BatchNormalization, /stem/stem.2/Relu"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2 kernels and 262144 bytes of intermediates saved"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("kernel: onednn.fused_conv"), std::string::npos) << r.output;

  // A residual Add that broadcasts over the batch: the residual rule looks at it and declines.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("residual");
  auto input = [&](const std::string& name, std::vector<int64_t> dims) {
    onnx::ValueInfoProto* v = g->add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) {
      v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    }
  };
  input("x", {2, 4, 8});
  input("r", {4, 8});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(8);
  w->add_dims(8);
  for (int i = 0; i < 64; ++i) w->add_float_data(0.01f * static_cast<float>(i % 7));
  onnx::NodeProto* mm = g->add_node();
  mm->set_name("proj");
  mm->set_op_type("MatMul");
  mm->add_input("x");
  mm->add_input("w");
  mm->add_output("m");
  onnx::NodeProto* add = g->add_node();
  add->set_name("residual");
  add->set_op_type("Add");
  add->add_input("m");
  add->add_input("r");
  add->add_output("y");
  g->add_output()->set_name("y");
  std::ofstream(path("residual.onnx"), std::ios::binary) << m.SerializeAsString();
  r = nnfuse({"explain", path("residual.onnx"), "residual"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("declined by:\n  MatMulResidualFusionPass (with proj, residual): "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("broadcasting Adds are not fused"), std::string::npos) << r.output;

  // A name the model does not have.
  r = nnfuse({"explain", model(), "/stem/stem.1/BatchNorm"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no node named '/stem/stem.1/BatchNorm'; did you mean "
                          "'/stem/stem.1/BatchNormalization'"),
            std::string::npos)
      << r.output;
}

TEST_F(FusionCli, ReportWritesOnePageWithMeasuredBenefits) {
  auto r = nnfuse({"report", model(), "-o", path("report.html"), "--measure", "--runs", "2",
                   "--threads", "1", "--json", path("fusion_result.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote " + path("report.html") + ": 22 kernels -> "), std::string::npos)
      << r.output;
  std::ifstream html(path("report.html"));
  std::stringstream page;
  page << html.rdbuf();
  for (const char* id : {"id=\"graph-before\"", "id=\"graph-after\"", "id=\"fused-nodes\"",
                         "id=\"declined\"", "class=\"bar\"", "<svg"}) {
    EXPECT_NE(page.str().find(id), std::string::npos) << id;
  }
  std::ifstream f(path("fusion_result.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_GT(j["summary"]["measured_ms_after"].get<double>(), 0.0);
  ASSERT_FALSE(j["fused_nodes"].empty());
  for (const auto& n : j["fused_nodes"]) {
    EXPECT_TRUE(n.contains("estimated_speedup")) << n.dump();
    EXPECT_TRUE(n.contains("measured_speedup")) << n.dump();
    EXPECT_LE(n["max_relative_error"].get<double>(), 1e-4) << n.dump();
  }
  // ONNX Runtime's figures from a side-by-side run, when asked; a file without this model is
  // an error naming it.
  write("ort.json", R"([{"model": "tiny_resnet", "nnfuse_ms": 1.5, "ort_ms": 2.0, "ratio": 0.75,
                        "ratio_min": 0.7, "ratio_max": 0.8}])");
  r = nnfuse({"report", model(), "-o", path("report2.html"), "--ort-json", path("ort.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream html2(path("report2.html"));
  std::stringstream page2;
  page2 << html2.rdbuf();
  EXPECT_NE(page2.str().find("ONNX Runtime 2.000 ms: ratio 0.750"), std::string::npos);
  // The results file compare_ort.py writes (bench/bench_json.py), its rows under "rows".
  write("results.json", R"({"benchmark": "compare_ort", "command": "compare_ort.py",
                            "rows": [{"model": "tiny_resnet", "nnfuse_ms": 1.5, "ort_ms": 3.0,
                                      "ratio": 0.5, "ratio_min": 0.4, "ratio_max": 0.6}]})");
  r = nnfuse({"report", model(), "-o", path("report4.html"), "--ort-json", path("results.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream html4(path("report4.html"));
  std::stringstream page4;
  page4 << html4.rdbuf();
  EXPECT_NE(page4.str().find("ONNX Runtime 3.000 ms: ratio 0.500"), std::string::npos);
  write("other.json", R"([{"model": "resnet50", "nnfuse_ms": 1, "ort_ms": 2}])");
  r = nnfuse({"report", model(), "-o", path("report3.html"), "--ort-json", path("other.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("has no result for model 'tiny_resnet'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("report3.html")));
}

TEST_F(FusionCli, CompileMeasuresAndWarnsOnRequest) {
  auto r = nnfuse({"compile", model(), "-o", path("fused.onnx"), "--report",
                   path("fusion_result.json"), "--measure", "--runs", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(path("fusion_result.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_GT(j["summary"]["measured_ms_before"].get<double>(), 0.0);
  EXPECT_EQ(j["summary"]["kernels_before"], 22);
  EXPECT_TRUE(j["warnings"].is_array());
  EXPECT_TRUE(j["summary"]["machine"]["source"].is_string());
}

}  // namespace
}  // namespace nnfuse

int main(int argc, char** argv) {
  return nnfuse::testing::test_main(
      argc, argv, {{"--nnfuse", &nnfuse::g_nnfuse}, {"--source", &nnfuse::g_source}},
      {"--nnfuse", "--source"}, "fusion_cli_test --nnfuse PATH --source REPO_ROOT");
}
