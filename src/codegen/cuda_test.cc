// emit_cuda: the source's shape, a compile with nvcc when one is installed, and a run on the
// host (the kernel compiled as C++ under a small shim) against evaluate().
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "codegen/test_cache_dir.h"
#include "codegen/test_reference.h"

namespace nnfuse::codegen {
namespace cuda_test {

namespace fs = std::filesystem;
using testing::expect_close;
using testing::pointers;
using testing::random_inputs;

using CudaTest = CacheDirTest;

// x * sigmoid(y) + erf(tanh(x)) ... : every unary and binary op, a NaN and an inf constant, a
// per-row input [4, 1] and a scalar.
Region elementwise_region() {
  Region r;
  r.output_shape = {4, 9};
  r.input_shapes = {{4, 9}, {4, 1}, {}};
  const int x = r.add_input(0), y = r.add_input(1), s = r.add_input(2);
  int v = r.add_binary(OpKind::kMul, x, r.add_unary(OpKind::kSigmoid, y));
  v = r.add_binary(OpKind::kAdd, v, r.add_unary(OpKind::kErf, r.add_unary(OpKind::kTanh, x)));
  const int ax = r.add_unary(OpKind::kAbs, x);
  v = r.add_binary(
      OpKind::kSub, v,
      r.add_binary(OpKind::kDiv, r.add_unary(OpKind::kLog, r.add_unary(OpKind::kExp, ax)),
                   r.add_unary(OpKind::kSqrt, r.add_binary(OpKind::kAdd, ax, s))));
  v = r.add_binary(OpKind::kMax, v, r.add_unary(OpKind::kNeg, r.add_unary(OpKind::kRelu, y)));
  v = r.add_binary(OpKind::kMin, v, r.add_const(std::numeric_limits<float>::infinity()));
  v = r.add_binary(OpKind::kPow, r.add_unary(OpKind::kAbs, v), r.add_const(1.5f));
  // Max(v, NaN) is v under the select semantics; keeps the NaN literal in the source.
  r.output = r.add_binary(OpKind::kMax, v, r.add_const(std::numeric_limits<float>::quiet_NaN()));
  return r;
}

// exp(x * c - max(x * c)) per element (full output), or sqrt(mean(x * x) + 1e-5) * g per row.
Region row_region(OpKind k, bool row_output) {
  Region r;
  r.domain_shape = {2, 3, 37};
  r.input_shapes = {{2, 3, 37}, {37}, {3, 1}};
  const int x = r.add_input(0);
  if (row_output) {
    r.output_shape = {2, 3};
    const int red = r.add_reduction(k, r.add_binary(OpKind::kMul, x, x));
    r.output = r.add_binary(
        OpKind::kMul,
        r.add_unary(OpKind::kSqrt, r.add_binary(OpKind::kAdd, red, r.add_const(1e-5f))),
        r.add_input(2));
  } else {
    r.output_shape = {2, 3, 37};
    const int xc = r.add_binary(OpKind::kMul, x, r.add_input(1));
    r.output = r.add_unary(OpKind::kExp, r.add_binary(OpKind::kSub, xc, r.add_reduction(k, xc)));
  }
  return r;
}

std::vector<std::pair<std::string, Region>> all_regions() {
  std::vector<std::pair<std::string, Region>> v = {{"cu_ew", elementwise_region()}};
  for (OpKind k :
       {OpKind::kReduceSum, OpKind::kReduceMean, OpKind::kReduceMax, OpKind::kReduceMin}) {
    v.emplace_back(std::string("cu_full_") + op_name(k), row_region(k, false));
    v.emplace_back(std::string("cu_row_") + op_name(k), row_region(k, true));
  }
  return v;
}

TEST(EmitCuda, SourceHasTheKernel) {
  const std::string src = emit_cuda(row_region(OpKind::kReduceMax, true), "my_kernel");
  EXPECT_NE(src.find("extern \"C\" __global__ void my_kernel(const float* const* in, float* out, "
                     "int64_t n)"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("blockIdx.x"), std::string::npos);
  EXPECT_NE(src.find("sqrtf("), std::string::npos);
  EXPECT_EQ(src.find("std::"), std::string::npos) << src;
  EXPECT_THROW(emit_cuda(row_region(OpKind::kReduceMax, true), "bad-name"), std::invalid_argument);
}

// $NNFUSE_NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc; "" when none.
std::string find_nvcc() {
  if (const char* e = std::getenv("NNFUSE_NVCC"); e != nullptr && e[0] != '\0') return e;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      const fs::path p = fs::path(dir.empty() ? "." : dir) / "nvcc";
      if (access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  return {};
}

// Runs nvcc --ptx on `source`; "" on success, else the command and its output.
std::string nvcc_ptx(const std::string& nvcc, const fs::path& dir, const std::string& name,
                     const std::string& source) {
  const fs::path cu = dir / (name + ".cu"), log = dir / (name + ".log");
  std::ofstream(cu) << source;
  const std::string cmd = "'" + nvcc + "' --ptx -Werror all-warnings -o '" +
                          (dir / (name + ".ptx")).string() + "' '" + cu.string() + "' > '" +
                          log.string() + "' 2>&1";
  if (std::system(cmd.c_str()) == 0) return {};
  std::ifstream f(log);
  std::stringstream out;
  out << f.rdbuf();
  return cmd + "\n" + out.str();
}

TEST_F(CudaTest, NvccCompilesTheSource) {
  const std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc ($NNFUSE_NVCC, PATH, /usr/local/cuda/bin)";
  // A failure here is nvcc's own setup (host compiler), not the generated code.
  if (std::string why = nvcc_ptx(nvcc, dir_, "trivial",
                                 "extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n");
      !why.empty()) {
    GTEST_SKIP() << "nvcc cannot compile a trivial kernel:\n" << why;
  }
  for (const auto& [name, r] : all_regions()) {
    const std::string src = emit_cuda(r, name);
    EXPECT_EQ(nvcc_ptx(nvcc, dir_, name, src), "") << src;
  }
}

// The CUDA names the kernels use, for a host build; the wrapper launches a 3 x 5 grid serially.
constexpr const char* kShim = R"(#include <cmath>
#include <cstdint>
#include <cstring>
namespace {
struct Dim3 { unsigned x = 0, y = 0, z = 0; };
Dim3 blockIdx, blockDim, threadIdx, gridDim;
float __int_as_float(int i) { float f; std::memcpy(&f, &i, sizeof f); return f; }
}  // namespace
#define __global__
)";

TEST_F(CudaTest, KernelRunOnTheHostMatchesEvaluate) {
  for (const auto& [name, r] : all_regions()) {
    const std::string host = name + "_host";
    const std::string src = std::string(kShim) + emit_cuda(r, name) + "extern \"C\" void " + host +
                            "(const float* const* in, float* out, int64_t begin, int64_t end) {\n"
                            "  (void)begin;\n  gridDim.x = 3;\n  blockDim.x = 5;\n"
                            "  for (unsigned b = 0; b < gridDim.x; ++b) {\n"
                            "    for (unsigned t = 0; t < blockDim.x; ++t) {\n"
                            "      blockIdx.x = b;\n      threadIdx.x = t;\n      " +
                            name + "(in, out, end);\n    }\n  }\n}\n";
    JitResult jr = jit_build(src, host);
    ASSERT_TRUE(jr.ok()) << jr.error << "\n" << src;

    auto ins = random_inputs(r, -2.0f, 2.0f);
    ins[0][5] = std::numeric_limits<float>::quiet_NaN();  // NaN flows the same way everywhere
    const auto in = pointers(ins);
    const size_t n = static_cast<size_t>(num_elements(r.output_shape));
    std::vector<float> want(n), got(n, -12345.0f);
    evaluate(r, in, want.data());
    jr.fn(in.data(), got.data(), 0, work_items(r));
    expect_close(got, std::vector<double>(want.begin(), want.end()), name + "\n" + src);
  }
}

}  // namespace cuda_test
}  // namespace nnfuse::codegen
