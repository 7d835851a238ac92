// No silent reference kernels, through the CLI: a Conv whose input has symbolic spatial dims
// falls back to the reference kernel; run, bench, profile and verify warn once per node and
// name why, bench --json counts it, profile tags it, and --strict refuses it with exit 3.
// The reference runs (--reference, verify's unfused side) stay quiet.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "onnx/exporter.h"
#include "runtime/npy.h"
#include "tests/test_support.h"

namespace nnfuse {
namespace {

namespace fs = std::filesystem;
std::string g_nnfuse;

// x [1, 3, 6, 6] -> Conv (4 filters 3x3, pads 1) -> Relu -> y. Unless static, x first goes
// through Reshape(x, s) with s an input: the conv's input shape is then data, not static.
void write_model(const std::string& path, bool static_hw) {
  Graph g;
  g.opsets[""] = 17;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, 3, 6, 6}));
  g.add_input(x);
  if (!static_hw) {
    Value* s = g.add_value("s", DType::kInt64, Shape::of({4}));
    g.add_input(s);
    Value* r = g.add_value("r", DType::kFloat32, Shape::unknown());
    g.add_node("Reshape", "reshape", {x, s}, {r});
    x = r;
  }
  Tensor wt(DType::kFloat32, {4, 3, 3, 3});
  for (int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] = static_cast<float>(i % 7) / 7;
  Value* w = g.add_value("w", DType::kFloat32, Shape::of(wt.shape()));
  w->set_constant(std::move(wt));
  Value* c = g.add_value("c", DType::kFloat32, Shape::unknown());
  Node* conv = g.add_node("Conv", "conv", {x, w}, {c});
  Attribute pads;
  pads.kind = Attribute::Kind::kInts;
  pads.ints = {1, 1, 1, 1};
  conv->set_attr("pads", pads);
  Value* y = g.add_value("y", DType::kFloat32, Shape::unknown());
  g.add_node("Relu", "relu", {c}, {y});
  g.add_output(y);
  save_onnx(g, path);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

class ReferenceFallbackCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir("nnfuse-reffallback");
    write_model(path("dyn.onnx"), false);
    write_model(path("static.onnx"), true);
    Tensor x(DType::kFloat32, {1, 3, 6, 6});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 2;
    save_npy(path("x.npy"), x);
    save_npy(path("s.npy"), Tensor::from_vector<int64_t>({4}, {1, 3, 6, 6}));
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& f) const { return (fs::path(dir_) / f).string(); }
  testing::CommandResult nnfuse(std::vector<std::string> args) {
    args.insert(args.begin(), g_nnfuse);
    args.push_back("--input");
    args.push_back("x=" + path("x.npy"));
    if (args[2].find("dyn.onnx") != std::string::npos) {
      args.push_back("--input");
      args.push_back("s=" + path("s.npy"));
    }
    return testing::run_command(args, 120);
  }
  static nlohmann::json json_of(const std::string& out) {
    return nlohmann::json::parse(out.substr(out.find('{')));
  }
  std::string dir_;
};

TEST_F(ReferenceFallbackCli, RunWarnsOncePerNodeNamingOpShapesAndReason) {
  auto r = nnfuse({"run", path("dyn.onnx"), "--no-fusion"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "nnfuse: warning:"), 1u) << r.output;
  EXPECT_NE(r.output.find("nnfuse: warning: Conv 'conv' (float32? -> float32?)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("runs on the reference kernel: cpu.winograd, cpu.depthwise, "
                          "onednn.winograd, onednn.conv: input 'r' has no static shape (float32?)"),
            std::string::npos)
      << r.output;
  // Fused, the node is a FusedConv and says so.
  r = nnfuse({"run", path("dyn.onnx")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "nnfuse: warning:"), 1u) << r.output;
  EXPECT_NE(r.output.find("FusedConv '"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("onednn.fused_conv: input 'r' has no static shape"), std::string::npos)
      << r.output;
}

TEST_F(ReferenceFallbackCli, TheReferenceRunsAndStaticModelsAreQuiet) {
  auto r = nnfuse({"run", path("dyn.onnx"), "--reference"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  r = nnfuse({"run", path("static.onnx"), "--strict"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  // verify: only the fused side (the one the user runs) warns; the unfused yardstick does not.
  r = nnfuse({"verify", path("dyn.onnx")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "nnfuse: warning:"), 1u) << r.output;
  EXPECT_NE(r.output.find("FusedConv '"), std::string::npos) << r.output;
  r = nnfuse({"verify", path("dyn.onnx"), "--reference"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "nnfuse: warning:"), 1u) << r.output;
}

TEST_F(ReferenceFallbackCli, StrictRefusesWithExitCode3) {
  for (const char* cmd : {"run", "bench", "profile", "verify"}) {
    auto r = nnfuse({cmd, path("dyn.onnx"), "--strict"});
    EXPECT_EQ(r.exit_code, 3) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("nnfuse: error: --strict: 1 compute node would run on the reference "
                            "kernel:"),
              std::string::npos)
        << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("(float32? -> float32?)"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("input 'r' has no static shape"), std::string::npos) << r.output;
  }
  auto r = nnfuse({"run", path("dyn.onnx"), "--strict", "--no-fusion"});
  EXPECT_NE(r.output.find("Conv 'conv' (float32?"), std::string::npos) << r.output;
  // The oracle run is what --reference asks for: --strict does not refuse it.
  r = nnfuse({"run", path("dyn.onnx"), "--strict", "--reference"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(ReferenceFallbackCli, BenchCountsReferenceKernelsAndProfileTagsThem) {
  auto r = nnfuse({"bench", path("dyn.onnx"), "--json", "--runs", "2", "--warmup", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = json_of(r.output);
  EXPECT_EQ(j["reference_kernels"], 1) << j.dump();
  EXPECT_GT(j["reference_kernel_share"].get<double>(), 0.0) << j.dump();
  EXPECT_LE(j["reference_kernel_share"].get<double>(), 1.0) << j.dump();
  EXPECT_EQ(j["reference_only"], false) << j.dump();
  r = nnfuse({"bench", path("static.onnx"), "--json", "--runs", "2", "--warmup", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = json_of(r.output);
  EXPECT_EQ(j["reference_kernels"], 0) << j.dump();
  EXPECT_EQ(j["reference_kernel_share"], 0.0) << j.dump();
  r = nnfuse({"bench", path("dyn.onnx"), "--runs", "2", "--warmup", "0"});
  EXPECT_NE(r.output.find("reference kernels for compute ops or ops with a fast kernel: 1 ("),
            std::string::npos)
      << r.output;

  r = nnfuse({"profile", path("dyn.onnx"), "--runs", "2", "--warmup", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(ref) [ref]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 kernel [ref] on the reference kernel"), std::string::npos) << r.output;
  r = nnfuse({"profile", path("dyn.onnx"), "--runs", "2", "--warmup", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json_of(r.output)["reference_kernels"], 1) << r.output;
}

}  // namespace
}  // namespace nnfuse

int main(int argc, char** argv) {
  return nnfuse::testing::test_main(argc, argv, {{"--nnfuse", &nnfuse::g_nnfuse}}, {"--nnfuse"},
                                    "reference_fallback_cli_test --nnfuse PATH");
}
