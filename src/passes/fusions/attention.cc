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
                           std::vector<Value*> ins, Value* out,
                           std::map<std::string, Attribute> attrs, const Dims& sbe,
                           const Dims& mask_heads) {
  const std::string pass = kAttentionPass;
  if (std::string why = pattern::check_replaceable(g, nodes, {out}); !why.empty()) return why;
  const std::vector<std::string> from = original_names(nodes);
  auto transpose = [&](Value* x, const Dims& d, const std::string& stem) {
    Value* y =
        g.add_value(g.unique_value_name(stem), DType::kFloat32, Shape::of({d[1], d[0], d[2]}));
    Node* n = g.add_node("Transpose", g.unique_node_name(stem), {x}, {y});
    Attribute perm;
    perm.kind = Attribute::Kind::kInts;
    perm.ints = {1, 0, 2};
    n->set_attr("perm", perm);
    n->set_provenance(from, pass);
    return y;
  };
  for (size_t i = 0; i < 3 && i < ins.size(); ++i) {  // Q, K, V (the mask is per batch)
    if (ins[i]) ins[i] = transpose(ins[i], *known_shape(ins[i]), ins[i]->name() + "_batch_first");
  }
  if (ins.size() > 3 && ins[3] && !mask_heads.empty()) {
    Value* m = g.add_value(g.unique_value_name(ins[3]->name() + "_heads"), DType::kFloat32,
                           Shape::of(mask_heads));
    Value* shape =
        pattern::add_constant(g, ins[3]->name() + "_heads_shape", shape_tensor(mask_heads));
    Node* rs =
        g.add_node("Reshape", g.unique_node_name(ins[3]->name() + "_heads"), {ins[3], shape}, {m});
    rs->set_provenance(from, pass);
    ins[3] = m;
  }
  const std::string err =
      apply_fusion(g, ctx, pass, nodes, "MultiHeadAttention", kFusedDomain, ins, {out}, attrs);
  NNFUSE_CHECK(err.empty(), err);
  // Rewire: the fused node writes [B, Sq, E]; Transpose and Reshape write `out`.
  Node* f = out->producer();
  const std::string name = f->name();
  const std::vector<Value*> f_ins = f->inputs();
  const std::map<std::string, Attribute> f_attrs = f->attrs();
  const std::vector<std::string> f_from = f->fused_from();
  g.remove_node(f);
  Value* y = g.add_value(g.unique_value_name(out->name() + "_batch_first"), DType::kFloat32,
                         Shape::of({sbe[1], sbe[0], sbe[2]}));
  Node* mha = g.add_node("MultiHeadAttention", name, f_ins, {y}, kFusedDomain);
  for (const auto& [k, a] : f_attrs) mha->set_attr(k, a);
  mha->set_provenance(f_from, pass);
  Value* s = transpose(y, {sbe[1], sbe[0], sbe[2]}, out->name() + "_seq_first");
  Value* shape = pattern::add_constant(g, out->name() + "_shape", shape_tensor(*static_shape(out)));
  Node* rs = g.add_node("Reshape", g.unique_node_name(out->name() + "_merge"), {s, shape}, {out});
  rs->set_provenance(f_from, pass);
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
            std::vector<Value*> ins = a.mha.inputs;
            std::vector<Value*> outs = {a.out};
            const HeadSplit &k = a.heads.k, &v = a.heads.v;
            ins.resize(4);
            if (a.mha.cos.defined()) {
              ins.push_back(m.add_constant(a.out->name() + "_rotary_cos", a.mha.cos));
              ins.push_back(m.add_constant(a.out->name() + "_rotary_sin", a.mha.sin));
            }
            if (k.past) {
              ins.resize(6);
              ins.insert(ins.end(), {k.past, v.past});
              outs.insert(outs.end(), {k.present, v.present});
            }
            if (!q.seq_first)
              return m.fuse_nodes(a.nodes, "MultiHeadAttention", ins, outs, a.mha.attrs);
            return fuse_seq_first(m.g, m.ctx, a.nodes, a.mha.inputs, a.out, a.mha.attrs,
                                  {q.seq, q.batch, q.heads * q.dim}, a.mask_heads);
          }};
}

}  // namespace

std::unique_ptr<Pass> make_attention_pass() { return make_rule_pass(attention()); }

}  // namespace nnfuse
