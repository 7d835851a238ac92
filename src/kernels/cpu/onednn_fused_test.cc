// The oneDNN kernels of the fused ops (FusedConv, FusedMatMul, FusedGemm,
// FusedGlobalPoolGemm, FusedGatedMatMul) against their reference kernels, plus FusedConv's in-place
// residual.
#include <gtest/gtest.h>

#include <cstring>

#include "cost/winograd_rule.h"
#include "kernels/cpu/cpu_test_support.h"
#include "kernels/cpu/layout.h"
#include "kernels/cpu/onednn_kernels.h"
#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_fused_test {

using testing::Attrs;
using testing::BuiltKernel;
using testing::expect_close;
using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;
using testing::run_kernel;
using testing::run_ref1;

constexpr float kTol = 1e-4f;

struct Act {
  std::string name;
  bool has_alpha = false, has_beta = false;
  float alpha = 0.0f, beta = 0.0f;
};

const std::vector<Act>& activations() {
  static const std::vector<Act> a = {
      {""},
      {"Relu"},
      {"LeakyRelu", true, false, 0.1f},
      {"LeakyRelu"},
      {"Clip", true, true, 0.0f, 6.0f},
      {"Clip", true, true, -0.25f, 0.5f},
      {"Clip", true, false, 0.0f},
      {"Sigmoid"},
      {"Tanh"},
      {"HardSigmoid", true, true, 0.3f, 0.4f},
      {"HardSigmoid"},
      {"HardSwish"},
      {"SiLU"},
      {"Gelu"},
  };
  return a;
}

void add_act_attrs(const Act& a, Attrs& attrs) {
  if (!a.name.empty()) attrs["activation"] = attr_string(a.name);
  if (a.has_alpha) attrs["activation_alpha"] = attr_float(a.alpha);
  if (a.has_beta) attrs["activation_beta"] = attr_float(a.beta);
}

// FusedConv.

struct ConvCase {
  Dims x;
  int64_t m;
  Dims kernel;
  int64_t group = 1;
  Attrs attrs = {};
};

Dims conv_out_shape(const ConvCase& c, const Tensor& x, const Tensor& w) {
  Attrs a = c.attrs;
  a["group"] = attr_int(c.group);
  return run_ref1("Conv", {x, w}, a).shape();
}

// X, W, B (or omitted), Sum (when sum).
std::vector<FastInput> conv_inputs(const ConvCase& c, bool bias, bool sum, Layout x_layout,
                                   Layout sum_layout, uint32_t seed) {
  Dims ws = {c.m, c.x[1] / c.group};
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  std::vector<FastInput> in = {{random_tensor(c.x, seed, -2.0f, 2.0f), false, x_layout},
                               {random_tensor(ws, seed + 1), true},
                               {bias ? random_tensor({c.m}, seed + 2) : Tensor(), true}};
  if (sum) {
    const Dims ys = conv_out_shape(c, in[0].value, in[1].value);
    in.push_back({random_tensor(ys, seed + 3, -2.0f, 2.0f), false, sum_layout});
  }
  return in;
}

Attrs conv_attrs(const ConvCase& c, const Act& act) {
  Attrs a = c.attrs;
  a["group"] = attr_int(c.group);
  add_act_attrs(act, a);
  return a;
}

// FusedConv on the kernel named `kernel` ("": the first of the table that accepts it, as the plan
// chooses where nothing is measured).
void check_conv(const ConvCase& c, const Act& act, bool bias, bool sum, Layout x_layout,
                Layout sum_layout, uint32_t seed, const std::string& kernel = "onednn.fused_conv") {
  SCOPED_TRACE(std::string("x") + dims_str(c.x) + " m=" + std::to_string(c.m) + " k" +
               dims_str(c.kernel) + " g=" + std::to_string(c.group) + " act=" + act.name +
               (bias ? " bias" : "") + (sum ? " sum " : " ") + layout_name(x_layout) + "/" +
               layout_name(sum_layout) + " " + kernel);
  expect_matches_ref(kernel, "FusedConv", conv_inputs(c, bias, sum, x_layout, sum_layout, seed),
                     conv_attrs(c, act), 1, kTol, kTol);
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{1, 8, 9, 7}, 16, {3, 3}, 1, {{"pads", attr_ints({1, 1, 1, 1})}}},
      {{2, 16, 8, 8}, 8, {1, 1}},
      // Strided 1x1 without pads: the subsampled-input path.
      {{1, 8, 10, 12}, 16, {1, 1}, 1, {{"strides", attr_ints({2, 2})}}},
      {{1, 8, 9, 9},
       8,
       {3, 3},
       8,
       {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {{1, 6, 7, 9}, 9, {3, 3}, 3, {{"auto_pad", attr_string("SAME_UPPER")}}},
      {{1, 4, 9, 8},
       6,
       {3, 2},
       2,
       {{"dilations", attr_ints({2, 1})}, {"strides", attr_ints({1, 2})}}},
  };
  return cases;
}

TEST(OnednnFusedConv, EveryActivationWithAndWithoutSumAndBias) {
  uint32_t seed = 1;
  for (const Act& act : activations()) {
    for (const ConvCase& c : conv_cases()) {
      for (bool sum : {false, true}) {
        check_conv(c, act, /*bias=*/true, sum, Layout::kNHWC, Layout::kNHWC, seed += 4);
      }
    }
  }
}

TEST(OnednnFusedConv, PlainAndNhwcInputsWithAndWithoutBias) {
  uint32_t seed = 1000;
  for (const Act& act : {Act{""}, Act{"Relu"}, Act{"Clip", true, true, 0.0f, 6.0f}, Act{"SiLU"}}) {
    for (const ConvCase& c : conv_cases()) {
      for (Layout x_layout : {Layout::kPlain, Layout::kNHWC}) {
        for (bool bias : {false, true}) {
          for (bool sum : {false, true}) {
            check_conv(c, act, bias, sum, x_layout, Layout::kNHWC, seed += 4);
          }
        }
      }
    }
  }
}

TEST(OnednnFusedConv, PlainSumIsReorderedIntoTheNhwcOutput) {
  uint32_t seed = 2000;
  for (const ConvCase& c : conv_cases()) {
    for (Layout x_layout : {Layout::kPlain, Layout::kNHWC}) {
      check_conv(c, {"Relu"}, true, true, x_layout, Layout::kPlain, seed += 4);
    }
  }
}

TEST(OnednnFusedConv, OneAndThreeDimensional) {
  uint32_t seed = 3000;
  const std::vector<ConvCase> cases = {
      {{2, 4, 17}, 6, {3}, 2, {{"pads", attr_ints({1, 1})}}},
      {{1, 3, 5, 6, 7}, 4, {3, 3, 3}, 1, {{"strides", attr_ints({1, 2, 1})}}},
      {{1, 32, 60}, 32, {15}, 32, {{"pads", attr_ints({7, 7})}}},
      {{1, 16, 4, 6, 6}, 16, {3, 3, 3}, 1, {{"pads", attr_ints({1, 1, 1, 1, 1, 1})}}},
  };
  for (const ConvCase& c : cases) {
    for (const Act& act : {Act{"Relu"}, Act{"Gelu"}, Act{"HardSigmoid"}}) {
      for (bool sum : {false, true}) {
        check_conv(c, act, true, sum, Layout::kPlain, Layout::kPlain, seed += 4);
      }
    }
    // Channels-last in, and a residual either channels-last or plain.
    for (Layout sum_layout : {Layout::kNHWC, Layout::kPlain}) {
      check_conv(c, {"Relu"}, true, true, Layout::kNHWC, sum_layout, seed += 4);
    }
  }
}

// check_conv for a conv on a Winograd algorithm: the error bounded relative to the outputs'
// largest, as F(4x4, 3x3)'s rounding (about 1e-5 of it) is not each element's. On the kernel
// named `kernel`, or ("") the first of the table that accepts the conv.
void check_winograd_conv(const ConvCase& c, const Act& act, bool bias, bool sum, Layout x_layout,
                         Layout sum_layout, uint32_t seed, const std::string& kernel = "") {
  SCOPED_TRACE(std::string("x") + dims_str(c.x) + " m=" + std::to_string(c.m) + " act=" + act.name +
               (bias ? " bias" : "") + (sum ? " sum " : " ") + layout_name(x_layout) + "/" +
               layout_name(sum_layout) + " " + kernel);
  testing::expect_matches_ref_scaled(kernel, "FusedConv",
                                     conv_inputs(c, bias, sum, x_layout, sum_layout, seed),
                                     conv_attrs(c, act), 3e-5);
}

// Every fast kernel that accepts the conv (those the plan measures against each other where
// they are measured candidates), against the reference.
void check_every_conv_kernel(const ConvCase& c, const Act& act, bool bias, bool sum,
                             Layout x_layout, Layout sum_layout, uint32_t seed) {
  const std::vector<std::string> names = testing::accepting_kernels(
      "FusedConv", conv_inputs(c, bias, sum, x_layout, sum_layout, seed), conv_attrs(c, act));
  EXPECT_FALSE(names.empty());
  for (const std::string& name : names) {
    check_winograd_conv(c, act, bias, sum, x_layout, sum_layout, seed, name);
  }
}

TEST(OnednnFusedConv, ResNetShapes) {
  // The bottleneck's last 1x1 conv and a basic block's 3x3 conv, each with residual + ReLU;
  // a depthwise 3x3 with ReLU6 (MobileNet).
  const ConvCase c1{{1, 64, 14, 14}, 256, {1, 1}};
  const ConvCase c3{{1, 64, 14, 14}, 64, {3, 3}, 1, {{"pads", attr_ints({1, 1, 1, 1})}}};
  const ConvCase dw{{1, 32, 14, 14}, 32, {3, 3}, 32, {{"pads", attr_ints({1, 1, 1, 1})}}};
  check_conv(c1, {"Relu"}, true, true, Layout::kNHWC, Layout::kNHWC, 1);
  // The 3x3 conv on the direct algorithm, element by element; on every kernel the plan measures
  // for it (a Winograd algorithm may win it), relative to the outputs' largest.
  check_conv(c3, {"Relu"}, true, true, Layout::kNHWC, Layout::kNHWC, 2);
  check_every_conv_kernel(c3, {"Relu"}, true, true, Layout::kNHWC, Layout::kNHWC, 2);
  check_conv(dw, {"Clip", true, true, 0.0f, 6.0f}, true, false, Layout::kNHWC, Layout::kNHWC, 3);
}

TEST(OnednnFusedConv, OwnWinogradAtEveryVectorWidth) {
  // The project's own Winograd kernel (NNFUSE_WINOGRAD=own; cpu/cpu_winograd.h) at each vector
  // width: the activations it applies, with and without bias and an NHWC residual; pads from 0
  // to 2, uneven ones among them; channel counts off the vector width; enough tiles that the
  // threads split them. Where it does not apply (SiLU, a plain input) oneDNN's algorithms run.
  const testing::ScopedEnv own("NNFUSE_WINOGRAD", "own");
  const std::vector<ConvCase> cases = {
      {{1, 32, 14, 14}, 48, {3, 3}, 1, {{"pads", attr_ints({1, 1, 1, 1})}}},
      {{2, 5, 9, 11}, 7, {3, 3}, 1, {{"pads", attr_ints({1, 1, 1, 1})}}},
      {{1, 17, 10, 13}, 33, {3, 3}},
      {{1, 20, 12, 7}, 40, {3, 3}, 1, {{"pads", attr_ints({2, 0, 1, 2})}}},
      {{1, 24, 30, 30}, 32, {3, 3}, 1, {{"auto_pad", attr_string("SAME_UPPER")}}},
  };
  uint32_t seed = 5000;
  for (const char* isa : {"", "avx2", "sse2"}) {
    SCOPED_TRACE(std::string("NNFUSE_WINOGRAD_ISA=") + isa);
    const testing::ScopedEnv width("NNFUSE_WINOGRAD_ISA", isa);
    for (const ConvCase& c : cases) {
      // Clip's bounds are wide: a narrow one would leave outputs much smaller than the
      // error, which is relative to the conv's own.
      for (const Act& act : {Act{""}, Act{"Relu"}, Act{"LeakyRelu", true, false, 0.1f},
                             Act{"Clip", true, true, -5.0f, 8.0f}, Act{"SiLU"}}) {
        check_winograd_conv(c, act, /*bias=*/true, /*sum=*/false, Layout::kNHWC, Layout::kNHWC,
                            seed += 4);
      }
      for (bool bias : {false, true}) {
        check_winograd_conv(c, {"Relu"}, bias, /*sum=*/true, Layout::kNHWC, Layout::kNHWC,
                            seed += 4);
      }
      check_winograd_conv(c, {"Relu"}, true, true, Layout::kPlain, Layout::kNHWC, seed += 4);
      check_winograd_conv(c, {"Relu"}, true, true, Layout::kNHWC, Layout::kPlain, seed += 4);
    }
  }
}

// The kernel the plan chooses for a depthwise conv over an NHWC input where it measures nothing:
// the first of the table that accepts it.
std::string depthwise_kernel(const ConvCase& c, const Act& act) {
  BuiltKernel k("", "FusedConv", conv_inputs(c, true, false, Layout::kNHWC, Layout::kPlain, 1),
                conv_attrs(c, act));
  EXPECT_TRUE(k.accepted);
  return k.factory ? k.factory->name : "";
}

TEST(OnednnFusedConv, OwnDepthwiseAtEveryVectorWidth) {
  // The project's own depthwise kernel (NNFUSE_DEPTHWISE=own; cpu/cpu_depthwise.h) at each
  // vector width: activations in registers and after the rows, with and without bias; 3x3 and
  // 5x5, pads from 0 to 2, uneven ones among them; channel counts of whole vectors, of 8 past
  // them and partial. Where it does not apply (stride 2, a plain input, a residual) oneDNN's
  // kernel runs.
  const testing::ScopedEnv own("NNFUSE_DEPTHWISE", "own");
  const Attrs pads1 = {{"pads", attr_ints({1, 1, 1, 1})}};
  const std::vector<ConvCase> cases = {
      {{1, 72, 14, 14}, 72, {3, 3}, 72, pads1},
      {{2, 20, 9, 11}, 20, {3, 3}, 20, pads1},
      {{1, 40, 7, 7}, 40, {5, 5}, 40, {{"auto_pad", attr_string("SAME_UPPER")}}},
      {{1, 24, 12, 10}, 24, {3, 3}, 24, {{"pads", attr_ints({0, 1, 2, 1})}}},
      {{1, 5, 6, 6}, 5, {3, 3}, 5},
      {{1, 32, 14, 14},
       32,
       {3, 3},
       32,
       {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}}},
  };
  uint32_t seed = 7000;
  for (const char* isa : {"", "avx2", "sse2"}) {
    SCOPED_TRACE(std::string("NNFUSE_DEPTHWISE_ISA=") + isa);
    const testing::ScopedEnv width("NNFUSE_DEPTHWISE_ISA", isa);
    for (const ConvCase& c : cases) {
      for (const Act& act :
           {Act{""}, Act{"Relu"}, Act{"Clip", true, true, 0.0f, 6.0f}, Act{"HardSwish"},
            Act{"HardSigmoid"}, Act{"SiLU"}, Act{"LeakyRelu", true, false, 0.1f}}) {
        check_conv(c, act, /*bias=*/true, /*sum=*/false, Layout::kNHWC, Layout::kNHWC, seed += 3,
                   "");
      }
      check_conv(c, {"Relu"}, /*bias=*/false, /*sum=*/false, Layout::kNHWC, Layout::kNHWC,
                 seed += 3, "");
      check_conv(c, {"Relu"}, true, /*sum=*/true, Layout::kNHWC, Layout::kNHWC, seed += 3, "");
      check_conv(c, {"Relu"}, true, false, Layout::kPlain, Layout::kNHWC, seed += 3, "");
    }
  }
  EXPECT_EQ(depthwise_kernel(cases[0], {"HardSwish"}), "cpu.depthwise");
  EXPECT_EQ(depthwise_kernel(cases[5], {"Relu"}), "onednn.fused_conv");  // strided: oneDNN's
}

TEST(OnednnFusedConv, MeasuredDepthwiseCandidatesMatchTheReference) {
  // Unset, a depthwise conv's candidates are the project's kernel and oneDNN's (the plan
  // measures them, runtime/kernel_selection.h): both accept it and match the reference.
  unsetenv("NNFUSE_DEPTHWISE");
  const ConvCase c{{1, 96, 14, 14}, 96, {3, 3}, 96, {{"pads", attr_ints({1, 1, 1, 1})}}};
  const std::vector<FastInput> in = conv_inputs(c, true, false, Layout::kNHWC, Layout::kNHWC, 1);
  const std::vector<std::string> names =
      testing::accepting_kernels("FusedConv", in, conv_attrs(c, {"HardSwish"}));
#if !defined(__SANITIZE_THREAD__)  // where only oneDNN's kernels run
  EXPECT_EQ(names, (std::vector<std::string>{"cpu.depthwise", "onednn.fused_conv"}));
#endif
  for (const std::string& kernel : names) {
    check_conv(c, {"HardSwish"}, true, false, Layout::kNHWC, Layout::kNHWC, 7100, kernel);
  }
  const testing::ScopedEnv off("NNFUSE_DEPTHWISE", "0");
  EXPECT_EQ(depthwise_kernel(c, {"HardSwish"}), "onednn.fused_conv");
}

TEST(OnednnFusedConv, OutputLayoutAndInPlaceInput) {
  const ConvCase c = conv_cases()[0];
  const KernelFactory* f = testing::find_factory("FusedConv", "onednn.fused_conv");
  ASSERT_NE(f, nullptr);
  ASSERT_NE(f->in_place_input, nullptr);
  {
    BuiltKernel k("onednn.fused_conv", "FusedConv",
                  conv_inputs(c, true, true, Layout::kPlain, Layout::kNHWC, 1), conv_attrs(c, {}));
    ASSERT_TRUE(k.accepted);
    EXPECT_EQ(k.output_layout(), Layout::kNHWC);
    EXPECT_EQ(f->in_place_input(*k.info, 0), 3);
  }
  {  // A plain Sum is reordered, never overwritten.
    BuiltKernel k("onednn.fused_conv", "FusedConv",
                  conv_inputs(c, true, true, Layout::kNHWC, Layout::kPlain, 1), conv_attrs(c, {}));
    ASSERT_TRUE(k.accepted);
    EXPECT_EQ(f->in_place_input(*k.info, 0), -1);
  }
  {  // No Sum: nothing to share.
    BuiltKernel k("onednn.fused_conv", "FusedConv",
                  conv_inputs(c, true, false, Layout::kNHWC, Layout::kNHWC, 1), conv_attrs(c, {}));
    ASSERT_TRUE(k.accepted);
    EXPECT_EQ(f->in_place_input(*k.info, 0), -1);
  }
  {  // Sum is X itself (a 1x1 conv with its input as residual): the conv reads X while writing.
    Graph g;
    Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, 4, 5, 5}));
    g.add_input(x);
    Value* w = g.add_value("w", DType::kFloat32, Shape::of({4, 4, 1, 1}));
    w->set_constant(random_tensor({4, 4, 1, 1}, 1));
    Node* n = g.add_node("FusedConv", "n", {x, w, nullptr, x}, {g.add_value("y")}, kFusedDomain);
    NodeInfo info{*n, 1, {Layout::kNHWC, Layout::kPlain, Layout::kPlain, Layout::kNHWC}, 2};
    ASSERT_TRUE(f->accepts(info));
    EXPECT_EQ(f->in_place_input(info, 0), -1);
  }
}

// Runs the fused conv with output 0 planned over `out` (Sum's storage, or a buffer of its own
// filled with garbage) and checks it against the reference kernel.
void run_with_planned_output(const ConvCase& c, bool bias, bool in_place, uint32_t seed) {
  SCOPED_TRACE(std::string(in_place ? "in place" : "own buffer") + (bias ? " bias" : ""));
  const Act relu{"Relu"};
  std::vector<FastInput> in = conv_inputs(c, bias, true, Layout::kNHWC, Layout::kNHWC, seed);
  BuiltKernel k("onednn.fused_conv", "FusedConv", in, conv_attrs(c, relu));
  ASSERT_TRUE(k.accepted);
  ASSERT_EQ(k.factory->in_place_input(*k.info, 0), 3);
  const Tensor x = to_layout(in[0].value, Layout::kNHWC);
  const Tensor sum = to_layout(in[3].value, Layout::kNHWC).clone();
  const Tensor sum_before = sum.clone();
  KernelIO io;
  io.inputs = {&x, &in[1].value, bias ? &in[2].value : nullptr, &sum};
  Tensor out;
  if (in_place) {
    out = sum;  // shares the storage
  } else {
    out = Tensor(DType::kFloat32, sum.shape());
    out.set_layout(Layout::kNHWC);
    float* p = out.data<float>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = 1e6f;
  }
  io.outputs = {out};
  k.kernel->run(io);
  ASSERT_EQ(io.outputs[0].raw(), out.raw());
  std::vector<Tensor> plain;
  for (const FastInput& f : in) plain.push_back(f.value);
  const Tensor want = run_ref1("FusedConv", plain, conv_attrs(c, relu));
  expect_close(to_layout(io.outputs[0], Layout::kPlain), want, kTol, kTol);
  if (in_place) {
    expect_close(to_layout(sum, Layout::kPlain), want, kTol, kTol);  // overwritten
  } else {
    EXPECT_EQ(std::memcmp(sum.raw(), sum_before.raw(), sum.nbytes()), 0);  // untouched
  }
  // Run again: in place, the residual now read is the previous result.
  if (in_place) {
    const Tensor again = run_ref1(
        "FusedConv", {plain[0], plain[1], plain[2], to_layout(sum, Layout::kPlain).clone()},
        conv_attrs(c, relu));
    k.kernel->run(io);
    expect_close(to_layout(io.outputs[0], Layout::kPlain), again, kTol, kTol);
  }
}

TEST(OnednnFusedConv, ResidualInPlaceAndInAnOutputOfItsOwn) {
  uint32_t seed = 4000;
  for (const ConvCase& c : conv_cases()) {
    for (bool bias : {false, true}) {
      for (bool in_place : {true, false}) run_with_planned_output(c, bias, in_place, seed += 4);
    }
  }
  // The shared helper (output over a copy of input 3's storage).
  const ConvCase c = conv_cases()[1];
  testing::expect_in_place_matches_ref("onednn.fused_conv", "FusedConv",
                                       conv_inputs(c, true, true, Layout::kNHWC, Layout::kNHWC, 7),
                                       3, conv_attrs(c, {"Relu"}), kTol, kTol);
}

TEST(OnednnFusedConv, WinogradShapes) {
  // Unstrided 3x3 convs where Winograd pays (cost/winograd_rule.h) run it (on AVX-512
  // machines) through blocked buffers of the kernel's own: every input and residual layout,
  // every activation kind, odd sizes that leave partial Winograd tiles. By the rule, not
  // measured: the measuring may pick the direct algorithm on this machine.
  const testing::ScopedEnv by_rule("NNFUSE_WINOGRAD", "rule");
  const Attrs pads = {{"pads", attr_ints({1, 1, 1, 1})}};
  const std::vector<ConvCase> cases = {{{1, 32, 28, 28}, 64, {3, 3}, 1, pads},
                                       {{2, 48, 15, 17}, 128, {3, 3}, 1, pads},
                                       {{1, 64, 16, 16}, 128, {3, 3}},
                                       {{1, 33, 29, 30}, 64, {3, 3}, 1, pads}};
  for (const ConvCase& c : cases) {
    ASSERT_TRUE(cost::winograd_pays(c.x[1], c.m, c.x[2], c.x[3]) ||
                cost::winograd_pays(c.x[1], c.m, c.x[2] - 2, c.x[3] - 2));
  }
  // SiLU, GELU and HardSigmoid have no Winograd post-op: they run after the conv, over its
  // blocked buffer. Each case takes every activation once, over its six layout and residual
  // combinations in turn (the activation and the layouts are separate steps of the kernel).
  const std::vector<Act> acts = {
      Act{""},     Act{"Relu"}, Act{"Clip", true, true, 0.0f, 6.0f},
      Act{"SiLU"}, Act{"Gelu"}, Act{"HardSigmoid", true, true, 0.3f, 0.4f}};
  uint32_t seed = 6000;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    size_t combo = 0;
    for (bool sum : {false, true}) {
      for (Layout x_layout : {Layout::kPlain, Layout::kNHWC}) {
        for (Layout sum_layout : {Layout::kPlain, Layout::kNHWC}) {
          if (!sum && sum_layout == Layout::kPlain) continue;
          seed += 3;
          const Act& act = acts[(ci + combo++) % acts.size()];
          check_conv(cases[ci], act, /*bias=*/seed % 2 == 0, sum, x_layout, sum_layout, seed, "");
        }
      }
    }
  }
  for (bool in_place : {true, false}) run_with_planned_output(cases[1], true, in_place, seed += 4);
}

// Runs `k` on `xs` (undefined: omitted) with a scratch region of its scratch_bytes() filled
// with `fill` first; *written says whether the run changed any of it.
Tensor run_in_scratch(Kernel& k, const std::vector<Tensor>& xs, uint8_t fill,
                      bool* written = nullptr) {
  const size_t bytes = k.scratch_bytes();
  const std::shared_ptr<std::byte[]> scratch = aligned_bytes(bytes, 64);
  std::memset(scratch.get(), fill, bytes);
  KernelIO io;
  for (const Tensor& t : xs) io.inputs.push_back(t.defined() ? &t : nullptr);
  io.outputs.resize(1);
  io.scratch = scratch.get();
  k.run(io);
  if (written) {
    *written = false;
    for (size_t i = 0; i < bytes && !*written; ++i) {
      *written = static_cast<uint8_t>(scratch[i]) != fill;
    }
  }
  return io.outputs[0];
}

TEST(OnednnFusedConv, TransientBuffersInTheCallersScratch) {
  // The conv's transient buffers (a plain X reordered to NHWC, Winograd's blocked X and Y, the
  // full-size output a pool reads) live in KernelIO::scratch when the caller gives one (the
  // session's region every kernel shares), else in a buffer of the kernel's own: the same
  // numbers either way, nothing carried from one run's scratch to the next. Winograd by the
  // rule, so its buffers are among them.
  const testing::ScopedEnv by_rule("NNFUSE_WINOGRAD", "rule");
  const Attrs pads = {{"pads", attr_ints({1, 1, 1, 1})}};
  struct Case {
    ConvCase conv;
    std::string op;
    Attrs extra;
  };
  const std::vector<Case> cases = {
      {{{1, 32, 28, 28}, 64, {3, 3}, 1, pads}, "FusedConv", {}},
      {{{1, 8, 9, 7}, 16, {1, 1}}, "FusedConv", {}},
      {{{1, 32, 28, 28}, 64, {3, 3}, 1, pads},
       "FusedConvPool",
       {{"pool_kernel_shape", attr_ints({2, 2})}, {"pool_strides", attr_ints({2, 2})}}},
  };
  uint32_t seed = 7100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " x" + dims_str(c.conv.x));
    Attrs attrs = conv_attrs(c.conv, Act{"Relu"});
    for (const auto& [k, v] : c.extra) attrs[k] = v;
    const std::vector<FastInput> in =
        conv_inputs(c.conv, true, false, Layout::kPlain, Layout::kPlain, seed += 5);
    BuiltKernel k("", c.op, in, attrs);
    ASSERT_TRUE(k.accepted);
    const size_t bytes = k.kernel->scratch_bytes();
    ASSERT_GT(bytes, 0u);  // at least the plain X's NHWC copy
    EXPECT_EQ(bytes % 64, 0u);
    const std::vector<Tensor> xs = {in[0].value, in[1].value, in[2].value};
    const Tensor own = k.run(xs);
    for (uint8_t fill : {uint8_t{0xff}, uint8_t{0x00}, uint8_t{0x7f}}) {
      bool written = false;
      const Tensor got = run_in_scratch(*k.kernel, xs, fill, &written);
      EXPECT_TRUE(written);
      ASSERT_EQ(got.nbytes(), own.nbytes());
      EXPECT_EQ(std::memcmp(got.raw(), own.raw(), own.nbytes()), 0);
    }
  }
}

// FusedConvPool against the reference over conv and pool geometries, both input layouts.
void check_conv_pool_paths() {
  const Attrs pads = {{"pads", attr_ints({1, 1, 1, 1})}};
  const std::vector<ConvCase> convs = {{{1, 32, 28, 28}, 64, {3, 3}, 1, pads},
                                       {{2, 40, 15, 17}, 128, {3, 3}, 1, pads},
                                       {{1, 8, 9, 7}, 16, {3, 3}, 1, pads},
                                       {{1, 16, 10, 10}, 8, {1, 1}}};
  const std::vector<Attrs> pools = {
      {{"pool_kernel_shape", attr_ints({2, 2})}, {"pool_strides", attr_ints({2, 2})}},
      {{"pool_kernel_shape", attr_ints({3, 3})},
       {"pool_strides", attr_ints({2, 2})},
       {"pool_pads", attr_ints({1, 1, 1, 1})}},
      {{"pool_kernel_shape", attr_ints({2, 2})},
       {"pool_strides", attr_ints({2, 2})},
       {"pool_ceil_mode", attr_int(1)}}};
  uint32_t seed = 7000;
  for (const ConvCase& c : convs) {
    for (const Attrs& pool : pools) {
      for (bool sum : {false, true}) {
        for (Layout x_layout : {Layout::kPlain, Layout::kNHWC}) {
          // ReLU, which the project's Winograd kernel applies, and SiLU, which it does not.
          for (const Act& act : {Act{"Relu"}, Act{"SiLU"}}) {
            seed += 4;
            Attrs attrs = conv_attrs(c, act);
            attrs.insert(pool.begin(), pool.end());
            SCOPED_TRACE(std::string("x") + dims_str(c.x) + " m=" + std::to_string(c.m) +
                         (sum ? " sum " : " ") + layout_name(x_layout) + " " + act.name + " pool " +
                         std::to_string(pool.size()));
            // Every kernel that accepts it; a Winograd algorithm's error is relative to the
            // outputs' largest.
            const std::vector<FastInput> in =
                conv_inputs(c, true, sum, x_layout, Layout::kNHWC, seed);
            const std::vector<std::string> names =
                testing::accepting_kernels("FusedConvPool", in, attrs);
            EXPECT_FALSE(names.empty());
            for (const std::string& name : names) {
              SCOPED_TRACE(name);
              testing::expect_matches_ref_scaled(name, "FusedConvPool", in, attrs, 3e-5);
            }
          }
        }
      }
    }
  }
}

TEST(OnednnFusedConvPool, MatchesTheReferenceOnEveryConvPath) {
  // MaxPool over the conv's own buffer: oneDNN's Winograd one (blocked), the direct one and the
  // project's Winograd one (NHWC), each kernel that accepts the node: by the rule, as measured
  // candidates, and with the project's kernel wherever it applies.
  for (const char* mode : {"rule", "1", "own"}) {
    SCOPED_TRACE(std::string("NNFUSE_WINOGRAD=") + mode);
    const testing::ScopedEnv winograd("NNFUSE_WINOGRAD", mode);
    check_conv_pool_paths();
  }
}

TEST(OnednnFusedConvPool, DeclinesWhatItCannotRun) {
  const ConvCase c{{1, 8, 9, 7}, 16, {3, 3}, 1, {{"pads", attr_ints({1, 1, 1, 1})}}};
  Attrs attrs = conv_attrs(c, {});
  {  // No pool geometry.
    BuiltKernel k("onednn.fused_conv_pool", "FusedConvPool",
                  conv_inputs(c, true, false, Layout::kNHWC, Layout::kNHWC, 1), attrs);
    EXPECT_FALSE(k.accepted);
  }
  attrs["pool_kernel_shape"] = attr_ints({2, 2});
  attrs["pool_storage_order"] = attr_int(3);  // invalid
  BuiltKernel k("onednn.fused_conv_pool", "FusedConvPool",
                conv_inputs(c, true, false, Layout::kNHWC, Layout::kNHWC, 1), attrs);
  EXPECT_FALSE(k.accepted);
}

TEST(OnednnFusedConv, RunRejectsASumItWasNotPlannedFor) {
  const ConvCase c = conv_cases()[1];
  std::vector<FastInput> in = conv_inputs(c, true, true, Layout::kNHWC, Layout::kNHWC, 1);
  BuiltKernel k("onednn.fused_conv", "FusedConv", in, conv_attrs(c, {"Relu"}));
  ASSERT_TRUE(k.accepted);
  const Tensor x = to_layout(in[0].value, Layout::kNHWC);
  EXPECT_THROW(k.run({x, in[1].value, in[2].value, in[3].value}), Error);  // plain Sum
  EXPECT_NO_THROW(k.run({x, in[1].value, in[2].value, to_layout(in[3].value, Layout::kNHWC)}));
}

TEST(OnednnFusedConv, DeclinesWhatItCannotRun) {
  const ConvCase c = conv_cases()[0];
  // Plain inputs, so the reference kernel can take what the fast one declines.
  std::vector<FastInput> in = conv_inputs(c, true, true, Layout::kPlain, Layout::kPlain, 1);
  BuiltKernel plain("onednn.fused_conv", "FusedConv", in, conv_attrs(c, {"Relu"}));
  EXPECT_TRUE(plain.accepted);
  // Clip with min > max: ONNX gives max everywhere, oneDNN's clip would not.
  EXPECT_EQ(run_kernel("FusedConv", in, conv_attrs(c, {"Clip", true, true, 1.0f, -1.0f})).kernel,
            "ref");
  expect_matches_ref("ref", "FusedConv", in, conv_attrs(c, {"Clip", true, true, 1.0f, -1.0f}));
  // A residual that broadcasts ([M, 1, 1]) rather than matching the output.
  std::vector<FastInput> bcast = in;
  bcast[3] = {random_tensor({c.m, 1, 1}, 5), false};
  EXPECT_EQ(run_kernel("FusedConv", bcast, conv_attrs(c, {"Relu"})).kernel, "ref");
  // Weights that are not constants.
  std::vector<FastInput> dyn_w = in;
  dyn_w[1].constant = false;
  EXPECT_EQ(run_kernel("FusedConv", dyn_w, conv_attrs(c, {"Relu"})).kernel, "ref");
  // An unknown activation: no kernel (the reference kernel reports it).
  BuiltKernel k("onednn.fused_conv", "FusedConv", in, conv_attrs(c, {"Mish"}));
  EXPECT_FALSE(k.accepted);
}

// FusedConv whose residual is a second convolution (kernels/ref/conv_skip.h).

// X, W, B?, no Sum, X2, W2, B2? and the attributes: the main conv's with the activation, the
// skip conv's with the prefix skip_.
struct SkipCase {
  ConvCase main, skip;
};

std::vector<FastInput> skip_inputs(const SkipCase& c, bool bias, bool skip_bias, Layout x_layout,
                                   Layout x2_layout, uint32_t seed) {
  std::vector<FastInput> in = conv_inputs(c.main, bias, false, x_layout, Layout::kPlain, seed);
  in.push_back({Tensor(), false});
  Dims ws = {c.skip.m, c.skip.x[1] / c.skip.group};
  ws.insert(ws.end(), c.skip.kernel.begin(), c.skip.kernel.end());
  in.push_back({random_tensor(c.skip.x, seed + 10, -2.0f, 2.0f), false, x2_layout});
  in.push_back({random_tensor(ws, seed + 11), true});
  if (skip_bias) in.push_back({random_tensor({c.skip.m}, seed + 12), true});
  return in;
}

Attrs skip_attrs(const SkipCase& c, const Act& act) {
  Attrs a = conv_attrs(c.main, act);
  a["skip_group"] = attr_int(c.skip.group);
  for (const auto& [k, v] : c.skip.attrs) a["skip_" + k] = v;
  return a;
}

const std::vector<SkipCase>& skip_cases() {
  const Attrs pads = {{"pads", attr_ints({1, 1, 1, 1})}};
  static const std::vector<SkipCase> cases = {
      // A UNet ResBlock's projected skip: 3x3 main, 1x1 skip changing the channels.
      {{{1, 16, 12, 12}, 24, {3, 3}, 1, pads}, {{1, 8, 12, 12}, 24, {1, 1}}},
      // A ResNet's downsampling branch: a strided 1x1 skip over the larger input.
      {{{2, 16, 7, 7}, 32, {3, 3}, 1, pads},
       {{2, 8, 14, 14}, 32, {1, 1}, 1, {{"strides", attr_ints({2, 2})}}}},
      // Winograd's main conv (on AVX-512 machines): the skip's result is reordered into its
      // blocked buffer.
      {{{1, 32, 28, 28}, 64, {3, 3}, 1, pads}, {{1, 16, 28, 28}, 64, {1, 1}}},
      // The roles the other way round: a 1x1 main conv and a 3x3 skip.
      {{{1, 8, 10, 10}, 16, {1, 1}}, {{1, 12, 10, 10}, 16, {3, 3}, 1, pads}},
  };
  return cases;
}

TEST(OnednnFusedConv, PlainImageIntoSixteenChannels) {
  // An image's NCHW pixels read directly into the blocked 16-channel output, which is the NHWC
  // output's bytes: every residual layout, activations, two images, 1 and 3 input channels.
  const Attrs s2 = {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}};
  const std::vector<ConvCase> cases = {{{2, 3, 20, 22}, 16, {3, 3}, 1, s2},
                                       {{1, 1, 17, 15}, 16, {3, 3}, 1, s2},
                                       {{1, 3, 16, 16}, 16, {5, 5}}};
  uint32_t seed = 8700;
  for (const ConvCase& c : cases) {
    for (const Act& act : {Act{""}, Act{"HardSwish"}, Act{"Relu"}}) {
      for (bool sum : {false, true}) {
        for (Layout sum_layout : {Layout::kPlain, Layout::kNHWC}) {
          if (!sum && sum_layout == Layout::kPlain) continue;
          seed += 7;
          check_conv(c, act, seed % 2 == 0, sum, Layout::kPlain, sum_layout, seed);
        }
      }
    }
  }
  // No reorder: the kernel needs no scratch for an NHWC copy of the image (the 8-channel
  // image still has one). Only where oneDNN blocks the output by 16 channels (AVX-512), its
  // blocked layout for 16 channels being NHWC's bytes; with AVX2 it blocks by 8.
  const bool blocks_of_16 = __builtin_cpu_supports("avx512f");
  for (int64_t channels : {int64_t{3}, int64_t{8}}) {
    ConvCase c = cases[0];
    c.x[1] = channels;
    BuiltKernel k("onednn.fused_conv", "FusedConv",
                  conv_inputs(c, true, false, Layout::kPlain, Layout::kPlain, 1),
                  conv_attrs(c, Act{"Relu"}));
    ASSERT_TRUE(k.accepted);
    EXPECT_EQ(k.kernel->scratch_bytes() == 0, channels == 3 && blocks_of_16)
        << k.kernel->scratch_bytes();
  }
}

TEST(OnednnFusedConv, SplitIntoItsOutputs) {
  // FusedConvSplit: the product of all the parts, cut into one output per part, against the
  // reference: inception's widths (16 and 32 beside wider parts), a part narrower than a vector,
  // two images, strided (the subsampled path), padded, plain and NHWC inputs, with and without
  // an activation and a bias.
  struct Case {
    Dims x;
    std::vector<int64_t> split;
    Attrs attrs;
  };
  const std::vector<Case> cases = {{{1, 32, 9, 9}, {16, 24, 8}, {}},
                                   {{2, 24, 7, 6}, {64, 5, 16, 32}, {}},
                                   {{1, 16, 12, 12}, {16, 16}, {{"strides", attr_ints({2, 2})}}},
                                   {{1, 8, 5, 5}, {8, 12}, {{"pads", attr_ints({1, 1, 1, 1})}}}};
  uint32_t seed = 9300;
  for (const Case& c : cases) {
    for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
      for (const char* act : {"", "Relu"}) {
        const bool bias = ++seed % 2 == 0;
        SCOPED_TRACE(dims_str(c.x) + " " + layout_name(layout) + " " + act + (bias ? " bias" : ""));
        int64_t m = 0;
        for (int64_t v : c.split) m += v;
        Attrs a = c.attrs;
        a["split"] = attr_ints(c.split);
        if (*act) a["activation"] = attr_string(act);
        expect_matches_ref("onednn.fused_conv_split", "FusedConvSplit",
                           {{random_tensor(c.x, seed), false, layout},
                            {random_tensor({m, c.x[1], 1, 1}, seed + 1), true},
                            {bias ? random_tensor({m}, seed + 2) : Tensor(), true}},
                           a, c.split.size(), 1e-4f, 1e-4f);
      }
    }
  }
  // A split that does not cover the channels, or one size per output short, is declined.
  for (const std::vector<int64_t>& split : {std::vector<int64_t>{4, 3}, {4, 4, 4}}) {
    EXPECT_THROW(testing::run_kernel(
                     "FusedConvSplit",
                     {{random_tensor({1, 8, 4, 4}, 1)}, {random_tensor({8, 8, 1, 1}, 2), true}},
                     {{"split", attr_ints(split)}}, /*num_outputs=*/2, "onednn.fused_conv_split"),
                 Error);
  }
}

TEST(OnednnFusedConv, SkipConvolutionAsTheResidual) {
  uint32_t seed = 8100;
  for (const SkipCase& c : skip_cases()) {
    for (const Act& act : {Act{""}, Act{"Relu"}, Act{"SiLU"}}) {
      for (Layout x_layout : {Layout::kPlain, Layout::kNHWC}) {
        for (Layout x2_layout : {Layout::kPlain, Layout::kNHWC}) {
          seed += 13;
          const bool bias = seed % 2 == 0, skip_bias = seed % 3 != 0;
          SCOPED_TRACE(std::string("x") + dims_str(c.main.x) + " x2" + dims_str(c.skip.x) +
                       " act=" + act.name + (bias ? " bias" : "") +
                       (skip_bias ? " skip_bias " : " ") + layout_name(x_layout) + "/" +
                       layout_name(x2_layout));
          // The first kernel that accepts it: oneDNN's Winograd for the Winograd-sized main
          // conv (where it has it), its direct algorithm for the others.
          expect_matches_ref("", "FusedConv",
                             skip_inputs(c, bias, skip_bias, x_layout, x2_layout, seed),
                             skip_attrs(c, act), 1, kTol, kTol);
        }
      }
    }
  }
}

TEST(OnednnFusedConv, SkipConvolutionSharesTheCallersScratch) {
  // Both convs keep their transient buffers (the plain inputs' NHWC copies, Winograd's blocked
  // ones) at the start of the caller's scratch, one after the other: the same numbers as with
  // buffers of the kernel's own, whatever the scratch held.
  for (const SkipCase& c : {skip_cases()[1], skip_cases()[2]}) {
    SCOPED_TRACE(dims_str(c.main.x));
    const std::vector<FastInput> in =
        skip_inputs(c, true, true, Layout::kPlain, Layout::kPlain, 8300);
    const Attrs attrs = skip_attrs(c, Act{"Relu"});
    BuiltKernel k("", "FusedConv", in, attrs);
    ASSERT_TRUE(k.accepted);
    const size_t bytes = k.kernel->scratch_bytes();
    ASSERT_GT(bytes, 0u);
    std::vector<Tensor> xs;
    for (const FastInput& f : in) xs.push_back(f.value);
    const Tensor own = k.run(xs);
    expect_close(to_layout(own, Layout::kPlain), run_ref1("FusedConv", xs, attrs), kTol, kTol);
    for (uint8_t fill : {uint8_t{0xff}, uint8_t{0x00}}) {
      const Tensor got = run_in_scratch(*k.kernel, xs, fill);
      ASSERT_EQ(got.nbytes(), own.nbytes());
      EXPECT_EQ(std::memcmp(got.raw(), own.raw(), own.nbytes()), 0);
    }
  }
}

TEST(OnednnFusedConv, SkipConvolutionDeclines) {
  const SkipCase c = skip_cases()[0];
  const std::vector<FastInput> in =
      skip_inputs(c, true, true, Layout::kPlain, Layout::kPlain, 8500);
  // A skip conv whose output is not the main conv's shape (no pads: 10x10, not 12x12).
  SkipCase small = c;
  small.skip.kernel = {3, 3};
  std::vector<FastInput> small_in =
      skip_inputs(small, true, true, Layout::kPlain, Layout::kPlain, 1);
  BuiltKernel k("onednn.fused_conv", "FusedConv", small_in, skip_attrs(small, Act{"Relu"}));
  EXPECT_FALSE(k.accepted);
  const std::string why = k.factory->declines(*k.info);
  EXPECT_NE(why.find("skip convolution"), std::string::npos) << why;
  // Both a residual Sum and a skip conv.
  std::vector<FastInput> both = in;
  both[3] = {random_tensor({1, 24, 12, 12}, 3), false};
  BuiltKernel k2("onednn.fused_conv", "FusedConv", both, skip_attrs(c, Act{"Relu"}));
  EXPECT_FALSE(k2.accepted);
  // The skip's weights known only at run time: the reference kernel runs it.
  std::vector<FastInput> dyn = in;
  dyn[5].constant = false;
  EXPECT_EQ(run_kernel("FusedConv", dyn, skip_attrs(c, Act{"Relu"})).kernel, "ref");
  expect_matches_ref("ref", "FusedConv", dyn, skip_attrs(c, Act{"Relu"}), 1, kTol, kTol);
}

// FusedMatMul and FusedGemm.

void check_matmul(const Dims& a, const Dims& b, bool bias, bool bias_const, const Act& act,
                  uint32_t seed) {
  SCOPED_TRACE(dims_str(a) + " x " + dims_str(b) + (bias ? " bias" : "") +
               (bias_const ? " (constant)" : "") + " act=" + act.name);
  std::vector<FastInput> in = {{random_tensor(a, seed, -2.0f, 2.0f)},
                               {random_tensor(b, seed + 1), true}};
  if (bias) in.push_back({random_tensor({b.back()}, seed + 2), bias_const});
  Attrs attrs;
  add_act_attrs(act, attrs);
  expect_matches_ref("onednn.fused_matmul", "FusedMatMul", in, attrs, 1, kTol, kTol);
}

TEST(OnednnFusedMatMul, TwoAndThreeDimensionalWithBiasAndActivations) {
  uint32_t seed = 1;
  const std::vector<std::pair<Dims, Dims>> shapes = {
      {{7, 9}, {9, 5}}, {{2, 16, 64}, {64, 96}}, {{3, 7, 9}, {3, 9, 5}}, {{9}, {9, 5}}};
  for (const auto& [a, b] : shapes) {
    for (const Act& act : activations()) check_matmul(a, b, true, true, act, seed += 3);
    for (const Act& act : {Act{""}, Act{"Relu"}, Act{"Gelu"}}) {
      check_matmul(a, b, false, false, act, seed += 3);
      check_matmul(a, b, true, false, act, seed += 3);  // a bias known only at run time
    }
  }
}

TEST(OnednnFusedMatMul, Declines) {
  Attrs gelu = {{"activation", attr_string("Gelu")}};
  // A bias over more than the last dim.
  std::vector<FastInput> in = {{random_tensor({4, 6}, 1)},
                               {random_tensor({6, 5}, 2), true},
                               {random_tensor({4, 5}, 3), true}};
  EXPECT_EQ(run_kernel("FusedMatMul", in, gelu).kernel, "ref");
  // B a vector: the product has no N dim for the bias to run along.
  std::vector<FastInput> vec = {
      {random_tensor({4, 6}, 1)}, {random_tensor({6}, 2), true}, {random_tensor({1}, 3), true}};
  EXPECT_EQ(run_kernel("FusedMatMul", vec, gelu).kernel, "ref");
  expect_matches_ref("ref", "FusedMatMul", vec, gelu);
}

// FusedGatedMatMul: act(P[.., :N]) * P[.., N:] for every activation (the vector epilogue's and
// the reference fallback's), with and without a bias, 2-D and 3-D A.
TEST(OnednnFusedGatedMatMul, EveryActivationWithAndWithoutBias) {
  uint32_t seed = 300;
  std::vector<Act> acts = activations();
  acts.push_back({"GeluTanh"});
  acts.push_back({"Swish", true, false, 1.702f});
  for (const Dims& a : {Dims{7, 9}, Dims{2, 16, 64}}) {
    for (const Act& act : acts) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE(dims_str(a) + (bias ? " bias" : "") + " act=" + act.name);
        std::vector<FastInput> in = {{random_tensor(a, seed, -2.0f, 2.0f)},
                                     {random_tensor({a.back(), 2 * 40}, seed + 1), true}};
        if (bias) in.push_back({random_tensor({2 * 40}, seed + 2), true});
        Attrs attrs;
        add_act_attrs(act, attrs);
        expect_matches_ref("onednn.fused_gated_matmul", "FusedGatedMatMul", in, attrs, 1, kTol,
                           kTol);
        seed += 3;
      }
    }
  }
}

// The padded width: each half widened until the product's column blocks are a multiple of the
// threads, at most 1/16 more columns; unchanged when they already are, for one thread, for
// unblocked weights, or when the padding would cost more.
TEST(OnednnFusedGatedMatMul, HalfColumnsForTheThreads) {
  using onednn::gated_half_columns;
  EXPECT_EQ(gated_half_columns(1376, 64, 2), 1408);  // 43 blocks -> 44
  EXPECT_EQ(gated_half_columns(1000, 64, 2), 1000);  // 32 blocks (the last partial)
  EXPECT_EQ(gated_half_columns(1376, 64, 1), 1376);
  EXPECT_EQ(gated_half_columns(1376, 1, 2), 1376);
  EXPECT_EQ(gated_half_columns(1376, 64, 3), 1440);  // 43 blocks -> 45
  EXPECT_EQ(gated_half_columns(200, 64, 2), 200);    // 7 blocks -> 8 would be 256: over 1/16
  EXPECT_EQ(gated_half_columns(2720, 64, 3), 2784);  // 85 blocks -> 87
  EXPECT_EQ(gated_half_columns(40, 64, 2), 40);      // 2 blocks already
  EXPECT_EQ(gated_half_columns(20, 64, 2), 20);      // 1 block: 64 columns would be 3.2x
}

// Halves whose column blocks would not split evenly over the threads (2 x 1376 columns: 43
// blocks of 64 for 2 threads) are padded with zero columns in the product; Y is unchanged.
TEST(OnednnFusedGatedMatMul, HalvesPaddedForTheThreads) {
  uint32_t seed = 350;
  for (int64_t half : {int64_t{1376}, int64_t{1000}}) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::to_string(half) + (bias ? " bias" : ""));
      std::vector<FastInput> in = {{random_tensor({2, 9, 48}, seed, -2.0f, 2.0f)},
                                   {random_tensor({48, 2 * half}, seed + 1), true}};
      if (bias) in.push_back({random_tensor({2 * half}, seed + 2), true});
      Attrs attrs;
      add_act_attrs({"Swish", true, false, 1.0f}, attrs);
      expect_matches_ref("onednn.fused_gated_matmul", "FusedGatedMatMul", in, attrs, 1, kTol, kTol);
      seed += 3;
    }
  }
}

// FusedMatMulResidual: A B (+ bias) + R, 2-D and 3-D, the bias constant or absent.
TEST(OnednnFusedMatMulResidual, MatchesTheReference) {
  uint32_t seed = 400;
  for (const Dims& a : {Dims{7, 9}, Dims{2, 16, 64}}) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(dims_str(a) + (bias ? " bias" : ""));
      Dims y = a;
      y.back() = 40;
      std::vector<FastInput> in = {{random_tensor(a, seed)},
                                   {random_tensor({a.back(), 40}, seed + 1), true}};
      in.push_back(bias ? FastInput{random_tensor({40}, seed + 2), true}
                        : FastInput{Tensor(), false});
      in.push_back({random_tensor(y, seed + 3)});
      expect_matches_ref("onednn.fused_matmul_residual", "FusedMatMulResidual", in, {}, 1, kTol,
                         kTol);
      seed += 4;
    }
  }
}

// One row against constant weights prepacked in panels of 64 columns reads the panels
// directly (init_row_product): plain, biased, with a sum of C, a residual, gated, batched to
// [1, 1, K]; widths with a partial last panel and depths that are not a multiple of 16.
TEST(OnednnMatMul, OneRowReadsThePanelsDirectly) {
  uint32_t seed = 900;
  for (const Dims& a : {Dims{1, 37}, Dims{1, 1, 512}, Dims{1, 1376}}) {
    for (int64_t n : {int64_t{64}, int64_t{70}, int64_t{1000}}) {
      SCOPED_TRACE(dims_str(a) + " x " + std::to_string(n));
      const int64_t k = a.back();
      Dims y = a;
      y.back() = n;
      const FastInput x{random_tensor(a, seed, -2.0f, 2.0f)};
      const FastInput w{random_tensor({k, n}, seed + 1), true};
      const FastInput bias{random_tensor({n}, seed + 2), true};
      const FastInput res{random_tensor(y, seed + 3)};
      expect_matches_ref("onednn.fused_matmul", "FusedMatMul", {x, w}, {}, 1, kTol, kTol);
      expect_matches_ref("onednn.fused_matmul", "FusedMatMul", {x, w, bias}, {}, 1, kTol, kTol);
      expect_matches_ref("onednn.fused_matmul_residual", "FusedMatMulResidual", {x, w, bias, res},
                         {}, 1, kTol, kTol);
      expect_matches_ref("onednn.fused_matmul_residual", "FusedMatMulResidual",
                         {x, w, {Tensor(), false}, res}, {}, 1, kTol, kTol);
      if (n % 2 == 0) {
        // act(g) * u multiplies two sums of k products: its rounding is of their magnitude
        // (up to about 2 * k here), not the output's.
        const float atol = kTol * static_cast<float>(k) / 64.0f;
        expect_matches_ref("onednn.fused_gated_matmul", "FusedGatedMatMul", {x, w, bias},
                           {{"activation", attr_string("SiLU")}}, 1, std::max(kTol, atol), kTol);
      }
      if (a.size() == 2) {
        // Gemm: alpha and beta folded into the prepacked B and C, B transposed, C a row or one
        // value.
        const Attrs gemm = {
            {"alpha", attr_float(0.5f)}, {"beta", attr_float(2.0f)}, {"transB", attr_int(1)}};
        const FastInput wt{random_tensor({n, k}, seed + 4), true};
        for (const Dims& c : {Dims{n}, Dims{1, 1}}) {
          expect_matches_ref("onednn.fused_gemm", "FusedGemm",
                             {x, wt, {random_tensor(c, seed + 5), true}}, gemm, 1, kTol, kTol);
        }
      }
      seed += 6;
    }
  }
}

// A W of odd width has no halves: the fast kernel declines it and the reference kernel fails
// naming the node.
TEST(OnednnFusedGatedMatMul, AWeightOfOddWidthIsAnError) {
  std::vector<FastInput> in = {{random_tensor({4, 6}, 1)}, {random_tensor({6, 5}, 2), true}};
  try {
    run_kernel("FusedGatedMatMul", in, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a [K, 2N] matrix"), std::string::npos) << e.what();
  }
}

TEST(OnednnFusedGemm, TransposesCAndActivations) {
  uint32_t seed = 100;
  for (int64_t tb : {0, 1}) {
    for (const Dims& cs : std::vector<Dims>{{}, {6}, {1, 6}, {5, 6}, {5, 1}}) {
      for (const Act& act : {Act{"Relu"}, Act{"Gelu"}, Act{"Sigmoid"}, Act{""}}) {
        SCOPED_TRACE("transB=" + std::to_string(tb) + " C" + dims_str(cs) + " act=" + act.name);
        std::vector<FastInput> in = {{random_tensor({5, 8}, seed++)},
                                     {random_tensor(tb ? Dims{6, 8} : Dims{8, 6}, seed++), true}};
        if (!cs.empty()) in.push_back({random_tensor(cs, seed++), true});
        Attrs attrs = {
            {"transB", attr_int(tb)}, {"alpha", attr_float(0.5f)}, {"beta", attr_float(2.0f)}};
        add_act_attrs(act, attrs);
        expect_matches_ref("onednn.fused_gemm", "FusedGemm", in, attrs, 1, kTol, kTol);
      }
    }
  }
  // C at run time (sum post-op before the activation) and transA.
  Attrs attrs = {{"transA", attr_int(1)}, {"activation", attr_string("Relu")}};
  expect_matches_ref("onednn.fused_gemm", "FusedGemm",
                     {{random_tensor({8, 5}, 1)},
                      {random_tensor({8, 6}, 2), true},
                      {random_tensor({5, 6}, 3), false}},
                     attrs, 1, kTol, kTol);
}

TEST(OnednnFusedGemm, LargeWeightsInPlaceForFewRows) {
  // 64 MiB of weights (a classifier layer) read by 1 or 3 rows: the product runs over the
  // weights where they are (sgemm), with the bias and the activation after it; 17 rows and a C
  // of the output's shape take the prepacked primitive. Both match the reference. The
  // activations on the weights as stored (transB) and the other order without one.
  const int64_t k = 2048, n = 8192;
  uint32_t seed = 300;
  for (int64_t m : {1, 3, 17}) {
    for (int64_t tb : {1, 0}) {
      if (m == 17 && tb == 0) continue;
      const std::vector<Act> acts =
          tb == 1 && m < 17 ? std::vector<Act>{{"Relu"}, {""}, {"Gelu"}} : std::vector<Act>{{""}};
      for (const Act& act : acts) {
        SCOPED_TRACE("m=" + std::to_string(m) + " transB=" + std::to_string(tb) +
                     " act=" + act.name);
        std::vector<FastInput> in = {
            {random_tensor({m, k}, seed++, -1.0f, 1.0f)},
            {random_tensor(tb ? Dims{n, k} : Dims{k, n}, seed++, -0.05f, 0.05f), true},
            {random_tensor({n}, seed++), true}};
        Attrs attrs = {{"transB", attr_int(tb)}};
        add_act_attrs(act, attrs);
        expect_matches_ref("onednn.fused_gemm", "FusedGemm", in, attrs, 1, kTol, kTol);
      }
    }
  }
  std::vector<FastInput> sum = {{random_tensor({2, k}, 1, -1.0f, 1.0f)},
                                {random_tensor({n, k}, 2, -0.05f, 0.05f), true},
                                {random_tensor({2, n}, 3), true}};
  expect_matches_ref("onednn.fused_gemm", "FusedGemm", sum, {{"transB", attr_int(1)}}, 1, kTol,
                     kTol);
}

// FusedGlobalPoolGemm.

TEST(OnednnPoolGemm, PlainAndNhwc) {
  uint32_t seed = 200;
  struct Case {
    Dims x;
    int64_t n;
  };
  const std::vector<Case> cases = {{{1, 64, 7, 7}, 10}, {{2, 300, 3, 5}, 17}, {{3, 8, 1, 1}, 4}};
  for (const Case& c : cases) {
    for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
      for (int64_t tb : {0, 1}) {
        for (bool with_c : {false, true}) {
          SCOPED_TRACE(dims_str(c.x) + " " + layout_name(layout) + " transB=" + std::to_string(tb) +
                       (with_c ? " C" : ""));
          std::vector<FastInput> in = {
              {random_tensor(c.x, seed++), false, layout},
              {random_tensor(tb ? Dims{c.n, c.x[1]} : Dims{c.x[1], c.n}, seed++), true}};
          if (with_c) in.push_back({random_tensor({c.n}, seed++), true});
          Attrs attrs = {
              {"transB", attr_int(tb)}, {"alpha", attr_float(1.5f)}, {"beta", attr_float(0.5f)}};
          expect_matches_ref("onednn.pool_gemm", "FusedGlobalPoolGemm", in, attrs, 1, kTol, kTol);
        }
      }
    }
  }
  // 3-D X (plain only), a classifier head with an activation.
  expect_matches_ref("onednn.pool_gemm", "FusedGlobalPoolGemm",
                     {{random_tensor({2, 6, 11}, 1)},
                      {random_tensor({5, 6}, 2), true},
                      {random_tensor({5}, 3), true}},
                     {{"transB", attr_int(1)}, {"activation", attr_string("Relu")}}, 1, kTol, kTol);
}

TEST(OnednnPoolGemm, ResNetHeadIsOneKernelAndDeclinesTransA) {
  std::vector<FastInput> in = {{random_tensor({1, 2048, 7, 7}, 1), false, Layout::kNHWC},
                               {random_tensor({1000, 2048}, 2, -0.05f, 0.05f), true},
                               {random_tensor({1000}, 3), true}};
  const Attrs attrs = {{"transB", attr_int(1)}};
  EXPECT_EQ(run_kernel("FusedGlobalPoolGemm", in, attrs).kernel, "onednn.pool_gemm");
  expect_matches_ref("onednn.pool_gemm", "FusedGlobalPoolGemm", in, attrs, 1, kTol, kTol);
  BuiltKernel k("onednn.pool_gemm", "FusedGlobalPoolGemm", in, {{"transA", attr_int(1)}});
  EXPECT_FALSE(k.accepted);
}

}  // namespace onednn_fused_test
}  // namespace nnfuse

namespace nnfuse {
namespace onednn_fused_test {

// FusedMatMulLayerNorm: product + bias + residual, then LayerNorm rows.
std::vector<FastInput> matmul_ln_inputs(const Dims& a, int64_t n, bool bias, bool beta,
                                        uint32_t seed) {
  Dims y = a;
  y.back() = n;
  std::vector<FastInput> in = {{random_tensor(a, seed, -2.0f, 2.0f)},
                               {random_tensor({a.back(), n}, seed + 1), true},
                               {bias ? random_tensor({n}, seed + 2) : Tensor(), true},
                               {random_tensor(y, seed + 3, -2.0f, 2.0f)},
                               {random_tensor({n}, seed + 4, 0.5f, 1.5f), true}};
  if (beta) in.push_back({random_tensor({n}, seed + 5), true});
  return in;
}

TEST(OnednnFusedMatMulLayerNorm, MatchesTheReferenceAndRunsInPlace) {
  const Attrs eps = {{"epsilon", attr_float(1e-12f)}};
  uint32_t seed = 9000;
  for (const Dims& a : {Dims{7, 9}, Dims{1, 16, 64}, Dims{2, 5, 33}}) {
    for (int64_t n : {int64_t{5}, int64_t{96}, int64_t{768}}) {
      for (bool bias : {false, true}) {
        for (bool beta : {false, true}) {
          SCOPED_TRACE(dims_str(a) + " n=" + std::to_string(n) + (bias ? " bias" : "") +
                       (beta ? " beta" : ""));
          seed += 6;
          expect_matches_ref("onednn.fused_matmul_ln", "FusedMatMulLayerNorm",
                             matmul_ln_inputs(a, n, bias, beta, seed), eps, 1, kTol, kTol);
        }
      }
    }
  }
  testing::expect_in_place_matches_ref("onednn.fused_matmul_ln", "FusedMatMulLayerNorm",
                                       matmul_ln_inputs({1, 8, 32}, 48, true, true, 5), 3, eps,
                                       kTol, kTol);
}

TEST(OnednnFusedMatMulLayerNorm, DeclinesGammaKnownOnlyAtRunTime) {
  std::vector<FastInput> in = matmul_ln_inputs({4, 6}, 5, true, true, 1);
  in[4].constant = false;
  EXPECT_EQ(run_kernel("FusedMatMulLayerNorm", in, {}).kernel, "ref");
}

}  // namespace onednn_fused_test
}  // namespace nnfuse

namespace nnfuse {
namespace onednn_fused_test {

// FusedLayerNormMatMul: LayerNorm rows of X, then the product with bias and activation.
TEST(OnednnFusedLayerNormMatMul, MatchesTheReference) {
  uint32_t seed = 9500;
  for (const Dims& x : {Dims{7, 9}, Dims{1, 16, 64}, Dims{2, 5, 768}}) {
    for (const char* act : {"", "Gelu"}) {
      for (bool beta : {false, true}) {
        SCOPED_TRACE(dims_str(x) + " act=" + act + (beta ? " beta" : ""));
        seed += 6;
        const int64_t k = x.back(), n = 48;
        std::vector<FastInput> in = {{random_tensor(x, seed, -2.0f, 2.0f)},
                                     {random_tensor({k, n}, seed + 1), true},
                                     {random_tensor({n}, seed + 2), true},
                                     {random_tensor({k}, seed + 3, 0.5f, 1.5f), true}};
        if (beta) in.push_back({random_tensor({k}, seed + 4), true});
        Attrs attrs = {{"epsilon", attr_float(1e-5f)}};
        if (*act) attrs["activation"] = attr_string(act);
        expect_matches_ref("onednn.fused_ln_matmul", "FusedLayerNormMatMul", in, attrs, 1, kTol,
                           kTol);
      }
    }
  }
}

// The norm prologue: FusedLayerNormMatMul with norm "rms", and FusedGatedMatMul with a
// LayerNorm (with and without beta) or an RMSNorm, with and without a bias.
TEST(OnednnNormPrologue, RmsAndGatedMatchTheReference) {
  uint32_t seed = 9700;
  for (const Dims& x : {Dims{7, 9}, Dims{2, 16, 64}}) {
    const int64_t k = x.back(), n = 40;
    auto inputs = [&](int64_t cols, bool bias) {
      seed += 5;
      std::vector<FastInput> in = {{random_tensor(x, seed, -2.0f, 2.0f)},
                                   {random_tensor({k, cols}, seed + 1), true}};
      in.push_back(bias ? FastInput{random_tensor({cols}, seed + 2), true} : FastInput{});
      in.push_back({random_tensor({k}, seed + 3, 0.5f, 1.5f), true});
      return in;
    };
    SCOPED_TRACE(dims_str(x));
    Attrs rms = {{"epsilon", attr_float(1e-6f)}, {"norm", attr_string("rms")}};
    expect_matches_ref("onednn.fused_ln_matmul", "FusedLayerNormMatMul", inputs(n, true), rms, 1,
                       kTol, kTol);
    for (bool bias : {false, true}) {
      SCOPED_TRACE(bias ? "bias" : "no bias");
      Attrs silu = rms;
      silu["activation"] = attr_string("SiLU");
      expect_matches_ref("onednn.fused_gated_matmul", "FusedGatedMatMul", inputs(2 * n, bias), silu,
                         1, kTol, kTol);
      Attrs gelu = {{"epsilon", attr_float(1e-5f)}, {"activation", attr_string("Gelu")}};
      std::vector<FastInput> ln = inputs(2 * n, bias);
      expect_matches_ref("onednn.fused_gated_matmul", "FusedGatedMatMul", ln, gelu, 1, kTol, kTol);
      ln.push_back({random_tensor({k}, seed + 4), true});
      expect_matches_ref("onednn.fused_gated_matmul", "FusedGatedMatMul", ln, gelu, 1, kTol, kTol);
    }
  }
}

}  // namespace onednn_fused_test
}  // namespace nnfuse
