// Concat in place (Kernel::write_output_rows): the conv kernels that copy or reorder their
// result anyway write a channels-last output's pixels at a Concat's pitch, into their part of
// its buffer, with the numbers of their dense output and nothing outside their rows.
#include <gtest/gtest.h>

#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/layout.h"
#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_rows_test {

using testing::Attrs;
using testing::BuiltKernel;
using testing::FastInput;
using testing::random_tensor;

constexpr float kUntouched = 12345.0f;

// oneDNN's Winograd kernels need AVX-512 (the rows of a Winograd conv are its reorder's).
bool has_avx512() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto want = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & want) == want;
}

struct RowsCase {
  std::string kernel, op;
  std::vector<FastInput> inputs;
  Attrs attrs;
  size_t outputs = 1;
};

// Runs the case's kernel twice: once into dense outputs, once (a second kernel) with the
// outputs in `rows` (output k -> its first channel in the rows, or -1: dense) written into one
// buffer of `pitch` floats per pixel, and compares them.
void expect_rows_match_dense(const RowsCase& c, const std::vector<int64_t>& rows, int64_t pitch) {
  BuiltKernel dense(c.kernel, c.op, c.inputs, c.attrs, c.outputs);
  BuiltKernel strided(c.kernel, c.op, c.inputs, c.attrs, c.outputs);
  ASSERT_TRUE(dense.accepted && strided.accepted);
  std::vector<Tensor> in;
  for (const FastInput& f : c.inputs) {
    in.push_back(f.value.defined() ? to_layout(f.value, f.layout) : Tensor());
  }
  KernelIO a;
  for (const Tensor& t : in) a.inputs.push_back(t.defined() ? &t : nullptr);
  a.outputs.resize(c.outputs);
  dense.kernel->run(a);

  for (size_t k = 0; k < c.outputs; ++k) {
    if (rows[k] >= 0) {
      ASSERT_TRUE(strided.kernel->write_output_rows(k, pitch)) << "output " << k;
    }
  }
  const Dims& y0 = a.outputs[0].shape();
  const int64_t pixels = y0[0] * y0[2] * y0[3];
  const size_t bytes = static_cast<size_t>(pixels * pitch) * sizeof(float);
  std::shared_ptr<std::byte[]> buffer(new std::byte[bytes]);
  float* all = reinterpret_cast<float*>(buffer.get());
  std::fill_n(all, pixels * pitch, kUntouched);
  KernelIO b;
  b.inputs = a.inputs;
  b.outputs.resize(c.outputs);
  for (size_t k = 0; k < c.outputs; ++k) {
    if (rows[k] < 0) continue;
    b.outputs[k] = Tensor::over(buffer, static_cast<size_t>(rows[k]) * sizeof(float),
                                DType::kFloat32, a.outputs[k].shape(), Layout::kNHWC);
  }
  std::vector<char> covered(static_cast<size_t>(pitch), 0);
  strided.kernel->run(b);
  for (size_t k = 0; k < c.outputs; ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    const Tensor want = to_layout(a.outputs[k], Layout::kNHWC);
    const float* w = want.data<float>();
    const int64_t ch = want.dim(1);
    if (rows[k] < 0) {
      const Tensor got = to_layout(b.outputs[k], Layout::kNHWC);
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0);
      continue;
    }
    for (int64_t j = 0; j < ch; ++j) covered[static_cast<size_t>(rows[k] + j)] = 1;
    int64_t wrong = 0;
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t j = 0; j < ch; ++j) wrong += all[p * pitch + rows[k] + j] != w[p * ch + j];
    }
    EXPECT_EQ(wrong, 0);
  }
  int64_t touched = 0;
  for (int64_t p = 0; p < pixels; ++p) {
    for (int64_t j = 0; j < pitch; ++j) {
      if (!covered[static_cast<size_t>(j)]) touched += all[p * pitch + j] != kUntouched;
    }
  }
  EXPECT_EQ(touched, 0) << "elements written outside the kernel's rows";
}

std::vector<FastInput> conv_inputs(const Dims& x, int64_t m, int64_t k, Layout layout,
                                   uint32_t seed) {
  return {{random_tensor(x, seed, -2.0f, 2.0f), false, layout},
          {random_tensor({m, x[1], k, k}, seed + 1), true},
          {random_tensor({m}, seed + 2), true}};
}

const Attrs kPads = {{"pads", attr_ints({1, 1, 1, 1})}};

TEST(OnednnRows, SplitPartsAtAConcatsPitch) {
  // Two of three parts in rows (one of them narrower than a vector), the third dense; both
  // input layouts, two images.
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    SCOPED_TRACE(layout_name(layout));
    Attrs a = {{"split", attr_ints({16, 24, 8})}, {"activation", attr_string("Relu")}};
    RowsCase c{"onednn.fused_conv_split", "FusedConvSplit",
               conv_inputs({2, 32, 9, 7}, 48, 1, layout, 100), a, 3};
    expect_rows_match_dense(c, {0, -1, 19}, 40);
  }
}

TEST(OnednnRows, WinogradAndPooledConvsAtAConcatsPitch) {
  // Winograd's blocked buffer reordered into the rows (where oneDNN has Winograd), and the
  // pooled buffer of both conv paths (the direct conv's pool, which writes Y itself when dense,
  // goes through the scratch for rows). The first kernel that accepts each: oneDNN's Winograd
  // (onednn.winograd) when forced, where it has it, else its direct algorithm.
  const Attrs pool = {{"pool_kernel_shape", attr_ints({3, 3})},
                      {"pool_strides", attr_ints({2, 2})},
                      {"pool_pads", attr_ints({1, 1, 1, 1})}};
  for (const char* mode : {"force", "0"}) {
    SCOPED_TRACE(std::string("NNFUSE_WINOGRAD=") + mode);
    const testing::ScopedEnv winograd("NNFUSE_WINOGRAD", mode);
    Attrs conv = kPads;
    conv["activation"] = attr_string("Relu");
    Attrs pooled = conv;
    pooled.insert(pool.begin(), pool.end());
    for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
      SCOPED_TRACE(layout_name(layout));
      RowsCase p{"", "FusedConvPool", conv_inputs({1, 32, 15, 14}, 48, 3, layout, 200), pooled};
      expect_rows_match_dense(p, {8}, 72);
      if (std::string(mode) == "0") continue;
      RowsCase w{"", "FusedConv", conv_inputs({1, 32, 15, 14}, 48, 3, layout, 300), conv};
      BuiltKernel probe(w.kernel, w.op, w.inputs, w.attrs);
      ASSERT_TRUE(probe.accepted);
      // Without AVX-512 the conv runs direct, and declines.
      ASSERT_EQ(std::string(probe.factory->name),
                has_avx512() ? "onednn.winograd" : "onednn.fused_conv");
      ASSERT_EQ(probe.kernel->write_output_rows(0, 64), has_avx512());
      if (has_avx512()) expect_rows_match_dense(w, {16}, 64);
    }
  }
}

TEST(OnednnRows, OwnWinogradConvAtAConcatsPitch) {
  // The project's own Winograd kernel writes its output tiles at any pitch, at every vector
  // width; with a residual (read at the output's own pitch) it declines.
  const testing::ScopedEnv own("NNFUSE_WINOGRAD", "own");
  for (const char* isa : {"", "sse2"}) {
    SCOPED_TRACE(std::string("NNFUSE_WINOGRAD_ISA=") + isa);
    const testing::ScopedEnv width("NNFUSE_WINOGRAD_ISA", isa);
    Attrs conv = kPads;
    conv["activation"] = attr_string("Relu");
    RowsCase w{"cpu.winograd", "FusedConv", conv_inputs({1, 32, 15, 14}, 40, 3, Layout::kNHWC, 600),
               conv};
    BuiltKernel probe(w.kernel, w.op, w.inputs, w.attrs);
    ASSERT_TRUE(probe.accepted);
    EXPECT_FALSE(probe.kernel->write_output_rows(0, 39));  // narrower than the output
    EXPECT_TRUE(probe.kernel->write_output_rows(0, 72));
    expect_rows_match_dense(w, {16}, 72);
    // Its FusedConvPool: the pooled output reordered into the rows.
    Attrs pooled = conv;
    pooled["pool_kernel_shape"] = attr_ints({3, 3});
    pooled["pool_strides"] = attr_ints({2, 2});
    pooled["pool_pads"] = attr_ints({1, 1, 1, 1});
    expect_rows_match_dense({"cpu.winograd", "FusedConvPool",
                             conv_inputs({1, 32, 15, 14}, 40, 3, Layout::kNHWC, 700), pooled},
                            {8}, 56);
  }
}

TEST(OnednnRows, DeclinedWhereTheKernelWritesItsOutputDirectly) {
  const testing::ScopedEnv direct("NNFUSE_WINOGRAD", "0");
  Attrs conv = kPads;
  BuiltKernel d("onednn.fused_conv", "FusedConv",
                conv_inputs({1, 32, 15, 14}, 48, 3, Layout::kNHWC, 400), conv);
  ASSERT_TRUE(d.accepted);
  EXPECT_FALSE(d.kernel->write_output_rows(0, 64));  // the direct conv: dense outputs only
  const testing::ScopedEnv winograd("NNFUSE_WINOGRAD", "force");
  Attrs split = {{"split", attr_ints({16, 32})}};
  BuiltKernel s("onednn.fused_conv_split", "FusedConvSplit",
                conv_inputs({1, 32, 5, 5}, 48, 1, Layout::kNHWC, 500), split, 2);
  ASSERT_TRUE(s.accepted);
  EXPECT_FALSE(s.kernel->write_output_rows(0, 8));  // narrower than the part
  EXPECT_TRUE(s.kernel->write_output_rows(0, 64));
  EXPECT_FALSE(s.kernel->write_output_rows(0, 64));  // asked once
  EXPECT_FALSE(s.kernel->write_output_rows(2, 64));  // no such output
}

}  // namespace onednn_rows_test
}  // namespace nnfuse
