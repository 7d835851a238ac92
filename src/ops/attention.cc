#include "ops/attention.h"

#include "ir/builder.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

std::string infer_attention(const Node& n, std::vector<OutputType>& out) {
  using namespace attention;
  out.assign(n.num_outputs(), {});
  const DType dt = like_input(n, kQ).dtype;
  for (OutputType& o : out) o.dtype = dt;
  const int64_t h = n.attr_int("num_heads", 0);
  if (h < 1) return "num_heads is not positive";
  const int64_t g = n.attr_int("kv_num_heads", h);
  if (g < 1 || h % g != 0) return "kv_num_heads does not divide num_heads";
  const Shape& q = input_shape(n, kQ);
  if (!q.has_rank) return "";
  if (q.dims.size() != 3) return "Q is not 3-D";
  int64_t d = -1;
  out[0].shape = q;
  if (n.attr_int("qkv_packed", 0) == 1) {
    const int64_t width = dim_of(q, 2);
    if (width >= 0 && width % (h + 2 * g) != 0) return "the packed width is not (H + 2G) * D";
    d = width < 0 ? -1 : width / (h + 2 * g);
    out[0].shape = with_last_dim(q, d < 0 ? -1 : h * d);
  } else {
    const int64_t e = dim_of(q, 2);
    d = e < 0 ? -1 : e / h;
  }
  if (out.size() < 3) return "";
  // The next step's cache: the past, then the new keys and values.
  const Shape& past = input_shape(n, kPastKey);
  const Shape& k = n.attr_int("qkv_packed", 0) == 1 ? q : input_shape(n, kK);
  const int64_t p = dim_of(past, 2), sk = dim_of(k, 1);
  const Dim seq = p >= 0 && sk >= 0 ? Dim{p + sk, ""} : Dim{};
  const Shape present{true, {q.dims[0], Dim{g, ""}, seq, d >= 0 ? Dim{d, ""} : Dim{}}};
  out[1].shape = out[2].shape = present;
  return "";
}

}  // namespace

MultiHeadAttention MultiHeadAttention::of(const Node& n) {
  using namespace attention;
  MultiHeadAttention a;
  a.q = optional_input(&n, kQ);
  a.k = optional_input(&n, kK);
  a.v = optional_input(&n, kV);
  a.mask = optional_input(&n, kMask);
  a.cos = optional_input(&n, kCos);
  a.sin = optional_input(&n, kSin);
  a.past_key = optional_input(&n, kPastKey);
  a.past_value = optional_input(&n, kPastValue);
  a.num_heads = n.attr_int("num_heads", 0);
  if (n.has_attr("kv_num_heads")) a.kv_num_heads = n.attr_int("kv_num_heads", 0);
  a.scale = n.attr_float("scale", 1.0f);
  a.causal = n.attr_int("causal", 0) == 1;
  a.qkv_packed = n.attr_int("qkv_packed", 0) == 1;
  a.rotary_interleaved = n.attr_int("rotary_interleaved", 0) == 1;
  return a;
}

NodeSpec MultiHeadAttention::spec() const {
  NodeSpec s{Op::kMultiHeadAttention,
             {q, k, v, mask, cos, sin, past_key, past_value},
             {{"num_heads", attr_int(num_heads)}, {"scale", attr_float(scale)}}};
  if (causal) s.attrs["causal"] = attr_int(1);
  if (kv_num_heads) s.attrs["kv_num_heads"] = attr_int(*kv_num_heads);
  if (rotary_interleaved) s.attrs["rotary_interleaved"] = attr_int(1);
  if (qkv_packed) s.attrs["qkv_packed"] = attr_int(1);
  return s;
}

void append_attention_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  t.push_back({.op = Op::kMultiHeadAttention,
               .summary = "softmax(scale * Q K^T + Mask) V over num_heads heads of the hidden "
                          "axis (causal, grouped K/V, rotary, a KV cache)",
               .inputs = {{"Q"},
                          {"K", true},
                          {"V", true},
                          {"Mask", true},
                          {"Cos", true},
                          {"Sin", true},
                          {"PastKey", true},
                          {"PastValue", true}},
               .outputs = {{"Y"}, {"PresentKey", true}, {"PresentValue", true}},
               .attrs = {{"num_heads", K::kInt},
                         {"kv_num_heads", K::kInt, "num_heads"},
                         {"scale", K::kFloat, "1 / sqrt(D)"},
                         {"causal", K::kInt, "0"},
                         {"qkv_packed", K::kInt, "0"},
                         {"rotary_interleaved", K::kInt, "0"}},
               .traits = {.op_class = OpClass::kOutEltwiseFusable, .compute = true},
               .infer = infer_attention,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "Attention (absorbing the packed QKV projection) or "
                                  "MultiHeadAttention, the mask as attention_bias; grouped or "
                                  "rotary forms in standard ops first"}});
}

}  // namespace nnfuse::ops
