#include <gtest/gtest.h>

#include <algorithm>

#include "cost/winograd_rule.h"
#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_conv_test {

using testing::Attrs;
using testing::BuiltKernel;
using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;
using testing::run_kernel;

constexpr float kTol = 1e-4f;

struct ConvCase {
  Dims x;
  int64_t m;
  Dims kernel;
  int64_t group = 1;
  Dims strides = {}, dilations = {}, pads = {};
  std::string auto_pad = {};
  bool bias = true;
  Layout layout = Layout::kPlain;
};

std::string describe(const ConvCase& c) {
  return "x" + dims_str(c.x) + " m=" + std::to_string(c.m) + " k" + dims_str(c.kernel) +
         " g=" + std::to_string(c.group) + " s" + dims_str(c.strides) + " d" +
         dims_str(c.dilations) + " p" + dims_str(c.pads) + " " + c.auto_pad +
         (c.bias ? " bias " : " ") + layout_name(c.layout);
}

Attrs conv_attrs(const ConvCase& c) {
  Attrs a = {{"group", attr_int(c.group)}};
  if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
  if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
  if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
  if (!c.auto_pad.empty()) a["auto_pad"] = attr_string(c.auto_pad);
  return a;
}

std::vector<FastInput> conv_inputs(const ConvCase& c, uint32_t seed) {
  Dims w = {c.m, c.x[1] / c.group};
  w.insert(w.end(), c.kernel.begin(), c.kernel.end());
  std::vector<FastInput> in = {{random_tensor(c.x, seed), false, c.layout},
                               {random_tensor(w, seed + 1), true, Layout::kPlain}};
  if (c.bias) in.push_back({random_tensor({c.m}, seed + 2), true, Layout::kPlain});
  return in;
}

void check_conv(const ConvCase& c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  expect_matches_ref("onednn.conv", "Conv", conv_inputs(c, seed), conv_attrs(c), 1, kTol, kTol);
}

// A conv that may run a Winograd algorithm, on every kernel that accepts it (the candidates the
// plan measures): its error bounded relative to the outputs' largest, as F(4x4, 3x3)'s rounding
// (about 1e-5 of it) is not each element's.
void check_winograd_conv(const ConvCase& c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  const std::vector<FastInput> in = conv_inputs(c, seed);
  const std::vector<std::string> names = testing::accepting_kernels("Conv", in, conv_attrs(c));
  EXPECT_NE(std::find(names.begin(), names.end(), "onednn.conv"), names.end());
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    testing::expect_matches_ref_scaled(name, "Conv", in, conv_attrs(c), 3e-5);
  }
}

TEST(OnednnConv, Sweep2d) {
  struct Channels {
    int64_t c, m, group;
  };
  const std::vector<Channels> channels = {{3, 17, 1}, {17, 3, 1}, {4, 6, 2}, {6, 6, 6}, {8, 16, 8}};
  const std::vector<Dims> pads = {{}, {1, 1, 1, 1}, {0, 2, 1, 0}};
  uint32_t seed = 1;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const Channels& ch : channels) {
      for (int64_t s : {1, 2}) {
        for (const Dims& p : pads) {
          for (int64_t d : {1, 2}) {
            for (bool bias : {true, false}) {
              ConvCase c{{2, ch.c, 7, 9}, ch.m, {3, 3}, ch.group, {s, s},
                         {d, d},          p,    {},     bias,     layout};
              check_conv(c, seed++);
            }
          }
        }
      }
    }
  }
}

TEST(OnednnConv, MeasuredWinogradGeometriesMatch) {
  // 3x3 convs where Winograd may win on some machine, whether the rule says it pays (64 -> 64
  // on 28x28, 96 -> 208 on 14x14) or not (64 -> 32: DenseNet's growth convs): the plan times
  // the algorithms that accept it and keeps the fastest; each matches the reference.
  ASSERT_TRUE(cost::winograd_measured(64, 32, 28, 28));
  ASSERT_TRUE(cost::winograd_measured(64, 64, 28, 28) && cost::winograd_pays(64, 64, 28, 28));
  ASSERT_TRUE(cost::winograd_measured(96, 208, 14, 14) && cost::winograd_pays(96, 208, 14, 14));
  ASSERT_FALSE(cost::winograd_measured(64, 32, 7, 7));    // Winograd loses on 7x7 maps
  ASSERT_FALSE(cost::winograd_measured(16, 64, 28, 28));  // and with few inputs
  uint32_t seed = 4100;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    check_winograd_conv({{1, 64, 28, 28}, 32, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, {}, true, layout},
                        seed);
    check_winograd_conv({{1, 64, 28, 28}, 64, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, {}, true, layout},
                        seed + 1);
    check_winograd_conv({{1, 96, 14, 14}, 208, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, {}, false, layout},
                        seed + 2);
    seed += 3;
  }
}

TEST(OnednnConv, KernelShapesAndStrides) {
  uint32_t seed = 100;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    check_conv({{1, 5, 9, 7}, 7, {1, 1}, 1, {}, {}, {}, {}, true, layout}, seed++);
    check_conv({{1, 5, 9, 7}, 7, {1, 1}, 1, {2, 2}, {}, {}, {}, false, layout}, seed++);
    // Strided 1x1 convs without pads run on a subsampled copy of the input (even sizes).
    check_conv({{2, 6, 8, 10}, 5, {1, 1}, 1, {2, 2}, {}, {}, {}, true, layout}, seed++);
    check_conv({{1, 6, 12, 9}, 4, {1, 1}, 2, {3, 1}, {}, {}, {}, false, layout}, seed++);
    check_conv({{1, 16, 8, 8}, 32, {1, 1}, 1, {2, 2}, {}, {}, "VALID", true, layout}, seed++);
    check_conv({{2, 17, 9, 7}, 3, {1, 1}, 1, {2, 3}, {}, {}, {}, true, layout}, seed++);
    check_conv({{1, 6, 8, 9}, 4, {1, 1}, 2, {1, 2}, {2, 2}, {}, {}, true, layout}, seed++);
    check_conv({{1, 6, 8, 9}, 4, {1, 1}, 1, {2, 2}, {}, {}, "SAME_UPPER", true, layout}, seed++);
    check_conv({{1, 6, 8, 9}, 4, {1, 1}, 1, {2, 2}, {}, {1, 0, 0, 1}, {}, true, layout}, seed++);
    check_conv({{2, 3, 11, 13}, 8, {7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, {}, true, layout}, seed++);
    // One pixel ([N, C, 1, 1], a squeeze-and-excitation's pooled vector): read as it is.
    check_conv({{2, 48, 1, 1}, 12, {1, 1}, 1, {}, {}, {}, {}, true, layout}, seed++);
    check_conv({{1, 20, 1, 1}, 40, {1, 1}, 4, {}, {}, {}, {}, false, layout}, seed++);
    check_conv({{1, 4, 8, 10}, 5, {2, 3}, 1, {1, 2}, {2, 1}, {1, 0, 0, 2}, {}, true, layout},
               seed++);
    check_conv({{1, 4, 5, 5}, 4, {5, 5}, 1, {}, {}, {}, {}, true, layout}, seed++);  // 1x1 out
  }
}

TEST(OnednnConv, AutoPad) {
  uint32_t seed = 200;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
      for (int64_t s : {1, 2}) {
        check_conv({{2, 3, 7, 9}, 5, {3, 3}, 1, {s, s}, {}, {}, ap, true, layout}, seed++);
        check_conv({{1, 6, 8, 9}, 6, {4, 2}, 6, {s, s}, {}, {}, ap, false, layout}, seed++);
      }
    }
  }
}

TEST(OnednnConv, DepthwiseMobileNetShapes) {
  uint32_t seed = 300;
  for (int64_t s : {1, 2}) {
    check_conv({{1, 32, 28, 28}, 32, {3, 3}, 32, {s, s}, {}, {1, 1, 1, 1}, {}, true, Layout::kNHWC},
               seed++);
  }
  check_conv({{1, 32, 28, 28}, 16, {1, 1}, 1, {}, {}, {}, {}, true, Layout::kNHWC}, seed++);
  check_conv({{1, 24, 14, 14}, 48, {3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, {}, true, Layout::kNHWC},
             seed++);
}

TEST(OnednnConv, OneAndThreeDimensional) {
  uint32_t seed = 400;
  check_conv({{2, 3, 17}, 5, {3}, 1, {2}, {}, {1, 2}, {}, true}, seed++);
  check_conv({{2, 4, 17}, 4, {3}, 2, {1}, {2}, {}, {}, false}, seed++);
  check_conv({{1, 4, 16}, 4, {5}, 4, {}, {}, {}, "SAME_UPPER", true}, seed++);
  check_conv({{1, 3, 5, 6, 7}, 4, {3, 3, 3}, 1, {1, 2, 1}, {}, {1, 1, 1, 1, 1, 1}, {}, true},
             seed++);
  check_conv({{2, 4, 4, 5, 6}, 6, {2, 3, 2}, 2, {}, {1, 1, 2}, {}, {}, false}, seed++);
}

// 1-D convs run as 2-D convs of height 1 and 3-D convs channels-last (NWC, NDHWC), from plain
// or channels-last inputs: Conformer's depthwise conv (kernel 31), grouped, strided and dilated
// 1-D convs, and R3D's 3x3x3 convs, plain and depthwise.
TEST(OnednnConv, OneAndThreeDimensionalChannelsLast) {
  uint32_t seed = 450;
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    check_conv({{1, 48, 150}, 48, {31}, 48, {}, {}, {15, 15}, {}, true, l}, seed++);
    check_conv({{2, 32, 41}, 64, {3}, 1, {2}, {}, {1, 1}, {}, true, l}, seed++);
    check_conv({{1, 32, 40}, 32, {3}, 4, {1}, {4}, {4, 4}, {}, false, l}, seed++);
    check_conv({{1, 20, 33}, 24, {7}, 1, {3}, {}, {}, "SAME_LOWER", true, l}, seed++);
    check_conv(
        {{1, 16, 4, 9, 10}, 32, {3, 3, 3}, 1, {1, 2, 2}, {}, {1, 1, 1, 1, 1, 1}, {}, true, l},
        seed++);
    check_conv({{1, 32, 5, 8, 8}, 32, {3, 3, 3}, 32, {}, {}, {1, 1, 1, 1, 1, 1}, {}, false, l},
               seed++);
    check_conv({{2, 16, 3, 7, 6}, 48, {1, 1, 1}, 1, {1, 2, 2}, {}, {}, {}, true, l}, seed++);
    // wav2vec2's grouped positional conv (long kernel, few channels a group): as 2-D of width
    // 1, where oneDNN has a direct kernel only for that.
    check_conv({{1, 64, 49}, 64, {32}, 4, {}, {}, {16, 16}, {}, true, l}, seed++);
    check_conv({{2, 32, 30}, 32, {16}, 2, {2}, {}, {8, 7}, {}, false, l}, seed++);
    // One input channel (a volume's first conv): a blocked layout where channels-last has no
    // direct kernel.
    check_conv({{1, 1, 6, 8, 8}, 16, {3, 3, 3}, 1, {}, {}, {1, 1, 1, 1, 1, 1}, {}, true, l},
               seed++);
  }
}

TEST(OnednnConv, OutputIsChannelsLastAtEveryRank) {
  ConvCase c{{1, 3, 7, 9}, 5, {3, 3}};
  BuiltKernel k("onednn.conv", "Conv", conv_inputs(c, 1), conv_attrs(c));
  ASSERT_TRUE(k.accepted);
  EXPECT_EQ(k.output_layout(), Layout::kNHWC);
  std::vector<FastInput> in = conv_inputs(c, 1);
  Tensor y = k.run({in[0].value, in[1].value, in[2].value});
  EXPECT_EQ(y.layout(), Layout::kNHWC);
  EXPECT_EQ(y.shape(), (Dims{1, 5, 5, 7}));

  // 1-D and 3-D: NWC and NDHWC, from plain or channels-last inputs.
  for (const ConvCase& c : {ConvCase{{1, 3, 9}, 5, {3}}, ConvCase{{1, 3, 4, 5, 6}, 5, {3, 3, 3}}}) {
    for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
      std::vector<FastInput> nd = conv_inputs(c, 2);
      nd[0].layout = l;
      BuiltKernel kn("onednn.conv", "Conv", nd, conv_attrs(c));
      ASSERT_TRUE(kn.accepted);
      EXPECT_EQ(kn.output_layout(), Layout::kNHWC);
      Tensor yn = kn.run({to_layout(nd[0].value, l), nd[1].value, nd[2].value});
      EXPECT_EQ(yn.layout(), Layout::kNHWC);
      const Tensor want =
          testing::run_ref("Conv", {nd[0].value, nd[1].value, nd[2].value}, conv_attrs(c))[0];
      testing::expect_close(to_layout(yn, Layout::kPlain), want, kTol, kTol);
    }
  }
}

TEST(OnednnConv, RunRejectsInputsItWasNotPlannedFor) {
  ConvCase c{{1, 3, 7, 9}, 5, {3, 3}, 1, {}, {}, {}, {}, true, Layout::kNHWC};
  std::vector<FastInput> in = conv_inputs(c, 1);
  BuiltKernel k("onednn.conv", "Conv", in, conv_attrs(c));
  ASSERT_TRUE(k.accepted);
  Tensor wrong_shape = to_layout(random_tensor({1, 3, 7, 8}, 2), Layout::kNHWC);
  EXPECT_THROW(k.run({wrong_shape, in[1].value, in[2].value}), Error);
  Tensor wrong_layout = random_tensor({1, 3, 7, 9}, 2);  // plain, planned NHWC
  EXPECT_THROW(k.run({wrong_layout, in[1].value, in[2].value}), Error);
  Tensor wrong_type(DType::kFloat64, {1, 3, 7, 9});
  EXPECT_THROW(k.run({wrong_type, in[1].value, in[2].value}), Error);
  Tensor right = to_layout(random_tensor({1, 3, 7, 9}, 2), Layout::kNHWC);
  EXPECT_NO_THROW(k.run({right, in[1].value, in[2].value}));
}

TEST(OnednnConv, DeclinesWhatItCannotRun) {
  ConvCase c{{1, 3, 7, 9}, 5, {3, 3}};
  std::vector<FastInput> in = conv_inputs(c, 1);
  // Weights that are not constants.
  std::vector<FastInput> dyn_w = in;
  dyn_w[1].constant = false;
  EXPECT_EQ(run_kernel("Conv", dyn_w, conv_attrs(c)).kernel, "ref");
  // A bias that is not a constant.
  std::vector<FastInput> dyn_b = in;
  dyn_b[2].constant = false;
  EXPECT_EQ(run_kernel("Conv", dyn_b, conv_attrs(c)).kernel, "ref");
  // float64.
  std::vector<FastInput> f64 = {
      {testing::run_ref1("Cast", {in[0].value}, {{"to", attr_int(11)}}), false},
      {testing::run_ref1("Cast", {in[1].value}, {{"to", attr_int(11)}}), true}};
  EXPECT_EQ(run_kernel("Conv", f64, {}).kernel, "ref");
  // kernel_shape disagreeing with the weights: the reference kernel reports it.
  Attrs bad = conv_attrs(c);
  bad["kernel_shape"] = attr_ints({2, 2});
  BuiltKernel k("onednn.conv", "Conv", in, bad);
  EXPECT_FALSE(k.accepted);
  // Pads too large to give any output.
  BuiltKernel k2("onednn.conv", "Conv", {{random_tensor({1, 3, 2, 2}, 1)}, in[1]}, {});
  EXPECT_FALSE(k2.accepted);
}

// ConvTranspose.

struct DeconvCase {
  Dims x;
  int64_t m;  // output channels
  Dims kernel;
  int64_t group = 1;
  Attrs attrs = {};
  bool bias = true;
  Layout layout = Layout::kPlain;
};

std::vector<FastInput> deconv_inputs(const DeconvCase& c, uint32_t seed) {
  Dims w = {c.x[1], c.m / c.group};
  w.insert(w.end(), c.kernel.begin(), c.kernel.end());
  std::vector<FastInput> in = {{random_tensor(c.x, seed), false, c.layout},
                               {random_tensor(w, seed + 1), true, Layout::kPlain}};
  if (c.bias) in.push_back({random_tensor({c.m}, seed + 2), true, Layout::kPlain});
  return in;
}

void check_deconv(const DeconvCase& c, uint32_t seed) {
  Attrs a = c.attrs;
  a["group"] = attr_int(c.group);
  SCOPED_TRACE("x" + dims_str(c.x) + " m=" + std::to_string(c.m) + " g=" + std::to_string(c.group) +
               " " + layout_name(c.layout) + " case " + std::to_string(seed));
  expect_matches_ref("onednn.conv_transpose", "ConvTranspose", deconv_inputs(c, seed), a, 1, kTol,
                     kTol);
}

TEST(OnednnConvTranspose, Sweep) {
  uint32_t seed = 500;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (bool bias : {true, false}) {
      check_deconv({{2, 3, 5, 7}, 4, {3, 3}, 1, {}, bias, layout}, seed++);
      check_deconv({{2, 4, 5, 7}, 6, {3, 3}, 2, {{"strides", attr_ints({2, 2})}}, bias, layout},
                   seed++);
      check_deconv({{1, 6, 4, 5},
                    6,
                    {3, 2},
                    6,
                    {{"strides", attr_ints({2, 1})}, {"pads", attr_ints({1, 0, 0, 1})}},
                    bias,
                    layout},
                   seed++);
      check_deconv({{1, 3, 4, 5},
                    5,
                    {3, 3},
                    1,
                    {{"strides", attr_ints({2, 2})},
                     {"pads", attr_ints({1, 1, 1, 1})},
                     {"output_padding", attr_ints({1, 1})}},
                    bias,
                    layout},
                   seed++);
      check_deconv({{1, 3, 4, 5},
                    5,
                    {2, 2},
                    1,
                    {{"strides", attr_ints({2, 3})}, {"output_padding", attr_ints({1, 2})}},
                    bias,
                    layout},
                   seed++);
      check_deconv({{1, 4, 5, 6},
                    4,
                    {3, 3},
                    2,
                    {{"dilations", attr_ints({2, 1})}, {"pads", attr_ints({2, 1, 0, 1})}},
                    bias,
                    layout},
                   seed++);
      check_deconv({{1, 3, 4, 5},
                    2,
                    {3, 3},
                    1,
                    {{"strides", attr_ints({2, 2})}, {"output_shape", attr_ints({9, 10})}},
                    bias,
                    layout},
                   seed++);
      // output_shape past the natural size (the extra row and column get only the bias),
      // given as the full [N, C, H, W].
      check_deconv({{1, 3, 4, 5},
                    2,
                    {3, 3},
                    1,
                    {{"strides", attr_ints({2, 2})}, {"output_shape", attr_ints({1, 2, 10, 12})}},
                    bias,
                    layout},
                   seed++);
      for (const char* ap : {"SAME_UPPER", "SAME_LOWER"}) {
        check_deconv({{1, 3, 4, 5},
                      2,
                      {3, 3},
                      1,
                      {{"strides", attr_ints({2, 2})}, {"auto_pad", attr_string(ap)}},
                      bias,
                      layout},
                     seed++);
      }
    }
  }
}

// A 3-D UNet's 2x upsampling, grouped, padded and strided 3-D transposed convs.
TEST(OnednnConvTranspose, ThreeDimensional) {
  uint32_t seed = 650;
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    check_deconv({{1, 32, 3, 4, 5}, 16, {2, 2, 2}, 1, {{"strides", attr_ints({2, 2, 2})}}, true, l},
                 seed++);
    check_deconv({{1, 8, 3, 3, 4},
                  12,
                  {3, 3, 3},
                  4,
                  {{"strides", attr_ints({2, 1, 2})}, {"pads", attr_ints({1, 0, 1, 1, 0, 1})}},
                  false,
                  l},
                 seed++);
  }
}

// A vocoder's upsampling (HiFi-GAN: kernel 16, stride 8), grouped, padded and output_shape
// forms of 1-D transposed convs.
TEST(OnednnConvTranspose, OneDimensional) {
  uint32_t seed = 600;
  for (bool bias : {true, false}) {
    check_deconv({{1, 32, 20},
                  16,
                  {16},
                  1,
                  {{"strides", attr_ints({8})}, {"pads", attr_ints({4, 4})}},
                  bias},
                 seed++);
    check_deconv(
        {{2, 8, 9}, 12, {4}, 4, {{"strides", attr_ints({2})}, {"pads", attr_ints({1, 1})}}, bias},
        seed++);
    check_deconv({{1, 6, 7},
                  5,
                  {3},
                  1,
                  {{"strides", attr_ints({3})}, {"output_padding", attr_ints({2})}},
                  bias},
                 seed++);
    check_deconv({{1, 4, 6},
                  4,
                  {5},
                  1,
                  {{"strides", attr_ints({2})}, {"output_shape", attr_ints({14})}},
                  bias},
                 seed++);
    check_deconv({{1, 16, 10}, 8, {4}, 1, {{"strides", attr_ints({2})}}, bias, Layout::kNHWC},
                 seed++);
  }
}

TEST(OnednnConvTranspose, OutputIsNhwcAndDeclines) {
  DeconvCase c{{1, 3, 4, 5}, 4, {3, 3}};
  BuiltKernel k("onednn.conv_transpose", "ConvTranspose", deconv_inputs(c, 1), {});
  ASSERT_TRUE(k.accepted);
  EXPECT_EQ(k.output_layout(), Layout::kNHWC);
  std::vector<FastInput> dyn_w = deconv_inputs(c, 1);
  dyn_w[1].constant = false;
  EXPECT_EQ(run_kernel("ConvTranspose", dyn_w, {}).kernel, "ref");
  // 1-D and 3-D transposed convs run too, channels-last out.
  for (const DeconvCase& cn :
       {DeconvCase{{1, 3, 5}, 4, {3}}, DeconvCase{{1, 3, 4, 4, 4}, 4, {3, 3, 3}}}) {
    BuiltKernel kn("onednn.conv_transpose", "ConvTranspose", deconv_inputs(cn, 1), {});
    ASSERT_TRUE(kn.accepted);
    EXPECT_EQ(kn.output_layout(), Layout::kNHWC);
  }
  // output_padding not below the stride.
  BuiltKernel k2("onednn.conv_transpose", "ConvTranspose", deconv_inputs(c, 1),
                 {{"output_padding", attr_ints({1, 1})}});
  EXPECT_FALSE(k2.accepted);
}

}  // namespace onednn_conv_test
}  // namespace nnfuse
