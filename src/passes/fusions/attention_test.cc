// AttentionFusionPass and QKVProjectionFusionPass on hand-built attention graphs in the
// spellings exporters use: BERT (Div by sqrt(d), additive mask), Mul by 1/sqrt(d), no mask,
// scaled_dot_product_attention (scale on Q and on K), GPT-2 (one QKV projection Split in
// three, causal Where); Q, K, V as three Slices (chunk()) of unknown shape; a causal Where
// filled with -inf, and a constant 0 / -inf causal bias (torch 2's SDPA); nn.MultiheadAttention's
// sequence-first form ([S, B*H, D] heads, Q divided alone); rotary embeddings on Q and K (and
// declined on Q alone); guards; fused == unfused on random inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace attention_test {

using namespace fusion_test;

enum class Scale { kDiv, kMul, kQandK };
enum class Mask { kNone, kAdditive, kCausal, kBoth };

struct AttnOptions {
  int64_t s = 7, heads = 2, dim = 4;
  Scale scale = Scale::kDiv;
  Mask mask = Mask::kAdditive;
  bool packed = false;            // one projection, Split in three (GPT-2)
  bool k_two_transposes = false;  // K^T as Transpose<0,1,3,2>(Transpose<0,2,1,3>(k4))
  int64_t softmax_axis = -1;
  bool scores_escape = false;  // the scores are also a graph output
  Dims mask_shape = {};        // default [1, 1, 1, S]
  bool merge_without_transpose = false;
  bool chunked = false;      // with `packed`: three Slices (chunk()), outputs of unknown shape
  bool causal_inf = false;   // causal as Where(masked, -inf, s)
  bool causal_bias = false;  // causal as Add(s, constant 0 / -inf bias [S, S])
  // Rotate-half rotary embeddings on [1, H, S, D]: 1 on Q and K (K^T then two Transposes),
  // 2 on Q alone, 3 on both with K's tables different.
  int rotary = 0;
};

// x * cos + Concat(-x[.., D/2:], x[.., :D/2]) * sin with cos, sin constants [1, 1, S, D].
Value* rotary(B& b, Value* x, uint32_t seed) {
  const Dims d = x->shape().static_dims();
  const int64_t half = d.back() / 2;
  auto i = [&](int64_t v) { return b.c(Tensor::from_vector<int64_t>({1}, {v})); };
  Dims hd = d;
  hd.back() = half;
  Value* lo = b.n("Slice", {x, i(0), i(half), i(-1)}, hd);
  Value* hi = b.n("Slice", {x, i(half), i(2 * half), i(-1)}, hd);
  Value* rot = b.n("Concat", {b.n("Neg", {hi}, hd), lo}, d, {{"axis", attr_int(-1)}});
  const Dims table = {1, 1, d[2], d[3]};
  return b.n("Add",
             {b.n("Mul", {x, b.c(random_tensor(table, seed))}, d),
              b.n("Mul", {rot, b.c(random_tensor(table, seed + 1))}, d)},
             d);
}

Tensor shape_tensor(const Dims& d) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(d.size())});
  for (size_t i = 0; i < d.size(); ++i) t.data<int64_t>()[i] = d[i];
  return t;
}

Value* transpose(B& b, Value* v, const Dims& perm, const Dims& out) {
  return b.n("Transpose", {v}, out, {{"perm", ints(perm)}});
}

std::unique_ptr<Graph> attention_graph(const AttnOptions& o) {
  B b;
  const int64_t s = o.s, h = o.heads, d = o.dim, e = h * d;
  Value* x = b.in("x", {1, s, e});
  auto proj = [&](const std::string& name, int64_t n, uint32_t seed) {
    Value* m = b.n("MatMul", {x, b.c(random_tensor({e, n}, seed))}, {1, s, n}, {}, name);
    return b.n("Add", {m, b.c(random_tensor({n}, seed + 1))}, {1, s, n}, {}, name + "_bias");
  };
  Value *q, *k, *v;
  if (o.packed) {
    Value* qkv = proj("qkv", 3 * e, 10);
    std::vector<Value*> outs;
    for (const char* n : {"q", "k", "v"}) {
      outs.push_back(b.g->add_value(n, DType::kFloat32, Shape::of({1, s, e})));
    }
    if (o.chunked) {
      for (int64_t i = 0; i < 3; ++i) {
        outs[static_cast<size_t>(i)]->set_shape(Shape::unknown());
        b.g->add_node("Slice", "slice" + std::to_string(i),
                      {qkv, b.c(shape_tensor({i * e})), b.c(shape_tensor({(i + 1) * e})),
                       b.c(shape_tensor({-1}))},
                      {outs[static_cast<size_t>(i)]});
      }
    } else {
      Node* split = b.g->add_node("Split", "split", {qkv, b.c(shape_tensor({e, e, e}))}, outs);
      split->set_attr("axis", attr_int(2));
    }
    q = outs[0], k = outs[1], v = outs[2];
  } else {
    q = proj("q", e, 10), k = proj("k", e, 20), v = proj("v", e, 30);
  }
  auto heads = [&](Value* t) {
    return b.n("Reshape", {t, b.c(shape_tensor({1, s, h, d}))}, {1, s, h, d});
  };
  Value* q4 = transpose(b, heads(q), {0, 2, 1, 3}, {1, h, s, d});
  if (o.rotary) q4 = rotary(b, q4, 70);
  Value* kt = nullptr;
  if (o.k_two_transposes || o.rotary) {
    Value* k4 = transpose(b, heads(k), {0, 2, 1, 3}, {1, h, s, d});
    if (o.rotary == 1 || o.rotary == 3) k4 = rotary(b, k4, o.rotary == 1 ? 70 : 80);
    kt = transpose(b, k4, {0, 1, 3, 2}, {1, h, d, s});
  } else {
    kt = transpose(b, heads(k), {0, 2, 3, 1}, {1, h, d, s});
  }
  Value* v4 = transpose(b, heads(v), {0, 2, 1, 3}, {1, h, s, d});
  const float root = std::sqrt(static_cast<float>(d));
  if (o.scale == Scale::kQandK) {
    const float c = 1.0f / std::sqrt(root);
    q4 = b.n("Mul", {q4, b.c(Tensor::scalar<float>(c))}, {1, h, s, d});
    kt = b.n("Mul", {kt, b.c(Tensor::scalar<float>(c))}, {1, h, d, s});
  }
  Value* sc = b.n("MatMul", {q4, kt}, {1, h, s, s}, {}, "scores");
  if (o.scores_escape) b.out(sc);
  if (o.scale == Scale::kDiv) {
    sc = b.n("Div", {sc, b.c(Tensor::scalar<float>(root))}, {1, h, s, s});
  } else if (o.scale == Scale::kMul) {
    sc = b.n("Mul", {b.c(Tensor::scalar<float>(1.0f / root)), sc}, {1, h, s, s});
  }
  if (o.mask == Mask::kCausal || o.mask == Mask::kBoth) {
    Tensor keep(DType::kBool, {1, 1, s, s});
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < s; ++j) static_cast<uint8_t*>(keep.raw())[i * s + j] = j <= i;
    }
    if (o.causal_bias) {
      Tensor bias(DType::kFloat32, {s, s});
      for (int64_t i = 0; i < s * s; ++i) {
        bias.data<float>()[i] = i % s <= i / s ? 0.0f : -INFINITY;
      }
      sc = b.n("Add", {sc, b.c(bias)}, {1, h, s, s});
    } else if (o.causal_inf) {
      Tensor masked(DType::kBool, {1, 1, s, s});
      for (int64_t i = 0; i < s * s; ++i) {
        static_cast<uint8_t*>(masked.raw())[i] = static_cast<uint8_t>(i % s > i / s);
      }
      sc = b.n("Where", {b.c(masked), b.c(Tensor::scalar<float>(-INFINITY)), sc}, {1, h, s, s});
    } else {
      sc = b.n("Where", {b.c(keep), sc, b.c(Tensor::scalar<float>(-3.4e38f))}, {1, h, s, s});
    }
  }
  if (o.mask == Mask::kAdditive || o.mask == Mask::kBoth) {
    Value* m = b.in("mask", o.mask_shape.empty() ? Dims{1, 1, 1, s} : o.mask_shape);
    sc = b.n("Add", {sc, m}, {1, h, s, s});
  }
  Value* p = b.n("Softmax", {sc}, {1, h, s, s}, {{"axis", attr_int(o.softmax_axis)}}, "softmax");
  Value* ctx = b.n("MatMul", {p, v4}, {1, h, s, d});
  if (!o.merge_without_transpose) ctx = transpose(b, ctx, {0, 2, 1, 3}, {1, s, h, d});
  b.out(b.n("Reshape", {ctx, b.c(shape_tensor({1, s, e}))}, {1, s, e}, {}, "merge"));
  return std::move(b.g);
}

const Node* only(const Graph& g, const std::string& op) {
  const Node* r = nullptr;
  for (const Node* n : g.nodes()) {
    if (n->op_type() == op) {
      EXPECT_EQ(r, nullptr) << "more than one " << op;
      r = n;
    }
  }
  return r;
}

void expect_fused(const AttnOptions& o, bool causal, bool mask) {
  auto f = fuse(attention_graph(o));
  ASSERT_EQ(count_op(*f.graph, "MultiHeadAttention"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "Softmax"), 0u);
  EXPECT_EQ(count_op(*f.graph, "Transpose"), 0u);
  EXPECT_EQ(count_op(*f.graph, "MatMul"), 0u);  // the projections are one FusedMatMul
  EXPECT_EQ(count_op(*f.graph, "FusedMatMul"), 1u);
  const Node* a = only(*f.graph, "MultiHeadAttention");
  EXPECT_EQ(a->fused_by(), "AttentionFusionPass");
  EXPECT_EQ(a->attr_int("num_heads", 0), o.heads);
  EXPECT_NEAR(a->attr_float("scale", 0), 1.0 / std::sqrt(static_cast<double>(o.dim)), 1e-6);
  EXPECT_EQ(a->attr_int("causal", 0), causal ? 1 : 0);
  EXPECT_EQ(a->attr_int("qkv_packed", 0), 1);
  EXPECT_EQ(a->num_inputs() > 3 && a->input(3) != nullptr, mask);
  EXPECT_EQ(record(f.report, "AttentionFusionPass")->effect_times, 1);
  expect_same_numbers(std::move(f.graph), attention_graph(o));
}

TEST(AttentionFusion, BertStyleDivAndAdditiveMask) { expect_fused({}, false, true); }

TEST(AttentionFusion, ScaleSpellingsAndMaskKinds) {
  AttnOptions mul;
  mul.scale = Scale::kMul;
  expect_fused(mul, false, true);
  AttnOptions sdpa;  // scale applied to Q and to K
  sdpa.scale = Scale::kQandK;
  sdpa.mask = Mask::kNone;
  expect_fused(sdpa, false, false);
  AttnOptions two;  // K^T by two transposes
  two.k_two_transposes = true;
  expect_fused(two, false, true);
  AttnOptions full;  // a per-query mask [1, 1, S, S]
  full.mask_shape = {1, 1, 7, 7};
  expect_fused(full, false, true);
}

TEST(AttentionFusion, Gpt2PackedQkvWithCausalWhere) {
  AttnOptions gpt;
  gpt.packed = true;
  gpt.mask = Mask::kCausal;
  expect_fused(gpt, true, false);
  gpt.mask = Mask::kBoth;
  gpt.s = 9;
  gpt.heads = 3;
  expect_fused(gpt, true, true);
}

TEST(AttentionFusion, ChunkedQkvAndCausalSpellings) {
  AttnOptions sdpa;  // torch 2's SDPA: chunk(3), scale on Q and K, 0 / -inf causal bias
  sdpa.packed = sdpa.chunked = true;
  sdpa.scale = Scale::kQandK;
  sdpa.mask = Mask::kCausal;
  sdpa.causal_bias = true;
  expect_fused(sdpa, true, false);
  sdpa.mask = Mask::kNone;
  expect_fused(sdpa, false, false);
  AttnOptions inf;  // masked_fill(~tril, -inf)
  inf.packed = true;
  inf.mask = Mask::kCausal;
  inf.causal_inf = true;
  expect_fused(inf, true, false);
}

// nn.MultiheadAttention's sequence-first form: x [S, B, E], one in-projection to [S, B, 3E]
// sliced in three (shapes unknown), heads as Reshape [S, B*H, D] + Transpose<1,0,2> (K:
// <1,2,0>), Q / sqrt(D), scores [B*H, S, S], merge by Transpose<1,0,2> + Reshape [S*B, E] (or
// [S, B, E]), then the out-projection.
struct SeqFirstOptions {
  int64_t s = 5, batch = 2, heads = 2, dim = 4;
  bool flat_merge = true;  // Reshape [S*B, E], else [S, B, E]
  bool mask = false;
  int64_t mask_rows = 0;  // the mask's rows: 0 for B*H, or 1
};

std::unique_ptr<Graph> seq_first_graph(const SeqFirstOptions& o) {
  B b;
  const int64_t s = o.s, n = o.batch, h = o.heads, d = o.dim, e = h * d;
  Value* x = b.in("x", {s, n, e});
  Value* m = b.n("MatMul", {x, b.c(random_tensor({e, 3 * e}, 10))}, {s, n, 3 * e}, {}, "in_proj");
  Value* qkv = b.n("Add", {m, b.c(random_tensor({3 * e}, 11))}, {s, n, 3 * e}, {}, "in_bias");
  std::vector<Value*> parts;
  for (int64_t i = 0; i < 3; ++i) {
    Value* p = b.g->add_value("part" + std::to_string(i), DType::kFloat32);
    b.g->add_node("Slice", "slice" + std::to_string(i),
                  {qkv, b.c(shape_tensor({i * e})), b.c(shape_tensor({(i + 1) * e})),
                   b.c(shape_tensor({-1}))},
                  {p});
    parts.push_back(b.n("Reshape", {p, b.c(shape_tensor({s, n * h, d}))}, {s, n * h, d}));
  }
  Value* q = transpose(b, parts[0], {1, 0, 2}, {n * h, s, d});
  q = b.n("Div", {q, b.c(Tensor::scalar<float>(std::sqrt(static_cast<float>(d))))}, {n * h, s, d});
  Value* kt = transpose(b, parts[1], {1, 2, 0}, {n * h, d, s});
  Value* v = transpose(b, parts[2], {1, 0, 2}, {n * h, s, d});
  Value* sc = b.n("MatMul", {q, kt}, {n * h, s, s});
  if (o.mask) {
    const int64_t rows = o.mask_rows ? o.mask_rows : n * h;
    sc = b.n("Add", {sc, b.in("mask", {rows, 1, s})}, {n * h, s, s});
  }
  Value* p = b.n("Softmax", {sc}, {n * h, s, s}, {{"axis", attr_int(-1)}}, "softmax");
  Value* ctx = transpose(b, b.n("MatMul", {p, v}, {n * h, s, d}), {1, 0, 2}, {s, n * h, d});
  const Dims merged = o.flat_merge ? Dims{s * n, e} : Dims{s, n, e};
  ctx = b.n("Reshape", {ctx, b.c(shape_tensor(merged))}, merged, {}, "merge");
  Dims out = merged;
  out.back() = e;
  b.out(b.n("MatMul", {ctx, b.c(random_tensor({e, e}, 12))}, out, {}, "out_proj"));
  return std::move(b.g);
}

TEST(AttentionFusion, MultiheadAttentionSequenceFirst) {
  for (bool flat : {true, false}) {
    SeqFirstOptions o;
    o.flat_merge = flat;
    o.heads = flat ? 2 : 4;
    auto f = fuse(seq_first_graph(o));
    ASSERT_EQ(count_op(*f.graph, "MultiHeadAttention"), 1u) << graph_to_text(*f.graph);
    EXPECT_EQ(count_op(*f.graph, "Softmax"), 0u);
    EXPECT_EQ(count_op(*f.graph, "Slice"), 0u);
    // [S, B, 3E] -> [B, S, 3E] in, [B, S, E] -> [S, B, E] out.
    EXPECT_EQ(count_op(*f.graph, "Transpose"), 2u);
    const Node* a = only(*f.graph, "MultiHeadAttention");
    EXPECT_EQ(a->fused_by(), "AttentionFusionPass");
    EXPECT_EQ(a->attr_int("num_heads", 0), o.heads);
    EXPECT_NEAR(a->attr_float("scale", 0), 0.5, 1e-6);
    EXPECT_EQ(a->attr_int("causal", 0), 0);
    EXPECT_EQ(a->attr_int("qkv_packed", 0), 1);
    EXPECT_EQ(record(f.report, "AttentionFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), seq_first_graph(o));
  }
}

TEST(AttentionFusion, SequenceFirstWithAMask) {
  // nn.MultiheadAttention's key padding mask is added to its [B*H, Sq, Sk] scores: reshaped to
  // [B, H, 1, Sk] it is the fused node's mask (row b * H + h is batch b, head h). A mask shared
  // by every row ([1, 1, Sk]) is the fused node's mask as it is.
  for (int64_t rows : {0, 1}) {
    SeqFirstOptions o;
    o.mask = true;
    o.mask_rows = rows;
    auto f = fuse(seq_first_graph(o));
    ASSERT_EQ(count_op(*f.graph, "MultiHeadAttention"), 1u) << graph_to_text(*f.graph);
    const Node* a = only(*f.graph, "MultiHeadAttention");
    ASSERT_NE(a->input(3), nullptr);
    const Dims want = rows ? Dims{1, 1, o.s} : Dims{o.batch, o.heads, 1, o.s};
    EXPECT_EQ(a->input(3)->shape().static_dims(), want);
    expect_same_numbers(std::move(f.graph), seq_first_graph(o));
  }
}

void expect_declined(const AttnOptions& o, const std::string& reason) {
  auto f = fuse(attention_graph(o));
  EXPECT_EQ(count_op(*f.graph, "MultiHeadAttention"), 0u);
  const PassRecord* r = record(f.report, "AttentionFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find(reason), std::string::npos) << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), attention_graph(o));
}

TEST(AttentionFusion, GuardsDeclineWithReasons) {
  AttnOptions axis;
  axis.softmax_axis = 2;
  expect_declined(axis, "last axis");
  AttnOptions escape;
  escape.scores_escape = true;
  expect_declined(escape, "graph output");
  AttnOptions merge;  // heads reshaped away without the transpose: not attention's merge
  merge.merge_without_transpose = true;
  expect_declined(merge, "merged back");
}

TEST(AttentionFusion, RotaryEmbeddingsGoIntoTheNode) {
  AttnOptions o;
  o.rotary = 1;
  o.dim = 8;
  auto f = fuse(attention_graph(o));
  const Node* mha = only(*f.graph, "MultiHeadAttention");
  ASSERT_NE(mha, nullptr) << graph_to_text(*f.graph);
  ASSERT_EQ(mha->num_inputs(), 6u);
  EXPECT_EQ(mha->input(4)->shape().static_dims(), (Dims{7, 8}));
  EXPECT_EQ(only(*f.graph, "Concat"), nullptr);
  expect_same_numbers(std::move(f.graph), attention_graph(o));
}

TEST(AttentionFusion, RotaryOnQAloneOrWithOtherTablesIsDeclined) {
  for (int r : {2, 3}) {
    AttnOptions o;
    o.rotary = r;
    o.dim = 8;
    expect_declined(fuse(attention_graph(o)), "AttentionFusionPass",
                    "rotary embeddings not on Q and K alike", attention_graph(o));
  }
}

}  // namespace attention_test
}  // namespace nnfuse
