#include "api/compile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace nnfuse {
namespace compile_test {

const std::string kModel = std::string(NNFUSE_SOURCE_DIR) + "/models/tiny_resnet.onnx";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count_op(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

TEST(Compile, FusesTheBundledModel) {
  CompileResult r = compile_model_file(kModel);
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(r.imported_nodes, 22u);
  EXPECT_LT(r.graph->num_nodes(), r.imported_nodes);
  EXPECT_EQ(count_op(*r.graph, "BatchNormalization"), 0u);
  EXPECT_FALSE(r.report.fused.empty());
  EXPECT_GE(r.load_s, 0.0);
  EXPECT_GE(r.fuse_s, 0.0);
}

TEST(Compile, WithoutFusionTheGraphIsAsImported) {
  CompileOptions o;
  o.fusion = false;
  CompileResult r = compile_model_file(kModel, o);
  EXPECT_EQ(r.graph->num_nodes(), 22u);
  EXPECT_EQ(count_op(*r.graph, "BatchNormalization"), 6u);
  EXPECT_TRUE(r.report.fused.empty());
}

TEST(Compile, FromBytesAsFromTheFile) {
  const CompileResult from_file = compile_model_file(kModel);
  const CompileResult from_bytes = compile_model_bytes(read_file(kModel), "tiny_resnet", "");
  EXPECT_EQ(from_bytes.graph->num_nodes(), from_file.graph->num_nodes());
  EXPECT_EQ(from_bytes.report.fused.size(), from_file.report.fused.size());
  try {
    compile_model_bytes("not a model", "in-memory model", "");
    FAIL() << "garbage bytes compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("in-memory model"), std::string::npos) << e.what();
  }
}

TEST(Compile, SwitchFileTurnsPassesOff) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "nnfuse_compile_test_switches.txt").string();
  { std::ofstream(path) << "ConvBatchnormFusionPass:off\nBatchNormScaleShiftPass:off\n"; }
  CompileOptions o;
  o.switch_file = path;
  CompileResult r = compile_model_file(kModel, o);
  EXPECT_EQ(count_op(*r.graph, "BatchNormalization"), 6u);
  std::filesystem::remove(path);
}

TEST(Compile, BadOptionsAreErrorsNamingThem) {
  CompileOptions missing;
  missing.switch_file = "/nonexistent/switches.json";
  try {
    compile_model_file(kModel, missing);
    FAIL() << "a missing switch file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/switches.json"), std::string::npos)
        << e.what();
  }
  CompileOptions shapes;
  shapes.input_shapes["no_such_input"] = {1, 3, 32, 32};
  EXPECT_THROW(compile_model_file(kModel, shapes), Error);
  CompileOptions dump;
  dump.dump_dir = "/tmp";
  EXPECT_THROW(compile_model_file(kModel, dump), Error);  // a folder with no format
  EXPECT_THROW(compile_model_file("/nonexistent/model.onnx"), Error);
}

TEST(Compile, InputShapesSpecializeTheGraph) {
  CompileOptions o;
  o.input_shapes["input"] = {2, 3, 16, 16};
  CompileResult r = compile_model_file(kModel, o);
  const Value* in = r.graph->runtime_inputs().at(0);
  ASSERT_TRUE(in->shape().fully_known());
  EXPECT_EQ(in->shape().static_dims(), (Dims{2, 3, 16, 16}));
  for (const Value* out : r.graph->outputs()) EXPECT_TRUE(out->shape().fully_known());
}

}  // namespace compile_test
}  // namespace nnfuse
