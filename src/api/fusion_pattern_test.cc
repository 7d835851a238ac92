// User fusion patterns through the public API: registered chains fuse in the bundled models,
// are reported under their names, verify against the unfused nodes, and fail clearly.
#include "nnfuse/fusion_pattern.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "nnfuse/nnfuse.h"
#include "runtime/npy.h"

namespace nnfuse {
namespace fusion_pattern_test {

const std::string kDir = std::string(NNFUSE_SOURCE_DIR) + "/models/";

// Registers for the test's duration.
struct Registered {
  explicit Registered(FusionPattern p) : name(p.name) { register_fusion_pattern(std::move(p)); }
  ~Registered() { unregister_fusion_pattern(name); }
  std::string name;
};

std::vector<TensorInfo> same_as_first(const std::vector<TensorInfo>& in, const PatternContext&) {
  return {in[0]};
}

FusionPattern mish() {
  FusionPattern p;
  p.name = "Mish";
  p.ops = {"Softplus", "Tanh", "Mul"};
  p.infer_shape = same_as_first;
  p.compute = [](const std::vector<Tensor>& in, const PatternContext&) {
    Tensor y(DType::kFloat32, in[0].shape());
    const float* x = in[0].data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      y.data<float>()[i] = x[i] * std::tanh(std::log1p(std::exp(x[i])));
    }
    return std::vector<Tensor>{y};
  };
  return p;
}

// BatchNormalization (inference) then Relu, per channel of an NCHW tensor: inputs X, scale,
// bias, mean, var; epsilon from the BatchNormalization node (node 0).
FusionPattern bn_relu() {
  FusionPattern p;
  p.name = "MyBnRelu";
  p.ops = {"BatchNormalization", "Relu"};
  p.infer_shape = same_as_first;
  p.compute = [](const std::vector<Tensor>& in, const PatternContext& ctx) {
    if (in.size() != 5) throw std::invalid_argument("expected 5 inputs");
    const double eps = ctx.attr_float(0, "epsilon", 1e-5);
    const Tensor& x = in[0];
    Tensor y(DType::kFloat32, x.shape());
    const int64_t c = x.dim(1), inner = x.numel() / x.dim(0) / c;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t ch = (i / inner) % c;
      const double s = in[1].data<float>()[ch] / std::sqrt(in[4].data<float>()[ch] + eps);
      const double v = (x.data<float>()[i] - in[3].data<float>()[ch]) * s + in[2].data<float>()[ch];
      y.data<float>()[i] = static_cast<float>(std::max(v, 0.0));
    }
    return std::vector<Tensor>{y};
  };
  return p;
}

const nlohmann::json& pass_entry(const nlohmann::json& report, const std::string& name) {
  return report.at("graph_fusion").at(name);
}

int fused_nodes_of(const nlohmann::json& report, const std::string& pass) {
  int n = 0;
  for (const auto& f : report.at("fused_nodes")) n += f.at("pass") == pass;
  return n;
}

TEST(FusionPattern, MishFusesReportsAndVerifies) {
  Registered r(mish());
  EXPECT_EQ(registered_fusion_patterns(), std::vector<std::string>{"Mish"});
  const Model m = compile(kDir + "tiny_mlp.onnx");
  const nlohmann::json report = nlohmann::json::parse(m.report_json());
  EXPECT_EQ(pass_entry(report, "Mish").at("effect_times"), 2);
  EXPECT_EQ(fused_nodes_of(report, "Mish"), 2);
  const VerifyResult v = m.verify();
  EXPECT_TRUE(v.pass) << v.outputs[0].relative_error;
  // The pattern's output is the model's: PyTorch's result.
  const Tensor x = load_tensor_file(kDir + "tiny_mlp_input.npy");
  const Tensor want = load_tensor_file(kDir + "tiny_mlp_probs.npy");
  const Tensor y = Session(m).run({{"x", x}}).at("probs");
  double err = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    err = std::max(err, std::abs(y.double_at(i) - want.double_at(i)));
  }
  EXPECT_LE(err, 1e-5);
}

TEST(FusionPattern, AttributesAndSeveralInputsReachCompute) {
  FusionPattern p = bn_relu();
  int checked = 0;
  p.infer_shape = [&checked](const std::vector<TensorInfo>& in, const PatternContext& ctx) {
    // X, scale, bias, mean, var: inputs 0-4 of the BatchNormalization (node 0); the Relu's
    // input is the chain's own.
    EXPECT_EQ(ctx.num_inputs(), 5u);
    EXPECT_EQ(ctx.source(0), (PatternContext::InputSource{0, 0}));
    EXPECT_EQ(ctx.source(4), (PatternContext::InputSource{0, 4}));
    EXPECT_EQ(ctx.input_index(0, 3), 3);
    EXPECT_EQ(ctx.input_index(1, 0), -1);
    EXPECT_EQ(ctx.op(1), "Relu");
    ++checked;
    return std::vector<TensorInfo>{in[0]};
  };
  Registered r(p);
  const Model m = compile(kDir + "tiny_resnet.onnx");
  const nlohmann::json report = nlohmann::json::parse(m.report_json());
  // The stem's and both blocks' first BN + ReLU (the others' BN feeds an Add).
  EXPECT_EQ(pass_entry(report, "MyBnRelu").at("effect_times"), 3);
  EXPECT_EQ(checked, 3);
  for (const auto& f : report.at("fused_nodes")) {
    if (f.at("pass") == "MyBnRelu") {
      EXPECT_EQ(f.at("fused_from").size(), 2u);
    }
  }
  EXPECT_TRUE(m.verify().pass);
}

TEST(FusionPattern, ASwitchFileTurnsItOff) {
  Registered r(mish());
  const std::string path =
      (std::filesystem::temp_directory_path() / "nnfuse_pattern_switch.cfg").string();
  std::ofstream(path) << R"({"Switch":{"GraphFusion":{"Mish":"off"}}})";
  CompileOptions o;
  o.switch_file = path;
  const nlohmann::json report =
      nlohmann::json::parse(compile(kDir + "tiny_mlp.onnx", o).report_json());
  EXPECT_FALSE(report.at("graph_fusion").contains("Mish"));
  std::filesystem::remove(path);
}

TEST(FusionPattern, AContradictingInferShapeLeavesTheMatchUnfused) {
  FusionPattern p = mish();
  p.name = "WrongMish";
  p.infer_shape = [](const std::vector<TensorInfo>& in, const PatternContext&) {
    TensorInfo t = in[0];
    t.shape.push_back(2);
    return std::vector<TensorInfo>{t};
  };
  Registered r(p);
  const Model m = compile(kDir + "tiny_mlp.onnx");
  const nlohmann::json report = nlohmann::json::parse(m.report_json());
  const auto& e = pass_entry(report, "WrongMish");
  EXPECT_EQ(e.at("match_times"), 2);
  EXPECT_EQ(e.at("effect_times"), 0);
  ASSERT_EQ(e.at("rejected").size(), 2u);
  const std::string why = e.at("rejected")[0].at("reason");
  EXPECT_NE(why.find("infer_shape gave [64, 256, 2]"), std::string::npos) << why;
  EXPECT_TRUE(m.verify().pass);  // the built-in fusions still run
}

TEST(FusionPattern, AThrowingComputeFailsTheRunNamingPatternAndNode) {
  FusionPattern p = mish();
  p.name = "BrokenMish";
  p.compute = [](const std::vector<Tensor>&, const PatternContext&) -> std::vector<Tensor> {
    throw std::runtime_error("out of ideas");
  };
  Registered r(p);
  const Model m = compile(kDir + "tiny_mlp.onnx");
  const Tensor x = load_tensor_file(kDir + "tiny_mlp_input.npy");
  try {
    Session(m).run({{"x", x}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    const std::string what = e.what();
    EXPECT_NE(what.find("fusion pattern 'BrokenMish' (node '"), std::string::npos) << what;
    EXPECT_NE(what.find("out of ideas"), std::string::npos) << what;
  }
}

TEST(FusionPattern, AWrongOutputShapeFailsTheRun) {
  FusionPattern p = mish();
  p.name = "ShortMish";
  p.compute = [](const std::vector<Tensor>&, const PatternContext&) {
    return std::vector<Tensor>{Tensor(DType::kFloat32, {3})};
  };
  Registered r(p);
  const Model m = compile(kDir + "tiny_mlp.onnx");
  const Tensor x = load_tensor_file(kDir + "tiny_mlp_input.npy");
  try {
    Session(m).run({{"x", x}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("has shape [3]"), std::string::npos) << e.what();
  }
}

TEST(FusionPattern, RegistrationIsChecked) {
  FusionPattern p = mish();
  p.name = "";
  EXPECT_THROW(register_fusion_pattern(p), Error);
  p.name = "OneOp";
  p.ops = {"Relu"};
  EXPECT_THROW(register_fusion_pattern(p), Error);
  p = mish();
  p.compute = nullptr;
  EXPECT_THROW(register_fusion_pattern(p), Error);
  Registered r(mish());
  try {
    register_fusion_pattern(mish());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("already registered"), std::string::npos);
  }
  EXPECT_FALSE(unregister_fusion_pattern("NoSuchPattern"));
}

TEST(FusionPattern, AFusedModelNeedsItsPatternToRun) {
  std::string bytes;
  {
    Registered r(mish());
    bytes = compile(kDir + "tiny_mlp.onnx").serialize();
  }
  CompileOptions as_is;
  as_is.fusion = false;
  const Model m = compile_bytes(bytes, as_is);
  try {
    Session(m).run({{"x", load_tensor_file(kDir + "tiny_mlp_input.npy")}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Mish' is not registered"), std::string::npos)
        << e.what();
  }
}

}  // namespace fusion_pattern_test
}  // namespace nnfuse
