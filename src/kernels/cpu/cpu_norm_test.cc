#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_norm_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

// BatchNorm inputs for `x` with C = x.dim(1) channels: constant scale, B, mean, var.
std::vector<FastInput> bn_inputs(const Tensor& x, Layout layout, uint32_t seed) {
  const int64_t c = x.dim(1);
  return {{x, false, layout},
          {random_tensor({c}, seed, 0.5f, 2), true},
          {random_tensor({c}, seed + 1, -1, 1), true},
          {random_tensor({c}, seed + 2, -1, 1), true},
          {random_tensor({c}, seed + 3, 0.1f, 3), true}};
}

TEST(CpuBatchNorm, PlainShapes) {
  uint32_t seed = 1;
  for (const Dims& s : std::vector<Dims>{{2, 3},
                                         {1, 7, 33},
                                         {2, 3, 4, 5},
                                         {1, 16, 56, 56},
                                         {2, 5, 1, 1},
                                         {3, 4, 2, 3, 2},
                                         {1, 1, 1000}}) {
    SCOPED_TRACE(dims_str(s));
    ++seed;
    expect_matches_ref("cpu.batch_norm", "BatchNormalization",
                       bn_inputs(random_tensor(s, seed, -3, 3), Layout::kPlain, seed * 10));
  }
  expect_matches_ref("cpu.batch_norm", "BatchNormalization",
                     bn_inputs(random_tensor({2, 3, 4, 5}, 9), Layout::kPlain, 90),
                     {{"epsilon", attr_float(0.1f)}});
}

TEST(CpuBatchNorm, ChannelsLast) {
  uint32_t seed = 20;
  for (const Dims& s : std::vector<Dims>{{2, 3, 4, 5}, {1, 64, 28, 28}, {1, 7, 1, 1}}) {
    SCOPED_TRACE(dims_str(s));
    ++seed;
    auto in = bn_inputs(random_tensor(s, seed, -3, 3), Layout::kNHWC, seed * 10);
    expect_matches_ref("cpu.batch_norm", "BatchNormalization", in);
    testing::OneNode one("BatchNormalization", in, {});
    EXPECT_EQ(
        testing::find_factory("BatchNormalization", "cpu.batch_norm")->output_layout(one.info(), 0),
        Layout::kNHWC);
  }
}

TEST(CpuBatchNorm, InPlace) {
  expect_in_place_matches_ref("cpu.batch_norm", "BatchNormalization",
                              bn_inputs(random_tensor({2, 8, 9, 9}, 30), Layout::kPlain, 31), 0);
  expect_in_place_matches_ref("cpu.batch_norm", "BatchNormalization",
                              bn_inputs(random_tensor({2, 8, 9, 9}, 32), Layout::kNHWC, 33), 0);
}

TEST(CpuScaleShift, PlainAndChannelsLastInPlace) {
  uint32_t seed = 40;
  for (const Dims& s : std::vector<Dims>{{2, 3}, {1, 7, 33}, {2, 3, 4, 5}, {1, 64, 28, 28}}) {
    for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
      if (layout == Layout::kNHWC && s.size() != 4) continue;
      SCOPED_TRACE(dims_str(s) + " " + layout_name(layout));
      seed += 3;
      std::vector<FastInput> in = {{random_tensor(s, seed, -3, 3), false, layout},
                                   {random_tensor({s[1]}, seed + 1), true},
                                   {random_tensor({s[1]}, seed + 2), true}};
      expect_matches_ref("cpu.scale_shift", "ScaleShift", in);
      expect_in_place_matches_ref("cpu.scale_shift", "ScaleShift", in, 0);
    }
  }
  // Parameters known only at run time are left to the reference kernel.
  EXPECT_FALSE(fast_accepts("cpu.scale_shift", "ScaleShift",
                            {{random_tensor({1, 3, 2}, 1)},
                             {random_tensor({3}, 2), false},
                             {random_tensor({3}, 3), true}}));
}

TEST(CpuScaleShift, PiecewiseLinearActivations) {
  auto act = [](const std::string& name, float alpha, float beta) {
    Attribute a;
    a.kind = Attribute::Kind::kString;
    a.s = name;
    return std::map<std::string, Attribute>{{"activation", a},
                                            {"activation_alpha", attr_float(alpha)},
                                            {"activation_beta", attr_float(beta)}};
  };
  const std::vector<std::map<std::string, Attribute>> acts = {
      act("Relu", 0, 0), act("LeakyRelu", 0.1f, 0), act("Clip", -0.5f, 1.5f), act("Clip", 0, 6)};
  uint32_t seed = 60;
  for (const Dims& s : std::vector<Dims>{{2, 3, 4, 5}, {1, 32, 7, 7}, {1, 5, 17}}) {
    for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
      if (layout == Layout::kNHWC && s.size() != 4) continue;
      for (const auto& attrs : acts) {
        SCOPED_TRACE(dims_str(s) + " " + layout_name(layout) + " " + attrs.at("activation").s);
        seed += 3;
        Tensor x = random_tensor(s, seed, -3, 3);
        // NaN and infinities pass through as the reference lets them.
        x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
        x.data<float>()[1] = std::numeric_limits<float>::infinity();
        x.data<float>()[2] = -std::numeric_limits<float>::infinity();
        std::vector<FastInput> in = {{x, false, layout},
                                     {random_tensor({s[1]}, seed + 1), true},
                                     {random_tensor({s[1]}, seed + 2), true}};
        expect_matches_ref("cpu.scale_shift", "ScaleShift", in, attrs);
        expect_in_place_matches_ref("cpu.scale_shift", "ScaleShift", in, 0, attrs);
      }
    }
  }
  // Activations it does not apply stay with the reference kernel, with the reason.
  std::vector<FastInput> in = {
      {random_tensor({1, 3, 2}, 1)}, {random_tensor({3}, 2), true}, {random_tensor({3}, 3), true}};
  EXPECT_FALSE(fast_accepts("cpu.scale_shift", "ScaleShift", in, act("Sigmoid", 0, 0)));
}

// A ScaleShift of a concatenation: inputs 3 on are further parts of X along dim 1.
TEST(CpuScaleShift, ConcatenatedParts) {
  Attribute relu;
  relu.kind = Attribute::Kind::kString;
  relu.s = "Relu";
  uint32_t seed = 80;
  for (const std::vector<Dims>& parts : std::vector<std::vector<Dims>>{
           {{2, 3, 4, 5}, {2, 5, 4, 5}, {2, 1, 4, 5}}, {{1, 32, 7, 7}, {1, 32, 7, 7}}}) {
    for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
      for (bool act : {false, true}) {
        SCOPED_TRACE(dims_str(parts[0]) + " " + layout_name(layout) + (act ? " relu" : ""));
        int64_t c = 0;
        for (const Dims& d : parts) c += d[1];
        seed += 10;
        std::vector<FastInput> in = {{random_tensor(parts[0], seed, -3, 3), false, layout},
                                     {random_tensor({c}, seed + 1), true},
                                     {random_tensor({c}, seed + 2), true}};
        for (size_t i = 1; i < parts.size(); ++i) {
          in.push_back(
              {random_tensor(parts[i], seed + 2 + static_cast<uint32_t>(i), -3, 3), false, layout});
        }
        std::map<std::string, Attribute> attrs;
        if (act) attrs["activation"] = relu;
        expect_matches_ref("cpu.scale_shift", "ScaleShift", in, attrs);
      }
    }
  }
  // A part in another layout or channels that do not add up to the parameters: declined.
  std::vector<FastInput> mixed = {{random_tensor({1, 2, 3, 3}, 1), false, Layout::kNHWC},
                                  {random_tensor({4}, 2), true},
                                  {random_tensor({4}, 3), true},
                                  {random_tensor({1, 2, 3, 3}, 4), false, Layout::kPlain}};
  EXPECT_FALSE(fast_accepts("cpu.scale_shift", "ScaleShift", mixed));
  mixed[3].layout = Layout::kNHWC;
  EXPECT_TRUE(fast_accepts("cpu.scale_shift", "ScaleShift", mixed));
  mixed[3].value = random_tensor({1, 3, 3, 3}, 4);
  EXPECT_FALSE(fast_accepts("cpu.scale_shift", "ScaleShift", mixed));
}

TEST(CpuBatchNorm, Declines) {
  Tensor x = random_tensor({2, 3, 4, 4}, 40);
  auto in = bn_inputs(x, Layout::kPlain, 41);
  EXPECT_TRUE(fast_accepts("cpu.batch_norm", "BatchNormalization", in));
  // Statistics that are not constants.
  auto dyn = in;
  dyn[3].constant = false;
  EXPECT_FALSE(fast_accepts("cpu.batch_norm", "BatchNormalization", dyn));
  // Training mode; wrong channel count; other types.
  EXPECT_FALSE(
      fast_accepts("cpu.batch_norm", "BatchNormalization", in, {{"training_mode", attr_int(1)}}));
  auto wrong = in;
  wrong[1].value = random_tensor({4}, 44);
  EXPECT_FALSE(fast_accepts("cpu.batch_norm", "BatchNormalization", wrong));
  auto f16 = in;
  f16[0].value = Tensor(DType::kFloat16, {2, 3, 4, 4});
  EXPECT_FALSE(fast_accepts("cpu.batch_norm", "BatchNormalization", f16));
  auto i64 = in;
  i64[0].value = Tensor(DType::kInt64, {2, 3, 4, 4});
  EXPECT_FALSE(fast_accepts("cpu.batch_norm", "BatchNormalization", i64));
}

std::vector<FastInput> ln_inputs(const Dims& x, const Dims& p, bool bias, uint32_t seed) {
  std::vector<FastInput> in = {{random_tensor(x, seed, -3, 3)},
                               {random_tensor(p, seed + 1, 0.5f, 2), true}};
  if (bias) in.push_back({random_tensor(p, seed + 2, -1, 1), true});
  return in;
}

TEST(CpuLayerNorm, LastAxisAndOthers) {
  uint32_t seed = 1;
  struct Case {
    Dims x, p;
    int64_t axis;
  };
  for (const Case& c : std::vector<Case>{{{1, 128, 768}, {768}, -1},
                                         {{7, 33}, {33}, -1},
                                         {{3, 1}, {1}, -1},
                                         {{2, 3, 4, 5}, {4, 5}, -2},
                                         {{2, 3, 4, 5}, {3, 4, 5}, 1},
                                         {{2, 3, 4, 5}, {1, 4, 5}, 2 - 4},
                                         {{2, 5, 1000}, {1, 1, 1000}, 2},
                                         {{4, 6}, {6}, 1},
                                         {{1000}, {1000}, 0}}) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(dims_str(c.x) + " axis " + std::to_string(c.axis) + (bias ? " bias" : ""));
      expect_matches_ref("cpu.layer_norm", "LayerNormalization", ln_inputs(c.x, c.p, bias, seed++),
                         {{"axis", attr_int(c.axis)}, {"epsilon", attr_float(1e-5f)}});
    }
  }
}

TEST(CpuLayerNorm, MeanAndInvStdDevOutputs) {
  expect_matches_ref("cpu.layer_norm", "LayerNormalization", ln_inputs({6, 40}, {40}, true, 50), {},
                     3);
  expect_matches_ref("cpu.layer_norm", "LayerNormalization", ln_inputs({2, 3, 8}, {3, 8}, true, 51),
                     {{"axis", attr_int(1)}}, 3);
}

TEST(CpuLayerNorm, InPlace) {
  expect_in_place_matches_ref("cpu.layer_norm", "LayerNormalization",
                              ln_inputs({64, 768}, {768}, true, 60), 0);
}

TEST(CpuLayerNorm, Declines) {
  EXPECT_TRUE(
      fast_accepts("cpu.layer_norm", "LayerNormalization", ln_inputs({4, 8}, {8}, true, 70)));
  // Scale that varies across rows; stash_type 0; other types; NHWC input.
  EXPECT_FALSE(
      fast_accepts("cpu.layer_norm", "LayerNormalization", ln_inputs({4, 8}, {4, 8}, true, 71)));
  EXPECT_FALSE(fast_accepts("cpu.layer_norm", "LayerNormalization",
                            ln_inputs({4, 8}, {8}, true, 72), {{"stash_type", attr_int(0)}}));
  auto f16 = ln_inputs({4, 8}, {8}, true, 73);
  f16[0].value = Tensor(DType::kFloat16, {4, 8});
  EXPECT_FALSE(fast_accepts("cpu.layer_norm", "LayerNormalization", f16));
  auto nhwc = ln_inputs({1, 2, 3, 8}, {8}, true, 74);
  nhwc[0].layout = Layout::kNHWC;
  EXPECT_FALSE(fast_accepts("cpu.layer_norm", "LayerNormalization", nhwc));
}

}  // namespace cpu_norm_test
}  // namespace nnfuse
