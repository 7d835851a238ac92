// The ONNX backend node tests (Debian's libonnx-testdata) run through the `nnfuse` CLI, as
// ONNX's own runner does: each test directory holds model.onnx and test_data_set_0 with
// input_*.pb and output_*.pb. A test whose model nnfuse reports as unsupported (exit 3,
// before running anything) is skipped with the reason; every other test must match the
// expected outputs within rtol 1e-3, atol 1e-7.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "onnx/tensor_proto.h"
#include "runtime/npy.h"
#include "tests/test_support.h"

namespace nnfuse {
namespace {

namespace fs = std::filesystem;

std::string g_nnfuse;
std::string g_data = "/usr/share/libonnx-testdata/data/node";

// Every node test, or every Nth in name order with $NNFUSE_NODE_TEST_SAMPLE=N (a sanitizer
// build's sample; --min-pass applies to full runs only).
std::vector<std::string> test_dirs() {
  std::vector<std::string> r;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(g_data, ec)) {
    if (fs::exists(e.path() / "model.onnx")) r.push_back(e.path().filename().string());
  }
  std::sort(r.begin(), r.end());
  const char* s = std::getenv("NNFUSE_NODE_TEST_SAMPLE");
  const int every = s ? std::atoi(s) : 1;
  if (every > 1) {
    std::vector<std::string> kept;
    for (size_t i = 0; i < r.size(); i += static_cast<size_t>(every)) kept.push_back(r[i]);
    r = std::move(kept);
  }
  return r;
}

bool close_enough(const Tensor& got, const Tensor& want, std::string* why) {
  if (got.dtype() != want.dtype()) {
    *why = "dtype " + dtype_name(got.dtype()) + " vs expected " + dtype_name(want.dtype());
    return false;
  }
  if (got.shape() != want.shape()) {
    *why = "shape " + dims_str(got.shape()) + " vs expected " + dims_str(want.shape());
    return false;
  }
  bool is_float = dtype_is_float(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.double_at(i), w = want.double_at(i);
    bool ok;
    if (!is_float) {
      ok = got.int_at(i) == want.int_at(i);
    } else if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else {
      ok = std::abs(g - w) <= 1e-7 + 1e-3 * std::abs(w);
    }
    if (!ok) {
      *why = "element " + std::to_string(i) + ": " + std::to_string(g) + " vs expected " +
             std::to_string(w);
      return false;
    }
  }
  return true;
}

class NodeTest : public ::testing::TestWithParam<std::string> {};

// "" when tensor `t` fits the static shape the model declares for input `in`, else what differs
// (some of Debian's CastLike bfloat16 tests give a [1] tensor for a [3, 4] input).
std::string shape_defect(const onnx::TensorProto& t, const onnx::ValueInfoProto& in) {
  if (!in.type().tensor_type().has_shape()) return "";
  const auto& dims = in.type().tensor_type().shape().dim();
  std::vector<int64_t> want;
  for (const auto& d : dims) {
    if (!d.has_dim_value()) return "";
    want.push_back(d.dim_value());
  }
  const std::vector<int64_t> got(t.dims().begin(), t.dims().end());
  if (got == want) return "";
  return "input '" + in.name() + "' is " + dims_str(got) + " where the model declares " +
         dims_str(want);
}

// The input file `f` (holding `t`) for a model input of type `elem_type`. The test data of ONNX
// releases before 1.13 (Debian's) stores bfloat16 tensors as their uint16 bit patterns; such a
// file is written again into `tmp` as the bfloat16 tensor it stands for (same bits).
std::string input_file(const fs::path& f, onnx::TensorProto t, int elem_type,
                       const std::string& tmp) {
  if (elem_type != onnx::TensorProto::BFLOAT16 || t.data_type() != onnx::TensorProto::UINT16) {
    return f.string();
  }
  t.set_data_type(onnx::TensorProto::BFLOAT16);
  const fs::path out = fs::path(tmp) / f.filename();
  std::ofstream o(out, std::ios::binary);
  t.SerializeToOstream(&o);
  return out.string();
}

TEST_P(NodeTest, MatchesExpectedOutputs) {
  fs::path dir = fs::path(g_data) / GetParam();
  fs::path data = dir / "test_data_set_0";
  onnx::ModelProto m;
  {
    std::ifstream f(dir / "model.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&f));
  }
  std::set<std::string> inits;
  for (auto& i : m.graph().initializer()) inits.insert(i.name());
  std::vector<std::string> args = {g_nnfuse, "run", (dir / "model.onnx").string()};
  std::string out = testing::make_temp_dir("nnfuse-node");
  const std::string inputs_dir = testing::make_temp_dir("nnfuse-node-in");
  int k = 0;
  for (auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    fs::path f = data / ("input_" + std::to_string(k++) + ".pb");
    if (!fs::exists(f)) break;  // trailing optional inputs may be left out
    onnx::TensorProto t;
    {
      std::ifstream s(f, std::ios::binary);
      ASSERT_TRUE(t.ParseFromIstream(&s)) << f;
    }
    if (std::string defect = shape_defect(t, in); !defect.empty()) {
      fs::remove_all(out);
      fs::remove_all(inputs_dir);
      GTEST_SKIP() << "defect in the test data, not a result: " << defect;
    }
    args.push_back("--input");
    args.push_back(in.name() + "=" +
                   input_file(f, std::move(t), in.type().tensor_type().elem_type(), inputs_dir));
  }
  args.push_back("--output-dir");
  args.push_back(out);
  auto r = testing::run_command(args, 120);
  fs::remove_all(inputs_dir);
  if (r.exit_code == 3) {
    fs::remove_all(out);
    GTEST_SKIP() << r.output;
  }
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int i = 0; i < m.graph().output_size(); ++i) {
    fs::path want_file = data / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(want_file)) continue;
    Tensor want = load_tensor_pb(want_file.string());
    std::string name = m.graph().output(i).name();
    Tensor got = load_npy((fs::path(out) / (name + ".npy")).string());
    std::string why;
    EXPECT_TRUE(close_enough(got, want, &why)) << "output '" << name << "': " << why;
  }
  fs::remove_all(out);
}

// Import -> export -> import gives the same graph, and the export passes the ONNX checker.
TEST_P(NodeTest, RoundTrips) {
  fs::path model = fs::path(g_data) / GetParam() / "model.onnx";
  std::unique_ptr<Graph> g;
  try {
    g = load_onnx(model.string());
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUnsupported) GTEST_SKIP() << e.what();
    throw;
  }
  onnx::ModelProto out;
  try {
    graph_to_model(*g, &out);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUnsupported) GTEST_SKIP() << e.what();
    throw;
  }
  EXPECT_NO_THROW(onnx::checker::check_model(out));
  auto g2 = load_onnx_from_string(out.SerializeAsString(), model.parent_path().string(), "export");
  EXPECT_EQ(graph_to_text(*g), graph_to_text(*g2));
}

INSTANTIATE_TEST_SUITE_P(Onnx, NodeTest, ::testing::ValuesIn(test_dirs()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace nnfuse

// With --min-pass N, a run of every node test also fails unless at least N of them match
// their expected outputs (skipped ones do not count): the pass count only goes up.
int main(int argc, char** argv) {
  std::string min_pass;
  int rc = nnfuse::testing::test_main(
      argc, argv,
      {{"--nnfuse", &nnfuse::g_nnfuse}, {"--data", &nnfuse::g_data}, {"--min-pass", &min_pass}},
      {"--nnfuse"},
      "conformance_test --nnfuse PATH/TO/nnfuse [--data NODE_TEST_DIR] [--min-pass N]");
  if (rc != 0 || min_pass.empty()) return rc;
  const auto& unit = *::testing::UnitTest::GetInstance();
  int ran = 0, passed = 0;
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const auto& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const auto& t = *suite.GetTestInfo(j);
      if (!t.should_run() || std::string(t.name()).rfind("MatchesExpectedOutputs", 0) != 0)
        continue;
      ++ran;
      if (t.result()->Passed() && !t.result()->Skipped()) ++passed;
    }
  }
  const int total = static_cast<int>(nnfuse::test_dirs().size());
  const char* sample = std::getenv("NNFUSE_NODE_TEST_SAMPLE");
  const bool sampled = sample && std::atoi(sample) > 1;
  std::printf("node tests matching their expected outputs: %d of %d%s\n", passed, total,
              sampled ? " (a sample: $NNFUSE_NODE_TEST_SAMPLE)" : "");
  if (!sampled && ran == total && passed < std::stoi(min_pass)) {
    std::fprintf(stderr, "only %d node tests pass, fewer than --min-pass %s\n", passed,
                 min_pass.c_str());
    return 1;
  }
  return 0;
}
