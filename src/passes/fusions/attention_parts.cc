#include "passes/fusions/attention_parts.h"

#include <algorithm>
#include <cmath>

#include "ir/builder.h"
#include "passes/fusions/fusion_util.h"
#include "pattern/pattern.h"

namespace nnfuse::attn {

using pattern::constant_value;

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

// Q, K, V as the three equal parts of one tensor along its last axis: the outputs of one
// Split, or three Slices (chunk()). The tensor, and the nodes to absorb; nullopt otherwise.
std::optional<std::pair<Value*, std::vector<Node*>>> packed_source(Value* q, Value* k, Value* v,
                                                                   int64_t e) {
  const std::optional<EqualParts> p = equal_parts({q, k, v});
  const std::optional<Dims> d = p ? static_shape(p->whole) : std::nullopt;
  if (!d || d->size() != 3 || (*d)[2] != 3 * e) return std::nullopt;
  return std::make_pair(p->whole, p->nodes);
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

// Peels scale (Div/Mul by a scalar), additive mask (Add) and causal (Where) ops from the
// softmax input down to the Q K^T MatMul.
std::optional<Scores> walk_scores(Value* s, std::vector<Node*>& nodes, std::string& why) {
  Scores r;
  for (int guard = 0; guard < 8; ++guard) {
    Node* n = s->producer();
    if (!n || !is_default_domain(n->domain())) break;
    const Op op = n->op();
    if (op == Op::kMatMul) {
      r.qk = n;
      nodes.push_back(n);
      r.q = n->input(0);
      r.k = n->input(1);
      // Scale applied to Q and to K before the product (scaled_dot_product_attention).
      // nn.MultiheadAttention divides Q alone.
      for (Value** side : {&r.q, &r.k}) {
        if (Node* d = producer_of(*side, Op::kDiv)) {
          auto c = scalar_value(d->input(1));
          if (c && *c != 0) {
            r.scale /= *c;
            r.scaled = true;
            *side = d->input(0);
            nodes.push_back(d);
          }
          continue;
        }
        Node* m = producer_of(*side, Op::kMul);
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
    if (op == Op::kDiv) {
      auto c = scalar_value(n->input(1));
      if (!c || *c == 0) break;
      r.scale /= *c;
      r.scaled = true;
    } else if (op == Op::kMul) {
      auto c0 = scalar_value(n->input(0)), c1 = scalar_value(n->input(1));
      if (!c0 && !c1) break;
      r.scale *= c1 ? *c1 : *c0;
      r.scaled = true;
      s = c1 ? n->input(0) : n->input(1);
      nodes.push_back(n);
      continue;
    } else if (op == Op::kAdd) {
      if (r.mask) break;
      // The scores side leads to a MatMul; the other operand is the mask.
      auto leads_to_matmul = [](Value* v) {
        for (int i = 0; i < 8 && v && v->producer(); ++i) {
          Node* p = v->producer();
          if (p->is(Op::kMatMul)) return true;
          if (!p->is(Op::kDiv) && !p->is(Op::kMul) && !p->is(Op::kWhere)) break;
          // Follow the operand that is not a constant (Where: either branch).
          const size_t k = p->is(Op::kWhere) ? 1 : 0;
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
    } else if (op == Op::kWhere) {
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

std::optional<Heads> split_qkv(const Scores& sc, Value* v, int64_t rank, std::vector<Node*>& nodes,
                               std::string& why) {
  std::optional<HeadSplit> q, k, vs;
  if (!(q = split_heads(sc.q, false, nodes, why)) || !(k = split_heads(sc.k, true, nodes, why)) ||
      !(vs = split_heads(v, false, nodes, why))) {
    return std::nullopt;
  }
  const bool seq_first = q->seq_first;
  if (q->heads != k->heads * k->group || q->group != 1 || k->heads != vs->heads ||
      k->group != vs->group || q->dim != k->dim || q->dim != vs->dim || q->batch != k->batch ||
      q->batch != vs->batch || k->seq != vs->seq || seq_first != k->seq_first ||
      seq_first != vs->seq_first || rank != (seq_first ? 3 : 4)) {
    why = "Q, K and V do not split into the same heads (or K/V into a group of them)";
    return std::nullopt;
  }
  if (!k->past != !vs->past || (k->past && k->past_len != vs->past_len) || q->past ||
      (k->past &&
       (k->past->shape().static_dims() != Dims{k->batch, k->heads, k->past_len, k->dim} ||
        vs->past->shape() != k->past->shape()))) {
    why = "K and V do not append to caches of [B, G, P, D] alike";
    return std::nullopt;
  }
  if (vs->rotary || q->rotary.has_value() != k->rotary.has_value() ||
      (q->rotary && (q->seq != k->seq || !same_tables(*q->rotary, *k->rotary)))) {
    why = "rotary embeddings not on Q and K alike (or on V)";
    return std::nullopt;
  }
  return Heads{*q, *k, *vs};
}

MhaNode mha_node(const Scores& sc, const Heads& h, std::vector<Node*>& nodes) {
  MhaNode r;
  ops::MultiHeadAttention& a = r.node;
  a.num_heads = h.q.heads;
  a.scale = static_cast<float>(sc.scaled ? sc.scale : 1.0);
  a.causal = sc.causal;
  a.q = h.q.src;
  a.k = h.k.src;
  a.v = h.v.src;
  a.mask = sc.mask;
  if (h.k.group > 1) a.kv_num_heads = h.k.heads;
  if (h.q.rotary) {
    r.cos = h.q.rotary->cos;
    r.sin = h.q.rotary->sin;
    a.rotary_interleaved = h.q.rotary->interleaved;
  }
  if (h.k.group > 1) {
    // Packed with grouped K/V: the projections are packed later (QKVProjectionFusionPass).
  } else if (auto packed = packed_source(h.q.src, h.k.src, h.v.src, h.q.heads * h.q.dim)) {
    nodes.insert(nodes.end(), packed->second.begin(), packed->second.end());
    a.q = packed->first;
    a.k = a.v = nullptr;
    a.qkv_packed = true;
  }
  return r;
}

pattern::Pat scores_pattern(const std::string& name) {
  return pattern::native(name, [](Value* s, pattern::NativeResult& out) -> std::string {
    std::string why;
    std::optional<Scores> sc = walk_scores(s, out.nodes, why);
    if (!sc) return why.empty() ? "not the scores of an attention" : why;
    out.data = *sc;
    return "";
  });
}

std::optional<std::pair<Node*, Node*>> merge_heads(Value* o, const HeadSplit& q, std::string& why) {
  const bool seq_first = q.seq_first;
  const int64_t e = q.heads * q.dim;
  Node* t = o->uses().size() == 1 ? o->uses()[0].node : nullptr;
  const std::vector<int64_t> perm =
      seq_first ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{0, 2, 1, 3};
  if (!has_perm(t, perm) || t->output(0)->uses().size() != 1) {
    why = seq_first ? "the attention output is not merged back by Transpose<1,0,2>"
                    : "the attention output is not merged back by Transpose<0,2,1,3>";
    return std::nullopt;
  }
  Node* r = t->output(0)->uses()[0].node;
  std::optional<Dims> out = static_shape(r->output(0));
  const bool merged =
      r->is(Op::kReshape) && out &&
      (seq_first ? (*out == Dims{q.seq, q.batch, e} || *out == Dims{q.seq * q.batch, e})
                 : *out == Dims{q.batch, q.seq, e});
  if (!merged) {
    why = seq_first ? "the merged heads are not reshaped to [Sq, B, H*D] or [Sq*B, H*D]"
                    : "the merged heads are not reshaped to [B, Sq, H*D]";
    return std::nullopt;
  }
  return std::make_pair(t, r);
}

std::string mask_reason(const Value* mask, const HeadSplit& q, const Dims& scores, Dims& heads) {
  if (!mask) return "";
  if (q.seq_first) {
    const std::optional<Dims> m = static_shape(mask);
    if (!m || m->size() > 3 || mask->dtype() != DType::kFloat32) {
      return "a sequence-first attention's mask is not a float32 tensor of rank <= 3";
    }
    Dims m3(3 - m->size(), 1);
    m3.insert(m3.end(), m->begin(), m->end());
    if (m3[0] == q.batch * q.heads && m3[0] != 1) {
      heads = {q.batch, q.heads, m3[1], m3[2]};
      return "";
    }
    if (m3[0] != 1) {
      return "a sequence-first attention's mask " + dims_str(*m) +
             " is not one per (batch, head) of its [B*H, Sq, Sk] scores";
    }
  }
  if (!mask_fits(mask, scores)) {
    return "the mask is not a float32 tensor broadcasting to [B, H, Sq, Sk] " + dims_str(scores);
  }
  return "";
}

Attention attention_of(Node* sm, Node* pv, const pattern::NativeResult& scores, Value* v) {
  Attention a;
  const Scores& sc = std::any_cast<const Scores&>(scores.data);
  a.nodes = {sm, pv};
  a.nodes.insert(a.nodes.end(), scores.nodes.begin(), scores.nodes.end());
  const std::optional<Dims> ps = static_shape(sm->output(0));
  const int64_t rank = ps ? static_cast<int64_t>(ps->size()) : 0, axis = sm->attr_int("axis", -1);
  if ((rank != 4 && rank != 3) || (axis != -1 && axis != rank - 1)) {
    a.why = "the Softmax is not over the last axis of [B, H, Sq, Sk] (or [B*H, Sq, Sk])";
    return a;
  }
  const std::optional<Heads> h = split_qkv(sc, v, rank, a.nodes, a.why);
  if (!h) return a;
  a.heads = *h;
  const HeadSplit &q = h->q, &k = h->k;
  const auto merge = merge_heads(pv->output(0), q, a.why);
  if (!merge) return a;
  a.nodes.push_back(merge->first);
  a.nodes.push_back(merge->second);
  a.out = merge->second->output(0);
  a.why = mask_reason(sc.mask, q, {q.batch, q.heads, q.seq, k.past_len + k.seq}, a.mask_heads);
  if (a.why.empty() && q.src->dtype() != DType::kFloat32) a.why = "the attention is not float32";
  if (a.why.empty()) a.mha = mha_node(sc, *h, a.nodes);
  return a;
}

}  // namespace nnfuse::attn
