// The ONNX Runtime export: what each fused op becomes, that the export passes the ONNX checker,
// and, where the export is all standard ONNX ops (generated regions, peepholes), that nnfuse
// running it gives the fused graph's numbers. (ONNX Runtime itself runs the exports of the
// model and exporter-variant tests: tests/models/ort_export.py.)
#include "onnx/ort_export.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>

#include "ir/builder.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "passes/pipeline.h"
#include "runtime/session.h"
#include "testing/graph_builder.h"

namespace nnfuse {
namespace ort_export_test {

Tensor random(const Dims& shape, uint32_t seed) {
  Tensor t(DType::kFloat32, shape);
  uint32_t s = seed * 2654435761u + 7;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = -3.0f + 6.0f * static_cast<float>(s >> 8) / (1u << 24);
  }
  return t;
}

using Builder = testing::GraphBuilder;

onnx::ModelProto export_ort(const Graph& g) {
  onnx::ModelProto m;
  graph_to_model(g, &m, ExportFormat::kOrt);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  for (const auto& o : m.opset_import()) EXPECT_NE(o.domain(), kFusedDomain);
  return m;
}

std::vector<std::string> op_types(const onnx::ModelProto& m) {
  std::vector<std::string> r;
  for (const auto& n : m.graph().node()) r.push_back(n.op_type());
  return r;
}

const onnx::NodeProto* find(const onnx::ModelProto& m, const std::string& op) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == op) return &n;
  }
  return nullptr;
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

double max_rel(const Tensor& got, const Tensor& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    err = std::max(err, std::abs(got.double_at(i) - want.double_at(i)));
    scale = std::max(scale, std::abs(want.double_at(i)));
  }
  return err / std::max(scale, 1e-30);
}

// The fused graph and its standard-op export, run by nnfuse on the same inputs.
void expect_export_runs_the_same(std::unique_ptr<Graph> fused,
                                 const std::map<std::string, Tensor>& feeds) {
  const onnx::ModelProto m = export_ort(*fused);
  for (const auto& n : m.graph().node()) {
    EXPECT_TRUE(n.domain().empty()) << n.op_type() << " in " << n.domain();
  }
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  PlanOptions ref;
  ref.reference_only = true;
  PlanSession back(load_onnx_from_string(bytes, "", "export"), ref);
  PlanSession want(std::move(fused));
  const std::vector<Tensor> a = back.run(feeds), b = want.run(feeds);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    EXPECT_LE(max_rel(a[i], b[i]), 1e-5);
  }
}

TEST(OrtExport, GeneratedRegionsAreTheirOnnxOpsAgain) {
  // Softplus, LeakyRelu, HardSwish, HardSigmoid and Clip lower to several region ops each; the
  // export writes each as its one ONNX op again, and a softmax written out keeps its
  // reductions (with keepdims) and broadcasts.
  Builder b;
  Value* x = b.in("x", {4, 16});
  Value* y = b.n("Softplus", {x}, {4, 16});
  Node* lr = b.node("LeakyRelu", {y}, {4, 16});
  lr->set_attr("alpha", attr_float(0.2f));
  y = b.n("HardSwish", {lr->output(0)}, {4, 16});
  Node* hs = b.node("HardSigmoid", {y}, {4, 16});
  hs->set_attr("alpha", attr_float(0.3f));
  y = b.n("Clip", {hs->output(0), b.c(Tensor::scalar(0.1f)), b.c(Tensor::scalar(0.8f))}, {4, 16});
  y = b.n("Mul", {y, x}, {4, 16});
  Node* mx = b.node("ReduceMax", {y}, {4, 1});
  mx->set_attr("axes", attr_ints({-1}));
  Value* e = b.n("Exp", {b.n("Sub", {y, mx->output(0)}, {4, 16})}, {4, 16});
  Node* sum = b.node("ReduceSum", {e, b.c(Tensor::from_vector<int64_t>({1}, {-1}))}, {4, 1});
  b.g->add_output(b.n("Div", {e, sum->output(0)}, {4, 16}));
  run_pipeline(*b.g);
  size_t regions = 0;
  for (const Node* n : b.g->nodes()) regions += n->op_type() == "FusedRegion";
  ASSERT_GE(regions, 2u);
  const onnx::ModelProto m = export_ort(*b.g);
  const std::vector<std::string> ops = op_types(m);
  for (const char* op : {"Softplus", "LeakyRelu", "HardSwish", "HardSigmoid", "Clip", "ReduceMax",
                         "ReduceSum", "Exp", "Div"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Abs"), 0) << "Softplus written out";
  EXPECT_NEAR(attr(*find(m, "LeakyRelu"), "alpha")->f(), 0.2f, 1e-7);
  EXPECT_NEAR(attr(*find(m, "HardSigmoid"), "alpha")->f(), 0.3f, 1e-7);
  expect_export_runs_the_same(std::move(b.g), {{"x", random({4, 16}, 1)}});
}

TEST(OrtExport, ConvActivationsOrtHasAreInsideTheOthersAfter) {
  for (const char* act : {"Relu", "LeakyRelu", "SiLU", "Gelu", "HardSwish"}) {
    Builder b;
    Value* x = b.in("x", {1, 3, 8, 8});
    Node* conv = b.node("FusedConv", {x, b.c(random({4, 3, 3, 3}, 2)), b.c(random({4}, 3))},
                        {1, 4, 8, 8}, kFusedDomain);
    conv->set_attr("pads", attr_ints({1, 1, 1, 1}));
    conv->set_attr("kernel_shape", attr_ints({3, 3}));
    conv->set_attr("activation", attr_string(act));
    if (std::string(act) == "LeakyRelu") conv->set_attr("activation_alpha", attr_float(0.1f));
    b.g->add_output(conv->output(0));
    const onnx::ModelProto m = export_ort(*b.g);
    const onnx::NodeProto* fc = find(m, "FusedConv");
    ASSERT_NE(fc, nullptr) << act;
    EXPECT_EQ(fc->domain(), kOrtDomain);
    EXPECT_EQ(attr(*fc, "pads")->ints_size(), 4);
    const std::string a = act;
    if (a == "Relu" || a == "LeakyRelu") {
      EXPECT_EQ(m.graph().node_size(), 1) << act;
      EXPECT_EQ(attr(*fc, "activation")->s(), a);
      if (a == "LeakyRelu") {
        EXPECT_NEAR(attr(*fc, "activation_params")->floats(0), 0.1f, 1e-7);
      }
    } else {
      EXPECT_EQ(attr(*fc, "activation"), nullptr) << act;
      ASSERT_EQ(m.graph().node_size(), 2) << act;
      const std::string after = m.graph().node(1).op_type();
      EXPECT_EQ(after, a == "SiLU" ? "QuickGelu" : a == "Gelu" ? "Gelu" : "HardSwish");
      if (a == "SiLU") {
        EXPECT_EQ(attr(m.graph().node(1), "alpha")->f(), 1.0f);
      }
      EXPECT_EQ(m.graph().node(1).output(0), conv->output(0)->name());
    }
  }
}

TEST(OrtExport, SkipConvolutionIsAConvBeforeTheFusedConv) {
  // FusedConv(X, W, B, -, X2, W2, B2) (conv_skip.h): the skip conv as a standard Conv with its
  // skip_ attributes, its output the FusedConv's Z.
  Builder b;
  Value* x = b.in("x", {1, 4, 6, 6});
  Value* x2 = b.in("x2", {1, 3, 12, 12});
  Node* conv = b.node("FusedConv",
                      {x, b.c(random({8, 4, 3, 3}, 2)), nullptr, nullptr, x2,
                       b.c(random({8, 3, 1, 1}, 3)), b.c(random({8}, 4))},
                      {1, 8, 6, 6}, kFusedDomain);
  conv->set_attr("pads", attr_ints({1, 1, 1, 1}));
  conv->set_attr("activation", attr_string("Relu"));
  conv->set_attr("skip_strides", attr_ints({2, 2}));
  conv->set_attr("skip_kernel_shape", attr_ints({1, 1}));
  b.g->add_output(conv->output(0));
  const onnx::ModelProto m = export_ort(*b.g);
  ASSERT_EQ(m.graph().node_size(), 2);
  const onnx::NodeProto& skip = m.graph().node(0);
  EXPECT_EQ(skip.op_type(), "Conv");
  EXPECT_TRUE(skip.domain().empty());
  ASSERT_EQ(skip.input_size(), 3);
  EXPECT_EQ(skip.input(0), "x2");
  ASSERT_NE(attr(skip, "strides"), nullptr);
  EXPECT_EQ(attr(skip, "strides")->ints(0), 2);
  EXPECT_EQ(attr(skip, "pads"), nullptr);
  const onnx::NodeProto& fc = m.graph().node(1);
  EXPECT_EQ(fc.op_type(), "FusedConv");
  ASSERT_EQ(fc.input_size(), 4);
  EXPECT_EQ(fc.input(0), "x");
  EXPECT_EQ(fc.input(2), "");
  EXPECT_EQ(fc.input(3), skip.output(0));
  EXPECT_EQ(attr(fc, "activation")->s(), "Relu");
  EXPECT_EQ(attr(fc, "skip_strides"), nullptr);
  EXPECT_EQ(attr(fc, "strides"), nullptr);
}

TEST(OrtExport, SqueezeExciteIsAPoolAndTwoFusedConvs) {
  // SqueezeExcite(X, W1, -, W2, B2) (squeeze_excite.h): GlobalAveragePool, then each part a
  // FusedConv of its prefixed attributes, an activation ORT's FusedConv lacks after it (SiLU as
  // QuickGelu).
  Builder b;
  Value* x = b.in("x", {1, 8, 5, 5});
  Node* se = b.node(
      "SqueezeExcite",
      {x, b.c(random({4, 8, 1, 1}, 2)), nullptr, b.c(random({8, 4, 1, 1}, 3)), b.c(random({8}, 4))},
      {1, 8, 1, 1}, kFusedDomain);
  se->set_attr("squeeze_activation", attr_string("SiLU"));
  se->set_attr("excite_activation", attr_string("HardSigmoid"));
  se->set_attr("excite_activation_alpha", attr_float(0.25f));
  b.g->add_output(se->output(0));
  const onnx::ModelProto m = export_ort(*b.g);
  EXPECT_EQ(op_types(m),
            (std::vector<std::string>{"GlobalAveragePool", "FusedConv", "QuickGelu", "FusedConv"}))
      << m.DebugString();
  const onnx::NodeProto& squeeze = m.graph().node(1);
  EXPECT_EQ(squeeze.input(0), m.graph().node(0).output(0));
  EXPECT_EQ(squeeze.input_size(), 2);  // no bias
  EXPECT_EQ(attr(squeeze, "activation"), nullptr);
  EXPECT_EQ(attr(squeeze, "squeeze_activation"), nullptr);
  const onnx::NodeProto& excite = m.graph().node(3);
  EXPECT_EQ(excite.input(0), m.graph().node(2).output(0));
  ASSERT_EQ(excite.input_size(), 3);
  EXPECT_EQ(excite.output(0), se->output(0)->name());
  ASSERT_NE(attr(excite, "activation"), nullptr);
  EXPECT_EQ(attr(excite, "activation")->s(), "HardSigmoid");
  ASSERT_NE(attr(excite, "activation_params"), nullptr);
  EXPECT_FLOAT_EQ(attr(excite, "activation_params")->floats(0), 0.25f);
}

TEST(OrtExport, AnAppliedSqueezeExciteEndsInTheMul) {
  // apply = 1: the same pool and parts, the excite part's output a value of its own, then X
  // times it as the node's output.
  Builder b;
  Value* x = b.in("x", {1, 8, 5, 5});
  Node* se = b.node("SqueezeExcite",
                    {x, b.c(random({4, 8, 1, 1}, 2)), b.c(random({4}, 5)),
                     b.c(random({8, 4, 1, 1}, 3)), b.c(random({8}, 4))},
                    {1, 8, 5, 5}, kFusedDomain);
  se->set_attr("squeeze_activation", attr_string("Relu"));
  se->set_attr("excite_activation", attr_string("Sigmoid"));
  se->set_attr("apply", attr_int(1));
  b.g->add_output(se->output(0));
  const onnx::ModelProto m = export_ort(*b.g);
  EXPECT_EQ(op_types(m),
            (std::vector<std::string>{"GlobalAveragePool", "FusedConv", "FusedConv", "Mul"}))
      << m.DebugString();
  const onnx::NodeProto& excite = m.graph().node(2);
  const onnx::NodeProto& mul = m.graph().node(3);
  EXPECT_NE(excite.output(0), se->output(0)->name());
  EXPECT_EQ(mul.input(0), "x");
  EXPECT_EQ(mul.input(1), excite.output(0));
  EXPECT_EQ(mul.output(0), se->output(0)->name());
  EXPECT_EQ(attr(mul, "apply"), nullptr);
}

TEST(OrtExport, ExpandDepthwiseIsTwoFusedConvs) {
  // ExpandDepthwise(X, W1, B1, W2, -) (expand_depthwise.h): the 1x1 expansion into a value of
  // its own, then the depthwise conv, each a FusedConv of its prefixed attributes.
  Builder b;
  Value* x = b.in("x", {1, 8, 6, 6});
  Node* ed = b.node(
      "ExpandDepthwise",
      {x, b.c(random({32, 8, 1, 1}, 2)), b.c(random({32}, 3)), b.c(random({32, 1, 3, 3}, 4))},
      {1, 32, 3, 3}, kFusedDomain);
  ed->set_attr("expand_activation", attr_string("Relu"));
  ed->set_attr("depthwise_activation", attr_string("Clip"));
  ed->set_attr("depthwise_activation_alpha", attr_float(0.0f));
  ed->set_attr("depthwise_activation_beta", attr_float(6.0f));
  ed->set_attr("depthwise_group", attr_int(32));
  ed->set_attr("depthwise_strides", attr_ints({2, 2}));
  ed->set_attr("depthwise_pads", attr_ints({1, 1, 1, 1}));
  b.g->add_output(ed->output(0));
  const onnx::ModelProto m = export_ort(*b.g);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"FusedConv", "FusedConv"})) << m.DebugString();
  const onnx::NodeProto& expand = m.graph().node(0);
  EXPECT_EQ(expand.input(0), "x");
  EXPECT_EQ(expand.input_size(), 3);
  ASSERT_NE(attr(expand, "activation"), nullptr);
  EXPECT_EQ(attr(expand, "activation")->s(), "Relu");
  EXPECT_EQ(attr(expand, "group"), nullptr);
  const onnx::NodeProto& dw = m.graph().node(1);
  EXPECT_EQ(dw.input(0), expand.output(0));
  EXPECT_EQ(dw.input_size(), 2);  // no bias
  EXPECT_EQ(dw.output(0), ed->output(0)->name());
  ASSERT_NE(attr(dw, "group"), nullptr);
  EXPECT_EQ(attr(dw, "group")->i(), 32);
  ASSERT_NE(attr(dw, "strides"), nullptr);
  EXPECT_EQ(attr(dw, "strides")->ints(0), 2);
  ASSERT_NE(attr(dw, "activation"), nullptr);
  EXPECT_EQ(attr(dw, "activation")->s(), "Clip");
  ASSERT_NE(attr(dw, "activation_params"), nullptr);
  EXPECT_FLOAT_EQ(attr(dw, "activation_params")->floats(1), 6.0f);
}

TEST(OrtExport, ConvSplitIsAFusedConvAndASplit) {
  // FusedConvSplit(X, W, B): the product as one FusedConv into a value of its own, then Split
  // along the channels into the node's outputs (sizes as an input from opset 13).
  Builder b;
  Value* x = b.in("x", {1, 8, 5, 5});
  Value* y0 = b.g->add_value("y0", DType::kFloat32, Shape::of({1, 4, 5, 5}));
  Value* y1 = b.g->add_value("y1", DType::kFloat32, Shape::of({1, 6, 5, 5}));
  Node* conv = b.g->add_node("FusedConvSplit", "split_conv",
                             {x, b.c(random({10, 8, 1, 1}, 2)), b.c(random({10}, 3))}, {y0, y1},
                             kFusedDomain);
  conv->set_attr("split", attr_ints({4, 6}));
  conv->set_attr("activation", attr_string("Relu"));
  b.g->add_output(y0);
  b.g->add_output(y1);
  const onnx::ModelProto m = export_ort(*b.g);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"FusedConv", "Split"})) << m.DebugString();
  const onnx::NodeProto& fc = m.graph().node(0);
  EXPECT_EQ(attr(fc, "activation")->s(), "Relu");
  EXPECT_EQ(attr(fc, "split"), nullptr);
  const onnx::NodeProto& split = m.graph().node(1);
  EXPECT_EQ(split.input(0), fc.output(0));
  ASSERT_EQ(split.output_size(), 2);
  EXPECT_EQ(split.output(0), "y0");
  EXPECT_EQ(split.output(1), "y1");
  EXPECT_EQ(attr(split, "axis")->i(), 1);
}

TEST(OrtExport, DenseLayers) {
  // 2-D with a vector bias: Gemm (FusedGemm with an activation ORT's Gemm takes); 3-D: MatMul
  // with BiasGelu, or Add and the activation.
  struct Case {
    Dims a;
    const char* act;
    std::vector<std::string> ops;
  };
  const std::vector<Case> cases = {
      {{4, 8}, "", {"Gemm"}},
      {{4, 8}, "Relu", {"FusedGemm"}},
      {{4, 8}, "Clip", {"Gemm", "Clip"}},
      {{2, 4, 8}, "Gelu", {"MatMul", "BiasGelu"}},
      {{2, 4, 8}, "GeluTanh", {"MatMul", "FastGelu"}},
      {{2, 4, 8}, "Relu", {"MatMul", "Add", "Relu"}},
  };
  for (const Case& c : cases) {
    Builder b;
    Value* x = b.in("x", c.a);
    Dims out = c.a;
    out.back() = 6;
    Node* mm =
        b.node("FusedMatMul", {x, b.c(random({8, 6}, 4)), b.c(random({6}, 5))}, out, kFusedDomain);
    if (*c.act) mm->set_attr("activation", attr_string(c.act));
    if (std::string(c.act) == "Clip") {
      mm->set_attr("activation_alpha", attr_float(0.0f));
      mm->set_attr("activation_beta", attr_float(6.0f));
    }
    b.g->add_output(mm->output(0));
    const onnx::ModelProto m = export_ort(*b.g);
    EXPECT_EQ(op_types(m), c.ops) << c.act << " " << dims_str(c.a);
    if (const onnx::NodeProto* fg = find(m, "FusedGemm")) {
      // ORT's FusedGemm reads every activation parameter: all three are written.
      for (const char* k : {"activation_alpha", "activation_beta", "activation_gamma"}) {
        EXPECT_NE(attr(*fg, k), nullptr) << k;
      }
    }
  }
}

TEST(OrtExport, ScaleShift) {
  // With ReLU: one depthwise 1x1 FusedConv (scale as weights); without: a BatchNormalization
  // of mean 0 and variance 1, which nnfuse runs too, exactly.
  for (bool relu : {true, false}) {
    Builder b;
    Value* x = b.in("x", {2, 3, 4, 4});
    Node* ss = b.node("ScaleShift", {x, b.c(random({3}, 12)), b.c(random({3}, 13))}, {2, 3, 4, 4},
                      kFusedDomain);
    if (relu) ss->set_attr("activation", attr_string("Relu"));
    b.g->add_output(ss->output(0));
    const onnx::ModelProto m = export_ort(*b.g);
    ASSERT_EQ(m.graph().node_size(), 1);
    const onnx::NodeProto& n = m.graph().node(0);
    if (relu) {
      EXPECT_EQ(n.op_type(), "FusedConv");
      EXPECT_EQ(attr(n, "group")->i(), 3);
      EXPECT_EQ(attr(n, "activation")->s(), "Relu");
    } else {
      EXPECT_EQ(n.op_type(), "BatchNormalization");
      expect_export_runs_the_same(std::move(b.g), {{"x", random({2, 3, 4, 4}, 14)}});
    }
  }
}

TEST(OrtExport, ScaleShiftOfAConcatenation) {
  // A Concat of the parts along the channels, then the ScaleShift's own lowering.
  for (bool relu : {true, false}) {
    Builder b;
    Value* x = b.in("x", {1, 3, 4, 4});
    Value* x2 = b.in("x2", {1, 2, 4, 4});
    Node* ss = b.node("ScaleShift", {x, b.c(random({5}, 12)), b.c(random({5}, 13)), x2},
                      {1, 5, 4, 4}, kFusedDomain);
    if (relu) ss->set_attr("activation", attr_string("Relu"));
    b.g->add_output(ss->output(0));
    const onnx::ModelProto m = export_ort(*b.g);
    EXPECT_EQ(op_types(m),
              (std::vector<std::string>{"Concat", relu ? "FusedConv" : "BatchNormalization"}));
    if (!relu) {  // ORT's FusedConv is com.microsoft's, which nnfuse does not run
      expect_export_runs_the_same(
          std::move(b.g), {{"x", random({1, 3, 4, 4}, 14)}, {"x2", random({1, 2, 4, 4}, 15)}});
    }
  }
}

TEST(OrtExport, NormalizationsAndAttention) {
  Builder b;
  Value* x = b.in("x", {2, 5, 8});
  Value* skip = b.in("skip", {2, 5, 8});
  Value* sum = b.g->add_value("sum", DType::kFloat32, Shape::of({2, 5, 8}));
  Node* sln = b.g->add_node(
      "SkipLayerNorm", "sln", {x, skip, b.c(random({8}, 6)), b.c(random({8}, 7))},
      {b.g->add_value("sln_out", DType::kFloat32, Shape::of({2, 5, 8})), sum}, kFusedDomain);
  Node* rms = b.node("RMSNorm", {sln->output(0), b.c(random({8}, 8))}, {2, 5, 8}, kFusedDomain);
  Node* qkv =
      b.node("FusedMatMul", {rms->output(0), b.c(random({8, 24}, 9)), b.c(random({24}, 10))},
             {2, 5, 24}, kFusedDomain);
  Value* mask = b.in("mask", {2, 1, 1, 5});
  Node* mha = b.node("MultiHeadAttention", {qkv->output(0), nullptr, nullptr, mask}, {2, 5, 8},
                     kFusedDomain);
  Attribute heads;
  heads.kind = Attribute::Kind::kInt;
  heads.i = 2;
  mha->set_attr("num_heads", heads);
  Attribute packed = heads;
  packed.i = 1;
  mha->set_attr("qkv_packed", packed);
  b.g->add_output(mha->output(0));
  b.g->add_output(sum);
  const onnx::ModelProto m = export_ort(*b.g);
  EXPECT_EQ(op_types(m),
            (std::vector<std::string>{"SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
                                      "Expand", "Attention"}));
  const onnx::NodeProto& s = *find(m, "SkipLayerNormalization");
  ASSERT_EQ(s.output_size(), 4);  // the sum is output 3
  EXPECT_EQ(s.output(3), "sum");
  const onnx::NodeProto& a = *find(m, "Attention");
  EXPECT_EQ(a.input(0), rms->output(0)->name());  // the projection is inside Attention
  ASSERT_EQ(a.input_size(), 6);
  EXPECT_EQ(a.input(5), find(m, "Expand")->output(0));  // the mask widened to [B, 1, S, S]
  EXPECT_EQ(attr(a, "num_heads")->i(), 2);
}

// A norm prologue is written before the dense layers: LayerNormalization (standard, so nnfuse
// runs the export) or ORT's RMSNorm.
TEST(OrtExport, NormPrologues) {
  for (bool rms : {false, true}) {
    SCOPED_TRACE(rms ? "rms" : "layer");
    auto g = std::make_unique<Graph>();
    Builder b;
    Value* x = b.in("x", {2, 5, 8});
    std::vector<Value*> ins = {x, b.c(random({8, 12}, 11)), b.c(random({12}, 12)),
                               b.c(random({8}, 13))};
    if (!rms) ins.push_back(b.c(random({8}, 14)));
    Node* gated = b.node("FusedGatedMatMul", ins, {2, 5, 6}, kFusedDomain);
    gated->set_attr("activation", attr_string(rms ? "SiLU" : "Relu"));  // SiLU: ORT's QuickGelu
    gated->set_attr("epsilon", attr_float(1e-5f));
    if (rms) gated->set_attr("norm", attr_string("rms"));
    Node* ln_mm = b.node("FusedLayerNormMatMul",
                         {gated->output(0), b.c(random({6, 4}, 15)), nullptr, b.c(random({6}, 16))},
                         {2, 5, 4}, kFusedDomain);
    if (rms) ln_mm->set_attr("norm", attr_string("rms"));
    b.g->add_output(ln_mm->output(0));
    const onnx::ModelProto m = export_ort(*b.g);
    const std::string norm = rms ? "SkipSimplifiedLayerNormalization" : "LayerNormalization";
    const std::vector<std::string> ops = op_types(m);
    ASSERT_FALSE(ops.empty());
    EXPECT_EQ(ops.front(), norm);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), norm), 2);
    EXPECT_EQ(find(m, norm.c_str())->input(0), "x");
    if (!rms) {
      Tensor feed = random({2, 5, 8}, 17);
      expect_export_runs_the_same(std::move(b.g), {{"x", feed}});
    }
  }
}

TEST(OrtExport, PeepholesWriteOrtsForms) {
  // Two Slices of one axis -> Split; MatMul(A, Transpose(B)) * 0.5 -> FusedMatMul.
  Builder b(13);
  Value* x = b.in("x", {2, 6, 4});
  auto slice = [&](int64_t s, int64_t e) {
    return b.n(
        "Slice",
        {x, b.c(Tensor::from_vector<int64_t>({1}, {s})),
         b.c(Tensor::from_vector<int64_t>({1}, {e})), b.c(Tensor::from_vector<int64_t>({1}, {1}))},
        {2, e - s, 4});
  };
  Value* p = slice(0, 3);
  Value* q = slice(3, 6);
  Node* t = b.node("Transpose", {q}, {2, 4, 3});
  t->set_attr("perm", attr_ints({0, 2, 1}));
  Value* mm = b.n("MatMul", {p, t->output(0)}, {2, 3, 3});
  b.g->add_output(b.n("Mul", {mm, b.c(Tensor::scalar(0.5f))}, {2, 3, 3}));
  const onnx::ModelProto m = export_ort(*b.g);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Split", "FusedMatMul"}));
  const onnx::NodeProto& f = *find(m, "FusedMatMul");
  EXPECT_EQ(attr(f, "transB")->i(), 1);
  EXPECT_EQ(attr(f, "alpha")->f(), 0.5f);
  EXPECT_EQ(f.output(0), b.g->outputs()[0]->name());
}

TEST(OrtExport, SlicesWithAGapSplitWithAnUnusedPiece) {
  Builder b(17);
  Value* x = b.in("x", {3, 10});
  auto slice = [&](int64_t s, int64_t e) {
    return b.n(
        "Slice",
        {x, b.c(Tensor::from_vector<int64_t>({1}, {s})),
         b.c(Tensor::from_vector<int64_t>({1}, {e})), b.c(Tensor::from_vector<int64_t>({1}, {-1}))},
        {3, e - s});
  };
  b.g->add_output(b.n("Add", {slice(0, 4), slice(6, 10)}, {3, 4}));
  auto g = std::move(b.g);
  const onnx::ModelProto m = export_ort(*g);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Split", "Add"}));
  EXPECT_EQ(m.graph().node(0).output_size(), 3);
  expect_export_runs_the_same(std::move(g), {{"x", random({3, 10}, 11)}});
}

TEST(OrtExport, AUserPatternIsRefusedNamingIt) {
  Builder b;
  Value* x = b.in("x", {2, 2});
  Node* u = b.node("UserPattern", {x}, {2, 2}, kFusedDomain);
  u->set_attr("pattern", attr_string("Mish"));
  b.g->add_output(u->output(0));
  onnx::ModelProto m;
  try {
    graph_to_model(*b.g, &m, ExportFormat::kOrt);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("fusion pattern 'Mish'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(export_format_from_name("tensorrt"), Error);
}

}  // namespace ort_export_test
}  // namespace nnfuse
