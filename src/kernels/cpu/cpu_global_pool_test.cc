#include <gtest/gtest.h>

#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_global_pool_test {

using testing::BuiltKernel;
using testing::expect_matches_ref;
using testing::random_tensor;
using testing::run_kernel;

constexpr float kTol = 1e-5f;

TEST(CpuGlobalPool, MatchesTheReferenceInBothLayouts) {
  // Channel counts off the vector width, one pixel, more pixels than one block (256) and than
  // one thread's share, several images.
  uint32_t seed = 1;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const Dims& x : {Dims{2, 17, 7, 9}, Dims{1, 64, 7, 7}, Dims{1, 3, 1, 1},
                          Dims{1, 960, 24, 24}, Dims{3, 40, 37, 41}, Dims{1, 1, 300, 301}}) {
      SCOPED_TRACE(dims_str(x) + std::string(" ") + layout_name(layout));
      expect_matches_ref("cpu.global_pool", "GlobalAveragePool",
                         {{random_tensor(x, seed++), false, layout}}, {}, 1, kTol, kTol);
    }
  }
  for (const Dims& x : {Dims{2, 5, 11}, Dims{1, 3, 4, 5, 6}}) {
    SCOPED_TRACE(dims_str(x));
    expect_matches_ref("cpu.global_pool", "GlobalAveragePool", {{random_tensor(x, seed++)}}, {}, 1,
                       kTol, kTol);
  }
}

TEST(CpuGlobalPool, LargeOffsetMeansStayAccurate) {
  // 147,456 pixels of 1000 + noise: float sums of that many terms would drift; blocks of 256
  // in float, added in double, stay within float rounding of the mean.
  Tensor x = random_tensor({1, 16, 384, 384}, 5, 999.0f, 1001.0f);
  expect_matches_ref("cpu.global_pool", "GlobalAveragePool", {{x, false, Layout::kPlain}}, {}, 1,
                     1e-6f, 1e-6f);
  expect_matches_ref("cpu.global_pool", "GlobalAveragePool", {{x, false, Layout::kNHWC}}, {}, 1,
                     1e-6f, 1e-6f);
}

TEST(CpuGlobalPool, RunsAheadOfOnednnAndWritesPlain) {
  const Tensor x = to_layout(random_tensor({2, 5, 3, 4}, 1), Layout::kNHWC);
  EXPECT_EQ(run_kernel("GlobalAveragePool", {{x, false, Layout::kNHWC}}).kernel, "cpu.global_pool");
  BuiltKernel k("cpu.global_pool", "GlobalAveragePool", {{x, false, Layout::kNHWC}});
  ASSERT_TRUE(k.accepted);
  EXPECT_EQ(k.output_layout(), Layout::kPlain);
  const Tensor y = k.run({x});
  EXPECT_EQ(y.layout(), Layout::kPlain);
  EXPECT_EQ(y.shape(), (Dims{2, 5, 1, 1}));
}

TEST(CpuGlobalPool, DeclinesWhatItDoesNotRun) {
  BuiltKernel ints("cpu.global_pool", "GlobalAveragePool",
                   {{Tensor(DType::kInt32, {1, 2, 3, 3}), false}});
  EXPECT_FALSE(ints.accepted);
  BuiltKernel rank2("cpu.global_pool", "GlobalAveragePool", {{random_tensor({4, 5}, 2), false}});
  EXPECT_FALSE(rank2.accepted);
  BuiltKernel empty("cpu.global_pool", "GlobalAveragePool",
                    {{random_tensor({1, 2, 0, 3}, 3), false}});
  EXPECT_FALSE(empty.accepted);
}

// SqueezeExcite's attributes: the squeeze part's activation, then the excite part's.
std::map<std::string, Attribute> se_attrs(const std::string& squeeze, const std::string& excite) {
  std::map<std::string, Attribute> a;
  if (!squeeze.empty()) a["squeeze_activation"] = attr_string(squeeze);
  if (!excite.empty()) a["excite_activation"] = attr_string(excite);
  if (excite == "HardSigmoid") {
    a["excite_activation_alpha"] = attr_float(1.0f / 6.0f);
    a["excite_activation_beta"] = attr_float(0.5f);
  }
  return a;
}

TEST(CpuSqueezeExcite, MatchesTheReference) {
  // MobileNetV3's and EfficientNet's shapes; squeezed widths off the 64-column panels (8, 70,
  // 130) and on them (144); several images; both input layouts; biases present and absent.
  struct Case {
    Dims x;
    int64_t squeezed;
    bool biases;
    std::string squeeze_act, excite_act;
  };
  uint32_t seed = 1;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const Case& c : {Case{{1, 16, 56, 56}, 8, true, "Relu", "HardSigmoid"},
                          Case{{2, 72, 7, 7}, 70, true, "SiLU", "Sigmoid"},
                          Case{{1, 576, 7, 7}, 144, true, "Relu", "HardSigmoid"},
                          Case{{3, 24, 5, 3}, 130, false, "", "Sigmoid"},
                          Case{{1, 96, 1, 1}, 24, false, "Relu", ""}}) {
      SCOPED_TRACE(dims_str(c.x) + " -> " + std::to_string(c.squeezed) + " " + layout_name(layout));
      const int64_t ch = c.x[1];
      std::vector<testing::FastInput> in = {
          {random_tensor(c.x, seed++), false, layout},
          {random_tensor({c.squeezed, ch, 1, 1}, seed++, -0.2f, 0.2f), true},
          {c.biases ? random_tensor({c.squeezed}, seed++) : Tensor(), true},
          {random_tensor({ch, c.squeezed, 1, 1}, seed++, -0.2f, 0.2f), true},
          {c.biases ? random_tensor({ch}, seed++) : Tensor(), true}};
      if (!c.biases) in.pop_back();
      expect_matches_ref("cpu.squeeze_excite", "SqueezeExcite", in,
                         se_attrs(c.squeeze_act, c.excite_act), 1, kTol, 1e-4f);
    }
  }
}

TEST(CpuSqueezeExcite, AppliedMatchesTheReference) {
  // apply = 1: X times the scale, in X's layout; one image and several, pixel counts that the
  // two threads split unevenly.
  uint32_t seed = 100;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const Dims& x : {Dims{1, 112, 14, 14}, Dims{2, 40, 7, 5}, Dims{1, 16, 1, 1}}) {
      SCOPED_TRACE(dims_str(x) + " " + layout_name(layout));
      const int64_t ch = x[1], squeezed = std::max<int64_t>(ch / 4, 4);
      std::vector<testing::FastInput> in = {
          {random_tensor(x, seed++), false, layout},
          {random_tensor({squeezed, ch, 1, 1}, seed++, -0.2f, 0.2f), true},
          {random_tensor({squeezed}, seed++), true},
          {random_tensor({ch, squeezed, 1, 1}, seed++, -0.2f, 0.2f), true},
          {random_tensor({ch}, seed++), true}};
      std::map<std::string, Attribute> a = se_attrs("Relu", "HardSigmoid");
      a["apply"] = attr_int(1);
      expect_matches_ref("cpu.squeeze_excite", "SqueezeExcite", in, a, 1, kTol, 1e-4f);
    }
  }
}

TEST(CpuSqueezeExcite, DeclinesWhatItDoesNotRun) {
  const Tensor x = random_tensor({1, 8, 4, 4}, 1);
  auto build = [&](const Tensor& w1, const Tensor& w2, bool constant,
                   const std::map<std::string, Attribute>& extra) {
    std::map<std::string, Attribute> a = se_attrs("Relu", "Sigmoid");
    for (const auto& [k, v] : extra) a[k] = v;
    return BuiltKernel("cpu.squeeze_excite", "SqueezeExcite",
                       {{x, false}, {w1, constant}, {Tensor(), true}, {w2, constant}}, a);
  };
  const Tensor w1 = random_tensor({4, 8, 1, 1}, 2), w2 = random_tensor({8, 4, 1, 1}, 3);
  EXPECT_TRUE(build(w1, w2, true, {}).accepted);
  EXPECT_FALSE(build(w1, w2, false, {}).accepted);                             // run-time weights
  EXPECT_FALSE(build(random_tensor({4, 6, 1, 1}, 4), w2, true, {}).accepted);  // C mismatch
  EXPECT_FALSE(build(w1, random_tensor({8, 5, 1, 1}, 5), true, {}).accepted);  // C1 mismatch
  EXPECT_FALSE(build(random_tensor({4, 8, 3, 3}, 6), w2, true, {}).accepted);  // not 1x1
  EXPECT_FALSE(build(w1, w2, true, {{"squeeze_group", attr_int(2)}}).accepted);
  EXPECT_FALSE(build(w1, w2, true, {{"excite_pads", attr_ints({1, 1, 1, 1})}}).accepted);
  EXPECT_FALSE(build(w1, w2, true, {{"excite_activation", attr_string("Cube")}}).accepted);
  EXPECT_FALSE(build(w1, w2, true, {{"apply", attr_int(2)}}).accepted);
  // Applied, the scale must have X's channels.
  EXPECT_TRUE(build(w1, w2, true, {{"apply", attr_int(1)}}).accepted);
  EXPECT_FALSE(build(w1, random_tensor({6, 4, 1, 1}, 7), true, {{"apply", attr_int(1)}}).accepted);
}

}  // namespace cpu_global_pool_test
}  // namespace nnfuse
