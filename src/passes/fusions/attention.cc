// Multi-head attention, as exporters write it, becomes one MultiHeadAttention node (ai.nnfuse)
// whose kernel never materializes the score matrix:
//
//   AttentionFusionPass:
//     q4 = Transpose<0,2,1,3>(Reshape(q, [B, Sq, H, D]))            (likewise v4)
//     kt = Transpose<0,2,3,1>(Reshape(k, [B, Sk, H, D]))            (or <0,1,3,2> of k4)
//     s  = MatMul(q4 [* cq], kt [* ck]) [/ c | * c]                 scale = cq * ck / c
//     s  = [Add(s, mask)] [Where(causal, s, -big)]                  in either order
//     o  = Reshape(Transpose<0,2,1,3>(MatMul(Softmax(s, -1), v4)), [B, Sq, H * D])
//   == MultiHeadAttention(q, k, v, mask; num_heads = H, scale, causal)
//   with q, k, v the three equal parts of one Split along the last axis (GPT-2's fused QKV)
//   recognised as the packed form MultiHeadAttention(qkv; qkv_packed = 1).
//   (QKVProjectionFusionPass, which packs the three projections afterwards: qkv_projection.cc.)
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ir/builder.h"
#include "ir/error.h"
#include "ops/onnx_ops.h"
#include "passes/fusions/attention_parts.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::constant_value;
using namespace attn;

const char* const kAttentionPass = "AttentionFusionPass";

// The sequence-first form: the fused node reads its inputs transposed from [S, B, N] to
// [B, S, N], and its output [B, Sq, E] is transposed back and reshaped into `out`.
std::string fuse_seq_first(Graph& g, PassContext& ctx, const std::vector<Node*>& nodes,
                           ops::MultiHeadAttention mha, Value* out, const Dims& sbe,
                           const Dims& mask_heads) {
  const std::string pass = kAttentionPass;
  if (std::string why = pattern::check_replaceable(g, nodes, {out}); !why.empty()) return why;
  const std::vector<std::string> from = original_names(nodes);
  auto transpose = [&](Value* x, const Dims& d, const std::string& stem) {
    Value* y =
        g.add_value(g.unique_value_name(stem), DType::kFloat32, Shape::of({d[1], d[0], d[2]}));
    add_spec_node(g, ops::Transpose{x, Dims{1, 0, 2}}.spec(), g.unique_node_name(stem), {y}, from,
                  pass);
    return y;
  };
  for (Value** v : {&mha.q, &mha.k, &mha.v}) {  // the mask is per batch
    if (*v) *v = transpose(*v, *known_shape(*v), (*v)->name() + "_batch_first");
  }
  if (mha.mask && !mask_heads.empty()) {
    const std::string stem = mha.mask->name() + "_heads";
    Value* m = g.add_value(g.unique_value_name(stem), DType::kFloat32, Shape::of(mask_heads));
    Value* shape = pattern::add_constant(g, stem + "_shape", shape_tensor(mask_heads));
    add_spec_node(g, ops::Reshape{mha.mask, shape}.spec(), g.unique_node_name(stem), {m}, from,
                  pass);
    mha.mask = m;
  }
  const std::string err = apply_fusion(g, ctx, pass, nodes, mha.spec(), {out});
  NNFUSE_CHECK(err.empty(), err);
  // Rewire: the fused node writes [B, Sq, E]; Transpose and Reshape write `out`.
  Node* f = out->producer();
  const std::string name = f->name();
  const ops::NodeSpec fused = ops::MultiHeadAttention::of(*f).spec();
  const std::vector<std::string> f_from = f->fused_from();
  g.remove_node(f);
  Value* y = g.add_value(g.unique_value_name(out->name() + "_batch_first"), DType::kFloat32,
                         Shape::of({sbe[1], sbe[0], sbe[2]}));
  add_spec_node(g, fused, name, {y}, f_from, pass);
  Value* s = transpose(y, {sbe[1], sbe[0], sbe[2]}, out->name() + "_seq_first");
  Value* shape = pattern::add_constant(g, out->name() + "_shape", shape_tensor(*static_shape(out)));
  add_spec_node(g, ops::Reshape{s, shape}.spec(), g.unique_node_name(out->name() + "_merge"), {out},
                f_from, pass);
  g.topological_sort();
  return "";
}

// The attention a match is (attn::attention_of).
Attention attention_at(const RuleMatch& m) {
  return attention_of(m.node("softmax"), m.root(), *m.match.native("scores"), m["v"]);
}

Rule attention() {
  using namespace pattern;
  Pat softmax = op("Softmax", {scores_pattern("scores")})
                    .named("softmax")
                    .where([](const Value& p) { return p.uses().size() == 1; }, "read once");
  return {.name = kAttentionPass,
          .description =
              "Fuses scaled dot-product attention (head split and merge, scale, mask, "
              "softmax, both products) into one tiled kernel",
          .ops = {"MatMul", "Div", "Add", "Softmax", "MatMul"},
          .patterns = {{"", op("MatMul", {softmax, any("v")})}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Attention a = attention_at(m);
            if (!a.why.empty()) return a.why;
            const HeadSplit& q = a.heads.q;
            if (q.seq_first) {
              return fuse_seq_first(m.g, m.ctx, a.nodes, a.mha.node, a.out,
                                    {q.seq, q.batch, q.heads * q.dim}, a.mask_heads);
            }
            ops::MultiHeadAttention mha = a.mha.node;
            std::vector<Value*> outs = {a.out};
            const HeadSplit &k = a.heads.k, &v = a.heads.v;
            if (a.mha.cos.defined()) {
              mha.cos = m.add_constant(a.out->name() + "_rotary_cos", a.mha.cos);
              mha.sin = m.add_constant(a.out->name() + "_rotary_sin", a.mha.sin);
            }
            if (k.past) {
              mha.past_key = k.past;
              mha.past_value = v.past;
              outs.insert(outs.end(), {k.present, v.present});
            }
            return m.fuse_nodes(a.nodes, mha.spec(), outs);
          }};
}

}  // namespace

std::unique_ptr<Pass> make_attention_pass() { return make_rule_pass(attention()); }

}  // namespace nnfuse
