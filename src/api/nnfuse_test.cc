// The public API (nnfuse/nnfuse.h) on the bundled model: compile, inspect, save, run (from
// caller-owned memory, from many threads), and its errors.
#include "nnfuse/nnfuse.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

#include "ir/graph.h"
#include "onnx/exporter.h"
#include "runtime/npy.h"

namespace nnfuse {
namespace nnfuse_test {

const std::string kDir = std::string(NNFUSE_SOURCE_DIR) + "/models/";

double max_rel_error(const Tensor& got, const Tensor& want) {
  double scale = 0, err = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, std::abs(want.double_at(i)));
    err = std::max(err, std::abs(got.double_at(i) - want.double_at(i)));
  }
  return err / scale;
}

TEST(Api, CompileInspectAndRun) {
  const Model m = compile(kDir + "tiny_resnet.onnx");
  EXPECT_EQ(m.num_imported_nodes(), 22u);
  EXPECT_LT(m.num_nodes(), m.num_imported_nodes());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "input");
  EXPECT_EQ(m.inputs()[0].dtype, DType::kFloat32);
  ASSERT_EQ(m.outputs().size(), 1u);
  const nlohmann::json report = nlohmann::json::parse(m.report_json());
  EXPECT_NE(m.report_json().find("ConvBatchnormFusionPass"), std::string::npos);
  EXPECT_TRUE(report.is_object());

  const Tensor x = load_tensor_file(kDir + "tiny_resnet_input.npy");
  const Tensor want = load_tensor_file(kDir + "tiny_resnet_logits.npy");
  const Session s(m, {.threads = 2});
  const auto out = s.run({{"input", x}});
  ASSERT_EQ(out.size(), 1u);
  const Tensor& y = out.at(m.outputs()[0].name);
  ASSERT_EQ(y.shape(), want.shape());
  EXPECT_LE(max_rel_error(y, want), 1e-4);

  // Caller-owned memory is read in place, with the same result.
  std::vector<float> buffer(static_cast<size_t>(x.numel()));
  std::memcpy(buffer.data(), x.raw(), x.nbytes());
  const Tensor borrowed = Tensor::borrow(DType::kFloat32, x.shape(), buffer.data());
  EXPECT_EQ(borrowed.raw(), static_cast<const void*>(buffer.data()));
  const Tensor y2 = s.run({{"input", borrowed}}).at(m.outputs()[0].name);
  EXPECT_EQ(std::memcmp(y2.raw(), y.raw(), y.nbytes()), 0);
}

TEST(Api, SaveThenRunTheFusedModel) {
  const Model m = compile(kDir + "tiny_resnet.onnx");
  const std::string path =
      (std::filesystem::temp_directory_path() / "nnfuse_api_test.fused.onnx").string();
  m.save(path);
  CompileOptions as_is;
  as_is.fusion = false;
  const Model again = compile(path, as_is);
  EXPECT_EQ(again.num_nodes(), m.num_nodes());
  const Model from_bytes = compile_bytes(m.serialize(), as_is);
  EXPECT_EQ(from_bytes.num_nodes(), m.num_nodes());
  const Tensor x = load_tensor_file(kDir + "tiny_resnet_input.npy");
  const std::string out = m.outputs()[0].name;
  const Tensor a = Session(m).run({{"input", x}}).at(out);
  const Tensor b = Session(again).run({{"input", x}}).at(out);
  EXPECT_LE(max_rel_error(b, a), 1e-6);
  std::filesystem::remove(path);
}

TEST(Api, SaveForOnnxRuntime) {
  const Model m = compile(kDir + "tiny_resnet.onnx");
  const std::string ort = m.serialize(SaveFormat::kOnnxRuntime);
  EXPECT_NE(ort.find("com.microsoft"), std::string::npos);
  EXPECT_EQ(ort.find("ai.nnfuse"), std::string::npos);
  EXPECT_NE(m.serialize().find("ai.nnfuse"), std::string::npos);
}

TEST(Api, OneSessionFromEightThreads) {
  const Model m = compile(kDir + "tiny_resnet.onnx");
  const Session s(m);
  const std::string out = m.outputs()[0].name;
  std::vector<Tensor> xs, want;
  for (int k = 0; k < 8; ++k) {
    Tensor x(DType::kFloat32, {1, 3, 32, 32});
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data<float>()[i] = static_cast<float>((i * 13 + k * 7) % 97) / 48.0f - 1.0f;
    }
    want.push_back(s.run({{"input", x}}).at(out));
    xs.push_back(std::move(x));
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 4; ++r) {
        const int k = (t + r) % 8;
        const Tensor y = s.run({{"input", xs[k]}}).at(out);
        if (std::memcmp(y.raw(), want[k].raw(), y.nbytes()) != 0) ++bad;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Api, VerifyComparesTheFusedModelWithTheUnfusedOne) {
  const Model m = compile(kDir + "tiny_resnet.onnx");
  const VerifyResult v = m.verify();
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.rtol, 1e-4);
  ASSERT_EQ(v.outputs.size(), 1u);
  EXPECT_EQ(v.outputs[0].name, m.outputs()[0].name);
  EXPECT_GT(v.outputs[0].max_magnitude, 0.0);
  EXPECT_LE(v.outputs[0].relative_error, 1e-4);
  // A tolerance below what the fusion changes fails, and says by how much.
  const VerifyResult strict = m.verify(1e-30);
  if (strict.outputs[0].relative_error > 1e-30) {
    EXPECT_FALSE(strict.pass);
  }
  // From bytes too.
  std::ifstream in(kDir + "tiny_mlp.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(compile_bytes(bytes).verify().pass);
}

TEST(Api, ErrorsCarryTheirKind) {
  try {
    compile("/nonexistent/model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
  }
  const Session s(compile(kDir + "tiny_resnet.onnx"));
  try {
    s.run({});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("input"), std::string::npos) << e.what();
  }
  try {
    s.run({{"input", Tensor(DType::kFloat32, {1, 3, 31, 32})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
  EXPECT_THROW(Tensor::borrow(DType::kFloat32, {2, 2}, nullptr), Error);
}

TEST(Api, ProfileTimesEveryKernelAndWritesATrace) {
  const Model m = compile(kDir + "tiny_resnet.onnx");
  const Session s(m, {.threads = 1});
  const std::string trace =
      (std::filesystem::temp_directory_path() / "nnfuse_api_profile.json").string();
  const Profile p = s.profile({}, 3, trace);
  EXPECT_EQ(p.runs, 3);
  EXPECT_GT(p.run_ms, 0.0);
  ASSERT_FALSE(p.kernels.empty());
  double sum = 0;
  bool conv = false;
  for (const KernelTime& k : p.kernels) {
    sum += k.ms;
    conv = conv || (k.op == "FusedConv" && k.kernel.rfind("onednn", 0) == 0);
    EXPECT_FALSE(k.name.empty());
  }
  EXPECT_TRUE(conv);
  EXPECT_LE(sum, p.run_ms * 1.01);
  std::ifstream f(trace);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("traceEvents").size(), 3 * p.kernels.size());
  std::filesystem::remove(trace);
  EXPECT_THROW(s.profile({}, 0), Error);
}

// Conv -> Relu on [batch, 3, 8, 8] with a symbolic batch.
std::string symbolic_batch_conv() {
  Graph g;
  g.opsets[""] = 13;
  Shape xs = Shape::of({1, 3, 8, 8});
  xs.dims[0] = Dim{-1, "batch"};
  Value* x = g.add_value("x", DType::kFloat32, xs);
  g.add_input(x);
  Tensor w(DType::kFloat32, {4, 3, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  Value* wv = g.add_value("w", DType::kFloat32, Shape::of(w.shape()));
  wv->set_constant(w);
  Shape ys = Shape::of({1, 4, 8, 8});
  ys.dims[0] = Dim{-1, "batch"};
  Value* c = g.add_value("c", DType::kFloat32, ys);
  Node* conv = g.add_node("Conv", "conv", {x, wv}, {c});
  Attribute pads;
  pads.kind = Attribute::Kind::kInts;
  pads.ints = {1, 1, 1, 1};
  conv->set_attr("pads", pads);
  Value* y = g.add_value("y", DType::kFloat32, ys);
  g.add_node("Relu", "relu", {c}, {y});
  g.add_output(y);
  return export_onnx_string(g);
}

TEST(Api, SymbolicDimsRunOnFastKernelsAtEveryShape) {
  // A session of a model with a symbolic batch compiles it again per batch size: with strict
  // on, a conv on the reference kernel (no static shape) would be an error.
  const Model m = compile_bytes(symbolic_batch_conv());
  ASSERT_EQ(m.inputs()[0].shape[0], -1);
  const Session s(m, {.threads = 1, .strict = true});
  CompileOptions as_is;
  as_is.fusion = false;
  for (int64_t batch : {1, 3, 2, 3}) {
    Tensor x(DType::kFloat32, {batch, 3, 8, 8});
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data<float>()[i] = static_cast<float>((i * 5) % 11) / 5.0f - 1.0f;
    }
    const Tensor y = s.run({{"x", x}}).at("y");
    EXPECT_EQ(y.shape(), (Dims{batch, 4, 8, 8}));
    // The reference: the model as imported, on the reference kernels at this batch.
    CompileOptions ref = as_is;
    ref.input_shapes["x"] = {batch, 3, 8, 8};
    const Tensor want = Session(compile_bytes(symbolic_batch_conv(), ref)).run({{"x", x}}).at("y");
    EXPECT_LE(max_rel_error(y, want), 1e-5) << batch;
  }
  // Eight threads at two batch sizes at once.
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const int64_t batch = 1 + t % 2;
      const Tensor y = s.run({{"x", Tensor(DType::kFloat32, {batch, 3, 8, 8})}}).at("y");
      if (y.shape() != Dims{batch, 4, 8, 8}) ++bad;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace nnfuse_test
}  // namespace nnfuse
