// Every fusion pass: a positive case (node count drops, provenance recorded), negative cases
// per guard (recorded with a reason), and a numeric check (fused == unfused reference on
// random inputs, within 1e-4 of the largest magnitude).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace fusions_test {

using namespace fusion_test;

// conv(x) -> BN -> [tail]
using Tail = std::function<Value*(B&, Value*)>;
std::unique_ptr<Graph> conv_bn_graph(const Tail& tail, int64_t c = 4, bool bias = true,
                                     int64_t training = 0) {
  B b;
  Value* x = b.in("x", {1, 3, 6, 5});
  std::vector<Value*> ins = {x, b.c(random_tensor({c, 3, 3, 3}, 11))};
  if (bias) ins.push_back(b.c(random_tensor({c}, 12)));
  Value* y = b.n("Conv", ins, {1, c, 6, 5}, {{"pads", ints({1, 1, 1, 1})}}, "conv");
  std::map<std::string, Attribute> bn_attrs;
  if (training) bn_attrs["training_mode"] = attr_int(1);
  Value* z = b.n("BatchNormalization",
                 {y, b.c(random_tensor({c}, 13, 0.5, 1.5)), b.c(random_tensor({c}, 14)),
                  b.c(random_tensor({c}, 15)), b.c(random_tensor({c}, 16, 0.5, 2))},
                 {1, c, 6, 5}, bn_attrs, "bn");
  b.out(tail(b, z));
  return std::move(b.g);
}

Tail none = [](B&, Value* v) { return v; };

TEST(ConvBatchnormFusion, FoldsIntoConvAndComputesTheSame) {
  auto f = fuse(conv_bn_graph(none));
  EXPECT_EQ(f.graph->num_nodes(), 1u);
  EXPECT_EQ(count_op(*f.graph, "Conv"), 1u);
  const Node* n = f.graph->nodes()[0];
  EXPECT_EQ(n->fused_by(), "ConvBatchnormFusionPass");
  EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"conv", "bn"}));
  EXPECT_EQ(record(f.report, "ConvBatchnormFusionPass")->effect_times, 1);
  expect_same_numbers(std::move(f.graph), conv_bn_graph(none));
  // Without a conv bias too.
  expect_same_numbers(fuse(conv_bn_graph(none, 4, false)).graph, conv_bn_graph(none, 4, false));
}

TEST(ConvBatchnormFusion, GuardsRejectWithReasons) {
  // Training-mode BN.
  auto f = fuse(conv_bn_graph(none, 4, true, 1));
  EXPECT_EQ(count_op(*f.graph, "BatchNormalization"), 1u);
  const PassRecord* r = record(f.report, "ConvBatchnormFusionPass");
  ASSERT_EQ(r->rejected.size(), 1u);
  EXPECT_NE(r->rejected[0].reason.find("training"), std::string::npos);
  // The conv's output escapes (also a graph output).
  auto g = conv_bn_graph(none);
  g->add_output(g->find_value("conv_out"));
  f = fuse(std::move(g));
  r = record(f.report, "ConvBatchnormFusionPass");
  ASSERT_EQ(r->rejected.size(), 1u);
  EXPECT_NE(r->rejected[0].reason.find("conv_out"), std::string::npos) << r->rejected[0].reason;
}

TEST(ConvBatchnormFusion, NonConstantScaleDoesNotMatch) {
  B b;
  Value* x = b.in("x", {1, 3, 4, 4});
  Value* scale = b.in("scale", {2});
  Value* y = b.n("Conv", {x, b.c(random_tensor({2, 3, 1, 1}, 1))}, {1, 2, 4, 4}, {}, "conv");
  b.out(b.n("BatchNormalization",
            {y, scale, b.c(random_tensor({2}, 2)), b.c(random_tensor({2}, 3)),
             b.c(random_tensor({2}, 4, 0.5, 1))},
            {1, 2, 4, 4}));
  auto f = fuse(std::move(b.g));
  EXPECT_EQ(f.graph->num_nodes(), 2u);
  EXPECT_EQ(record(f.report, "ConvBatchnormFusionPass")->match_times, 0);
}

struct ActCase {
  std::string name;
  Tail tail;
};

std::vector<ActCase> activations() {
  auto unary = [](const std::string& op, std::map<std::string, Attribute> a = {}) {
    return [op, a](B& b, Value* v) { return b.n(op, {v}, v->shape().static_dims(), a); };
  };
  return {
      {"Relu", unary("Relu")},
      {"LeakyRelu", unary("LeakyRelu", {{"alpha", attr_float(0.2f)}})},
      {"Sigmoid", unary("Sigmoid")},
      {"Tanh", unary("Tanh")},
      {"HardSigmoid",
       unary("HardSigmoid", {{"alpha", attr_float(0.3f)}, {"beta", attr_float(0.4f)}})},
      {"HardSwish", unary("HardSwish")},
      {"Clip",
       [](B& b, Value* v) {
         return b.n("Clip", {v, b.c(Tensor::scalar<float>(0)), b.c(Tensor::scalar<float>(0.5f))},
                    v->shape().static_dims());
       }},
      {"SiLU",
       [](B& b, Value* v) {
         Dims d = v->shape().static_dims();
         return b.n("Mul", {v, b.n("Sigmoid", {v}, d)}, d);
       }},
      {"HardSwish",
       [](B& b, Value* v) {
         Dims d = v->shape().static_dims();
         Value* hs = b.n("HardSigmoid", {v}, d,
                         {{"alpha", attr_float(1.0f / 6)}, {"beta", attr_float(0.5f)}});
         return b.n("Mul", {hs, v}, d);
       }},
      // HardSwish written out: x * Relu6(x + 3) / 6 (docs/writing-a-fusion-rule.md's example),
      // Relu6 as Clip, and as Min(Max) with the / 6 as * (1 / 6).
      {"HardSwish",
       [](B& b, Value* v) {
         Dims d = v->shape().static_dims();
         Value* r6 = b.n("Clip",
                         {b.n("Add", {v, b.c(Tensor::scalar<float>(3))}, d),
                          b.c(Tensor::scalar<float>(0)), b.c(Tensor::scalar<float>(6))},
                         d);
         return b.n("Div", {b.n("Mul", {v, r6}, d), b.c(Tensor::scalar<float>(6))}, d);
       }},
      {"HardSwish",
       [](B& b, Value* v) {
         Dims d = v->shape().static_dims();
         Value* lo = b.n(
             "Max",
             {b.n("Add", {v, b.c(Tensor::scalar<float>(3))}, d), b.c(Tensor::scalar<float>(0))}, d);
         Value* r6 = b.n("Min", {lo, b.c(Tensor::scalar<float>(6))}, d);
         return b.n("Mul", {b.n("Mul", {r6, b.c(Tensor::scalar<float>(1.0f / 6))}, d), v}, d);
       }},
      {"Gelu",
       [](B& b, Value* v) {
         Dims d = v->shape().static_dims();
         Value* e =
             b.n("Erf", {b.n("Div", {v, b.c(Tensor::scalar<float>(std::sqrt(2.0f)))}, d)}, d);
         Value* p = b.n("Add", {e, b.c(Tensor::scalar<float>(1))}, d);
         return b.n("Mul", {b.n("Mul", {v, b.c(Tensor::scalar<float>(0.5f))}, d), p}, d);
       }},
  };
}

TEST(ConvActivationFusion, EveryActivationFusesAndComputesTheSame) {
  for (const ActCase& a : activations()) {
    SCOPED_TRACE(a.name);
    auto f = fuse(conv_bn_graph(a.tail));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "FusedConv");
    EXPECT_EQ(n->attr_string("activation", ""), a.name);
    EXPECT_EQ(n->fused_from().front(), "conv");
    expect_same_numbers(std::move(f.graph), conv_bn_graph(a.tail));
  }
}

TEST(ConvActivationFusion, NonConstantClipBoundIsRejected) {
  Tail clip = [](B& b, Value* v) {
    Value* lo = b.in("lo", {});
    return b.n("Clip", {v, lo, b.c(Tensor::scalar<float>(6))}, v->shape().static_dims());
  };
  auto f = fuse(conv_bn_graph(clip));
  EXPECT_EQ(count_op(*f.graph, "Clip"), 1u);
}

TEST(ConvAddFusion, ResidualAndActivationFuseEitherOrder) {
  for (bool swap : {false, true}) {
    Tail res_relu = [swap](B& b, Value* v) {
      Value* r = b.in("r", {1, 4, 6, 5});
      Value* s =
          b.n("Add", swap ? std::vector<Value*>{r, v} : std::vector<Value*>{v, r}, {1, 4, 6, 5});
      return b.n("Relu", {s}, {1, 4, 6, 5});
    };
    auto f = fuse(conv_bn_graph(res_relu));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "FusedConv");
    EXPECT_EQ(n->num_inputs(), 4u);
    EXPECT_EQ(n->attr_string("activation", ""), "Relu");
    EXPECT_EQ(f.report.fused.size(), 1u);
    EXPECT_EQ(f.report.fused[0].kernels_saved, 3);
    EXPECT_EQ(f.report.fused[0].bytes_saved, 3 * 2 * 4 * 6 * 5 * 4);
    expect_same_numbers(std::move(f.graph), conv_bn_graph(res_relu));
  }
}

TEST(ConvAddFusion, BroadcastResidualIsRejected) {
  Tail bcast = [](B& b, Value* v) {
    Value* r = b.in("r", {1, 4, 1, 1});
    return b.n("Add", {v, r}, {1, 4, 6, 5});
  };
  auto f = fuse(conv_bn_graph(bcast));
  EXPECT_EQ(count_op(*f.graph, "Add"), 1u);
  const PassRecord* r = record(f.report, "ConvAddFusionPass");
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find("broadcast"), std::string::npos) << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), conv_bn_graph(bcast));
}

// A ResBlock with a projected skip: relu(conv3x3(h) + conv1x1(x)), h = relu(conv3x3(x)); the
// skip conv's output also a graph output when `skip_read`; the skip conv strided from a
// larger input (a ResNet's downsampling branch) when `strided`.
std::unique_ptr<Graph> skip_block(bool skip_read = false, bool strided = false) {
  B b;
  const int64_t hw = strided ? 12 : 6;
  Value* x = b.in("x", {1, 4, hw, hw});
  const std::map<std::string, Attribute> pads = {{"pads", ints({1, 1, 1, 1})}};
  std::map<std::string, Attribute> first = pads;
  if (strided) first["strides"] = ints({2, 2});
  Value* h = b.n("Conv", {x, b.c(random_tensor({8, 4, 3, 3}, 21)), b.c(random_tensor({8}, 22))},
                 {1, 8, 6, 6}, first, "conv1");
  h = b.n("Relu", {h}, {1, 8, 6, 6});
  Value* y = b.n("Conv", {h, b.c(random_tensor({8, 8, 3, 3}, 23))}, {1, 8, 6, 6}, pads, "conv2");
  std::map<std::string, Attribute> one;
  if (strided) one["strides"] = ints({2, 2});
  Value* s = b.n("Conv", {x, b.c(random_tensor({8, 4, 1, 1}, 24)), b.c(random_tensor({8}, 25))},
                 {1, 8, 6, 6}, one, "skip");
  Value* sum = b.n("Add", {y, s}, {1, 8, 6, 6});
  b.out(b.n("Relu", {sum}, {1, 8, 6, 6}));
  if (skip_read) b.out(s);
  return std::move(b.g);
}

TEST(ConvSkipConvFusion, ProjectedSkipRunsInTheFusedConv) {
  for (bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "strided skip" : "skip");
    auto f = fuse(skip_block(false, strided));
    ASSERT_EQ(f.graph->num_nodes(), 2u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[1];
    EXPECT_EQ(n->op_type(), "FusedConv");
    ASSERT_EQ(n->num_inputs(), 7u);
    EXPECT_EQ(n->input(3), nullptr);
    // Either conv may be the one whose residual the other computes.
    EXPECT_TRUE(n->input(0)->name() == "x" || n->input(4)->name() == "x");
    EXPECT_EQ(n->attr_string("activation", ""), "Relu");
    EXPECT_EQ(n->has_attr("skip_strides") || n->has_attr("strides"), strided);
    const PassRecord* r = record(f.report, "ConvSkipConvFusionPass");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->effect_times, 1);
    expect_same_numbers(std::move(f.graph), skip_block(false, strided));
  }
}

TEST(ConvSkipConvFusion, DeclinesASkipReadElsewhereAndIsSwitchable) {
  expect_declined(fuse(skip_block(true)), "ConvSkipConvFusionPass", "also read elsewhere",
                  skip_block(true));
  FusionSwitches sw;
  sw.set("ConvSkipConvFusionPass", false);
  auto f = fuse(skip_block(), &sw);
  EXPECT_EQ(f.graph->num_nodes(), 3u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "Conv"), 1u);
}

TEST(PadConvFusion, ZeroPadFoldsIntoConvPads) {
  auto build = [](const std::string& mode) {
    B b;
    Value* x = b.in("x", {1, 2, 5, 5});
    Value* p = b.n("Pad", {x, b.c(Tensor::from_vector<int64_t>({8}, {0, 0, 1, 2, 0, 0, 2, 1}))},
                   {1, 2, 8, 8}, {{"mode", attr_string(mode)}}, "pad");
    b.out(b.n("Conv", {p, b.c(random_tensor({3, 2, 3, 3}, 5))}, {1, 3, 6, 6}, {}, "conv"));
    return std::move(b.g);
  };
  auto f = fuse(build("constant"));
  ASSERT_EQ(f.graph->num_nodes(), 1u);
  EXPECT_EQ(f.graph->nodes()[0]->attr_ints("pads"), (std::vector<int64_t>{1, 2, 2, 1}));
  expect_same_numbers(std::move(f.graph), build("constant"));
  auto r = fuse(build("reflect"));
  EXPECT_EQ(r.graph->num_nodes(), 2u);
  EXPECT_NE(record(r.report, "PadConvFusionPass")->rejected.at(0).reason.find("constant-mode"),
            std::string::npos);
}

// Pad(x) -> pool, with the pool's own attributes and the Pad's value.
std::unique_ptr<Graph> pad_pool_graph(const std::string& pool, float value,
                                      std::map<std::string, Attribute> attrs) {
  B b;
  Value* x = b.in("x", {1, 3, 7, 6});
  Value* p = b.n("Pad",
                 {x, b.c(Tensor::from_vector<int64_t>({8}, {0, 0, 1, 0, 0, 0, 2, 1})),
                  b.c(Tensor::from_vector<float>({}, {value}))},
                 {1, 3, 10, 7}, {}, "pad");
  attrs["kernel_shape"] = attr_ints({3, 2});
  std::vector<int64_t> own = attrs.count("pads") ? attrs["pads"].ints : std::vector<int64_t>(4, 0);
  const int64_t up = attrs.count("ceil_mode") ? attrs["ceil_mode"].i : 0;  // ceil: round up
  const int64_t h = (10 + own[0] + own[2] - 3 + up) / 2 + 1,
                w = (7 + own[1] + own[3] - 2 + up) / 2 + 1;
  attrs["strides"] = attr_ints({2, 2});
  b.out(b.n(pool, {p}, {1, 3, h, w}, attrs, "pool"));
  return std::move(b.g);
}

TEST(PadPoolFusion, ZeroPadFoldsIntoAveragePoolCountingThePads) {
  for (int64_t include : {0, 1}) {
    auto build = [&] {
      return pad_pool_graph("AveragePool", 0.0f, {{"count_include_pad", attr_int(include)}});
    };
    auto f = fuse(build());
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->attr_ints("pads"), (std::vector<int64_t>{1, 0, 2, 1}));
    EXPECT_EQ(n->attr_int("count_include_pad", 0), 1);
    expect_same_numbers(std::move(f.graph), build());
  }
  // Own pads counted: the Pad's add to them.
  auto counted = [] {
    return pad_pool_graph("AveragePool", 0.0f,
                          {{"count_include_pad", attr_int(1)}, {"pads", attr_ints({1, 0, 0, 0})}});
  };
  auto f = fuse(counted());
  ASSERT_EQ(f.graph->num_nodes(), 1u);
  EXPECT_EQ(f.graph->nodes()[0]->attr_ints("pads"), (std::vector<int64_t>{2, 0, 2, 1}));
  expect_same_numbers(std::move(f.graph), counted());
}

TEST(PadPoolFusion, DeclinesWhatWouldChangeTheNumbers) {
  struct Case {
    std::string pool;
    float value;
    std::map<std::string, Attribute> attrs;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"AveragePool", 1.0f, {}, "not 0"},
      {"AveragePool", 0.0f, {{"ceil_mode", attr_int(1)}}, "ceil_mode"},
      {"AveragePool", 0.0f, {{"pads", attr_ints({1, 0, 0, 0})}}, "does not count"},
      {"AveragePool",
       0.0f,
       {{"count_include_pad", attr_int(1)}, {"pads", attr_ints({0, 0, 0, 1})}},
       "narrower than the window"},
      {"MaxPool", 0.0f, {}, "not -inf"},
  };
  for (const Case& c : cases) {
    auto f = fuse(pad_pool_graph(c.pool, c.value, c.attrs));
    EXPECT_EQ(f.graph->num_nodes(), 2u) << c.reason;
    const PassRecord* r = record(f.report, "PadPoolFusionPass");
    ASSERT_FALSE(r->rejected.empty()) << c.reason;
    EXPECT_NE(r->rejected[0].reason.find(c.reason), std::string::npos) << r->rejected[0].reason;
    expect_same_numbers(std::move(f.graph), pad_pool_graph(c.pool, c.value, c.attrs));
  }
}

TEST(PadPoolFusion, MinusInfPadFoldsIntoMaxPool) {
  const float inf = std::numeric_limits<float>::infinity();
  auto f = fuse(pad_pool_graph("MaxPool", -inf, {}));
  ASSERT_EQ(f.graph->num_nodes(), 1u);
  EXPECT_EQ(f.graph->nodes()[0]->attr_ints("pads"), (std::vector<int64_t>{1, 0, 2, 1}));
  expect_same_numbers(std::move(f.graph), pad_pool_graph("MaxPool", -inf, {}));
}

TEST(IdentityElimination, ScalingByOneIsRemoved) {
  // baddbmm(mask, q, k, beta=1, alpha=1) exports Mul(mask, 1) and Mul(q k, 1).
  auto build = [](float scale, const Dims& scale_shape, const char* op, bool scale_first) {
    B b;
    Value* x = b.in("x", {2, 3});
    Tensor t(DType::kFloat32, scale_shape);
    t.data<float>()[0] = scale;
    Value* c = b.c(std::move(t));
    Value* y = b.n(op, scale_first ? std::vector<Value*>{c, x} : std::vector<Value*>{x, c}, {2, 3});
    b.out(b.n("Relu", {y}, {2, 3}));
    return std::move(b.g);
  };
  EXPECT_EQ(count_op(*fuse_without_auto_fusion(build(1.0f, {}, "Mul", false)).graph, "Mul"), 0u);
  EXPECT_EQ(count_op(*fuse_without_auto_fusion(build(1.0f, {1}, "Mul", true)).graph, "Mul"), 0u);
  EXPECT_EQ(count_op(*fuse_without_auto_fusion(build(1.0f, {1, 1}, "Div", false)).graph, "Div"),
            0u);
  // Kept: another scale, 1 / x, and a 1 of higher rank than x (it broadcasts x to [1, 2, 3]).
  EXPECT_EQ(count_op(*fuse_without_auto_fusion(build(2.0f, {}, "Mul", false)).graph, "Mul"), 1u);
  EXPECT_EQ(count_op(*fuse_without_auto_fusion(build(1.0f, {}, "Div", true)).graph, "Div"), 1u);
  EXPECT_EQ(count_op(*fuse_without_auto_fusion(build(1.0f, {1, 1, 1}, "Mul", false)).graph, "Mul"),
            1u);
  expect_same_numbers(fuse(build(1.0f, {1}, "Mul", true)).graph, build(1.0f, {1}, "Mul", true));
}

TEST(IdentityElimination, DropoutThatDropsNothingIsRemoved) {
  // torch's F.dropout(x, p, training=False) exports training_mode as a constant input.
  auto build = [](std::optional<bool> training, bool mask_used, float ratio = 0.1f) {
    B b;
    Value* x = b.in("x", {2, 3});
    std::vector<Value*> ins = {x, b.c(Tensor::scalar<float>(ratio))};
    if (training) {
      Tensor t(DType::kBool, {});
      t.data<bool>()[0] = *training;
      ins.push_back(b.c(std::move(t)));
    }
    Value* y = b.g->add_value("y", DType::kFloat32, Shape::of({2, 3}));
    Value* mask = b.g->add_value("mask", DType::kBool, Shape::of({2, 3}));
    b.g->add_node("Dropout", "dropout", ins, {y, mask});
    b.out(b.n("Relu", {y}, {2, 3}));
    if (mask_used) b.out(mask);
    return std::move(b.g);
  };
  EXPECT_EQ(count_op(*fuse(build(false, false)).graph, "Dropout"), 0u);
  EXPECT_EQ(count_op(*fuse(build(std::nullopt, false)).graph, "Dropout"), 0u);
  EXPECT_EQ(count_op(*fuse(build(true, false)).graph, "Dropout"), 1u);
  EXPECT_EQ(count_op(*fuse(build(false, true)).graph, "Dropout"), 1u);
  // Training mode with ratio 0 (torchvision's Swin exports its attention dropout so) keeps
  // every element.
  EXPECT_EQ(count_op(*fuse(build(true, false, 0.0f)).graph, "Dropout"), 0u);
}

TEST(IdentityElimination, ZeroPadIsRemoved) {
  auto build = [](const std::string& mode) {
    B b;
    Value* x = b.in("x", {1, 2, 4, 4});
    Value* p = b.n("Pad", {x, b.c(Tensor::from_vector<int64_t>({8}, {0, 0, 0, 0, 0, 0, 0, 0}))},
                   {1, 2, 4, 4}, {{"mode", attr_string(mode)}}, "pad");
    b.out(b.n("Relu", {p}, {1, 2, 4, 4}));
    return std::move(b.g);
  };
  for (const char* mode : {"constant", "reflect", "edge"}) {
    auto f = fuse(build(mode));
    EXPECT_EQ(count_op(*f.graph, "Pad"), 0u) << mode;
    expect_same_numbers(std::move(f.graph), build(mode));
  }
}

std::unique_ptr<Graph> dense(const Dims& bias_shape, bool gelu) {
  B b;
  Value* x = b.in("x", {2, 5, 8});
  Value* m = b.n("MatMul", {x, b.c(random_tensor({8, 6}, 7))}, {2, 5, 6}, {}, "mm");
  Value* a = b.n("Add", {m, b.c(random_tensor(bias_shape, 8))}, {2, 5, 6}, {}, "add");
  if (gelu) a = activations().back().tail(b, a);
  b.out(a);
  return std::move(b.g);
}

TEST(MatMulBiasAddFusion, BiasAndGeluFuse) {
  auto f = fuse(dense({6}, true));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->nodes()[0]->op_type(), "FusedMatMul");
  EXPECT_EQ(f.graph->nodes()[0]->attr_string("activation", ""), "Gelu");
  expect_same_numbers(std::move(f.graph), dense({6}, true));
  auto g = fuse(dense({5, 6}, false));  // not a row bias
  EXPECT_EQ(g.graph->num_nodes(), 2u);
  EXPECT_NE(record(g.report, "MatMulBiasAddFusionPass")->rejected.at(0).reason.find("row"),
            std::string::npos);
  expect_same_numbers(std::move(g.graph), dense({5, 6}, false));
}

std::unique_ptr<Graph> head(int64_t trans_a) {
  B b;
  Value* x = b.in("x", {2, 8, 3, 3});
  Value* p = b.n("GlobalAveragePool", {x}, {2, 8, 1, 1}, {}, "gap");
  Value* f = b.n("Flatten", {p}, {2, 8}, {{"axis", attr_int(1)}}, "flatten");
  if (trans_a) f = b.n("Transpose", {f}, {8, 2}, {{"perm", ints({1, 0})}});
  Value* y = b.n("Gemm", {f, b.c(random_tensor({5, 8}, 3)), b.c(random_tensor({5}, 4))}, {2, 5},
                 {{"transB", attr_int(1)}, {"transA", attr_int(trans_a)}}, "gemm");
  b.out(b.n("Relu", {y}, {2, 5}));
  return std::move(b.g);
}

TEST(GlobalPoolGemmFusion, ClassifierHeadIsOneKernel) {
  auto f = fuse(head(0));
  // The Relu fuses into the Gemm first, then the pool and flatten join it.
  EXPECT_LE(f.graph->num_nodes(), 2u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "GlobalAveragePool"), 0u);
  expect_same_numbers(std::move(f.graph), head(0));
}

// The pooled [N, C, 1, 1] reshaped to `shape` (found by nnfuse_diff_fuzz: a Reshape to [C, 1]
// was fused as if it made [N, C], and the fused kernel refused to run).
std::unique_ptr<Graph> reshaped_head(const std::vector<int64_t>& shape, const Dims& flat) {
  B b;
  Value* x = b.in("x", {2, 4, 3, 3});
  Value* p = b.n("GlobalAveragePool", {x}, {2, 4, 1, 1}, {}, "gap");
  Tensor s(DType::kInt64, {2});
  std::copy(shape.begin(), shape.end(), s.data<int64_t>());
  Value* f = b.n("Reshape", {p, b.c(std::move(s))}, flat, {}, "flatten");
  b.out(b.n("Gemm", {f, b.c(random_tensor({flat[1], 5}, 3))}, {flat[0], 5}, {}, "gemm"));
  return std::move(b.g);
}

TEST(GlobalPoolGemmFusion, OnlyAReshapeToOneRowPerImageFuses) {
  const std::vector<std::pair<std::vector<int64_t>, Dims>> rows = {
      {{2, 4}, {2, 4}}, {{-1, 4}, {2, 4}}, {{0, -1}, {2, 4}}, {{2, -1}, {2, 4}}, {{0, 4}, {2, 4}}};
  for (const auto& [shape, flat] : rows) {
    auto f = fuse(reshaped_head(shape, flat));
    EXPECT_EQ(count_op(*f.graph, "FusedGlobalPoolGemm"), 1u) << graph_to_text(*f.graph);
    expect_same_numbers(std::move(f.graph), reshaped_head(shape, flat));
  }
  const std::vector<std::pair<std::vector<int64_t>, Dims>> other = {
      {{4, 2}, {4, 2}}, {{8, 1}, {8, 1}}, {{-1, 1}, {8, 1}}, {{1, -1}, {1, 8}}};
  for (const auto& [shape, flat] : other) {
    auto f = fuse(reshaped_head(shape, flat));
    EXPECT_EQ(count_op(*f.graph, "FusedGlobalPoolGemm"), 0u) << graph_to_text(*f.graph);
    const PassRecord* r = record(f.report, "GlobalPoolGemmFusionPass");
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->rejected.empty());
    EXPECT_NE(r->rejected[0].reason.find("one row per image"), std::string::npos);
    expect_same_numbers(std::move(f.graph), reshaped_head(shape, flat));
  }
}

TEST(GemmActivationFusion, ReluFusesIntoGemm) {
  auto f = fuse(head(1));
  EXPECT_EQ(count_op(*f.graph, "FusedGemm"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "Relu"), 0u);
  expect_same_numbers(std::move(f.graph), head(1));
}

TEST(Pipeline, SwitchTurnsAPassOff) {
  FusionSwitches sw;
  sw.set("ConvBatchnormFusionPass", false);
  auto f = fuse(conv_bn_graph(none), &sw);
  EXPECT_EQ(count_op(*f.graph, "ScaleShift"), 1u);  // the lone BN is a scale and shift then
  EXPECT_EQ(record(f.report, "ConvBatchnormFusionPass"), nullptr);
  sw.set("BatchNormScaleShiftPass", false);
  f = fuse(conv_bn_graph(none), &sw);
  EXPECT_EQ(count_op(*f.graph, "BatchNormalization"), 1u);
  sw.set_all(false);
  sw.set("ConvBatchnormFusionPass", true);
  f = fuse(conv_bn_graph(activations()[0].tail), &sw);
  EXPECT_EQ(count_op(*f.graph, "Relu"), 1u);
  EXPECT_EQ(count_op(*f.graph, "BatchNormalization"), 0u);
}

// x -> BN (no conv before it), plain or behind a Relu.
std::unique_ptr<Graph> lone_bn_graph(int64_t training = 0, bool stats_out = false) {
  B b;
  Value* x = b.in("x", {2, 4, 3, 5});
  Value* r = b.n("Relu", {x}, {2, 4, 3, 5}, {}, "relu");
  std::vector<Value*> outs = {b.g->add_value("y", DType::kFloat32, Shape::of({2, 4, 3, 5}))};
  if (stats_out) outs.push_back(b.g->add_value("mean_out", DType::kFloat32, Shape::of({4})));
  Node* bn = b.g->add_node("BatchNormalization", "bn",
                           {r, b.c(random_tensor({4}, 13, 0.5, 1.5)), b.c(random_tensor({4}, 14)),
                            b.c(random_tensor({4}, 15)), b.c(random_tensor({4}, 16, 0.5, 2))},
                           outs);
  bn->set_attr("epsilon", attr_float(1e-3f));
  if (training) bn->set_attr("training_mode", attr_int(1));
  for (Value* o : outs) b.out(o);
  return std::move(b.g);
}

TEST(BatchNormScaleShift, LoneBatchNormBecomesScaleAndShift) {
  auto f = fuse(lone_bn_graph());
  EXPECT_EQ(count_op(*f.graph, "BatchNormalization"), 0u);
  ASSERT_EQ(count_op(*f.graph, "ScaleShift"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(record(f.report, "BatchNormScaleShiftPass")->effect_times, 1);
  expect_same_numbers(std::move(f.graph), lone_bn_graph());
}

// Pre-activation: BN -> act, feeding a Conv (nothing folds the BN into the conv's weights).
std::unique_ptr<Graph> pre_activation_graph(const std::string& act, bool act_shared) {
  B b;
  Value* x = b.in("x", {1, 4, 6, 5});
  Value* n = b.n("BatchNormalization",
                 {x, b.c(random_tensor({4}, 13, 0.5, 1.5)), b.c(random_tensor({4}, 14)),
                  b.c(random_tensor({4}, 15)), b.c(random_tensor({4}, 16, 0.5, 2))},
                 {1, 4, 6, 5}, {}, "bn");
  std::map<std::string, Attribute> attrs;
  if (act == "LeakyRelu") attrs["alpha"] = attr_float(0.2f);
  std::vector<Value*> ins = {n};
  if (act == "Clip") {
    ins.push_back(b.c(Tensor::scalar<float>(-0.25f)));
    ins.push_back(b.c(Tensor::scalar<float>(0.75f)));
  }
  Value* a = b.n(act, ins, {1, 4, 6, 5}, attrs, "act");
  b.out(b.n("Conv", {a, b.c(random_tensor({3, 4, 3, 3}, 17))}, {1, 3, 4, 3}, {}, "conv"));
  if (act_shared) b.out(n);  // the BN's own output is needed too
  return std::move(b.g);
}

TEST(BatchNormScaleShift, PreActivationBecomesOneKernel) {
  for (const char* act : {"Relu", "LeakyRelu", "Clip", "Sigmoid"}) {
    SCOPED_TRACE(act);
    const bool applied = std::string(act) != "Sigmoid";
    auto f = fuse(pre_activation_graph(act, false));
    ASSERT_EQ(count_op(*f.graph, "ScaleShift"), 1u) << graph_to_text(*f.graph);
    EXPECT_EQ(f.graph->num_nodes(), applied ? 2u : 3u) << graph_to_text(*f.graph);
    for (const Node* n : f.graph->nodes()) {
      if (n->op_type() == "ScaleShift") {
        EXPECT_EQ(n->attr_string("activation", ""), applied ? act : "");
      }
    }
    expect_same_numbers(std::move(f.graph), pre_activation_graph(act, false));
  }
  // The BN's output read elsewhere: the activation stays a kernel of its own.
  auto f = fuse(pre_activation_graph("Relu", true));
  EXPECT_EQ(count_op(*f.graph, "Relu"), 1u) << graph_to_text(*f.graph);
  expect_same_numbers(std::move(f.graph), pre_activation_graph("Relu", true));
}

TEST(BatchNormScaleShift, GuardsRejectTrainingModeAndUsedStatistics) {
  auto f = fuse(lone_bn_graph(/*training=*/0, /*stats_out=*/true));
  EXPECT_EQ(count_op(*f.graph, "BatchNormalization"), 1u);
  const PassRecord* r = record(f.report, "BatchNormScaleShiftPass");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->rejected.size(), 1u);
  EXPECT_NE(r->rejected[0].reason.find("running statistics"), std::string::npos);
}

// DenseNet's layers: each concatenates every earlier feature map along the channels and reads
// it through BN -> ReLU (-> conv). `shared`: the first Concat is also a graph output; `axis`:
// the Concats' axis.
std::unique_ptr<Graph> dense_block_graph(bool shared = false, int64_t axis = 1) {
  B b;
  auto dims = [](Value* v) { return v->shape().static_dims(); };
  auto bn_relu = [&](Value* v, uint32_t seed) {
    const int64_t n = dims(v)[1];
    Value* bn = b.n("BatchNormalization",
                    {v, b.c(random_tensor({n}, seed, 0.5, 1.5)), b.c(random_tensor({n}, seed + 1)),
                     b.c(random_tensor({n}, seed + 2)), b.c(random_tensor({n}, seed + 3, 0.5, 2))},
                    dims(v));
    return b.n("Relu", {bn}, dims(v));
  };
  // A 1x1 conv to 4 channels (along the channels: 4 new ones; else the same 4).
  auto conv = [&](Value* v, uint32_t seed) {
    Dims d = dims(v);
    Value* w = b.c(random_tensor({4, d[1], 1, 1}, seed));
    d[1] = 4;
    return b.n("Conv", {v, w}, d);
  };
  auto concat = [&](std::vector<Value*> parts, const std::string& name) {
    Dims d = dims(parts[0]);
    for (size_t i = 1; i < parts.size(); ++i) d[axis] += dims(parts[i])[axis];
    return b.n("Concat", parts, d, {{"axis", attr_int(axis)}}, name);
  };
  Value* x = b.in("x", {1, axis == 1 ? 8 : 4, 2, 3});
  Value* y1 = conv(bn_relu(x, 10), 14);
  Value* c1 = concat({x, y1}, "concat1");
  Value* y2 = conv(bn_relu(c1, 20), 24);
  Value* c2 = concat({x, y1, y2}, "concat2");
  b.out(bn_relu(c2, 30));
  if (shared) b.out(c1);
  return std::move(b.g);
}

TEST(ConcatScaleShiftFusion, DenseLayersWriteEachConcatOnceScaled) {
  auto f = fuse(dense_block_graph());
  EXPECT_EQ(count_op(*f.graph, "Concat"), 0u) << graph_to_text(*f.graph);
  EXPECT_EQ(record(f.report, "ConcatScaleShiftFusionPass")->effect_times, 2);
  size_t parts = 0;
  for (const Node* n : f.graph->nodes()) {
    if (n->op_type() == "ScaleShift" && n->num_inputs() > 3) {
      parts += n->num_inputs() - 2;
      EXPECT_EQ(n->attr_string("activation", ""), "Relu");
    }
  }
  EXPECT_EQ(parts, 5u);  // (x, y1) and (x, y1, y2)
  expect_same_numbers(std::move(f.graph), dense_block_graph());
  // Switched off, the Concats stay.
  FusionSwitches sw;
  sw.set("ConcatScaleShiftFusionPass", false);
  EXPECT_EQ(count_op(*fuse(dense_block_graph(), &sw).graph, "Concat"), 2u);
}

TEST(ConcatScaleShiftFusion, DeclinesAConcatReadElsewhereOrNotAlongChannels) {
  auto f = fuse(dense_block_graph(/*shared=*/true));
  EXPECT_EQ(count_op(*f.graph, "Concat"), 1u) << graph_to_text(*f.graph);
  const PassRecord* r = record(f.report, "ConcatScaleShiftFusionPass");
  ASSERT_EQ(r->rejected.size(), 1u);
  EXPECT_NE(r->rejected[0].reason.find("also read elsewhere"), std::string::npos);
  expect_same_numbers(std::move(f.graph), dense_block_graph(true));

  auto g = fuse(dense_block_graph(false, /*axis=*/2));
  EXPECT_EQ(count_op(*g.graph, "Concat"), 2u) << graph_to_text(*g.graph);
  r = record(g.report, "ConcatScaleShiftFusionPass");
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find("along axis 2"), std::string::npos);
  expect_same_numbers(std::move(g.graph), dense_block_graph(false, 2));
}

TEST(Canonicalize, IdentityAndShapeSubgraphsFold) {
  B b;
  Value* x = b.in("x", {2, 3, 4});
  Value* i = b.n("Identity", {x}, {2, 3, 4});
  Value* s = b.g->add_value("shape", DType::kInt64, Shape::of({3}));
  b.g->add_node("Shape", "shape_node", {i}, {s});
  Value* g = b.g->add_value("dim0", DType::kInt64, Shape::of({1}));
  b.g->add_node("Gather", "gather", {s, b.c(Tensor::from_vector<int64_t>({1}, {0}))}, {g});
  Value* cat = b.g->add_value("newshape", DType::kInt64, Shape::of({2}));
  b.g->add_node("Concat", "concat", {g, b.c(Tensor::from_vector<int64_t>({1}, {-1}))}, {cat})
      ->set_attr("axis", attr_int(0));
  b.out(b.n("Reshape", {i, cat}, {2, 12}));
  auto f = fuse(std::move(b.g));
  EXPECT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->nodes()[0]->op_type(), "Reshape");
  EXPECT_TRUE(f.graph->nodes()[0]->input(1)->is_constant());
}

}  // namespace fusions_test
}  // namespace nnfuse

namespace nnfuse {
namespace fusions_test {

TEST(Canonicalize, NoOpPoolsAreRemovedOthersKept) {
  auto build = [](int64_t k) {
    B b;
    Value* x = b.in("x", {1, 2, 4, 4});
    Value* p = b.n("AveragePool", {x}, {1, 2, 5 - k, 5 - k},
                   {{"kernel_shape", ints({k, k})}, {"strides", ints({1, 1})}});
    b.out(b.n("Relu", {p}, {1, 2, 5 - k, 5 - k}));
    return std::move(b.g);
  };
  auto f = fuse(build(1));
  EXPECT_EQ(count_op(*f.graph, "AveragePool"), 0u);
  expect_same_numbers(std::move(f.graph), build(1));
  auto g = fuse(build(2));
  EXPECT_EQ(count_op(*g.graph, "AveragePool"), 1u);
}

}  // namespace fusions_test
}  // namespace nnfuse
