// Bad input never crashes nnfuse: each case gives a one-line error naming the problem and a
// non-zero exit code.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "ir/tensor.h"
#include "onnx/test_models.h"
#include "runtime/npy.h"
#include "tests/test_support.h"

namespace nnfuse {
namespace {

namespace fs = std::filesystem;
std::string g_nnfuse;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir("nnfuse-bad");
    write_model("good.onnx", testing::small_model());
    save_npy(path("x.npy"), Tensor(DType::kFloat32, {2, 3}));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& f) const { return (fs::path(dir_) / f).string(); }
  void write_model(const std::string& f, const onnx::ModelProto& m) {
    write_bytes(f, m.SerializeAsString());
  }
  void write_bytes(const std::string& f, const std::string& bytes) {
    fs::create_directories(fs::path(path(f)).parent_path());
    std::ofstream(path(f), std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // Runs nnfuse and checks: no crash, non-zero exit, exactly one line that names `expect`.
  void expect_error(std::vector<std::string> args, const std::string& expect) {
    args.insert(args.begin(), g_nnfuse);
    auto r = testing::run_command(args, 60);
    EXPECT_EQ(r.signal, 0) << "crashed: " << r.output;
    EXPECT_GT(r.exit_code, 0) << r.output;
    std::string out = r.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    EXPECT_EQ(out.find('\n'), std::string::npos) << "more than one line:\n" << r.output;
    EXPECT_EQ(out.rfind("nnfuse: error: ", 0), 0u) << r.output;
    EXPECT_NE(out.find(expect), std::string::npos)
        << "expected '" << expect << "' in: " << r.output;
  }

  std::string dir_;
};

TEST_F(BadInput, GoodModelRuns) {
  auto r =
      testing::run_command({g_nnfuse, "run", path("good.onnx"), "--input", "x=" + path("x.npy")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(BadInput, TruncatedModel) {
  std::string bytes = testing::small_model().SerializeAsString();
  write_bytes("cut.onnx", bytes.substr(0, bytes.size() / 2));
  expect_error({"run", path("cut.onnx"), "--input", "x=" + path("x.npy")}, "cut.onnx");
}

TEST_F(BadInput, RandomBytes) {
  std::mt19937 rng(1);
  for (int i = 0; i < 5; ++i) {
    std::string junk(1000 + 100 * i, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    write_bytes("junk.onnx", junk);
    expect_error({"run", path("junk.onnx"), "--input", "x=" + path("x.npy")}, "junk.onnx");
    expect_error({"info", path("junk.onnx")}, "junk.onnx");
  }
}

TEST_F(BadInput, MissingFile) {
  expect_error({"run", path("nothere.onnx")}, "nothere.onnx: no such file");
}

TEST_F(BadInput, MissingInput) { expect_error({"run", path("good.onnx")}, "missing input 'x'"); }

TEST_F(BadInput, WrongShapeInput) {
  save_npy(path("x43.npy"), Tensor(DType::kFloat32, {4, 4}));
  expect_error({"run", path("good.onnx"), "--input", "x=" + path("x43.npy")},
               "input 'x' has shape [4, 4]");
}

// A fixed dim or a rank other than the graph input's is refused before anything runs, with
// exit 1, naming the input and both shapes; a symbolic dim (batch) takes any size.
TEST_F(BadInput, InputShapeTheModelForbidsIsRefused) {
  auto m = testing::small_model();
  auto* dims =
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->add_dim()->set_dim_value(4);                       // x: [batch, 3, 4]
  m.mutable_graph()->mutable_initializer(0)->add_dims(1);  // w: [3, 1]
  write_model("fixed.onnx", m);
  save_npy(path("x234.npy"), Tensor(DType::kFloat32, {2, 3, 4}));
  auto ok = testing::run_command(
      {g_nnfuse, "run", path("fixed.onnx"), "--input", "x=" + path("x234.npy")});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  struct Case {
    Dims shape;
    std::string expect;
  };
  for (const Case& c :
       {Case{{2, 3, 5}, "input 'x' has shape [2, 3, 5]; the model expects [batch, 3, 4] (dim 2)"},
        Case{{2, 3}, "input 'x' has shape [2, 3]; the model expects [batch, 3, 4] (rank 2, not 3)"},
        Case{
            {1, 2, 3, 4},
            "input 'x' has shape [1, 2, 3, 4]; the model expects [batch, 3, 4] (rank 4, not 3)"}}) {
    save_npy(path("bad.npy"), Tensor(DType::kFloat32, c.shape));
    std::vector<std::string> args = {"run", path("fixed.onnx"), "--input", "x=" + path("bad.npy")};
    expect_error(args, c.expect);
    args.insert(args.begin(), g_nnfuse);
    EXPECT_EQ(testing::run_command(args).exit_code, 1);
  }
}

TEST_F(BadInput, WrongDtypeInput) {
  save_npy(path("xi.npy"), Tensor(DType::kInt64, {2, 3}));
  expect_error({"run", path("good.onnx"), "--input", "x=" + path("xi.npy")},
               "input 'x' has type int64");
}

TEST_F(BadInput, UnknownInputName) {
  expect_error({"run", path("good.onnx"), "--input", "x=" + path("x.npy"), "--input",
                "nope=" + path("x.npy")},
               "no input named 'nope'");
}

TEST_F(BadInput, CorruptInputFile) {
  write_bytes("bad.npy", "\x93NUMPY\x01\x00garbage");
  expect_error({"run", path("good.onnx"), "--input", "x=" + path("bad.npy")}, "bad.npy");
  // A .npy whose header claims a shape whose size overflows 64 bits.
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 16), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  npy += static_cast<char>(header.size() & 0xff);
  npy += static_cast<char>(header.size() >> 8);
  write_bytes("huge.npy", npy + header);
  expect_error({"run", path("good.onnx"), "--input", "x=" + path("huge.npy")}, "64 bits");
}

TEST_F(BadInput, ExternalDataOutsideModelFolder) {
  auto m = testing::small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("../secret.bin");
  write_bytes("secret.bin", std::string(12, '\0'));
  write_model("sub/escape.onnx", m);
  expect_error({"run", path("sub/escape.onnx"), "--input", "x=" + path("x.npy")},
               "outside the model's folder");
}

TEST_F(BadInput, OverflowingTensorSize) {
  auto m = testing::small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 40);
  w->add_dims(int64_t{1} << 40);
  write_model("overflow.onnx", m);
  expect_error({"run", path("overflow.onnx"), "--input", "x=" + path("x.npy")}, "64 bits");
}

TEST_F(BadInput, ActivationsTooLargeForTheMachineAreNamed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on a 2 TiB allocation instead of failing it";
#endif
  // x + ConstantOfShape([100000, 100000, 64]): 2.3 TiB of activations.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("huge");
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
  auto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(3);
  for (int64_t d : {100000, 100000, 64}) shape->add_int64_data(d);
  auto* c = g->add_node();
  c->set_op_type("ConstantOfShape");
  c->add_input("shape");
  c->add_output("big");
  auto* a = g->add_node();
  a->set_op_type("Add");
  a->add_input("x");
  a->add_input("big");
  a->add_output("y");
  g->add_output()->set_name("y");
  write_model("huge.onnx", m);
  save_npy(path("x1.npy"), Tensor(DType::kFloat32, {1}));
  expect_error({"run", path("huge.onnx"), "--input", "x=" + path("x1.npy")},
               "out of memory: the activations need 2.3 TiB, the largest 'big' "
               "float32[100000, 100000, 64] 2.3 TiB");
}

TEST_F(BadInput, UnsupportedOpsAreAllReportedBeforeRunning) {
  auto m = testing::small_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  m.mutable_graph()->mutable_node(1)->set_op_type("AlsoMissing");
  m.mutable_graph()->mutable_node(0)->set_domain("custom.domain");
  m.mutable_graph()->mutable_node(1)->set_domain("custom.domain");
  auto* o = m.add_opset_import();
  o->set_domain("custom.domain");
  o->set_version(1);
  write_model("unsupported.onnx", m);
  std::vector<std::string> args = {g_nnfuse, "run", path("unsupported.onnx"), "--input",
                                   "x=" + path("x.npy")};
  auto r = testing::run_command(args);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("2 unsupported nodes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NoSuchOp"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("AlsoMissing"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("relu"), std::string::npos) << r.output;
}

TEST_F(BadInput, UnknownFlagsAreErrors) {
  auto r = testing::run_command({g_nnfuse, "run", path("good.onnx"), "--frobnicate"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = testing::run_command({g_nnfuse, "info", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--graph"), std::string::npos);
  r = testing::run_command({g_nnfuse, "no-such-command"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace nnfuse

int main(int argc, char** argv) {
  return nnfuse::testing::test_main(argc, argv, {{"--nnfuse", &nnfuse::g_nnfuse}}, {"--nnfuse"},
                                    "bad_input_test --nnfuse PATH/TO/nnfuse");
}
