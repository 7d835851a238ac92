// Q, K and V split into heads (attention_parts.h), with the decoder parts the attention fusion
// takes into its node on the way: rotary position embeddings on Q and K, and the Expand +
// Reshape that widens grouped-query K/V heads.
#include <algorithm>
#include <cmath>

#include "ir/builder.h"
#include "passes/fusions/attention_parts.h"
#include "pattern/pattern.h"

namespace nnfuse::attn {

namespace {

using pattern::constant_value;

// A Slice of `x` over its last axis, [start, end), or nullopt.
std::optional<pattern::SliceRange> last_axis_slice(Value* v, const Value* x) {
  std::optional<pattern::SliceRange> r = pattern::slice_range(v ? v->producer() : nullptr);
  const std::optional<Dims> d = static_shape(x);
  if (!r || r->src != x || !d || r->axis != static_cast<int64_t>(d->size()) - 1) {
    return std::nullopt;
  }
  return r;
}

// Concat(Neg(x[.., h:2h]), x[.., :h]) over the last axis: rotate_half of x's first 2h dims.
// Returns h, or 0.
int64_t rotate_half_width(Value* v, const Value* x, std::vector<Node*>& nodes) {
  Node* cat = producer_of(v, Op::kConcat);
  if (!cat || cat->num_inputs() != 2) return 0;
  const std::optional<Dims> d = static_shape(x);
  const int64_t axis = cat->attr_int("axis", 0);
  if (!d || (axis != -1 && axis != static_cast<int64_t>(d->size()) - 1)) return 0;
  Node* neg = producer_of(cat->input(0), Op::kNeg);
  if (!neg) return 0;
  const auto hi = last_axis_slice(neg->input(0), x), lo = last_axis_slice(cat->input(1), x);
  if (!hi || !lo || lo->start != 0 || hi->start != lo->end || hi->end != 2 * lo->end ||
      lo->end < 1) {
    return 0;
  }
  nodes.insert(nodes.end(), {cat, neg, neg->input(0)->producer(), cat->input(1)->producer()});
  return lo->end;
}

// A Slice of x's last axis from `start` to the end with step 2 (x[..., start::2]).
bool every_other(const Node* n, const Value* x, int64_t start) {
  if (!n || !n->is(Op::kSlice) || n->num_inputs() != 5 || n->input(0) != x) return false;
  const std::optional<Dims> d = static_shape(x);
  const Tensor* st = constant_value(n->input(1));
  const Tensor* en = constant_value(n->input(2));
  const Tensor* ax = constant_value(n->input(3));
  const Tensor* sp = constant_value(n->input(4));
  if (!d || !st || !en || !ax || !sp || st->numel() != 1 || en->numel() != 1 || ax->numel() != 1 ||
      sp->numel() != 1) {
    return false;
  }
  const int64_t last = static_cast<int64_t>(d->size()) - 1, axis = ax->int_at(0);
  return (axis == last || axis == -1) && st->int_at(0) == start && en->int_at(0) >= d->back() &&
         sp->int_at(0) == 2;
}

// Reshape(Concat(Unsqueeze(Neg(x[.., 1::2]), -1), Unsqueeze(x[.., 0::2], -1)), x's shape):
// GPT-J's rotate_every_two (torch.stack((-x2, x1), -1).flatten(-2)). Returns x's last dim, or 0.
int64_t rotate_every_two_width(Value* v, const Value* x, std::vector<Node*>& nodes) {
  Node* rs = producer_of(v, Op::kReshape);
  Node* cat = rs ? producer_of(rs->input(0), Op::kConcat) : nullptr;
  const std::optional<Dims> d = static_shape(x);
  if (!cat || cat->num_inputs() != 2 || !d || static_shape(v) != d || d->back() % 2 != 0) {
    return 0;
  }
  Node* u0 = producer_of(cat->input(0), Op::kUnsqueeze);
  Node* u1 = producer_of(cat->input(1), Op::kUnsqueeze);
  Node* neg = u0 ? producer_of(u0->input(0), Op::kNeg) : nullptr;
  if (!neg || !u1 || !every_other(neg->input(0)->producer(), x, 1) ||
      !every_other(u1->input(0)->producer(), x, 0)) {
    return 0;
  }
  nodes.insert(nodes.end(),
               {rs, cat, u0, u1, neg, neg->input(0)->producer(), u1->input(0)->producer()});
  return d->back();
}

// A constant table of x [B, A, C, D]'s positions: [.., C, R] with leading 1s, positions along
// C (x as [B, H, S, D], `heads_first`), or [.., A, 1, R], positions along A (x as [B, S, H, D]).
// As [S, R], or undefined.
Tensor table_of(const Value* t, const Dims& x, int64_t r, bool& heads_first) {
  const Tensor* c = constant_value(t);
  if (!c || c->dtype() != DType::kFloat32 || c->rank() < 2 || c->rank() > 4 ||
      c->dim(c->rank() - 1) != r) {
    return Tensor();
  }
  const int64_t k = c->rank();
  if (c->dim(k - 2) == x[2] && c->numel() == x[2] * r) {
    heads_first = true;
    return c->reshaped({x[2], r});
  }
  if (k >= 3 && c->dim(k - 2) == 1 && c->dim(k - 3) == x[1] && c->numel() == x[1] * r) {
    heads_first = false;
    return c->reshaped({x[1], r});
  }
  return Tensor();
}

}  // namespace

std::optional<Rotary> rotary_of(Value* y) {
  // Partial rotary: Concat(rotated x[.., :R], x[.., R:]).
  Rotary r;
  Value* rotated = y;
  Value* x = nullptr;
  if (Node* cat = producer_of(y, Op::kConcat); cat && cat->num_inputs() == 2) {
    Node* pass = cat->input(1)->producer();
    std::optional<pattern::SliceRange> rest = pattern::slice_range(pass);
    if (!rest) return std::nullopt;
    x = rest->src;
    const std::optional<Dims> d = static_shape(x);
    const int64_t axis = cat->attr_int("axis", 0);
    if (!d || d->size() != 4 || rest->axis != 3 || rest->end != d->back() ||
        (axis != -1 && axis != 3)) {
      return std::nullopt;
    }
    r.nodes = {cat, pass};
    rotated = cat->input(0);
    r.dims = rest->start;
  }
  // x' * cos + rotate_half(x') * sin, either order, x' = x or x[.., :R].
  Node* add = producer_of(rotated, Op::kAdd);
  if (!add) return std::nullopt;
  for (int order = 0; order < 2; ++order) {
    Node* mc = producer_of(add->input(order), Op::kMul);
    Node* ms = producer_of(add->input(1 - order), Op::kMul);
    if (!mc || !ms) continue;
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        Value* xr = mc->input(a);
        std::vector<Node*> rot;
        int64_t h = rotate_half_width(ms->input(b), xr, rot);
        r.interleaved = h == 0;
        if (h == 0) h = rotate_every_two_width(ms->input(b), xr, rot) / 2;
        if (h == 0) continue;
        Value* base = xr;
        if (x) {  // partial: xr is x[.., :R]
          const auto head = last_axis_slice(xr, x);
          if (!head || head->start != 0 || head->end != r.dims || 2 * h != r.dims) continue;
          rot.push_back(xr->producer());
          base = x;
        } else {
          const std::optional<Dims> d = static_shape(xr);
          if (!d || d->size() != 4 || 2 * h != d->back()) continue;
          r.dims = 2 * h;
        }
        const Dims d = *static_shape(base);
        bool sin_first = true;
        r.cos = table_of(mc->input(1 - a), d, r.dims, r.heads_first);
        r.sin = table_of(ms->input(1 - b), d, r.dims, sin_first);
        if (!r.cos.defined() || !r.sin.defined() || sin_first != r.heads_first) {
          return std::nullopt;
        }
        r.x = base;
        r.nodes.insert(r.nodes.end(), {add, mc, ms});
        r.nodes.insert(r.nodes.end(), rot.begin(), rot.end());
        return r;
      }
    }
  }
  return std::nullopt;
}

std::optional<Widening> widening_of(Value* y) {
  Node* rs = producer_of(y, Op::kReshape);
  Node* ex = rs ? producer_of(rs->input(0), Op::kExpand) : nullptr;
  Node* un = ex ? producer_of(ex->input(0), Op::kUnsqueeze) : nullptr;
  if (!un) return std::nullopt;
  const std::optional<Dims> in = static_shape(un->input(0)), mid = static_shape(ex->output(0)),
                            out = static_shape(rs->output(0));
  std::vector<int64_t> axes;
  if (un->has_attr("axes")) {
    axes = un->attr_ints("axes");
  } else if (const Tensor* t = un->num_inputs() > 1 ? constant_value(un->input(1)) : nullptr) {
    axes = t->to_int64_vector();
  }
  if (!in || !mid || !out || in->size() != 4 || axes != std::vector<int64_t>{2} ||
      mid->size() != 5) {
    return std::nullopt;
  }
  const Dims& x = *in;
  const int64_t n = (*mid)[2];
  if (Dims{x[0], x[1], n, x[2], x[3]} != *mid || Dims{x[0], x[1] * n, x[2], x[3]} != *out) {
    return std::nullopt;
  }
  return Widening{un->input(0), n, {rs, ex, un}};
}

bool same_tables(const Rotary& a, const Rotary& b) {
  auto same = [](const Tensor& x, const Tensor& y) {
    return x.shape() == y.shape() &&
           std::equal(x.data<float>(), x.data<float>() + x.numel(), y.data<float>());
  };
  return a.dims == b.dims && a.interleaved == b.interleaved && same(a.cos, b.cos) &&
         same(a.sin, b.sin);
}

// Walks back from `v` through Transposes to the Reshape; their composition must give Q or V
// as [B, H, S, D] (or [B*H, S, D]), K (`key`) as [B, H, D, S] (or [B*H, D, S]). Collects the
// nodes.
std::optional<HeadSplit> split_heads(Value* v, bool key, std::vector<Node*>& nodes,
                                     std::string& why) {
  std::vector<int64_t> perm;  // v's dims as dims of the reshape output
  std::vector<Node*> seen;
  HeadSplit h;
  Value* peeled = nullptr;  // the input of the last rotary or widening taken
  for (;;) {
    while (Node* t = producer_of(v, Op::kTranspose)) {
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
    if (std::optional<Widening> w = h.group == 1 ? widening_of(v) : std::nullopt) {
      h.group = w->group;
      seen.insert(seen.end(), w->nodes.begin(), w->nodes.end());
      v = peeled = w->x;
      continue;
    }
    if (Node* cat = h.past || h.rotary ? nullptr : producer_of(v, Op::kConcat)) {
      // The KV cache: Concat(past, new) over the sequence axis of [B, G, S, D].
      const std::optional<Dims> past =
          static_shape(cat->num_inputs() == 2 ? cat->input(0) : nullptr);
      const int64_t axis = cat->attr_int("axis", 0);
      if (past && past->size() == 4 && (axis == 2 || axis == -2) &&
          cat->input(0)->dtype() == DType::kFloat32) {
        h.past = cat->input(0);
        h.present = v;
        h.past_len = (*past)[2];
        seen.push_back(cat);
        v = peeled = cat->input(1);
        continue;
      }
    }
    if (std::optional<Rotary> r = h.rotary ? std::nullopt : rotary_of(v)) {
      seen.insert(seen.end(), r->nodes.begin(), r->nodes.end());
      v = peeled = r->x;
      h.rotary = std::move(r);
      continue;
    }
    break;
  }
  // What was peeled sits on [B, H, S, D], right above the head split's Transpose<0,2,1,3>; or
  // (GPT-J) rotary embeddings alone on [B, S, H, D], right above its Reshape.
  const bool on_split = peeled && h.rotary && !h.rotary->heads_first && h.group == 1 && !h.past &&
                        producer_of(peeled, Op::kReshape);
  const bool on_heads = peeled && (!h.rotary || h.rotary->heads_first) &&
                        has_perm(peeled->producer(), {0, 2, 1, 3}) &&
                        producer_of(peeled->producer()->input(0), Op::kReshape);
  if (peeled && !on_split && !on_heads) {
    why = "rotary embeddings or a K/V widening not right after the head split";
    return std::nullopt;
  }
  const std::vector<int64_t> want4 =
      key ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
  const std::vector<int64_t> want3 =
      key ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{1, 0, 2};
  Node* r = producer_of(v, Op::kReshape);
  if (!r || (perm != want4 && perm != want3)) {
    why = "a head split is not Reshape [B, S, H, D] then Transpose";
    return std::nullopt;
  }
  std::optional<Dims> in = known_shape(r->input(0)), out = static_shape(r->output(0));
  h.src = r->input(0);
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
    if (peeled) {
      why = "rotary embeddings or a K/V widening in a sequence-first attention";
      return std::nullopt;
    }
  }
  seen.push_back(r);
  nodes.insert(nodes.end(), seen.begin(), seen.end());
  return h;
}

}  // namespace nnfuse::attn
