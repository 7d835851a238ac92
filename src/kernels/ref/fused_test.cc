// The fused ops' reference kernels against the ONNX ops they replace, each run separately
// (as the unfused graph would run them).
#include "kernels/ref/fused.h"

#include <cmath>
#include <random>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace fused_test {

using testing::expect_close;
using testing::run_ref1;

using Attrs = std::map<std::string, Attribute>;

Tensor random_tensor(const Dims& shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

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
      {"LeakyRelu"},  // alpha 0.01
      {"Clip", true, true, 0.0f, 6.0f},
      {"Clip", true, true, -0.25f, 0.5f},
      {"Clip", true, false, 0.0f},  // min only
      {"Sigmoid"},
      {"Tanh"},
      {"HardSigmoid", true, true, 0.3f, 0.4f},
      {"HardSigmoid"},  // 0.2, 0.5
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

Tensor scalar(float v) { return Tensor::from_vector<float>({}, {v}); }

// The activation as the exporter writes it, in ONNX ops.
Tensor onnx_activation(const Act& a, const Tensor& x) {
  const std::string& n = a.name;
  if (n.empty()) return x;
  if (n == "Relu" || n == "Sigmoid" || n == "Tanh" || n == "HardSwish") return run_ref1(n, {x});
  if (n == "LeakyRelu")
    return run_ref1(n, {x}, {{"alpha", attr_float(a.has_alpha ? a.alpha : 0.01f)}});
  if (n == "HardSigmoid") {
    return run_ref1(n, {x},
                    {{"alpha", attr_float(a.has_alpha ? a.alpha : 0.2f)},
                     {"beta", attr_float(a.has_beta ? a.beta : 0.5f)}});
  }
  if (n == "Clip") {
    return run_ref1(
        n, {x, a.has_alpha ? scalar(a.alpha) : Tensor(), a.has_beta ? scalar(a.beta) : Tensor()});
  }
  if (n == "SiLU") return run_ref1("Mul", {x, run_ref1("Sigmoid", {x})});
  if (n == "Gelu") {  // x * 0.5 * (1 + erf(x / sqrt(2)))
    Tensor e = run_ref1("Erf", {run_ref1("Div", {x, scalar(std::sqrt(2.0f))})});
    return run_ref1("Mul", {run_ref1("Mul", {x, scalar(0.5f)}), run_ref1("Add", {e, scalar(1)})});
  }
  ADD_FAILURE() << "no ONNX form for " << n;
  return x;
}

// The fused kernel computes the activation in double from the float sum; the unfused ops
// round after each op.
constexpr float kAtol = 2e-6f, kRtol = 1e-5f;

struct ConvCase {
  Dims x;
  int64_t m;
  Dims kernel;
  int64_t group = 1;
  Attrs attrs = {};
};

void check_conv(const ConvCase& c, const Act& act, bool bias, bool sum, uint32_t seed) {
  SCOPED_TRACE("x" + dims_str(c.x) + " g=" + std::to_string(c.group) + " act=" + act.name +
               (bias ? " bias" : "") + (sum ? " sum" : ""));
  Dims ws = {c.m, c.x[1] / c.group};
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  const Tensor x = random_tensor(c.x, seed, 2.0f), w = random_tensor(ws, seed + 1);
  const Tensor b = bias ? random_tensor({c.m}, seed + 2) : Tensor();
  Attrs conv_attrs = c.attrs;
  conv_attrs["group"] = attr_int(c.group);
  Tensor want = run_ref1("Conv", {x, w, b}, conv_attrs);
  Tensor s;
  if (sum) {
    s = random_tensor(want.shape(), seed + 3, 2.0f);
    want = run_ref1("Add", {want, s});
  }
  want = onnx_activation(act, want);
  Attrs attrs = conv_attrs;
  add_act_attrs(act, attrs);
  std::vector<Tensor> in = {x, w, b};
  if (sum) in.push_back(s);
  expect_close(run_ref1("FusedConv", in, attrs), want, kAtol, kRtol);
}

TEST(RefFusedConv, EveryActivationWithAndWithoutBiasAndSum) {
  const std::vector<ConvCase> cases = {
      {{2, 4, 6, 7}, 6, {3, 3}, 1, {{"pads", attr_ints({1, 1, 1, 1})}}},
      {{1, 6, 7, 5},
       6,
       {3, 3},
       6,
       {{"strides", attr_ints({2, 2})}, {"auto_pad", attr_string("SAME_UPPER")}}},
      {{1, 4, 5, 5}, 8, {1, 1}, 2, {}},
      {{2, 3, 9}, 4, {3}, 1, {{"dilations", attr_ints({2})}}},
  };
  uint32_t seed = 1;
  for (const ConvCase& c : cases) {
    for (const Act& act : activations()) {
      for (bool bias : {false, true}) {
        for (bool sum : {false, true}) check_conv(c, act, bias, sum, seed += 4);
      }
    }
  }
}

TEST(RefFusedConv, SumBroadcastsButMustNotGrowTheOutput) {
  const Tensor x = random_tensor({1, 2, 4, 4}, 1), w = random_tensor({3, 2, 1, 1}, 2);
  const Tensor per_channel = random_tensor({3, 1, 1}, 3);
  Tensor want = run_ref1("Relu", {run_ref1("Add", {run_ref1("Conv", {x, w}), per_channel})});
  expect_close(
      run_ref1("FusedConv", {x, w, Tensor(), per_channel}, {{"activation", attr_string("Relu")}}),
      want, kAtol, kRtol);
  const Tensor too_big = random_tensor({2, 3, 4, 4}, 4);
  EXPECT_THROW(run_ref1("FusedConv", {x, w, Tensor(), too_big}), Error);
}

TEST(RefFusedConv, Float64) {
  const Tensor x = run_ref1("Cast", {random_tensor({1, 2, 5, 5}, 1)}, {{"to", attr_int(11)}});
  const Tensor w = run_ref1("Cast", {random_tensor({2, 2, 3, 3}, 2)}, {{"to", attr_int(11)}});
  const Tensor s = run_ref1("Cast", {random_tensor({1, 2, 3, 3}, 3)}, {{"to", attr_int(11)}});
  Tensor want = run_ref1("Sigmoid", {run_ref1("Add", {run_ref1("Conv", {x, w}), s})});
  Tensor got = run_ref1("FusedConv", {x, w, Tensor(), s}, {{"activation", attr_string("Sigmoid")}});
  ASSERT_EQ(got.dtype(), DType::kFloat64);
  expect_close(got, want, 1e-12f, 1e-12f);
}

TEST(RefFusedMatMul, BiasAndActivations) {
  struct Case {
    Dims a, b;
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 3}}, {{2, 5, 7}, {7, 4}}, {{2, 3, 4, 6}, {3, 6, 5}}, {{7}, {7, 3}}};
  uint32_t seed = 100;
  for (const Case& c : cases) {
    for (const Act& act : activations()) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE(std::string("a") + dims_str(c.a) + " b" + dims_str(c.b) + " act=" + act.name);
        const Tensor a = random_tensor(c.a, seed++), b = random_tensor(c.b, seed++);
        Tensor want = run_ref1("MatMul", {a, b});
        std::vector<Tensor> in = {a, b};
        if (bias) {
          in.push_back(random_tensor({c.b.back()}, seed++));
          want = run_ref1("Add", {want, in.back()});
        }
        want = onnx_activation(act, want);
        Attrs attrs;
        add_act_attrs(act, attrs);
        expect_close(run_ref1("FusedMatMul", in, attrs), want, kAtol, kRtol);
      }
    }
  }
}

TEST(RefFusedGemm, AttributesAndActivations) {
  uint32_t seed = 200;
  for (int64_t ta : {0, 1}) {
    for (int64_t tb : {0, 1}) {
      for (const Dims& cs : std::vector<Dims>{{}, {4}, {3, 4}, {3, 1}}) {
        for (const Act& act :
             {Act{""}, Act{"Relu"}, Act{"Gelu"}, Act{"Clip", true, true, -0.5f, 0.5f}}) {
          SCOPED_TRACE("transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) + " C" +
                       dims_str(cs) + " act=" + act.name);
          const Tensor a = random_tensor(ta ? Dims{5, 3} : Dims{3, 5}, seed++);
          const Tensor b = random_tensor(tb ? Dims{4, 5} : Dims{5, 4}, seed++);
          const Tensor c = cs.empty() ? Tensor() : random_tensor(cs, seed++);
          Attrs attrs = {{"transA", attr_int(ta)},
                         {"transB", attr_int(tb)},
                         {"alpha", attr_float(0.7f)},
                         {"beta", attr_float(1.5f)}};
          Tensor want = onnx_activation(act, run_ref1("Gemm", {a, b, c}, attrs));
          add_act_attrs(act, attrs);
          expect_close(run_ref1("FusedGemm", {a, b, c}, attrs), want, kAtol, kRtol);
        }
      }
    }
  }
}

TEST(RefFusedGlobalPoolGemm, EqualsPoolFlattenGemm) {
  uint32_t seed = 300;
  for (int64_t tb : {0, 1}) {
    for (bool with_c : {false, true}) {
      SCOPED_TRACE("transB=" + std::to_string(tb) + (with_c ? " C" : ""));
      const Tensor x = random_tensor({2, 6, 5, 4}, seed++);
      const Tensor b = random_tensor(tb ? Dims{10, 6} : Dims{6, 10}, seed++);
      const Tensor c = with_c ? random_tensor({10}, seed++) : Tensor();
      Attrs attrs = {
          {"transB", attr_int(tb)}, {"alpha", attr_float(1.25f)}, {"beta", attr_float(0.5f)}};
      const Tensor flat = run_ref1("Flatten", {run_ref1("GlobalAveragePool", {x})});
      expect_close(run_ref1("FusedGlobalPoolGemm", {x, b, c}, attrs),
                   run_ref1("Gemm", {flat, b, c}, attrs), kAtol, kRtol);
    }
  }
  // transA would transpose the pooled matrix: not part of the op.
  EXPECT_THROW(
      run_ref1("FusedGlobalPoolGemm", {random_tensor({1, 3, 2, 2}, 1), random_tensor({3, 2}, 2)},
               {{"transA", attr_int(1)}}),
      Error);
}

// A one-node graph for the support checks.
std::string reason(const std::string& op, const std::string& domain, const Attrs& attrs = {}) {
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, 2, 3, 3}));
  Value* w = g.add_value("w", DType::kFloat32, Shape::of({2, 2, 1, 1}));
  Node* n = g.add_node(op, "n", {x, w}, {g.add_value("y")}, domain);
  for (auto& [k, a] : attrs) n->set_attr(k, a);
  return ref_unsupported_reason(*n, 1);
}

TEST(RefFused, DomainsAndSupport) {
  EXPECT_EQ(ref_op_domain("FusedConv"), kFusedDomain);
  EXPECT_EQ(ref_op_domain("FusedGlobalPoolGemm"), kFusedDomain);
  EXPECT_EQ(ref_op_domain("Conv"), "");
  for (const char* op : {"FusedConv", "FusedMatMul", "FusedGemm", "FusedGlobalPoolGemm"}) {
    EXPECT_EQ(reason(op, kFusedDomain), "") << op;
    EXPECT_NE(reason(op, ""), "") << op;  // not an ONNX op
    EXPECT_NE(reason(op, "com.other"), "") << op;
  }
  EXPECT_EQ(reason("Conv", ""), "");
  EXPECT_EQ(reason("Conv", "ai.onnx"), "");
  EXPECT_NE(reason("Conv", kFusedDomain), "");  // ONNX ops are not in the fused domain
  EXPECT_NE(reason("FusedConv", kFusedDomain, {{"activation", attr_string("Mish")}}), "");
  EXPECT_NE(reason("FusedConv", kFusedDomain, {{"auto_pad", attr_string("BOGUS")}}), "");
  EXPECT_NE(reason("FusedConv", kFusedDomain, {{"activation_alpha", attr_int(1)}}), "");
  EXPECT_NE(reason("FusedGlobalPoolGemm", kFusedDomain, {{"transA", attr_int(1)}}), "");
  EXPECT_EQ(reason("FusedGemm", kFusedDomain, {{"transA", attr_int(1)}}), "");
}

TEST(RefFused, ActivationDefaultsAndNaN) {
  Graph g;
  Node* n = g.add_node("FusedConv", "n", {}, {}, kFusedDomain);
  using ref::ActivationKind;
  EXPECT_EQ(ref::read_activation(*n).kind, ActivationKind::kNone);
  n->set_attr("activation", attr_string("LeakyRelu"));
  EXPECT_FLOAT_EQ(ref::read_activation(*n).alpha, 0.01f);
  n->set_attr("activation", attr_string("HardSigmoid"));
  EXPECT_FLOAT_EQ(ref::read_activation(*n).alpha, 0.2f);
  EXPECT_FLOAT_EQ(ref::read_activation(*n).beta, 0.5f);
  n->set_attr("activation", attr_string("Clip"));
  const ref::Activation clip = ref::read_activation(*n);
  EXPECT_EQ(ref::apply_activation(clip, -1e30), -1e30);
  EXPECT_TRUE(std::isnan(ref::apply_activation(clip, NAN)));
  n->set_attr("activation", attr_string("Mish"));
  EXPECT_THROW(ref::read_activation(*n), Error);
}

}  // namespace fused_test
}  // namespace nnfuse
