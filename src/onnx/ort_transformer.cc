// The ONNX Runtime export of the transformer ops: normalizations, the embedding block and
// attention.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/error.h"
#include "kernels/ref/fused.h"
#include "onnx/ort_export.h"

namespace nnfuse {

namespace {

std::string value_name(const Value* v) { return v ? v->name() : ""; }

std::optional<Dims> known_dims(const Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

float epsilon_of(const Node& n) { return n.attr_float("epsilon", 1e-5f); }

// A MultiHeadAttention with grouped-query K/V or rotary embeddings: ORT's Attention and
// MultiHeadAttention take neither, so they are written in standard ops before its
// MultiHeadAttention (and a packed projection is not taken into an Attention).
bool is_decoder_attention(const Node& n) {
  return n.attr_int("kv_num_heads", n.attr_int("num_heads", 0)) != n.attr_int("num_heads", 0) ||
         (n.num_inputs() > 4 && n.input(4)) || (n.num_inputs() > 6 && n.input(6));
}

}  // namespace

// A per-feature parameter (shape [E], or [E] with leading 1s) as a vector [E]: the value itself,
// a reshaped copy of a constant, or a Reshape of it. "" stays "".
static std::string as_vector(ProtoWriter& w, const Value* v, int64_t e) {
  if (!v) return "";
  const auto d = known_dims(v);
  if (d && *d == Dims{e}) return v->name();
  if (v->is_constant()) return w.constant(v->name() + "_vector", v->constant().reshaped({e}));
  const std::string r = w.fresh(v->name() + "_vector");
  w.node("Reshape", {v->name(), w.int64s({e})}, {r});
  return r;
}

static std::string ones(ProtoWriter& w, const std::string& stem, int64_t e) {
  Tensor t(DType::kFloat32, {e});
  for (int64_t i = 0; i < e; ++i) t.data<float>()[i] = 1.0f;
  return w.constant(stem, t);
}

static void write_layer_norm(ProtoWriter& w, const std::string& x, const std::string& gamma,
                             const std::string& beta, const std::string& out, float eps,
                             const std::string& name) {
  std::vector<std::string> ins = {x, gamma};
  if (!beta.empty()) ins.push_back(beta);
  onnx::NodeProto* p = w.node("LayerNormalization", ins, {out}, "", name);
  ProtoWriter::set_int(p, "axis", -1);
  ProtoWriter::set_float(p, "epsilon", eps);
}

// SkipLayerNormalization(input, skip, gamma, beta, bias) -> output, (mean), (inv_std),
// input_skip_bias_sum where its kernel takes the shapes: input rank 2 or 3, skip of the input's
// shape, the parameters vectors [E]; else Add(s) and LayerNormalization.
static void write_skip_layer_norm(ProtoWriter& w, const Value* x, const Value* skip,
                                  const Value* gamma, const Value* beta, const Value* bias,
                                  const std::string& x_name, const std::string& out,
                                  const std::string& sum, float eps, const std::string& name) {
  const auto xd = known_dims(x);
  const auto sd = known_dims(skip);
  NNFUSE_CHECK(xd && !xd->empty(), name, ": the input needs a static shape to be exported");
  const int64_t e = xd->back();
  const std::string g = as_vector(w, gamma, e), b = as_vector(w, beta, e),
                    bi = as_vector(w, bias, e);
  if ((xd->size() == 2 || xd->size() == 3) && sd && *sd == *xd) {
    std::vector<std::string> ins = {x_name, skip->name(), g, b, bi};
    while (ins.back().empty()) ins.pop_back();
    std::vector<std::string> outs = {out};
    if (!sum.empty()) outs = {out, "", "", sum};
    onnx::NodeProto* p = w.node("SkipLayerNormalization", ins, outs, kOrtDomain, name);
    ProtoWriter::set_float(p, "epsilon", eps);
    return;
  }
  std::string s = x_name;
  if (!bi.empty()) {
    const std::string biased = w.fresh(x_name + "_biased");
    w.node("Add", {s, bi}, {biased}, "", name + "_bias");
    s = biased;
  }
  const std::string total = sum.empty() ? w.fresh(out + "_sum") : sum;
  w.node("Add", {s, skip->name()}, {total}, "", name + "_skip");
  write_layer_norm(w, total, g, b, out, eps, name);
}

void OrtLowering::lower_skip_layer_norm(const Node& n) {
  write_skip_layer_norm(w_, n.input(0), n.input(1), n.input(2), n.input(3), n.input(4),
                        value_name(n.input(0)), value_name(n.output(0)), value_name(n.output(1)),
                        epsilon_of(n), n.name());
}

// RMSNorm of x (static dims xd) with gamma (a vector name, or "" for ones) into out.
// SimplifiedLayerNormalization, ORT's RMSNorm, is registered in the default domain, where the
// ONNX checker finds no such op; SkipSimplifiedLayerNormalization (com.microsoft) with a skip
// of zeros computes the same exactly (x + 0 = x), broadcast over the batch.
static void write_rms_norm(ProtoWriter& w, const Node& n, const std::string& x,
                           const std::optional<Dims>& xd, std::string gamma, const std::string& out,
                           float eps, const std::string& name) {
  NNFUSE_CHECK(xd && (xd->size() == 2 || xd->size() == 3), n.describe(),
               ": RMSNorm needs a static rank-2 or rank-3 input to be exported");
  const int64_t e = xd->back();
  if (gamma.empty()) gamma = ones(w, name + "_gamma", e);
  const Dims skip_shape(xd->end() - 2, xd->end());
  const std::string zeros = w.constant(name + "_zeros", Tensor(DType::kFloat32, skip_shape));
  onnx::NodeProto* p =
      w.node("SkipSimplifiedLayerNormalization", {x, zeros, gamma}, {out}, kOrtDomain, name);
  ProtoWriter::set_float(p, "epsilon", eps);
}

void OrtLowering::lower_rms_norm(const Node& n) {
  const auto xd = known_dims(n.input(0));
  write_rms_norm(w_, n, value_name(n.input(0)), xd,
                 xd ? as_vector(w_, n.input(1), xd->back()) : std::string(),
                 value_name(n.output(0)), epsilon_of(n), n.name());
}

void OrtLowering::lower_layer_norm(const Node& n) {
  std::vector<std::string> ins;
  for (const Value* v : n.inputs()) ins.push_back(value_name(v));
  std::vector<std::string> outs;
  for (const Value* v : n.outputs()) outs.push_back(value_name(v));
  onnx::NodeProto* p = w_.node("LayerNormalization", ins, outs, "", n.name());
  for (const auto& [k, a] : n.attrs()) ProtoWriter::set_attr(p, k, a);
}

void OrtLowering::lower_embed(const Node& n) {
  // EmbedLayerNorm(gamma, beta?, addend?, table_1, ids_1, ...) = LayerNorm(addend + sum of
  // Gather(table_k, ids_k)): ORT's EmbedLayerNormalization when there are the word and segment
  // lookups (or the word lookup alone) of [B, S] ids plus a position addend [S, E] or [1, S, E].
  const size_t pairs = (n.num_inputs() - 3) / 2;
  const Value* addend = n.input(2);
  const auto ad = known_dims(addend);
  const auto out_d = known_dims(n.output(0));
  NNFUSE_CHECK(out_d && !out_d->empty(), n.describe(), ": the output needs a static shape");
  const int64_t e = out_d->back();
  bool fits =
      addend && addend->is_constant() && ad && out_d->size() == 3 && pairs >= 1 && pairs <= 2;
  if (fits) {
    const int64_t s = (*out_d)[1];
    fits = (*ad == Dims{s, e}) || (*ad == Dims{1, s, e});
    for (size_t k = 0; fits && k < pairs; ++k) {
      const auto idd = known_dims(n.input(4 + 2 * k));
      const auto td = known_dims(n.input(3 + 2 * k));
      fits = idd && *idd == Dims{(*out_d)[0], s} && td && td->size() == 2 && (*td)[1] == e;
    }
  }
  if (fits) {
    auto ids32 = [&](size_t k) {
      const Value* ids = n.input(4 + 2 * k);
      if (ids->dtype() == DType::kInt32) return ids->name();
      const std::string c = w_.fresh(ids->name() + "_int32");
      onnx::NodeProto* p =
          w_.node("Cast", {ids->name()}, {c}, "", n.name() + "_cast" + std::to_string(k));
      ProtoWriter::set_int(p, "to", static_cast<int64_t>(onnx::TensorProto::INT32));
      return c;
    };
    const int64_t s = (*out_d)[1];
    const std::string word_ids = ids32(0);
    const std::string seg_ids = pairs == 2 ? ids32(1) : "";
    const std::string position =
        w_.constant(addend->name() + "_positions", addend->constant().reshaped({s, e}));
    std::vector<std::string> ins = {word_ids,
                                    seg_ids,
                                    value_name(n.input(3)),
                                    position,
                                    pairs == 2 ? value_name(n.input(5)) : "",
                                    as_vector(w_, n.input(0), e),
                                    as_vector(w_, n.input(1), e)};
    if (ins[6].empty()) ins[6] = w_.constant(n.name() + "_beta", Tensor(DType::kFloat32, {e}));
    std::vector<std::string> outs = {value_name(n.output(0))};
    if (n.output(1)) outs = {value_name(n.output(0)), "", n.output(1)->name()};  // embedding_sum
    onnx::NodeProto* p = w_.node("EmbedLayerNormalization", ins, outs, kOrtDomain, n.name());
    ProtoWriter::set_float(p, "epsilon", epsilon_of(n));
    ProtoWriter::set_int(p, "mask_index_type", 0);  // no mask, no mask_index
    return;
  }
  // Standard ops: Gathers, Adds, LayerNormalization.
  std::string sum = value_name(addend);
  for (size_t k = 0; k < pairs; ++k) {
    const std::string g = w_.fresh(n.name() + "_lookup");
    w_.node("Gather", {value_name(n.input(3 + 2 * k)), value_name(n.input(4 + 2 * k))}, {g}, "",
            n.name() + "_gather" + std::to_string(k));
    if (sum.empty()) {
      sum = g;
      continue;
    }
    const bool last = k + 1 == pairs;
    const std::string t = last && n.output(1) ? n.output(1)->name() : w_.fresh(n.name() + "_sum");
    w_.node("Add", {sum, g}, {t}, "", n.name() + "_add" + std::to_string(k));
    sum = t;
  }
  if (n.output(1) && sum != n.output(1)->name()) {
    w_.node("Identity", {sum}, {n.output(1)->name()}, "", n.name() + "_sum");
  }
  write_layer_norm(w_, sum, as_vector(w_, n.input(0), e), as_vector(w_, n.input(1), e),
                   value_name(n.output(0)), epsilon_of(n), n.name());
}

std::string OrtLowering::expanded_mask(const Value* mask, int64_t sq, int64_t sk) {
  // ORT's attention_bias is [B or 1, H or 1, Sq, Sk]; an additive mask broadcast along Sq (a
  // key padding mask [B, 1, 1, Sk]) is widened once, shared by every attention reading it.
  const auto md = known_dims(mask);
  NNFUSE_CHECK(md && md->size() <= 4, mask->name(), ": the attention mask needs a static shape");
  Dims m4(4 - md->size(), 1);
  m4.insert(m4.end(), md->begin(), md->end());
  const Dims target = {m4[0], m4[1], sq, sk};
  if (*md == target) return mask->name();
  std::string key = mask->name();
  for (int64_t d : target) key.append(",").append(std::to_string(d));
  auto it = expanded_masks_.find(key);
  if (it != expanded_masks_.end()) return it->second;
  const std::string e = w_.fresh(mask->name() + "_bias");
  w_.node("Expand", {mask->name(), w_.int64s(target)}, {e}, "", e + "_expand");
  expanded_masks_[key] = e;
  return e;
}

void OrtLowering::plan() {
  // A packed QKV projection read only by its attention becomes part of ORT's Attention.
  for (const Node* n : g_.nodes()) {
    if (!n->is(Op::kMultiHeadAttention) || n->attr_int("qkv_packed", 0) == 0 ||
        is_decoder_attention(*n)) {
      continue;
    }
    const Value* qkv = n->input(0);
    const Node* p = qkv ? qkv->producer() : nullptr;
    if (!p || !p->is(Op::kFusedMatMul)) continue;
    if (qkv->uses().size() != 1 || qkv->is_graph_output()) continue;
    if (!p->attr_string("activation", "").empty()) continue;
    const auto xd = known_dims(p->input(0));
    const Value* wv = p->input(1);
    const auto wd = known_dims(wv);
    const auto bd = known_dims(p->input(2));
    if (!xd || xd->size() != 3 || !wv || !wv->is_constant() || !wd || wd->size() != 2) continue;
    if (p->input(2) && (!bd || *bd != Dims{(*wd)[1]})) continue;
    absorbed_.insert(p);
  }
  plan_peepholes();  // on what the attentions left
}

// Rotary embeddings (kernels/ref/attention.cc) in standard ops on x [B, S, heads * D] with cos
// and sin tables [S, R]: over x as [B, S, heads, D], the tables as [S, 1, R].
static std::string write_rotary(ProtoWriter& w, const Node& n, const std::string& x, int64_t b,
                                int64_t s, int64_t heads, int64_t d, const std::string& stem) {
  const Tensor& cos = n.input(4)->constant();
  const int64_t r = cos.dim(1), half = r / 2;
  const bool il = n.attr_int("rotary_interleaved", 0) != 0;
  const std::string cs = w.constant(stem + "_cos", cos.reshaped({s, 1, r}));
  const std::string sn = w.constant(stem + "_sin", n.input(5)->constant().reshaped({s, 1, r}));
  const std::string x4 = w.fresh(stem + "_heads");
  w.node("Reshape", {x, w.int64s({b, s, heads, d})}, {x4}, "", stem + "_heads");
  auto slice = [&](int64_t from, int64_t to, int64_t step) {
    const std::string y = w.fresh(stem + "_slice");
    w.node("Slice", {x4, w.int64s({from}), w.int64s({to}), w.int64s({3}), w.int64s({step})}, {y},
           "", stem + "_slice");
    return y;
  };
  auto op = [&](const char* type, std::vector<std::string> ins) {
    const std::string y = w.fresh(stem + "_" + type);
    w.node(type, ins, {y}, "", stem + "_" + type);
    return y;
  };
  const std::string xr = r < d ? slice(0, r, 1) : x4;
  std::string rot;
  if (il) {  // pairs (x[2u], x[2u+1]) -> (-x[2u+1], x[2u])
    const std::string axis = w.int64s({-1});
    const std::string odd = op("Unsqueeze", {op("Neg", {slice(1, r, 2)}), axis});
    const std::string even = op("Unsqueeze", {slice(0, r, 2), axis});
    onnx::NodeProto* c = w.node("Concat", {odd, even}, {w.fresh(stem + "_pairs")}, "", stem);
    ProtoWriter::set_int(c, "axis", -1);
    rot = op("Reshape", {c->output(0), w.int64s({b, s, heads, r})});
  } else {
    onnx::NodeProto* c = w.node("Concat", {op("Neg", {slice(half, r, 1)}), slice(0, half, 1)},
                                {w.fresh(stem + "_half")}, "", stem);
    ProtoWriter::set_int(c, "axis", -1);
    rot = c->output(0);
  }
  std::string y = op("Add", {op("Mul", {xr, cs}), op("Mul", {rot, sn})});
  if (r < d) {
    onnx::NodeProto* c = w.node("Concat", {y, slice(r, d, 1)}, {w.fresh(stem + "_rest")}, "", stem);
    ProtoWriter::set_int(c, "axis", -1);
    y = c->output(0);
  }
  return op("Reshape", {y, w.int64s({b, s, heads * d})});
}

// Grouped-query K or V widened n times, head h reading h / n: x as `groups` (a 1 after the
// G heads), Expanded to `expanded` (n there) and reshaped to `widened`. For [B, S, G * D]:
// [B, S, G, 1, D], [B, S, G, n, D], [B, S, G * n * D]; for [B, G, S, D]: [B, G, 1, S, D],
// [B, G, n, S, D], [B, G * n, S, D].
static std::string write_widen(ProtoWriter& w, const std::string& x, const Dims& groups,
                               const Dims& expanded, const Dims& widened, const std::string& stem) {
  const std::string a = w.fresh(stem + "_groups"), e = w.fresh(stem + "_expanded");
  const std::string y = w.fresh(stem + "_widened");
  w.node("Reshape", {x, w.int64s(groups)}, {a}, "", stem + "_groups");
  w.node("Expand", {a, w.int64s(expanded)}, {e}, "", stem + "_expand");
  w.node("Reshape", {e, w.int64s(widened)}, {y}, "", stem + "_widen");
  return y;
}

void OrtLowering::lower_attention(const Node& n) {
  const int64_t heads = n.attr_int("num_heads", 0);
  if (is_decoder_attention(n)) return lower_decoder_attention(n);
  const bool packed = n.attr_int("qkv_packed", 0) != 0;
  const bool causal = n.attr_int("causal", 0) != 0;
  const Value* q = n.input(0);
  const auto qd = known_dims(q);
  NNFUSE_CHECK(qd && qd->size() == 3 && heads > 0, n.describe(),
               ": attention needs static [B, S, E] inputs and num_heads");
  const int64_t sq = (*qd)[1];
  const int64_t sk = packed ? sq : known_dims(n.input(1)).value_or(Dims{0, 0, 0})[1];
  const std::string bias = n.input(3) ? expanded_mask(n.input(3), sq, sk) : "";
  auto set_common = [&](onnx::NodeProto* p) {
    ProtoWriter::set_int(p, "num_heads", heads);
    if (const Attribute* s = n.find_attr("scale")) ProtoWriter::set_float(p, "scale", s->f);
    if (causal) ProtoWriter::set_int(p, "unidirectional", 1);
  };
  const std::string out = value_name(n.output(0));
  if (packed && q->producer() && absorbed(*q->producer())) {
    const Node& proj = *q->producer();
    const auto wd = known_dims(proj.input(1));
    std::string b = value_name(proj.input(2));
    if (b.empty()) b = w_.constant(proj.name() + "_bias", Tensor(DType::kFloat32, {(*wd)[1]}));
    std::vector<std::string> ins = {value_name(proj.input(0)), value_name(proj.input(1)), b};
    if (!bias.empty()) ins.insert(ins.end(), {"", "", bias});
    set_common(w_.node("Attention", ins, {out}, kOrtDomain, n.name()));
    return;
  }
  std::string qn = value_name(q), kn = value_name(n.input(1)), vn = value_name(n.input(2));
  if (packed) {
    qn = w_.fresh(out + "_q");
    kn = w_.fresh(out + "_k");
    vn = w_.fresh(out + "_v");
    const int64_t e = (*qd)[2] / 3;
    onnx::NodeProto* p = w_.node("Split", {value_name(q), w_.int64s({e, e, e})}, {qn, kn, vn}, "",
                                 n.name() + "_split");
    ProtoWriter::set_int(p, "axis", -1);
  }
  std::vector<std::string> ins = {qn, kn, vn};
  if (!bias.empty()) ins.insert(ins.end(), {"", "", bias});
  set_common(w_.node("MultiHeadAttention", ins, {out}, kOrtDomain, n.name()));
}

void OrtLowering::lower_decoder_attention(const Node& n) {
  // Grouped-query, rotary and KV-cache attention: the rotations, the cache's Concat and the K/V
  // widening in standard ops, then ORT's MultiHeadAttention.
  const int64_t heads = n.attr_int("num_heads", 0), kv = n.attr_int("kv_num_heads", heads);
  const bool packed = n.attr_int("qkv_packed", 0) != 0;
  const auto qd = known_dims(n.input(0));
  NNFUSE_CHECK(qd && qd->size() == 3 && heads > 0 && kv > 0 && heads % kv == 0, n.describe(),
               ": attention needs static [B, S, E] inputs, num_heads and kv_num_heads");
  const bool rotary = n.num_inputs() > 5 && n.input(4) && n.input(5);
  NNFUSE_CHECK(!rotary || (n.input(4)->is_constant() && n.input(5)->is_constant()), n.describe(),
               ": rotary tables that are not constants");
  const int64_t b = (*qd)[0], sq = (*qd)[1];
  const int64_t d = packed ? (*qd)[2] / (heads + 2 * kv) : (*qd)[2] / heads;
  const std::string out = value_name(n.output(0));
  std::string qn = value_name(n.input(0)), kn = packed ? "" : value_name(n.input(1));
  std::string vn = packed ? "" : value_name(n.input(2));
  if (packed) {
    qn = w_.fresh(out + "_q");
    kn = w_.fresh(out + "_k");
    vn = w_.fresh(out + "_v");
    onnx::NodeProto* p =
        w_.node("Split", {value_name(n.input(0)), w_.int64s({heads * d, kv * d, kv * d})},
                {qn, kn, vn}, "", n.name() + "_split");
    ProtoWriter::set_int(p, "axis", -1);
  }
  const int64_t sk = packed ? sq : known_dims(n.input(1)).value_or(Dims{0, 0, 0})[1];
  if (rotary) {
    qn = write_rotary(w_, n, qn, b, sq, heads, d, n.name() + "_q_rotary");
    kn = write_rotary(w_, n, kn, b, sk, kv, d, n.name() + "_k_rotary");
  }
  int64_t total = sk;
  if (n.num_inputs() > 7 && n.input(6) && n.input(7)) {
    // The KV cache: present = Concat(past, the new rows as [B, G, S, D]) over the sequence,
    // widened to [B, H, P + S, D], the form of ORT's MultiHeadAttention's key and value that
    // are already split into heads.
    const auto pd = known_dims(n.input(6));
    NNFUSE_CHECK(pd && pd->size() == 4, n.describe(), ": the past needs a static shape");
    NNFUSE_CHECK(n.attr_int("causal", 0) == 0 || sq == 1, n.describe(),
                 ": a causal attention over a KV cache with more than one query row is not "
                 "exported");
    total = (*pd)[2] + sk;
    for (int c = 0; c < 2; ++c) {
      std::string& x = c == 0 ? kn : vn;
      const std::string stem = n.name() + (c == 0 ? "_key" : "_value");
      const std::string split = w_.fresh(stem + "_split"), bgsd = w_.fresh(stem + "_new");
      w_.node("Reshape", {x, w_.int64s({b, sk, kv, d})}, {split}, "", stem + "_split");
      ProtoWriter::set_ints(w_.node("Transpose", {split}, {bgsd}, "", stem + "_heads"), "perm",
                            {0, 2, 1, 3});
      const size_t o = 1 + static_cast<size_t>(c);
      const std::string present = n.num_outputs() > o && n.output(o) ? value_name(n.output(o))
                                                                     : w_.fresh(stem + "_present");
      ProtoWriter::set_int(
          w_.node("Concat", {value_name(n.input(5 + o)), bgsd}, {present}, "", stem + "_cache"),
          "axis", 2);
      x = kv == heads ? present
                      : write_widen(w_, present, {b, kv, 1, total, d},
                                    {b, kv, heads / kv, total, d}, {b, heads, total, d}, stem);
    }
  } else if (kv != heads) {
    for (std::string* x : {&kn, &vn}) {
      *x = write_widen(w_, *x, {b, sk, kv, 1, d}, {b, sk, kv, heads / kv, d}, {b, sk, heads * d},
                       n.name() + (x == &kn ? "_k" : "_v"));
    }
  }
  std::vector<std::string> ins = {qn, kn, vn};
  if (n.num_inputs() > 3 && n.input(3)) {
    ins.insert(ins.end(), {"", "", expanded_mask(n.input(3), sq, total)});
  }
  onnx::NodeProto* p = w_.node("MultiHeadAttention", ins, {out}, kOrtDomain, n.name());
  ProtoWriter::set_int(p, "num_heads", heads);
  if (const Attribute* s = n.find_attr("scale")) ProtoWriter::set_float(p, "scale", s->f);
  // Causal over one query row (a decode step) masks nothing.
  if (n.attr_int("causal", 0) != 0 && !(sq == 1 && total > sk)) {
    ProtoWriter::set_int(p, "unidirectional", 1);
  }
}

void OrtLowering::lower_matmul_layer_norm(const Node& n) {
  // FusedMatMulLayerNorm(A, B, Bias?, Residual, Gamma, Beta?) = LayerNorm(A B + Bias + Residual).
  const std::string mm = w_.fresh(value_name(n.output(0)) + "_matmul");
  w_.node("MatMul", {value_name(n.input(0)), value_name(n.input(1))}, {mm}, "",
          n.name() + "_matmul");
  // The product has the residual's shape.
  write_skip_layer_norm(w_, n.input(3), n.input(3), n.input(4), n.input(5), n.input(2), mm,
                        value_name(n.output(0)), "", epsilon_of(n), n.name());
}

std::string OrtLowering::write_norm_prologue(const Node& n) {
  const auto xd = known_dims(n.input(0));
  NNFUSE_CHECK(xd && !xd->empty(), n.describe(), ": the input needs a static shape");
  const std::string normed = w_.fresh(value_name(n.input(0)) + "_normed");
  const std::string gamma = as_vector(w_, n.input(3), xd->back());
  if (n.attr_string("norm", "layer") == "rms") {
    write_rms_norm(w_, n, value_name(n.input(0)), xd, gamma, normed, epsilon_of(n),
                   n.name() + "_norm");
  } else {
    write_layer_norm(w_, value_name(n.input(0)), gamma, as_vector(w_, n.input(4), xd->back()),
                     normed, epsilon_of(n), n.name() + "_norm");
  }
  return normed;
}

void OrtLowering::lower_layer_norm_matmul(const Node& n) {
  // FusedLayerNormMatMul(X, B, Bias?, Gamma, Beta?) = FusedMatMul(LayerNorm(X), B, Bias).
  write_dense(n, write_norm_prologue(n), value_name(n.input(1)), value_name(n.input(2)),
              value_name(n.output(0)), n.name());
}

}  // namespace nnfuse
