// LayerNormFusionPass, RMSNormFusionPass and SkipLayerNormFusionPass: every exporter variant
// fuses (node count drops, provenance recorded, fused == unfused on random inputs), and each
// guard rejects with its reason.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace layer_norm_test {

using namespace fusion_test;

constexpr char kLn[] = "LayerNormFusionPass";
constexpr char kRms[] = "RMSNormFusionPass";
constexpr char kSkip[] = "SkipLayerNormFusionPass";

// True when some rejection of `pass` mentions `text`.
::testing::AssertionResult rejected_with(const FusionReport& r, const std::string& pass,
                                         const std::string& text) {
  const PassRecord* p = record(r, pass);
  if (!p) return ::testing::AssertionFailure() << pass << " did not run";
  std::string all;
  for (const RejectedMatch& m : p->rejected) {
    if (m.reason.find(text) != std::string::npos) return ::testing::AssertionSuccess();
    all += std::string("\n  ") + m.reason;
  }
  return ::testing::AssertionFailure()
         << "no rejection of " << pass << " mentions '" << text << "'; rejections:" << all;
}

Value* scalar_c(B& b, double v, DType t) {
  return t == DType::kFloat64 ? b.c(Tensor::scalar<double>(v))
                              : b.c(Tensor::scalar<float>(static_cast<float>(v)));
}

// The decomposed LayerNorm as PyTorch exports it, and its variants.
struct LnOpts {
  int64_t opset = 13;
  bool gamma = true, beta = true;
  bool mul_square = false;       // Mul(d, d) instead of Pow(d, 2)
  bool two_subs = false;         // x - mean computed twice (older exporters)
  bool cast_before_pow = false;  // a float->float Cast between Sub and Pow
  int via_double = 0;            // 1: Cast to double at the input, back after Div; 2: at the end
  bool axes_input = false;       // opset 18: ReduceMean's axes as an input
  std::string divide = "Div";    // or "Reciprocal": Mul(d, Reciprocal(s)); "RSqrt": Mul(d, 1 / s)
  // Guards.
  bool eps_input = false, gamma_input = false, beta_input = false;
  int64_t axis = -1, keepdims = 1;
  Dims gamma_shape = {16};
  bool mean_escapes = false;
  bool residual = false;  // x = a + b (for SkipLayerNorm)
};

const Dims kX = {2, 5, 16};

std::unique_ptr<Graph> ln_graph(const LnOpts& o) {
  B b;
  b.g->opsets[""] = o.opset;
  Value* x;
  if (o.residual) {
    x = b.n("Add", {b.in("a", kX), b.in("b", kX)}, kX, {}, "residual");
  } else {
    x = b.in("x", kX);
  }
  DType t = DType::kFloat32;
  if (o.via_double) {
    x = b.n("Cast", {x}, kX, {{"to", attr_int(11)}}, "cast_in");
    t = DType::kFloat64;
    x->set_dtype(t);
  }
  Dims stat = kX;
  stat.back() = 1;
  if (!o.keepdims) stat.pop_back();
  auto mean_of = [&](Value* v, const std::string& name) {
    std::map<std::string, Attribute> a;
    std::vector<Value*> ins = {v};
    if (o.axes_input) {
      ins.push_back(b.c(Tensor::from_vector<int64_t>({1}, {o.axis})));
    } else {
      a["axes"] = ints({o.axis});
    }
    if (o.keepdims != 1) a["keepdims"] = attr_int(o.keepdims);
    Value* r = b.n("ReduceMean", ins, stat, a, name);
    r->set_dtype(t);
    return r;
  };
  auto node = [&](const std::string& op, std::vector<Value*> ins, const Dims& d,
                  const std::string& name) {
    Value* r = b.n(op, std::move(ins), d, {}, name);
    r->set_dtype(t);
    return r;
  };
  Value* mean = mean_of(x, "mean");
  if (o.mean_escapes) b.out(mean);
  Value* d = node("Sub", {x, mean}, kX, "sub");
  Value* dp = d;
  if (o.cast_before_pow) {
    dp = b.n("Cast", {d}, kX, {{"to", attr_int(t == DType::kFloat64 ? 11 : 1)}}, "cast_pow");
    dp->set_dtype(t);
  }
  Value* sq = o.mul_square ? node("Mul", {dp, dp}, kX, "pow")
                           : node("Pow", {dp, scalar_c(b, 2.0, t)}, kX, "pow");
  Value* var = mean_of(sq, "var");
  Value* eps = o.eps_input ? b.in("eps", {}) : scalar_c(b, 1e-5, t);
  Value* s = node("Sqrt", {node("Add", {var, eps}, stat, "add_eps")}, stat, "sqrt");
  Value* d2 = o.two_subs ? node("Sub", {x, mean}, kX, "sub2") : d;
  Value* y;
  if (o.divide == "Div") {
    y = node("Div", {d2, s}, kX, "div");
  } else if (o.divide == "Reciprocal") {
    y = node("Mul", {d2, node("Reciprocal", {s}, stat, "recip")}, kX, "div");
  } else {
    y = node("Mul", {d2, node("Div", {scalar_c(b, 1.0, t), s}, stat, "recip")}, kX, "div");
  }
  if (o.via_double == 1) {
    y = b.n("Cast", {y}, kX, {{"to", attr_int(1)}}, "cast_out");
    t = DType::kFloat32;
  }
  auto param = [&](bool input, const std::string& name, uint32_t seed, float lo, float hi) {
    if (input) return b.in(name, o.gamma_shape);
    Tensor p = random_tensor(o.gamma_shape, seed, lo, hi);
    if (t == DType::kFloat64) {
      Tensor q(DType::kFloat64, p.shape());
      for (int64_t i = 0; i < p.numel(); ++i) q.data<double>()[i] = p.data<float>()[i];
      return b.c(std::move(q));
    }
    return b.c(std::move(p));
  };
  if (o.gamma) y = node("Mul", {y, param(o.gamma_input, "gamma", 21, 0.5f, 1.5f)}, kX, "mul_gamma");
  if (o.beta) y = node("Add", {param(o.beta_input, "beta", 22, -1, 1), y}, kX, "add_beta");
  if (o.via_double == 2) y = b.n("Cast", {y}, kX, {{"to", attr_int(1)}}, "cast_out");
  b.out(y);
  return std::move(b.g);
}

// Fuses ln_graph(o), expects one LayerNormalization and no other node, and the numbers.
void expect_layer_norm(const LnOpts& o) {
  auto f = fuse(ln_graph(o));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node* n = f.graph->nodes()[0];
  EXPECT_EQ(n->op_type(), "LayerNormalization");
  EXPECT_EQ(n->domain(), o.opset >= 17 ? "" : "ai.nnfuse");
  EXPECT_EQ(n->attr_int("axis", 0), -1);
  EXPECT_FLOAT_EQ(n->attr_float("epsilon", 0), 1e-5f);
  EXPECT_EQ(n->fused_by(), kLn);
  EXPECT_EQ(n->num_inputs(), o.beta ? 3u : 2u);
  EXPECT_EQ(record(f.report, kLn)->effect_times, 1);
  EXPECT_TRUE(record(f.report, kLn)->rejected.empty());
  expect_same_numbers(std::move(f.graph), ln_graph(o));
}

TEST(LayerNormFusion, PyTorchDecompositionFusesAtOpset13And17) {
  for (int64_t opset : {13, 17}) {
    SCOPED_TRACE(opset);
    LnOpts o;
    o.opset = opset;
    auto f = fuse(ln_graph(o));
    ASSERT_EQ(f.graph->num_nodes(), 1u);
    EXPECT_EQ(f.graph->nodes()[0]->fused_from(),
              (std::vector<std::string>{"mean", "sub", "pow", "var", "add_eps", "sqrt", "div",
                                        "mul_gamma", "add_beta"}));
    EXPECT_EQ(f.report.fused.at(0).kernels_saved, 8);
    expect_layer_norm(o);
  }
}

TEST(LayerNormFusion, ExporterVariants) {
  struct Case {
    std::string name;
    LnOpts o;
  };
  std::vector<Case> cases(12);
  cases[0].name = "Mul(d, d)";
  cases[0].o.mul_square = true;
  cases[1].name = "two Subs";
  cases[1].o.two_subs = true;
  cases[2].name = "Cast before Pow";
  cases[2].o.cast_before_pow = true;
  cases[3].name = "through double, back after Div";
  cases[3].o.via_double = 1;
  cases[4].name = "through double, back at the end";
  cases[4].o.via_double = 2;
  cases[5].name = "opset 18 axes input";
  cases[5].o.opset = 18;
  cases[5].o.axes_input = true;
  cases[6].name = "Reciprocal";
  cases[6].o.divide = "Reciprocal";
  cases[7].name = "Mul by 1 / s";
  cases[7].o.divide = "RSqrt";
  cases[8].name = "no beta";
  cases[8].o.beta = false;
  cases[9].name = "no gamma";
  cases[9].o.gamma = false;
  cases[10].name = "neither";
  cases[10].o.gamma = cases[10].o.beta = false;
  cases[11].name = "axis 2 of rank 3, gamma [1, 1, 16], two Subs and Mul(d, d)";
  cases[11].o.axis = 2;
  cases[11].o.gamma_shape = {1, 1, 16};
  cases[11].o.two_subs = cases[11].o.mul_square = true;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expect_layer_norm(c.o);
  }
}

TEST(LayerNormFusion, Float16ModelKeepsItsCastsOutside) {
  // x (float16) -> Cast float32 -> LayerNorm -> Cast float16: the fused node computes between.
  LnOpts o;
  auto g = ln_graph(o);
  Value* x = g->find_value("x");
  Value* h = g->add_value("h", DType::kFloat16, Shape::of(kX));
  g->add_input(h);
  Node* c =
      g->add_node("Cast", "to_f32", {h}, {g->add_value("h32", DType::kFloat32, Shape::of(kX))});
  c->set_attr("to", attr_int(1));
  g->replace_all_uses(x, c->output(0));
  Value* y = g->outputs()[0];
  Node* back =
      g->add_node("Cast", "to_f16", {y}, {g->add_value("y16", DType::kFloat16, Shape::of(kX))});
  back->set_attr("to", attr_int(10));
  g->add_output(back->output(0));
  g->topological_sort();
  auto f = fuse(std::move(g));
  EXPECT_EQ(count_op(*f.graph, "LayerNormalization"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "Cast"), 2u);
}

TEST(LayerNormFusion, GuardsRejectWithReasons) {
  struct Case {
    std::string why;
    LnOpts o;
    size_t nodes_left;  // after the pipeline
  };
  std::vector<Case> cases(8);
  cases[0] = {"epsilon 'eps' is not a constant", {}, 9};
  cases[0].o.eps_input = true;
  // A gamma or beta that is not a constant stays a Mul / Add after the fused rest.
  cases[1] = {"gamma 'gamma' is not a constant", {}, 3};
  cases[1].o.gamma_input = true;
  cases[2] = {"beta 'beta' is not a constant", {}, 2};
  cases[2].o.beta_input = true;
  // (RMSNormFusionPass then takes the rest: LayerNorm is RMSNorm of x - mean.)
  cases[3] = {"'mean_out' of ReduceMean 'mean' is a graph output", {}, 4};
  cases[3].o.mean_escapes = true;
  cases[4] = {"not over the last axis only", {}, 9};
  cases[4].o.axis = 1;
  cases[5] = {"keepdims=0", {}, 9};
  cases[5].o.keepdims = 0;
  cases[6] = {"is not one value per feature", {}, 3};
  cases[6].o.gamma_shape = {5, 16};
  cases[7] = {"not over the last axis only", {}, 9};
  cases[7].o.axis = 1;
  cases[7].o.axes_input = true;
  cases[7].o.opset = 18;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    auto f = fuse_without_auto_fusion(ln_graph(c.o));
    EXPECT_TRUE(rejected_with(f.report, kLn, c.why));
    EXPECT_EQ(f.graph->num_nodes(), c.nodes_left) << graph_to_text(*f.graph);
  }
}

TEST(LayerNormFusion, NonFloat32IsRejected) {
  // The whole normalization in double: the fused op computes in float32.
  auto g = ln_graph({});
  for (Value* v : g->values()) {
    if (v->dtype() == DType::kFloat32) v->set_dtype(DType::kFloat64);
  }
  auto f = fuse(std::move(g));
  EXPECT_TRUE(rejected_with(f.report, kLn, "not float32"));
  EXPECT_EQ(count_op(*f.graph, "LayerNormalization"), 0u);
}

// ---- RMSNorm

struct RmsOpts {
  bool mul_square = false;
  std::string divide = "RSqrt";  // LLaMA's x * rsqrt(...): Mul(x, Div(1, Sqrt))
  bool gamma = true;
  bool eps_input = false;
  int64_t axis = -1;
};

std::unique_ptr<Graph> rms_graph(const RmsOpts& o) {
  B b;
  b.g->opsets[""] = 13;
  Value* x = b.in("x", kX);
  const Dims stat = {2, 5, 1};
  Value* sq = o.mul_square ? b.n("Mul", {x, x}, kX, {}, "pow")
                           : b.n("Pow", {x, b.c(Tensor::scalar<float>(2))}, kX, {}, "pow");
  Value* ms = b.n("ReduceMean", {sq}, stat, {{"axes", ints({o.axis})}}, "mean");
  Value* eps = o.eps_input ? b.in("eps", {}) : b.c(Tensor::scalar<float>(1e-6f));
  Value* s = b.n("Sqrt", {b.n("Add", {ms, eps}, stat, {}, "add_eps")}, stat, {}, "sqrt");
  Value* y;
  if (o.divide == "Div") {
    y = b.n("Div", {x, s}, kX, {}, "div");
  } else if (o.divide == "Reciprocal") {
    y = b.n("Mul", {b.n("Reciprocal", {s}, stat, {}, "recip"), x}, kX, {}, "div");
  } else {
    y = b.n("Mul", {x, b.n("Div", {b.c(Tensor::scalar<float>(1)), s}, stat, {}, "recip")}, kX, {},
            "div");
  }
  if (o.gamma) y = b.n("Mul", {y, b.c(random_tensor({16}, 5, 0.5f, 1.5f))}, kX, {}, "mul_gamma");
  b.out(y);
  return std::move(b.g);
}

TEST(RmsNormFusion, LlamaAndOtherSpellingsFuse) {
  std::vector<RmsOpts> cases(5);
  cases[1].mul_square = true;
  cases[1].divide = "Div";
  cases[2].divide = "Reciprocal";
  cases[3].gamma = false;
  cases[4].axis = 2;
  for (const RmsOpts& o : cases) {
    SCOPED_TRACE(o.divide + (o.mul_square ? " Mul(x, x)" : "") + (o.gamma ? " gamma" : ""));
    auto f = fuse(rms_graph(o));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node* n = f.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "RMSNorm");
    EXPECT_EQ(n->domain(), "ai.nnfuse");
    EXPECT_EQ(n->num_inputs(), o.gamma ? 2u : 1u);
    EXPECT_FLOAT_EQ(n->attr_float("epsilon", 0), 1e-6f);
    EXPECT_EQ(n->fused_by(), kRms);
    EXPECT_EQ(n->fused_from().front(), "pow");
    EXPECT_EQ(n->fused_from().back(), o.gamma ? "mul_gamma" : "div");
    expect_same_numbers(std::move(f.graph), rms_graph(o));
  }
}

TEST(RmsNormFusion, GuardsRejectWithReasons) {
  RmsOpts eps;
  eps.eps_input = true;
  auto f = fuse(rms_graph(eps));
  EXPECT_TRUE(rejected_with(f.report, kRms, "epsilon 'eps' is not a constant"));
  EXPECT_EQ(count_op(*f.graph, "RMSNorm"), 0u);
  RmsOpts axis;
  axis.axis = 1;
  f = fuse(rms_graph(axis));
  EXPECT_TRUE(rejected_with(f.report, kRms, "not over the last axis only"));
  EXPECT_EQ(count_op(*f.graph, "RMSNorm"), 0u);
  // The mean square also a graph output.
  auto g = rms_graph({});
  g->add_output(g->find_value("mean_out"));
  f = fuse(std::move(g));
  EXPECT_TRUE(rejected_with(f.report, kRms, "'mean_out'"));
  EXPECT_EQ(count_op(*f.graph, "RMSNorm"), 0u);
}

// ---- SkipLayerNorm

struct SkipOpts {
  int64_t opset = 17;
  Dims a = kX, b = kX;
  bool bias = false;      // Add(Add(a, bias), b)
  bool sum_used = false;  // the sum also feeds another Add (pre-LN)
  int64_t axis = -1;
  bool mean_used = false;  // LayerNormalization's Mean output used
};

std::unique_ptr<Graph> skip_graph(const SkipOpts& o) {
  B b;
  b.g->opsets[""] = o.opset;
  Value* a = b.in("a", o.a);
  if (o.bias) a = b.n("Add", {a, b.c(random_tensor({16}, 31))}, o.a, {}, "bias_add");
  Value* s = b.n("Add", {a, b.in("b", o.b)}, kX, {}, "residual");
  Value* g = b.c(random_tensor({16}, 32, 0.5f, 1.5f));
  Value* beta = b.c(random_tensor({16}, 33));
  std::vector<Value*> outs = {b.g->add_value("ln_out", DType::kFloat32, Shape::of(kX))};
  if (o.mean_used) outs.push_back(b.g->add_value("ln_mean", DType::kFloat32, Shape::of({2, 5, 1})));
  Node* ln = b.g->add_node("LayerNormalization", "ln", {s, g, beta}, outs);
  ln->set_attr("axis", attr_int(o.axis));
  ln->set_attr("epsilon", attr_float(1e-5f));
  b.out(outs[0]);
  if (o.mean_used) b.out(outs[1]);
  if (o.sum_used) b.out(b.n("Add", {s, outs[0]}, kX, {}, "next_residual"));
  return std::move(b.g);
}

TEST(SkipLayerNormFusion, PostLnResidualFuses) {
  auto f = fuse(skip_graph({}));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node* n = f.graph->nodes()[0];
  EXPECT_EQ(n->op_type(), "SkipLayerNorm");
  EXPECT_EQ(n->domain(), "ai.nnfuse");
  EXPECT_EQ(n->num_outputs(), 1u);
  EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"residual", "ln"}));
  EXPECT_EQ(record(f.report, kSkip)->effect_times, 1);
  expect_same_numbers(std::move(f.graph), skip_graph({}));
}

TEST(SkipLayerNormFusion, PreLnSumIsOutputOne) {
  SkipOpts o;
  o.sum_used = true;
  auto f = fuse(skip_graph(o));
  ASSERT_EQ(count_op(*f.graph, "SkipLayerNorm"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "Add"), 1u);
  for (const Node* n : f.graph->nodes()) {
    if (n->op_type() == "SkipLayerNorm") {
      ASSERT_EQ(n->num_outputs(), 2u);
      EXPECT_EQ(n->output(1)->name(), "residual_out");
    }
  }
  expect_same_numbers(std::move(f.graph), skip_graph(o));
}

TEST(SkipLayerNormFusion, BiasAddIsAbsorbed) {
  SkipOpts o;
  o.bias = true;
  auto f = fuse(skip_graph(o));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node* n = f.graph->nodes()[0];
  ASSERT_EQ(n->num_inputs(), 5u);
  EXPECT_EQ(n->input(0)->name(), "a");
  EXPECT_TRUE(n->input(4)->is_constant());
  EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"bias_add", "residual", "ln"}));
  expect_same_numbers(std::move(f.graph), skip_graph(o));
}

TEST(SkipLayerNormFusion, BroadcastSkipFuses) {
  SkipOpts o;
  o.b = {5, 16};
  auto f = fuse(skip_graph(o));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->nodes()[0]->input(1)->name(), "b");
  expect_same_numbers(std::move(f.graph), skip_graph(o));
  o.a = {5, 16};  // now `a` is the skip
  o.b = kX;
  f = fuse(skip_graph(o));
  ASSERT_EQ(f.graph->num_nodes(), 1u);
  EXPECT_EQ(f.graph->nodes()[0]->input(0)->name(), "b");
  expect_same_numbers(std::move(f.graph), skip_graph(o));
}

TEST(SkipLayerNormFusion, AfterTheDecomposedLayerNormAtOpset13) {
  LnOpts o;
  o.residual = true;
  auto f = fuse(ln_graph(o));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node* n = f.graph->nodes()[0];
  EXPECT_EQ(n->op_type(), "SkipLayerNorm");
  EXPECT_EQ(n->fused_from().size(), 10u);
  EXPECT_EQ(n->fused_by(), kSkip);
  ASSERT_EQ(f.report.fused.size(), 1u);
  EXPECT_EQ(f.report.fused[0].pass, std::string(kLn) + "+" + kSkip);
  EXPECT_EQ(f.report.fused[0].kernels_saved, 9);
  expect_same_numbers(std::move(f.graph), ln_graph(o));
}

TEST(SkipLayerNormFusion, GuardsRejectWithReasons) {
  SkipOpts axis;
  axis.axis = 1;
  auto f = fuse(skip_graph(axis));
  EXPECT_TRUE(rejected_with(f.report, kSkip, "normalizes from axis 1"));
  EXPECT_EQ(f.graph->num_nodes(), 2u);
  SkipOpts mean;
  mean.mean_used = true;
  f = fuse(skip_graph(mean));
  EXPECT_TRUE(rejected_with(f.report, kSkip, "Mean or InvStdDev output"));
  EXPECT_EQ(f.graph->num_nodes(), 2u);
  SkipOpts grow;  // [2, 1, 16] + [5, 16]: the sum is bigger than either operand
  grow.a = {2, 1, 16};
  grow.b = {5, 16};
  f = fuse(skip_graph(grow));
  EXPECT_TRUE(rejected_with(f.report, kSkip, "cannot show that one operand"));
  EXPECT_EQ(f.graph->num_nodes(), 2u);
  expect_same_numbers(std::move(f.graph), skip_graph(grow));
}

}  // namespace layer_norm_test
}  // namespace nnfuse
