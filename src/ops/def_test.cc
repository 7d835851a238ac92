#include "ops/def.h"

#include <gtest/gtest.h>

#include "kernels/kernel.h"
#include "kernels/ref/ref_kernels.h"
#include "onnx/ort_export.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/conv_blocks.h"
#include "ops/dense.h"
#include "ops/norm.h"
#include "ops/onnx_ops.h"
#include "ops/region.h"

namespace nnfuse {
namespace def_test {

// Every op of nnfuse's domain the name list holds has a definition, and every definition says
// how it runs (a reference kernel), what it makes (a shape rule, or where its types come from)
// and how ONNX Runtime runs it (the exporter's lowering, a decomposition, or why there is none).
TEST(OpDefs, EveryOwnOpIsDefinedWithKernelShapeRuleAndLowering) {
  size_t own = 0;
  for (size_t i = 1; i < static_cast<size_t>(Op::kEnd); ++i) {
    const Op op = static_cast<Op>(i);
    if (!is_own_op(op)) continue;
    ++own;
    const ops::OpDef* def = ops::find_def(op);
    ASSERT_NE(def, nullptr) << op_name(op) << " is an op of nnfuse's domain without a definition";
    EXPECT_NE(find_ref_kernel(std::string(op_name(op))), nullptr)
        << op_name(op) << " has no reference kernel";
    EXPECT_FALSE(kernels_for(std::string(op_name(op))).empty()) << op_name(op);
    EXPECT_TRUE(def->infer || *def->infer_why) << op_name(op) << " has no shape rule";
    EXPECT_NE(std::string(def->summary), "") << op_name(op);
    EXPECT_FALSE(def->inputs.empty()) << op_name(op);
    EXPECT_FALSE(def->outputs.empty()) << op_name(op);
    switch (def->ort.kind) {
      case ops::OrtForm::Kind::kLowering:
        EXPECT_TRUE(ort_lowering_exists(op)) << op_name(op) << ": the exporter has no lowering";
        EXPECT_NE(std::string(def->ort.summary), "") << op_name(op);
        break;
      case ops::OrtForm::Kind::kDecomposed:
        EXPECT_NE(def->ort.decompose, nullptr) << op_name(op);
        break;
      case ops::OrtForm::Kind::kNone:
        EXPECT_NE(std::string(def->ort.why), "") << op_name(op) << ": no form and no reason";
        break;
    }
  }
  EXPECT_EQ(ops::all_defs().size(), own);
}

TEST(OpDefs, EveryExporterLoweringIsADefinitionsForm) {
  for (const auto& [op, fn] : OrtLowering::lowerings()) {
    const ops::OpDef* def = ops::find_def(op);
    ASSERT_NE(def, nullptr) << op_name(op);
    EXPECT_EQ(def->ort.kind, ops::OrtForm::Kind::kLowering) << op_name(op);
  }
}

TEST(OpDefs, EveryReferenceKernelIsOfAKnownOp) {
  for (const std::string& name : ref_supported_ops()) {
    const std::string domain = ref_op_domain(name);
    EXPECT_NE(op_of(domain, name), Op::kUnknown) << name << " is missing from ops/op_names.inc";
  }
}

TEST(OpIdentity, DomainIsPartOfTheIdentity) {
  EXPECT_EQ(op_of("", "Conv"), Op::kConv);
  EXPECT_EQ(op_of("ai.onnx", "Conv"), Op::kConv);
  EXPECT_EQ(op_of(kFusedDomain, "Conv"), Op::kUnknown);
  EXPECT_EQ(op_of("", "FusedConv"), Op::kUnknown);
  EXPECT_EQ(op_of(kFusedDomain, "FusedConv"), Op::kFusedConv);
  EXPECT_EQ(op_of("com.microsoft", "FusedConv"), Op::kUnknown);
  // ONNX ops nnfuse also writes in its own domain are the same op in both.
  EXPECT_EQ(op_of(kFusedDomain, "LayerNormalization"), Op::kLayerNormalization);
  EXPECT_EQ(op_of("", "LayerNormalization"), Op::kLayerNormalization);
  EXPECT_EQ(op_of("", "NoSuchOp"), Op::kUnknown);
  EXPECT_EQ(op_name(Op::kFusedGatedMatMul), "FusedGatedMatMul");
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({1}));
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({1}));
  Node* n = g.add_node("Relu", "r", {x}, {y});
  EXPECT_TRUE(n->is(Op::kRelu));
  EXPECT_FALSE(n->is(Op::kSigmoid));
}

// A graph of inputs of the given shapes and a node made from a builder's spec, its outputs of
// unknown shape: what a shape rule is asked about.
struct OneNode {
  Graph g;
  Node* node = nullptr;
  Value* in(const std::string& name, const Dims& d, DType t = DType::kFloat32) {
    Value* v = g.add_value(name, t, Shape::of(d));
    g.add_input(v);
    return v;
  }
  void make(const ops::NodeSpec& s, size_t outputs = 1) {
    std::vector<Value*> ins = s.inputs;
    while (!ins.empty() && !ins.back()) ins.pop_back();
    std::vector<Value*> outs;
    for (size_t k = 0; k < outputs; ++k) outs.push_back(g.add_value("y" + std::to_string(k)));
    node = g.add_node(std::string(op_name(s.op)), "n", ins, outs, ops::spec_domain(s));
    for (const auto& [k, a] : s.attrs) node->set_attr(k, a);
  }
  std::vector<ops::OutputType> infer() {
    const ops::OpDef* def = ops::def_of(*node);
    EXPECT_NE(def, nullptr);
    EXPECT_EQ(ops::check_against_def(*node, *def), "");
    std::vector<ops::OutputType> out;
    EXPECT_EQ(def->infer(*node, out), "");
    return out;
  }
};

Shape shape(const Dims& d) { return Shape::of(d); }

TEST(ShapeRules, ConvolutionsWithTheirGeometry) {
  OneNode t;
  ops::FusedConv c{t.in("x", {1, 3, 32, 32}), t.in("w", {8, 3, 3, 3})};
  c.conv.strides = Dims{2, 2};
  c.conv.pads = Dims{1, 1, 1, 1};
  c.act = ops::Activation::of(ops::ActivationKind::kRelu);
  t.make(c.spec());
  EXPECT_EQ(t.infer()[0].shape, shape({1, 8, 16, 16}));

  OneNode p;
  ops::FusedConvPool cp{ops::FusedConv{p.in("x", {2, 4, 28, 28}), p.in("w", {16, 4, 3, 3})}, {}};
  cp.conv.conv.pads = Dims{1, 1, 1, 1};
  cp.pool.kernel_shape = Dims{2, 2};
  cp.pool.strides = Dims{2, 2};
  p.make(cp.spec());
  EXPECT_EQ(p.infer()[0].shape, shape({2, 16, 14, 14}));

  OneNode s;
  s.make(
      ops::FusedConvSplit{
          s.in("x", {1, 8, 7, 7}), s.in("w", {12, 8, 1, 1}), nullptr, {}, {}, Dims{4, 8}}
          .spec(),
      2);
  const auto out = s.infer();
  EXPECT_EQ(out[0].shape, shape({1, 4, 7, 7}));
  EXPECT_EQ(out[1].shape, shape({1, 8, 7, 7}));

  OneNode e;
  ops::ExpandDepthwise ed{e.in("x", {1, 16, 56, 56}), e.in("w1", {96, 16, 1, 1}), nullptr,
                          e.in("w2", {96, 1, 3, 3})};
  ed.depthwise.conv.strides = Dims{2, 2};
  ed.depthwise.conv.pads = Dims{1, 1, 1, 1};
  ed.depthwise.conv.group = 96;
  e.make(ed.spec());
  EXPECT_EQ(e.infer()[0].shape, shape({1, 96, 28, 28}));
}

TEST(ShapeRules, DenseLayers) {
  OneNode t;
  t.make(ops::FusedMatMul{t.in("a", {2, 5, 16}), t.in("b", {16, 32})}.spec());
  EXPECT_EQ(t.infer()[0].shape, shape({2, 5, 32}));

  OneNode g;
  ops::FusedGatedMatMul gated{g.in("x", {4, 64}), g.in("w", {64, 256})};
  g.make(gated.spec());
  EXPECT_EQ(g.infer()[0].shape, shape({4, 128}));

  OneNode m;
  ops::FusedGemm gemm{m.in("a", {16, 8}), m.in("b", {10, 16})};
  gemm.gemm.trans_a = 1;
  gemm.gemm.trans_b = 1;
  m.make(gemm.spec());
  EXPECT_EQ(m.infer()[0].shape, shape({8, 10}));

  OneNode h;
  h.make(ops::FusedGlobalPoolGemm{h.in("x", {3, 512, 7, 7}), h.in("b", {512, 1000})}.spec());
  EXPECT_EQ(h.infer()[0].shape, shape({3, 1000}));
}

TEST(ShapeRules, NormsBlocksAndAttention) {
  OneNode s;
  s.make(ops::ScaleShift{
      s.in("x", {1, 8, 4, 4}), s.in("s", {20}), s.in("t", {20}), {s.in("x2", {1, 12, 4, 4})}}
             .spec());
  EXPECT_EQ(s.infer()[0].shape, shape({1, 20, 4, 4}));

  OneNode se;
  se.make(ops::SqueezeExcite{se.in("x", {2, 32, 7, 7}), se.in("w1", {8, 32, 1, 1}), nullptr,
                             se.in("w2", {32, 8, 1, 1})}
              .spec());
  EXPECT_EQ(se.infer()[0].shape, shape({2, 32, 1, 1}));

  OneNode e;
  ops::EmbedLayerNorm emb{e.in("g", {16}),
                          nullptr,
                          nullptr,
                          {e.in("table", {100, 16}), e.in("ids", {2, 7}, DType::kInt64)}};
  e.make(emb.spec(), 2);
  EXPECT_EQ(e.infer()[0].shape, shape({2, 7, 16}));
  EXPECT_EQ(e.infer()[1].shape, shape({2, 7, 16}));

  OneNode a;
  ops::MultiHeadAttention mha;
  mha.q = a.in("qkv", {2, 10, 3 * 64});
  mha.num_heads = 4;
  mha.qkv_packed = true;
  a.make(mha.spec());
  EXPECT_EQ(a.infer()[0].shape, shape({2, 10, 64}));

  OneNode kv;
  ops::MultiHeadAttention dec;
  dec.q = kv.in("q", {1, 1, 64});
  dec.k = kv.in("k", {1, 1, 32});
  dec.v = kv.in("v", {1, 1, 32});
  dec.past_key = kv.in("pk", {1, 2, 9, 16});
  dec.past_value = kv.in("pv", {1, 2, 9, 16});
  dec.num_heads = 4;
  dec.kv_num_heads = 2;
  kv.make(dec.spec(), 3);
  const auto out = kv.infer();
  EXPECT_EQ(out[0].shape, shape({1, 1, 64}));
  EXPECT_EQ(out[1].shape, shape({1, 2, 10, 16}));
}

TEST(ShapeRules, UnknownDimsStayUnknown) {
  OneNode t;
  Value* x = t.g.add_value("x", DType::kFloat32, Shape{true, {Dim{-1, "batch"}, Dim{3, ""}}});
  t.g.add_input(x);
  t.make(ops::FusedMatMul{x, t.in("b", {3, 4})}.spec());
  const Shape s = t.infer()[0].shape;
  ASSERT_TRUE(s.has_rank);
  EXPECT_FALSE(s.dims[0].known());
  EXPECT_EQ(s.dims[1].value, 4);
}

// A typed builder's node read back gives the builder's fields.
TEST(Builders, ReadBackWhatTheyWrite) {
  OneNode t;
  ops::FusedConv c{t.in("x", {1, 3, 8, 8}), t.in("w", {4, 3, 3, 3}), t.in("b", {4})};
  c.conv.pads = Dims{1, 1, 1, 1};
  c.act = {ops::ActivationKind::kClip, 0.0f, 6.0f};
  c.skip = ops::FusedConv::Skip{t.in("x2", {1, 2, 8, 8}), t.in("w2", {4, 2, 1, 1}), nullptr, {}};
  c.skip->conv.strides = Dims{1, 1};
  t.make(c.spec());
  const ops::FusedConv r = ops::FusedConv::of(*t.node);
  EXPECT_EQ(r.x, c.x);
  EXPECT_EQ(r.w, c.w);
  EXPECT_EQ(r.b, c.b);
  EXPECT_EQ(r.sum, nullptr);
  EXPECT_EQ(r.conv, c.conv);
  EXPECT_EQ(r.act, c.act);
  ASSERT_TRUE(r.skip.has_value());
  EXPECT_EQ(r.skip->x, c.skip->x);
  EXPECT_EQ(r.skip->conv, c.skip->conv);
  EXPECT_TRUE(ops::fused_conv::has_skip_conv(*t.node));

  OneNode m;
  ops::MultiHeadAttention a;
  a.q = m.in("q", {1, 4, 8});
  a.k = m.in("k", {1, 4, 8});
  a.v = m.in("v", {1, 4, 8});
  a.num_heads = 2;
  a.scale = 0.25f;
  a.causal = true;
  m.make(a.spec());
  const ops::MultiHeadAttention b = ops::MultiHeadAttention::of(*m.node);
  EXPECT_EQ(b.num_heads, 2);
  EXPECT_EQ(b.scale, 0.25f);
  EXPECT_TRUE(b.causal);
  EXPECT_FALSE(b.qkv_packed);
  EXPECT_FALSE(b.kv_num_heads.has_value());
}

TEST(Builders, ChecksNameWhatDoesNotFitTheDefinition) {
  OneNode t;
  t.make(ops::FusedMatMul{t.in("a", {2, 3}), t.in("b", {3, 4})}.spec());
  const ops::OpDef& def = *ops::def_of(*t.node);
  Attribute strides;
  strides.kind = Attribute::Kind::kInts;
  t.node->set_attr("strides", strides);
  EXPECT_NE(ops::check_against_def(*t.node, def).find("strides"), std::string::npos);
  OneNode u;
  u.make(ops::FusedMatMul{u.in("a", {2, 3}), nullptr}.spec());
  EXPECT_NE(ops::check_against_def(*u.node, *ops::def_of(*u.node)), "");
}

}  // namespace def_test
}  // namespace nnfuse
