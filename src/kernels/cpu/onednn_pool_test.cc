#include <gtest/gtest.h>

#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_pool_test {

using testing::Attrs;
using testing::BuiltKernel;
using testing::expect_matches_ref;
using testing::random_tensor;
using testing::run_kernel;

constexpr float kTol = 1e-5f;

void check_pool(const std::string& op, const Dims& x, const Attrs& attrs, Layout layout,
                uint32_t seed) {
  SCOPED_TRACE(op + " x" + dims_str(x) + " " + layout_name(layout) + " case " +
               std::to_string(seed));
  expect_matches_ref("onednn.pool", op, {{random_tensor(x, seed), false, layout}}, attrs, 1, kTol,
                     kTol);
}

TEST(OnednnPool, Sweep2d) {
  const std::vector<Dims> pads = {{}, {1, 1, 1, 1}, {0, 1, 1, 0}};
  uint32_t seed = 1;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      for (int64_t k : {2, 3}) {
        for (int64_t s : {1, 2}) {
          for (const Dims& p : pads) {
            for (int64_t ceil : {0, 1}) {
              for (int64_t include : {0, 1}) {
                if (std::string(op) == "MaxPool" && include) continue;
                Attrs a = {{"kernel_shape", attr_ints({k, k})},
                           {"strides", attr_ints({s, s})},
                           {"ceil_mode", attr_int(ceil)}};
                if (!p.empty()) a["pads"] = attr_ints(p);
                if (std::string(op) == "AveragePool") a["count_include_pad"] = attr_int(include);
                // An average counting padding whose ceil_mode window overhangs the pads is
                // the reference kernel's (checked in Declines).
                BuiltKernel probe("onednn.pool", op, {{random_tensor({2, 3, 7, 9}, 1)}}, a);
                if (include && ceil && !probe.accepted) continue;
                check_pool(op, {2, 17, 7, 9}, a, layout, seed++);
              }
            }
          }
        }
      }
    }
  }
}

TEST(OnednnPool, DilationsAndAutoPad) {
  uint32_t seed = 200;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      check_pool(op, {1, 3, 9, 10},
                 {{"kernel_shape", attr_ints({3, 2})},
                  {"dilations", attr_ints({2, 3})},
                  {"pads", attr_ints({1, 2, 2, 0})}},
                 layout, seed++);
      for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
        for (int64_t s : {1, 2}) {
          check_pool(op, {2, 5, 7, 9},
                     {{"kernel_shape", attr_ints({3, 2})},
                      {"strides", attr_ints({s, s})},
                      {"auto_pad", attr_string(ap)}},
                     layout, seed++);
        }
      }
    }
  }
}

TEST(OnednnPool, ResNetAndOneAndThreeDimensional) {
  check_pool("MaxPool", {1, 64, 112, 112},
             {{"kernel_shape", attr_ints({3, 3})},
              {"strides", attr_ints({2, 2})},
              {"pads", attr_ints({1, 1, 1, 1})}},
             Layout::kNHWC, 300);
  check_pool("MaxPool", {2, 3, 11}, {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}},
             Layout::kPlain, 301);
  check_pool(
      "AveragePool", {2, 3, 11},
      {{"kernel_shape", attr_ints({4})}, {"pads", attr_ints({1, 2})}, {"ceil_mode", attr_int(1)}},
      Layout::kPlain, 302);
  check_pool("AveragePool", {1, 3, 5, 6, 7},
             {{"kernel_shape", attr_ints({2, 2, 3})},
              {"strides", attr_ints({2, 1, 2})},
              {"count_include_pad", attr_int(1)},
              {"pads", attr_ints({1, 0, 1, 0, 1, 1})}},
             Layout::kPlain, 303);
  check_pool("MaxPool", {1, 3, 5, 6, 7},
             {{"kernel_shape", attr_ints({2, 2, 3})},
              {"ceil_mode", attr_int(1)},
              {"strides", attr_ints({2, 2, 2})}},
             Layout::kPlain, 304);
}

// Plain inputs oneDNN pools only on its plain kernel (5-D and 3-D ones) run channels-last on
// copies in the scratch: S3D's 1x3x3 and 3x3x3 pools, 1-D pools of 64 channels, with and
// without a scratch given.
TEST(OnednnPool, PlainVideoAndAudioPoolsRunChannelsLast) {
  const Attrs frame = {{"kernel_shape", attr_ints({1, 3, 3})},
                       {"strides", attr_ints({1, 2, 2})},
                       {"pads", attr_ints({0, 1, 1, 0, 1, 1})}};
  const Attrs cube = {{"kernel_shape", attr_ints({3, 3, 3})},
                      {"strides", attr_ints({2, 2, 2})},
                      {"pads", attr_ints({1, 1, 1, 1, 1, 1})}};
  const Attrs line = {
      {"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}, {"pads", attr_ints({1, 1})}};
  uint32_t seed = 350;
  for (const std::string op : {"MaxPool", "AveragePool"}) {
    for (const auto& [x, a] :
         {std::pair{Dims{1, 16, 8, 56, 56}, frame}, std::pair{Dims{1, 64, 4, 20, 20}, frame},
          std::pair{Dims{2, 24, 5, 9, 9}, cube}, std::pair{Dims{1, 64, 301}, line}}) {
      check_pool(op, x, a, Layout::kPlain, seed);
      BuiltKernel k("onednn.pool", op, {{random_tensor(x, seed), false, Layout::kPlain}}, a);
      ASSERT_TRUE(k.accepted);
      // Which plain 5-D geometries oneDNN has a fast kernel for varies with the CPU; for plain
      // 1-D inputs it has none.
      if (x.size() == 3) {
        EXPECT_GT(k.kernel->scratch_bytes(), 0u) << op << dims_str(x);
      }
      const Tensor in = random_tensor(x, seed + 1);
      std::vector<std::byte> scratch(k.kernel->scratch_bytes() + 64, std::byte{0x7f});
      KernelIO io;
      io.inputs = {&in};
      io.outputs.resize(1);
      io.scratch = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) /
                                                64 * 64);
      k.kernel->run(io);
      const Tensor want = testing::run_ref(op, {in}, a, 1, 17)[0];
      testing::expect_close(io.outputs[0], want, kTol, kTol);
      ++seed;
    }
  }
  // The 2-D pools of the NHWC graph read and write in place of the graph's tensors.
  BuiltKernel nhwc("onednn.pool", "MaxPool",
                   {{random_tensor({1, 64, 20, 20}, 1), false, Layout::kNHWC}},
                   {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}});
  ASSERT_TRUE(nhwc.accepted);
  EXPECT_EQ(nhwc.kernel->scratch_bytes(), 0u);
}

TEST(OnednnPool, KeepsTheInputLayout) {
  Attrs a = {{"kernel_shape", attr_ints({2, 2})}};
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    Tensor x = to_layout(random_tensor({1, 3, 4, 6}, 1), layout);
    BuiltKernel k("onednn.pool", "MaxPool", {{x, false, layout}}, a);
    ASSERT_TRUE(k.accepted);
    EXPECT_EQ(k.output_layout(), layout);
    Tensor y = k.run({x});
    EXPECT_EQ(y.layout(), layout);
    EXPECT_EQ(y.shape(), (Dims{1, 3, 3, 5}));
    EXPECT_THROW(k.run({to_layout(random_tensor({1, 3, 4, 7}, 1), layout)}), Error);
  }
}

TEST(OnednnPool, Declines) {
  Tensor x = random_tensor({1, 3, 7, 9}, 1);
  Attrs a = {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}};
  // The Indices output of MaxPool.
  EXPECT_EQ(run_kernel("MaxPool", {{x}}, a, 2).kernel, "ref");
  // An average counting padding where the ceil_mode window overhangs the pads.
  Attrs overhang = a;
  overhang["ceil_mode"] = attr_int(1);
  overhang["count_include_pad"] = attr_int(1);
  overhang["kernel_shape"] = attr_ints({2, 2});
  EXPECT_EQ(run_kernel("AveragePool", {{x}}, overhang).kernel, "ref");
  // float64.
  Tensor x64 = testing::run_ref1("Cast", {x}, {{"to", attr_int(11)}});
  EXPECT_EQ(run_kernel("MaxPool", {{x64}}, a).kernel, "ref");
  // Pads as wide as the window: the reference kernel reports them.
  Attrs wide = a;
  wide["pads"] = attr_ints({3, 3, 3, 3});
  EXPECT_FALSE(BuiltKernel("onednn.pool", "MaxPool", {{x}}, wide).accepted);
  EXPECT_EQ(run_kernel("MaxPool", {{x}}, a).kernel, "onednn.pool");
}

// Global pools.

TEST(OnednnGlobalPool, PlainAndNhwc) {
  uint32_t seed = 1;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
      for (const Dims& x : {Dims{2, 17, 7, 9}, Dims{1, 64, 7, 7}, Dims{1, 3, 1, 1}}) {
        SCOPED_TRACE(std::string(op) + " x" + dims_str(x) + " " + layout_name(layout));
        expect_matches_ref("onednn.global_pool", op, {{random_tensor(x, seed++), false, layout}},
                           {}, 1, kTol, kTol);
      }
    }
    for (const Dims& x : {Dims{2, 5, 11}, Dims{1, 3, 4, 5, 6}}) {
      SCOPED_TRACE(std::string(op) + " x" + dims_str(x));
      expect_matches_ref("onednn.global_pool", op, {{random_tensor(x, seed++)}}, {}, 1, kTol, kTol);
    }
  }
}

TEST(OnednnGlobalPool, NhwcInPlainOut) {
  Tensor x = to_layout(random_tensor({2, 5, 3, 4}, 1), Layout::kNHWC);
  BuiltKernel k("onednn.global_pool", "GlobalAveragePool", {{x, false, Layout::kNHWC}});
  ASSERT_TRUE(k.accepted);
  EXPECT_EQ(k.output_layout(), Layout::kPlain);
  Tensor y = k.run({x});
  EXPECT_EQ(y.layout(), Layout::kPlain);
  EXPECT_EQ(y.shape(), (Dims{2, 5, 1, 1}));
  EXPECT_THROW(k.run({random_tensor({2, 5, 3, 4}, 1)}), Error);  // plain, planned NHWC
}

}  // namespace onednn_pool_test
}  // namespace nnfuse
