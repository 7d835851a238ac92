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
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::constant_value;
using namespace attn;

class AttentionFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"AttentionFusionPass",
                            "Fuses scaled dot-product attention (head split and merge, scale, "
                            "mask, softmax, both products) into one tiled kernel",
                            true,
                            true,
                            {"MatMul", "Div", "Add", "Softmax", "MatMul"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    const std::string pass = info().name;
    std::set<std::string> declined;
    for (bool changed = true; changed;) {
      changed = false;
      for (Node* sm : g.nodes()) {
        if (sm->op_type() != "Softmax" || !sm->domain().empty() || declined.count(sm->name())) {
          continue;
        }
        std::vector<Node*> nodes;
        std::string why;
        const bool matched = try_match(g, ctx, sm, nodes, why);
        if (!matched) continue;  // not attention at all: not a match
        if (why.empty()) {
          changed = true;
          break;
        }
        ctx.rejected(pass, original_names(nodes), why);
        declined.insert(sm->name());
      }
    }
  }

 private:
  // False when the softmax is not part of an attention; else true with `why` empty when
  // fused, or the reason it was not.
  bool try_match(Graph& g, PassContext& ctx, Node* sm, std::vector<Node*>& nodes,
                 std::string& why) {
    const std::string pass = info().name;
    Value* p = sm->output(0);
    if (p->uses().size() != 1 || p->uses()[0].input_index != 0) return false;
    Node* pv = p->uses()[0].node;
    if (pv->op_type() != "MatMul" || !pv->domain().empty()) return false;
    std::vector<Node*> score_nodes;
    std::optional<Scores> sc = walk_scores(sm->input(0), score_nodes, why);
    if (!sc) return false;
    ctx.matched(pass);
    nodes = {sm, pv};
    nodes.insert(nodes.end(), score_nodes.begin(), score_nodes.end());
    const int64_t rank = static_shape(p) ? static_cast<int64_t>(static_shape(p)->size()) : 0;
    const int64_t axis = sm->attr_int("axis", -1);
    if ((rank != 4 && rank != 3) || (axis != -1 && axis != rank - 1)) {
      why = "the Softmax is not over the last axis of [B, H, Sq, Sk] (or [B*H, Sq, Sk])";
      return true;
    }
    std::optional<HeadSplit> q = split_heads(sc->q, false, nodes, why);
    if (!q) return true;
    std::optional<HeadSplit> k = split_heads(sc->k, true, nodes, why);
    if (!k) return true;
    std::optional<HeadSplit> v = split_heads(pv->input(1), false, nodes, why);
    if (!v) return true;
    const bool seq_first = q->seq_first;
    if (q->heads != k->heads || q->heads != v->heads || q->dim != k->dim || q->dim != v->dim ||
        q->batch != k->batch || q->batch != v->batch || k->seq != v->seq ||
        seq_first != k->seq_first || seq_first != v->seq_first || rank != (seq_first ? 3 : 4)) {
      why = "Q, K and V do not split into the same heads";
      return true;
    }
    const int64_t e = q->heads * q->dim;
    // The merge: Transpose<0,2,1,3> then Reshape [B, Sq, H*D]; sequence-first, Transpose<1,0,2>
    // then Reshape [Sq, B, H*D] or [Sq*B, H*D].
    Value* o = pv->output(0);
    Node* t = o->uses().size() == 1 ? o->uses()[0].node : nullptr;
    const std::vector<int64_t> merge_perm =
        seq_first ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{0, 2, 1, 3};
    if (!has_perm(t, merge_perm) || t->output(0)->uses().size() != 1) {
      why = seq_first ? "the attention output is not merged back by Transpose<1,0,2>"
                      : "the attention output is not merged back by Transpose<0,2,1,3>";
      return true;
    }
    Node* r = t->output(0)->uses()[0].node;
    std::optional<Dims> out = static_shape(r->output(0));
    const bool merged =
        r->op_type() == "Reshape" && out &&
        (seq_first ? (*out == Dims{q->seq, q->batch, e} || *out == Dims{q->seq * q->batch, e})
                   : *out == Dims{q->batch, q->seq, e});
    if (!merged) {
      why = seq_first ? "the merged heads are not reshaped to [Sq, B, H*D] or [Sq*B, H*D]"
                      : "the merged heads are not reshaped to [B, Sq, H*D]";
      return true;
    }
    nodes.push_back(t);
    nodes.push_back(r);
    const Dims scores = {q->batch, q->heads, q->seq, k->seq};
    // A sequence-first attention's mask is on its [B*H, Sq, Sk] scores (batch-major: row
    // b * H + h): one for every (batch, head) is the [B, H, Sq, Sk] mask reshaped.
    Dims mask_heads;
    if (sc->mask && seq_first) {
      const std::optional<Dims> m = static_shape(sc->mask);
      if (!m || m->size() > 3 || sc->mask->dtype() != DType::kFloat32) {
        why = "a sequence-first attention's mask is not a float32 tensor of rank <= 3";
        return true;
      }
      Dims m3(3 - m->size(), 1);
      m3.insert(m3.end(), m->begin(), m->end());
      if (m3[0] == q->batch * q->heads && m3[0] != 1) {
        mask_heads = {q->batch, q->heads, m3[1], m3[2]};
      } else if (m3[0] != 1) {
        why = "a sequence-first attention's mask " + dims_str(*m) +
              " is not one per (batch, head) of its [B*H, Sq, Sk] scores";
        return true;
      }
    }
    if (sc->mask && mask_heads.empty() && !mask_fits(sc->mask, scores)) {
      why = "the mask is not a float32 tensor broadcasting to [B, H, Sq, Sk] " + dims_str(scores);
      return true;
    }
    if (q->src->dtype() != DType::kFloat32) {
      why = "the attention is not float32";
      return true;
    }
    std::map<std::string, Attribute> attrs;
    attrs["num_heads"] = attr_int(q->heads);
    attrs["scale"] = attr_float(static_cast<float>(sc->scaled ? sc->scale : 1.0));
    if (sc->causal) attrs["causal"] = attr_int(1);
    std::vector<Value*> ins = {q->src, k->src, v->src, sc->mask};
    // Q, K, V as the three parts of one tensor along the last axis: the packed form.
    if (auto packed = packed_source(q->src, k->src, v->src, e)) {
      nodes.insert(nodes.end(), packed->second.begin(), packed->second.end());
      ins = {packed->first, nullptr, nullptr, sc->mask};
      attrs["qkv_packed"] = attr_int(1);
    }
    if (!sc->mask) ins.pop_back();
    if (!seq_first) {
      why = apply_fusion(g, ctx, pass, nodes, "MultiHeadAttention", kFusedDomain, ins,
                         {r->output(0)}, attrs);
      return true;
    }
    why = pattern::check_replaceable(g, nodes, {r->output(0)});
    if (!why.empty()) return true;
    fuse_seq_first(g, ctx, nodes, ins, r->output(0), attrs, {q->seq, q->batch, e}, mask_heads);
    return true;
  }

  // The sequence-first form: the fused node reads its inputs transposed from [S, B, N] to
  // [B, S, N], and its output [B, Sq, E] is transposed back and reshaped into `out`.
  void fuse_seq_first(Graph& g, PassContext& ctx, const std::vector<Node*>& nodes,
                      std::vector<Value*> ins, Value* out, std::map<std::string, Attribute> attrs,
                      const Dims& sbe, const Dims& mask_heads) {
    const std::string pass = info().name;
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
      Node* rs = g.add_node("Reshape", g.unique_node_name(ins[3]->name() + "_heads"),
                            {ins[3], shape}, {m});
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
    Value* shape =
        pattern::add_constant(g, out->name() + "_shape", shape_tensor(*static_shape(out)));
    Node* rs = g.add_node("Reshape", g.unique_node_name(out->name() + "_merge"), {s, shape}, {out});
    rs->set_provenance(f_from, pass);
    g.topological_sort();
  }
};

}  // namespace

std::unique_ptr<Pass> make_attention_pass() { return std::make_unique<AttentionFusion>(); }

}  // namespace nnfuse
