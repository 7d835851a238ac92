// cpu.expand_depthwise against the reference ExpandDepthwise (FusedConv twice): 3x3 and 5x5,
// strides 1 and 2, expanded widths on and off the 16-float vectors, the activations applied in
// registers (ReLU, Clip) and after (HardSwish, SiLU), biases present and absent, several
// images, maps smaller than the kernel and of odd sizes, both input layouts; expansions other
// than a 1x1 (a stem's strided 3x3), whose taps are gathered; each on vectors of 16, 8 and 4.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_expand_depthwise_test {

using testing::BuiltKernel;
using testing::expect_matches_ref;
using testing::random_tensor;

// One part's attributes with the part's prefix ("expand_" or "depthwise_").
void add_act(std::map<std::string, Attribute>& a, const std::string& prefix,
             const std::string& act) {
  if (act.empty()) return;
  a[prefix + "activation"] = attr_string(act);
  if (act == "Clip") {
    a[prefix + "activation_alpha"] = attr_float(0.0f);
    a[prefix + "activation_beta"] = attr_float(6.0f);
  }
}

std::map<std::string, Attribute> ed_attrs(int64_t e, int64_t k, int64_t s, const std::string& act1,
                                          const std::string& act2) {
  std::map<std::string, Attribute> a;
  add_act(a, "expand_", act1);
  add_act(a, "depthwise_", act2);
  a["depthwise_group"] = attr_int(e);
  a["depthwise_strides"] = attr_ints({s, s});
  a["depthwise_pads"] = attr_ints({k / 2, k / 2, k / 2, k / 2});
  a["depthwise_kernel_shape"] = attr_ints({k, k});
  return a;
}

void expect_one_by_one_expansions_match() {
  struct Case {
    Dims x;
    int64_t e, k, s;
    std::string act1, act2;
    bool biases;
  };
  uint32_t seed = 1;
  for (Layout layout : {Layout::kNHWC, Layout::kPlain}) {
    for (const Case& c : {Case{{1, 16, 20, 20}, 96, 3, 2, "Clip", "Clip", true},
                          Case{{2, 24, 13, 11}, 72, 3, 1, "HardSwish", "HardSwish", true},
                          Case{{1, 8, 9, 17}, 40, 5, 2, "SiLU", "", false},
                          Case{{2, 8, 9, 17}, 40, 5, 1, "", "SiLU", true},
                          Case{{1, 16, 7, 7}, 48, 5, 1, "Relu", "Relu", true},
                          Case{{1, 24, 56, 56}, 144, 3, 1, "Clip", "Clip", true},
                          Case{{1, 5, 2, 3}, 16, 3, 1, "", "Sigmoid", true},
                          Case{{1, 7, 1, 1}, 20, 3, 2, "Relu", "", true},
                          Case{{3, 4, 6, 9}, 260, 3, 2, "Relu", "HardSwish", false}}) {
      SCOPED_TRACE(dims_str(c.x) + " -> " + std::to_string(c.e) + " k" + std::to_string(c.k) +
                   " s" + std::to_string(c.s) + " " + c.act1 + "/" + c.act2 + " " +
                   layout_name(layout));
      std::vector<testing::FastInput> in = {
          {random_tensor(c.x, seed++), false, layout},
          {random_tensor({c.e, c.x[1], 1, 1}, seed++, -0.5f, 0.5f), true},
          {c.biases ? random_tensor({c.e}, seed++) : Tensor(), true},
          {random_tensor({c.e, 1, c.k, c.k}, seed++, -0.5f, 0.5f), true},
          {c.biases ? random_tensor({c.e}, seed++) : Tensor(), true}};
      if (!c.biases) in.pop_back();
      expect_matches_ref("cpu.expand_depthwise", "ExpandDepthwise", in,
                         ed_attrs(c.e, c.k, c.s, c.act1, c.act2), 1, 1e-5f, 1e-4f);
    }
  }
}

TEST(CpuExpandDepthwise, MatchesTheReference) { expect_one_by_one_expansions_match(); }

// Expansions other than a 1x1: a stem's 3x3 of stride 2 and others, their taps gathered from
// a plain or a channels-last input, pads at the border (and uneven ones), several images.
void expect_gathered_expansions_match() {
  struct Case {
    Dims x;
    int64_t e, kh, kw;
    std::vector<int64_t> s1, pads1;  // the expansion's strides and pads
    int64_t k, s;
    std::string act1, act2;
  };
  uint32_t seed = 70;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const Case& c :
         {Case{{1, 3, 32, 30}, 32, 3, 3, {2, 2}, {1, 1, 1, 1}, 3, 1, "Clip", "Clip"},
          Case{{2, 3, 17, 19}, 24, 3, 3, {2, 2}, {1, 1, 1, 1}, 3, 2, "SiLU", "SiLU"},
          Case{{1, 3, 16, 16}, 16, 3, 3, {2, 2}, {0, 0, 1, 1}, 3, 1, "HardSwish", ""},
          Case{{1, 2, 9, 11}, 40, 5, 5, {1, 1}, {2, 2, 2, 2}, 5, 1, "Relu", "Relu"},
          Case{{1, 4, 12, 10}, 20, 2, 2, {2, 2}, {0, 0, 0, 0}, 5, 2, "", "Sigmoid"},
          Case{{1, 8, 6, 6}, 32, 1, 1, {2, 2}, {0, 0, 0, 0}, 3, 1, "Relu", "Relu"},
          Case{{1, 3, 2, 2}, 16, 3, 3, {2, 2}, {1, 1, 1, 1}, 3, 2, "Relu", ""},
          // Unlike axes: kernel, strides and pads each differ between height and width.
          Case{{1, 3, 17, 12}, 16, 3, 1, {2, 1}, {1, 0, 0, 2}, 3, 1, "Relu", ""},
          Case{{1, 2, 9, 10}, 24, 1, 3, {1, 2}, {0, 1, 2, 0}, 3, 1, "", "Clip"}}) {
      SCOPED_TRACE(dims_str(c.x) + " -> " + std::to_string(c.e) + " " + std::to_string(c.kh) + "x" +
                   std::to_string(c.kw) + " s" + std::to_string(c.s1[0]) + "," +
                   std::to_string(c.s1[1]) + " then k" + std::to_string(c.k) + " s" +
                   std::to_string(c.s) + " " + layout_name(layout));
      std::map<std::string, Attribute> a = ed_attrs(c.e, c.k, c.s, c.act1, c.act2);
      a["expand_kernel_shape"] = attr_ints({c.kh, c.kw});
      a["expand_strides"] = attr_ints(c.s1);
      a["expand_pads"] = attr_ints(c.pads1);
      std::vector<testing::FastInput> in = {
          {random_tensor(c.x, seed++), false, layout},
          {random_tensor({c.e, c.x[1], c.kh, c.kw}, seed++, -0.5f, 0.5f), true},
          {random_tensor({c.e}, seed++), true},
          {random_tensor({c.e, 1, c.k, c.k}, seed++, -0.5f, 0.5f), true},
          {random_tensor({c.e}, seed++), true}};
      expect_matches_ref("cpu.expand_depthwise", "ExpandDepthwise", in, a, 1, 1e-5f, 1e-4f);
    }
  }
}

TEST(CpuExpandDepthwise, GatheredExpansionsMatchTheReference) {
  expect_gathered_expansions_match();
}

// The loops on vectors of 16, 8 and 4 floats (AVX-512's, AVX2's and SSE's blocking), whichever
// this CPU would pick.
TEST(CpuExpandDepthwise, EveryVectorWidthMatchesTheReference) {
  struct Reset {
    ~Reset() { cpu::force_expand_depthwise_lanes(0); }
  } reset;
  for (int lanes : {16, 8, 4}) {
    SCOPED_TRACE(std::to_string(lanes) + " lanes");
    cpu::force_expand_depthwise_lanes(lanes);
    expect_one_by_one_expansions_match();
    expect_gathered_expansions_match();
  }
  EXPECT_THROW(cpu::force_expand_depthwise_lanes(5), Error);
}

TEST(CpuExpandDepthwise, RegisterActivationsHoldOverTheirWholeRange) {
  // Inputs up to +-60 and weights up to +-3: the expanded values reach the hundreds, where the
  // sigmoid rounds to 0 or 1 and the exponential under it is clamped. The outputs reach the
  // thousands, so float sums differ from the reference's by up to about 1e-4 absolute.
  uint32_t seed = 40;
  for (const char* act : {"SiLU", "Sigmoid", "HardSwish"}) {
    SCOPED_TRACE(act);
    std::vector<testing::FastInput> in = {
        {random_tensor({1, 8, 11, 13}, seed++, -60.0f, 60.0f), false, Layout::kNHWC},
        {random_tensor({48, 8, 1, 1}, seed++, -3.0f, 3.0f), true},
        {random_tensor({48}, seed++), true},
        {random_tensor({48, 1, 3, 3}, seed++, -3.0f, 3.0f), true},
        {random_tensor({48}, seed++), true}};
    expect_matches_ref("cpu.expand_depthwise", "ExpandDepthwise", in, ed_attrs(48, 3, 1, act, act),
                       1, 1e-3f, 1e-5f);
  }
}

TEST(CpuExpandDepthwise, WritesChannelsLast) {
  const Tensor x = random_tensor({1, 8, 6, 6}, 1);
  BuiltKernel k("cpu.expand_depthwise", "ExpandDepthwise",
                {{x, false},
                 {random_tensor({32, 8, 1, 1}, 2), true},
                 {Tensor(), true},
                 {random_tensor({32, 1, 3, 3}, 3), true}},
                ed_attrs(32, 3, 2, "Relu", "Relu"));
  ASSERT_TRUE(k.accepted);
  EXPECT_EQ(k.output_layout(), Layout::kNHWC);
  const Tensor y = k.run({x});
  EXPECT_EQ(y.layout(), Layout::kNHWC);
  EXPECT_EQ(y.shape(), (Dims{1, 32, 3, 3}));
}

TEST(CpuExpandDepthwise, DeclinesWhatItDoesNotRun) {
  const Tensor x = random_tensor({1, 8, 6, 6}, 1);
  auto build = [&](const Tensor& w1, const Tensor& w2, bool constant,
                   std::map<std::string, Attribute> a) {
    return BuiltKernel("cpu.expand_depthwise", "ExpandDepthwise",
                       {{x, false}, {w1, constant}, {Tensor(), true}, {w2, constant}}, a);
  };
  const Tensor w1 = random_tensor({32, 8, 1, 1}, 2), w2 = random_tensor({32, 1, 3, 3}, 3);
  const auto ok = ed_attrs(32, 3, 1, "Relu", "Relu");
  auto with = [&](const std::string& k, const Attribute& v) {
    auto a = ok;
    a[k] = v;
    return a;
  };
  EXPECT_TRUE(build(w1, w2, true, ok).accepted);
  EXPECT_FALSE(build(w1, w2, false, ok).accepted);                              // run-time weights
  EXPECT_FALSE(build(random_tensor({32, 6, 1, 1}, 4), w2, true, ok).accepted);  // C mismatch
  EXPECT_FALSE(build(w1, random_tensor({16, 1, 3, 3}, 5), true, ok).accepted);  // E mismatch
  // A 3x3 expansion (of 4x4 outputs here) gathers its taps.
  EXPECT_TRUE(build(random_tensor({32, 8, 3, 3}, 6), w2, true, ok).accepted);
  // One whose kernel is larger than the padded input has no output.
  EXPECT_FALSE(build(random_tensor({32, 8, 7, 7}, 6), w2, true, ok).accepted);
  const Tensor w4 = random_tensor({32, 1, 4, 4}, 7);
  EXPECT_FALSE(build(w1, w4, true, with("depthwise_kernel_shape", attr_ints({4, 4}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("depthwise_strides", attr_ints({3, 3}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("depthwise_strides", attr_ints({1, 2}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("depthwise_pads", attr_ints({0, 0, 0, 0}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("depthwise_dilations", attr_ints({2, 2}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("depthwise_group", attr_int(16))).accepted);
  EXPECT_TRUE(build(w1, w2, true, with("expand_strides", attr_ints({2, 2}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("expand_strides", attr_ints({0, 1}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("expand_pads", attr_ints({1, 1}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("expand_group", attr_int(2))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("expand_dilations", attr_ints({2, 2}))).accepted);
  EXPECT_FALSE(build(w1, w2, true, with("expand_activation", attr_string("Cube"))).accepted);
  // Empty: no expanded channels, or an image of no rows (the reference kernel runs those).
  EXPECT_FALSE(build(random_tensor({0, 8, 1, 1}, 8), random_tensor({0, 1, 3, 3}, 9), true,
                     ed_attrs(0, 3, 1, "Relu", "Relu"))
                   .accepted);
  BuiltKernel no_rows(
      "cpu.expand_depthwise", "ExpandDepthwise",
      {{random_tensor({1, 8, 0, 6}, 10), false}, {w1, true}, {Tensor(), true}, {w2, true}}, ok);
  EXPECT_FALSE(no_rows.accepted);
}

}  // namespace cpu_expand_depthwise_test
}  // namespace nnfuse
