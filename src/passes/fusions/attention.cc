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
//
//   QKVProjectionFusionPass: the Q, K and V projections of one attention, three FusedMatMul
//   (or MatMul) of the same input with constant weights, become one FusedMatMul with the
//   weights (and biases) concatenated, feeding the attention in packed form.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ir/error.h"
#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::constant_value;

std::string unique_node_name(const Graph& g, const std::string& stem) {
  std::set<std::string> taken;
  for (const Node* n : g.nodes()) taken.insert(n->name());
  std::string name = stem;
  for (int i = 1; taken.count(name); ++i) name = stem + "_" + std::to_string(i);
  return name;
}

Tensor shape_tensor(const Dims& d) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(d.size())});
  for (size_t i = 0; i < d.size(); ++i) t.data<int64_t>()[i] = d[i];
  return t;
}

// The producer of v when it is a default-domain `op`, else nullptr.
Node* producer_of(const Value* v, const char* op) {
  Node* n = v ? v->producer() : nullptr;
  if (!n || n->op_type() != op || !is_default_domain(n->domain())) {
    return nullptr;
  }
  return n;
}

std::optional<Dims> static_shape(const Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

bool has_perm(const Node* t, const std::vector<int64_t>& perm) {
  return t && t->has_attr("perm") && t->attr_ints("perm") == perm;
}

// A scalar constant's value.
std::optional<double> scalar_value(const Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || t->numel() != 1 || !dtype_is_float(t->dtype())) return std::nullopt;
  return t->double_at(0);
}

// v's static shape, or for a Slice output of unknown shape, the one its constant bounds give.
std::optional<Dims> known_shape(const Value* v) {
  if (std::optional<Dims> d = static_shape(v)) return d;
  std::optional<pattern::SliceRange> r = pattern::slice_range(v ? v->producer() : nullptr);
  if (!r) return std::nullopt;
  Dims d = *static_shape(r->src);
  d[static_cast<size_t>(r->axis)] = std::max<int64_t>(0, r->end - r->start);
  return d;
}

// One of Q, K, V split into heads: src [B, S, H*D] -> Reshape [B, S, H, D] -> Transpose(s);
// or, as nn.MultiheadAttention writes it, sequence-first src [S, B, H*D] -> Reshape
// [S, B*H, D] -> Transpose(s) (`seq_first`).
struct HeadSplit {
  Value* src = nullptr;
  int64_t batch = 0, seq = 0, heads = 0, dim = 0;
  bool seq_first = false;
};

// Walks back from `v` through Transposes to the Reshape; their composition must give Q or V
// as [B, H, S, D] (or [B*H, S, D]), K (`key`) as [B, H, D, S] (or [B*H, D, S]). Collects the
// nodes.
std::optional<HeadSplit> split_heads(Value* v, bool key, std::vector<Node*>& nodes,
                                     std::string& why) {
  std::vector<int64_t> perm;  // v's dims as dims of the reshape output
  std::vector<Node*> seen;
  while (Node* t = producer_of(v, "Transpose")) {
    const std::vector<int64_t> p = t->attr_ints("perm");
    if (perm.empty()) {
      for (int64_t i = 0; i < static_cast<int64_t>(p.size()); ++i) perm.push_back(i);
    }
    if (p.size() != perm.size() || std::any_of(p.begin(), p.end(), [&](int64_t x) {
          return x < 0 || x >= static_cast<int64_t>(p.size());
        })) {
      break;
    }
    // v dim i is t's input dim p[i]: compose from the output side.
    std::vector<int64_t> next(p.size());
    for (size_t i = 0; i < p.size(); ++i) next[i] = p[static_cast<size_t>(perm[i])];
    perm = next;
    seen.push_back(t);
    v = t->input(0);
  }
  const std::vector<int64_t> want4 =
      key ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
  const std::vector<int64_t> want3 =
      key ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{1, 0, 2};
  Node* r = producer_of(v, "Reshape");
  if (!r || (perm != want4 && perm != want3)) {
    why = "a head split is not Reshape [B, S, H, D] then Transpose";
    return std::nullopt;
  }
  std::optional<Dims> in = known_shape(r->input(0)), out = static_shape(r->output(0));
  HeadSplit h{r->input(0)};
  if (perm == want4) {
    if (!in || !out || in->size() != 3 || out->size() != 4 || (*out)[0] != (*in)[0] ||
        (*out)[1] != (*in)[1] || (*out)[2] * (*out)[3] != (*in)[2]) {
      why = "a head split's Reshape is not [B, S, H*D] -> [B, S, H, D] with static shapes";
      return std::nullopt;
    }
    h.batch = (*out)[0], h.seq = (*out)[1], h.heads = (*out)[2], h.dim = (*out)[3];
  } else {
    if (!in || !out || in->size() != 3 || out->size() != 3 || (*out)[0] != (*in)[0] ||
        (*in)[1] <= 0 || (*out)[1] % (*in)[1] != 0 ||
        (*out)[1] / (*in)[1] * (*out)[2] != (*in)[2]) {
      why = "a head split's Reshape is not [S, B, H*D] -> [S, B*H, D] with static shapes";
      return std::nullopt;
    }
    h.batch = (*in)[1], h.seq = (*in)[0], h.heads = (*out)[1] / (*in)[1], h.dim = (*out)[2];
    h.seq_first = true;
  }
  seen.push_back(r);
  nodes.insert(nodes.end(), seen.begin(), seen.end());
  return h;
}

// Q, K, V as the three equal parts of one tensor along its last axis: the outputs of one
// Split, or three Slices (chunk()). The tensor, and the nodes to absorb; nullopt otherwise.
std::optional<std::pair<Value*, std::vector<Node*>>> packed_source(Value* q, Value* k, Value* v,
                                                                   int64_t e) {
  Node* split = q->producer();
  if (!split) return std::nullopt;
  if (split->op_type() == "Split" && split->num_outputs() == 3 && split->output(0) == q &&
      split->output(1) == k && split->output(2) == v) {
    std::optional<Dims> whole = static_shape(split->input(0));
    const int64_t ax = split->attr_int("axis", 0);
    if (whole && whole->size() == 3 && (ax == 2 || ax == -1) && (*whole)[2] == 3 * e) {
      return std::make_pair(split->input(0), std::vector<Node*>{split});
    }
    return std::nullopt;
  }
  std::vector<Node*> slices;
  Value* whole = nullptr;
  int64_t at = 0;
  for (Value* part : {q, k, v}) {
    Node* n = part->producer();
    std::optional<pattern::SliceRange> r = pattern::slice_range(n);
    if (!r || (whole && r->src != whole) || r->start != at || r->end != at + e) {
      return std::nullopt;
    }
    whole = r->src;
    std::optional<Dims> d = static_shape(whole);
    if (d->size() != 3 || r->axis != 2 || (*d)[2] != 3 * e) return std::nullopt;
    slices.push_back(n);
    at += e;
  }
  return std::make_pair(whole, slices);
}

// A constant bool [.., Sq, Sk] mask that keeps exactly key j <= i + (Sk - Sq) (`keep` true)
// or masks exactly those keys' complement (`keep` false).
bool is_causal(const Tensor& m, bool keep) {
  if (m.dtype() != DType::kBool || m.rank() < 2) return false;
  const int64_t sq = m.dim(m.rank() - 2), sk = m.dim(m.rank() - 1);
  if (m.numel() != sq * sk) return false;  // leading dims must be 1
  const auto* p = static_cast<const uint8_t*>(m.raw());
  for (int64_t i = 0; i < sq; ++i) {
    for (int64_t j = 0; j < sk; ++j) {
      const bool kept = j <= i + (sk - sq);
      if ((p[i * sk + j] != 0) != (keep ? kept : !kept)) return false;
    }
  }
  return true;
}

// A constant float [.., Sq, Sk] bias (leading dims 1) that is 0 for key j <= i + (Sk - Sq) and
// large negative (-inf or <= -1e4) for every other key.
bool is_causal_bias(const Tensor& m) {
  if (!dtype_is_float(m.dtype()) || m.rank() < 2) return false;
  const int64_t sq = m.dim(m.rank() - 2), sk = m.dim(m.rank() - 1);
  if (m.numel() != sq * sk) return false;
  for (int64_t i = 0; i < sq; ++i) {
    for (int64_t j = 0; j < sk; ++j) {
      const double x = m.double_at(i * sk + j);
      if (j <= i + (sk - sq) ? x != 0.0 : !(x <= -1e4)) return false;
    }
  }
  return true;
}

struct Scores {
  Node* qk = nullptr;  // MatMul(q side, k side)
  Value* q = nullptr;  // below any scaling
  Value* k = nullptr;
  double scale = 1.0;
  bool scaled = false;
  Value* mask = nullptr;
  bool causal = false;
};

// Peels scale (Div/Mul by a scalar), additive mask (Add) and causal (Where) ops from the
// softmax input down to the Q K^T MatMul.
std::optional<Scores> walk_scores(Value* s, std::vector<Node*>& nodes, std::string& why) {
  Scores r;
  for (int guard = 0; guard < 8; ++guard) {
    Node* n = s->producer();
    if (!n || !is_default_domain(n->domain())) break;
    const std::string& op = n->op_type();
    if (op == "MatMul") {
      r.qk = n;
      nodes.push_back(n);
      r.q = n->input(0);
      r.k = n->input(1);
      // Scale applied to Q and to K before the product (scaled_dot_product_attention).
      // nn.MultiheadAttention divides Q alone.
      for (Value** side : {&r.q, &r.k}) {
        if (Node* d = producer_of(*side, "Div")) {
          auto c = scalar_value(d->input(1));
          if (c && *c != 0) {
            r.scale /= *c;
            r.scaled = true;
            *side = d->input(0);
            nodes.push_back(d);
          }
          continue;
        }
        Node* m = producer_of(*side, "Mul");
        if (!m) continue;
        for (int c = 0; c < 2; ++c) {
          if (auto v = scalar_value(m->input(static_cast<size_t>(c)))) {
            r.scale *= *v;
            r.scaled = true;
            *side = m->input(static_cast<size_t>(1 - c));
            nodes.push_back(m);
            break;
          }
        }
      }
      return r;
    }
    if (op == "Div") {
      auto c = scalar_value(n->input(1));
      if (!c || *c == 0) break;
      r.scale /= *c;
      r.scaled = true;
    } else if (op == "Mul") {
      auto c0 = scalar_value(n->input(0)), c1 = scalar_value(n->input(1));
      if (!c0 && !c1) break;
      r.scale *= c1 ? *c1 : *c0;
      r.scaled = true;
      s = c1 ? n->input(0) : n->input(1);
      nodes.push_back(n);
      continue;
    } else if (op == "Add") {
      if (r.mask) break;
      // The scores side leads to a MatMul; the other operand is the mask.
      auto leads_to_matmul = [](Value* v) {
        for (int i = 0; i < 8 && v && v->producer(); ++i) {
          Node* p = v->producer();
          if (p->op_type() == "MatMul") return true;
          if (p->op_type() != "Div" && p->op_type() != "Mul" && p->op_type() != "Where") break;
          // Follow the operand that is not a constant (Where: either branch).
          const size_t k = p->op_type() == "Where" ? 1 : 0;
          Value* in = p->input(k);
          if (constant_value(in) || !in->producer()) in = p->input(k + 1);
          v = in;
        }
        return false;
      };
      const int side = leads_to_matmul(n->input(0)) ? 0 : leads_to_matmul(n->input(1)) ? 1 : -1;
      if (side < 0) break;
      r.mask = n->input(static_cast<size_t>(1 - side));
      // A constant 0 / -big lower-triangular bias is the causal mask (torch 2's SDPA).
      if (const Tensor* c = constant_value(r.mask); c && !r.causal && is_causal_bias(*c)) {
        r.mask = nullptr;
        r.causal = true;
      }
      nodes.push_back(n);
      s = n->input(static_cast<size_t>(side));
      continue;
    } else if (op == "Where") {
      const Tensor* cond = constant_value(n->input(0));
      auto fill1 = scalar_value(n->input(1)), fill2 = scalar_value(n->input(2));
      if (!cond || r.causal) break;
      // Where(keep, s, -big) or Where(masked, -big, s).
      if (fill2 && *fill2 <= -1e4 && is_causal(*cond, true)) {
        s = n->input(1);
      } else if (fill1 && *fill1 <= -1e4 && is_causal(*cond, false)) {
        s = n->input(2);
      } else {
        why = "a Where on the scores is not a causal mask filled with a large negative value";
        return std::nullopt;
      }
      r.causal = true;
      nodes.push_back(n);
      continue;
    } else {
      break;
    }
    nodes.push_back(n);
    s = n->input(0);
  }
  why = "the softmax input is not Q K^T, scaled and masked";
  return std::nullopt;
}

// Broadcastable to [B, H, Sq, Sk] without growing it, float32, static shape.
bool mask_fits(const Value* mask, const Dims& scores) {
  std::optional<Dims> m = static_shape(mask);
  if (!m || mask->dtype() != DType::kFloat32 || m->size() > 4) return false;
  for (size_t i = 0; i < m->size(); ++i) {
    const int64_t d = (*m)[m->size() - 1 - i], want = scores[3 - i];
    if (d != 1 && d != want) return false;
  }
  return true;
}

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
      Node* n = g.add_node("Transpose", unique_node_name(g, stem), {x}, {y});
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
      Node* rs = g.add_node("Reshape", unique_node_name(g, ins[3]->name() + "_heads"),
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
    Node* rs =
        g.add_node("Reshape", unique_node_name(g, out->name() + "_merge"), {s, shape}, {out});
    rs->set_provenance(f_from, pass);
    g.topological_sort();
  }
};

// ---- QKVProjectionFusionPass

struct Projection {
  Node* node = nullptr;
  const Tensor* w = nullptr;
  const Tensor* b = nullptr;  // nullptr: no bias
};

std::optional<Projection> projection(Value* v, Value* input) {
  Node* n = v ? v->producer() : nullptr;
  if (!n || v->uses().size() != 1 || v->is_graph_output()) return std::nullopt;
  const bool fused = n->op_type() == "FusedMatMul" && n->domain() == kFusedDomain;
  const bool plain = n->op_type() == "MatMul" && n->domain().empty();
  if (!fused && !plain) return std::nullopt;
  if (n->input(0) != input) return std::nullopt;
  if (fused && !n->attr_string("activation", "").empty()) return std::nullopt;
  Projection p{n, constant_value(n->input(1)), nullptr};
  if (!p.w || p.w->rank() != 2 || p.w->dtype() != DType::kFloat32) return std::nullopt;
  if (fused && n->num_inputs() > 2 && n->input(2)) {
    p.b = constant_value(n->input(2));
    if (!p.b || p.b->rank() != 1 || p.b->dim(0) != p.w->dim(1)) return std::nullopt;
  }
  return p;
}

Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  const int64_t rows = parts[0]->dim(0);
  int64_t cols = 0;
  for (const Tensor* t : parts) cols += t->dim(1);
  Tensor r(DType::kFloat32, {rows, cols});
  float* d = r.data<float>();
  int64_t at = 0;
  for (const Tensor* t : parts) {
    const float* s = t->data<float>();
    const int64_t c = t->dim(1);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < c; ++j) d[i * cols + at + j] = s[i * c + j];
    }
    at += c;
  }
  return r;
}

Tensor concat_bias(const std::vector<Projection>& ps) {
  int64_t n = 0;
  for (const Projection& p : ps) n += p.w->dim(1);
  Tensor r(DType::kFloat32, {n});
  float* d = r.data<float>();
  for (const Projection& p : ps) {
    const int64_t c = p.w->dim(1);
    for (int64_t j = 0; j < c; ++j) *d++ = p.b ? p.b->data<float>()[j] : 0.0f;
  }
  return r;
}

class QKVProjectionFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"QKVProjectionFusionPass",
                            "Fuses an attention's Q, K and V projections of one input into one "
                            "MatMul with concatenated weights",
                            true,
                            true,
                            {"MatMul", "MatMul", "MatMul"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    const std::string pass = info().name;
    for (Node* mha : g.nodes()) {
      if (mha->op_type() != "MultiHeadAttention" || mha->domain() != kFusedDomain ||
          mha->attr_int("qkv_packed", 0) != 0 || mha->num_inputs() < 3) {
        continue;
      }
      Node* qn = mha->input(0)->producer();
      if (!qn) continue;
      Value* x = qn->input(0);
      std::vector<Projection> ps;
      for (size_t i = 0; i < 3; ++i) {
        auto p = projection(mha->input(i), x);
        if (p) ps.push_back(*p);
      }
      if (ps.size() != 3) continue;  // not three projections of one input: no match
      ctx.matched(pass);
      std::vector<Node*> proj = {ps[0].node, ps[1].node, ps[2].node};
      if (ps[0].w->dim(0) != ps[1].w->dim(0) || ps[0].w->dim(0) != ps[2].w->dim(0) ||
          mha->input(0) == mha->input(1) || mha->input(1) == mha->input(2)) {
        ctx.rejected(pass, original_names(proj), "the projections do not share their shape");
        continue;
      }
      const Tensor w = concat_columns({ps[0].w, ps[1].w, ps[2].w});
      const Tensor b = concat_bias(ps);
      Value* wv = pattern::add_constant(g, ps[0].node->input(1)->name() + "_qkv", w);
      Value* bv = pattern::add_constant(g, ps[0].node->name() + "_qkv_bias", b);
      Shape shape = mha->input(0)->shape();
      if (shape.has_rank && !shape.dims.empty()) {
        shape.dims.back() = Dim{w.dim(1), ""};
      }
      Value* qkv =
          g.add_value(g.unique_value_name(ps[0].node->name() + "_qkv"), DType::kFloat32, shape);
      Node* fused = g.add_node("FusedMatMul", unique_node_name(g, ps[0].node->name() + "_qkv"),
                               {x, wv, bv}, {qkv}, kFusedDomain);
      fused->set_provenance(original_names(proj), pass);
      for (size_t i = 0; i < 3; ++i) mha->set_input(i, i == 0 ? qkv : nullptr);
      mha->set_attr("qkv_packed", attr_int(1));
      for (Node* n : proj) g.remove_node(n);
      g.remove_dead_values();
      g.topological_sort();
      ctx.applied(pass);
      ctx.report.fused.push_back({fused->name(), pass, fused->fused_from(), 0, 2});
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_attention_pass() { return std::make_unique<AttentionFusion>(); }
std::unique_ptr<Pass> make_qkv_projection_pass() { return std::make_unique<QKVProjectionFusion>(); }

}  // namespace nnfuse
