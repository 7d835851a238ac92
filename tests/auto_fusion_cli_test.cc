// Automatic fusion and code generation through the CLI: generated kernels in the fused model,
// --dump-kernels on compile/run/bench, --target cuda, user rules from the switch file (and
// their refusal), and the fallback when the compiler fails.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
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

// y = softmax(tanh(2x + 1) - x) (written out) and z = x * sigmoid(x), x: [4, 8, 33].
void write_model(const std::string& path) {
  Graph g;
  g.opsets[""] = 13;
  const Dims d{4, 8, 33}, r{4, 8, 1};
  Value* x = g.add_value("x", DType::kFloat32, Shape::of(d));
  g.add_input(x);
  auto konst = [&](const std::string& name, Tensor t) {
    Value* v = g.add_value(name, t.dtype(), Shape::of(t.shape()));
    v->set_constant(std::move(t));
    return v;
  };
  auto node = [&](const std::string& op, const std::string& name, std::vector<Value*> in,
                  const Dims& out) {
    Value* o = g.add_value(name + "_out", DType::kFloat32, Shape::of(out));
    g.add_node(op, name, in, {o});
    return o;
  };
  Value* a = node("Mul", "mul", {x, konst("two", Tensor::scalar<float>(2))}, d);
  Value* b = node("Add", "add", {a, konst("one", Tensor::scalar<float>(1))}, d);
  Value* u = node("Sub", "sub", {node("Tanh", "tanh", {b}, d), x}, d);
  Value* axes = konst("axes", Tensor::from_vector<int64_t>({1}, {-1}));
  Value* m = node("ReduceMax", "rmax", {u}, r);
  g.nodes().back()->set_attr("axes", [] {
    Attribute at;
    at.kind = Attribute::Kind::kInts;
    at.ints = {-1};
    return at;
  }());
  Value* e = node("Exp", "exp", {node("Sub", "sub2", {u, m}, d)}, d);
  Value* s = node("ReduceSum", "rsum", {e, axes}, r);
  g.add_output(node("Div", "div", {e, s}, d));
  g.add_output(node("Mul", "silu_mul", {x, node("Sigmoid", "silu_sig", {x}, d)}, d));
  save_onnx(g, path);
}

class AutoFusionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir("nnfuse-autofuse");
    setenv("NNFUSE_CACHE_DIR", path("cache").c_str(), 1);
    unsetenv("NNFUSE_CXX");
    write_model(path("m.onnx"));
    Tensor x(DType::kFloat32, {4, 8, 33});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 17) / 8 - 1;
    save_npy(path("x.npy"), x);
  }
  void TearDown() override {
    unsetenv("NNFUSE_CXX");
    unsetenv("NNFUSE_CACHE_DIR");
    fs::remove_all(dir_);
  }
  std::string path(const std::string& f) const { return (fs::path(dir_) / f).string(); }
  testing::CommandResult nnfuse(std::vector<std::string> args) {
    args.insert(args.begin(), g_nnfuse);
    return testing::run_command(args, 300);
  }
  nlohmann::json report(const std::string& f) {
    std::ifstream in(path(f));
    return nlohmann::json::parse(in);
  }
  size_t files_with(const std::string& dir, const std::string& ext, const std::string& text) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(path(dir))) {
      if (e.path().extension() != ext) continue;
      std::ifstream in(e.path());
      std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      n += s.find(text) != std::string::npos;
    }
    return n;
  }
  std::string dir_;
};

TEST_F(AutoFusionCli, CompileFusesRegionsIntoGeneratedKernelsAndDumpsThem) {
  auto r = nnfuse({"compile", path("m.onnx"), "-o", path("f.onnx"), "--report", path("r.json"),
                   "--dump-kernels", path("k")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = report("r.json");
  // tanh chain, {max, sub, exp}, {sum, div}; SiLU goes to GeluFusionPass (Swish).
  EXPECT_EQ(j["graph_fusion"]["AutoFusionPass"]["effect_times"], 3) << j.dump(1);
  EXPECT_TRUE(j["fallback"].empty());
  EXPECT_EQ(files_with("k", ".cc", "extern \"C\" void nnfuse_region_"), 3u);
  auto info = nnfuse({"info", path("f.onnx")});
  EXPECT_NE(info.output.find("ai.nnfuse.FusedRegion 3"), std::string::npos) << info.output;
  auto v = nnfuse({"verify", path("m.onnx")});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  for (const char* cmd : {"run", "bench"}) {
    SCOPED_TRACE(cmd);
    const std::string dir = std::string("k_") + cmd;
    std::vector<std::string> args{cmd, path("m.onnx"), "--dump-kernels", path(dir)};
    if (std::string(cmd) == "bench") {
      args.insert(args.end(), {"--runs", "2", "--warmup", "0"});
    } else {
      args.insert(args.end(), {"--input", "x=" + path("x.npy"), "-o", path("out")});
    }
    auto x = nnfuse(args);
    EXPECT_EQ(x.exit_code, 0) << x.output;
    EXPECT_EQ(files_with(dir, ".cc", "extern \"C\" void nnfuse_region_"), 3u);
  }
}

TEST_F(AutoFusionCli, TargetCudaWritesCudaKernels) {
  auto r = nnfuse({"compile", path("m.onnx"), "-o", path("f.onnx"), "--target", "cuda"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(files_with("f_cuda", ".cu", "__global__ void nnfuse_region_"), 3u);
  auto bad = nnfuse({"compile", path("m.onnx"), "-o", path("f.onnx"), "--target", "tpu"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--target"), std::string::npos) << bad.output;
}

TEST_F(AutoFusionCli, AFailingCompilerFallsBackToTheUnfusedNodes) {
  setenv("NNFUSE_CXX", "false", 1);
  auto r = nnfuse({"compile", path("m.onnx"), "-o", path("f.onnx"), "--report", path("r.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: fallback: region 'sub'"), std::string::npos) << r.output;
  nlohmann::json j = report("r.json");
  ASSERT_EQ(j["fallback"].size(), 3u) << j.dump(1);
  EXPECT_EQ(j["fallback"][0]["pass"], "AutoFusionPass");
  EXPECT_FALSE(j["fallback"][0]["reason"].get<std::string>().empty());
  EXPECT_EQ(j["graph_fusion"]["AutoFusionPass"]["effect_times"], 0);
  auto info = nnfuse({"info", path("f.onnx")});
  EXPECT_EQ(info.output.find("FusedRegion"), std::string::npos) << info.output;
  auto v = nnfuse({"verify", path("m.onnx")});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST_F(AutoFusionCli, UserRulesFuseTheirChainsAndUnfusableOpsAreRefused) {
  std::ofstream(path("rule.json"))
      << R"({"rules":[{"name":"my_silu","ops":["Sigmoid","Mul"],"action":"fuse"}]})";
  auto r = nnfuse({"compile", path("m.onnx"), "-o", path("f.onnx"), "--report", path("r.json"),
                   "--fusion_switch_file", path("rule.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = report("r.json");
  EXPECT_EQ(j["graph_fusion"]["my_silu"]["match_times"], 1) << j.dump(1);
  EXPECT_EQ(j["graph_fusion"]["my_silu"]["effect_times"], 1) << j.dump(1);
  auto info = nnfuse({"info", path("f.onnx")});
  EXPECT_NE(info.output.find("ai.nnfuse.FusedRegion 4"), std::string::npos) << info.output;
  EXPECT_EQ(info.output.find("Swish"), std::string::npos) << info.output;

  std::ofstream(path("conv.json"))
      << R"({"rules":[{"name":"conv_sig","ops":["Conv","Sigmoid"],"action":"fuse"}]})";
  r = nnfuse(
      {"compile", path("m.onnx"), "-o", path("g.onnx"), "--fusion_switch_file", path("conv.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("conv.json: rule 'conv_sig': op 'Conv' cannot be fused"),
            std::string::npos)
      << r.output;
  std::ofstream(path("unknown.json"))
      << R"({"rules":[{"name":"odd","ops":["Sigmoid","Frobnicate"],"action":"fuse"}]})";
  r = nnfuse({"run", path("m.onnx"), "--input", "x=" + path("x.npy"), "--fusion_switch_file",
              path("unknown.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("rule 'odd': op 'Frobnicate' is not an ONNX op"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(path("g.onnx")));
}

}  // namespace
}  // namespace nnfuse

int main(int argc, char** argv) {
  return nnfuse::testing::test_main(argc, argv, {{"--nnfuse", &nnfuse::g_nnfuse}}, {"--nnfuse"},
                                    "auto_fusion_cli_test --nnfuse PATH");
}
