// MultiHeadAttention (domain ai.nnfuse): scaled dot-product attention over H heads, heads split
// from and merged back into the hidden axis, as BERT's Reshape/Transpose/MatMul/Softmax chain:
//   out[b, i, h] = sum_j softmax_j(scale * q[b, i, h] . k[b, j, h] + mask[b, h, i, j]) v[b, j, h]
// where x[b, i, h] is columns [h * D, (h + 1) * D) of row i and key j is -inf for query i when
// causal and j > i + (Sk - Sq).
//   inputs:  Q [B, Sq, H*D], K [B, Sk, G*D], V [B, Sk, G*D], mask? (additive, broadcastable to
//            [B, H, Sq, Sk], rank <= 4); with qkv_packed = 1, input 0 is [B, S, (H+2G)*D]
//            holding [Q | K | V] and inputs 1 and 2 are omitted; cos?, sin? (inputs 4 and 5,
//            both or neither) [Sq, R], R even and at most D, with Sk = Sq: rotary position
//            embeddings applied to Q and K first (below); past_key?, past_value? (inputs 6
//            and 7, both or neither) [B, G, P, D]: the KV cache, K and V then being the new
//            keys and values, attended after the past ones (Sk = P + the new ones).
//   outputs: [B, Sq, H*D]; with a past, present_key and present_value [B, G, Sk, D] (the past
//            then the new, rotated keys and values), the next step's past.
//   attrs:   num_heads (required), kv_num_heads G (default H; grouped-query attention: query
//            head h reads K/V head h / (H / G), H a multiple of G), scale (default 1 / sqrt(D)),
//            causal (0), qkv_packed (0), rotary_interleaved (0).
// Rotary: the first R dims of each head of query (and key) row i, x, become
//   rotate-half (GPT-NeoX, LLaMA): y[t] = x[t] cos[i, t] - x[t + R/2] sin[i, t]      (t < R/2)
//                                  y[t] = x[t] cos[i, t] + x[t - R/2] sin[i, t]      (t >= R/2)
//   interleaved (GPT-J):           y[2u] = x[2u] cos[i, 2u] - x[2u+1] sin[i, 2u]
//                                  y[2u+1] = x[2u+1] cos[i, 2u+1] + x[2u] sin[i, 2u+1]
// and dims [R, D) stay.
// A row whose keys are all masked gives NaN, as Softmax over all -inf does; with no keys at all
// (Sk = 0) the output is 0, as MatMul over an empty axis gives.
//
// The reference kernel: plain loops, scores and sums in double.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {
namespace {

struct AttnAttrs {
  int64_t heads = 0, kv_heads = 0;
  bool packed = false, causal = false, interleaved = false;
};

// Throws (naming the node) on a missing or bad attribute.
AttnAttrs read_attn_attrs(const Node& node) {
  AttnAttrs a;
  a.heads = node.attr_int("num_heads", 0);
  NNFUSE_CHECK(a.heads >= 1, node.describe(), ": num_heads must be given and at least 1, got ",
               a.heads);
  const int64_t packed = node.attr_int("qkv_packed", 0);
  const int64_t causal = node.attr_int("causal", 0);
  NNFUSE_CHECK(packed == 0 || packed == 1, node.describe(), ": qkv_packed must be 0 or 1");
  NNFUSE_CHECK(causal == 0 || causal == 1, node.describe(), ": causal must be 0 or 1");
  node.attr_float("scale", 1.0f);  // kind check
  a.kv_heads = node.attr_int("kv_num_heads", a.heads);
  NNFUSE_CHECK(a.kv_heads >= 1 && a.heads % a.kv_heads == 0, node.describe(), ": kv_num_heads ",
               a.kv_heads, " does not divide num_heads ", a.heads);
  const int64_t il = node.attr_int("rotary_interleaved", 0);
  NNFUSE_CHECK(il == 0 || il == 1, node.describe(), ": rotary_interleaved must be 0 or 1");
  a.packed = packed == 1;
  a.causal = causal == 1;
  a.interleaved = il == 1;
  return a;
}

// The geometry of one node's run, from the input shapes; throws on shapes that do not fit.
struct AttnShape {
  int64_t batch = 0, sq = 0, sk = 0, heads = 0, kv_heads = 0, head_size = 0;
  int64_t q_stride = 0, kv_stride = 0;  // row strides of Q's and K/V's tensors, in elements
  int64_t k_col = 0, v_col = 0;         // first column of head 0 of K and V in their tensors
  int64_t rotary = 0;                   // R, 0 without rotary embeddings
  int64_t past = 0;                     // P: keys and values in the cache (inputs 6 and 7)
  bool interleaved = false, cached = false;
  Dims mask_strides;  // [B, H, Sq, Sk] strides of the mask, 0 on broadcast
  double scale = 0.0;
  bool causal = false;
};

AttnShape attn_shape(const KernelContext& ctx) {
  const Node& node = ctx.node;
  const std::string who = node.describe();
  const AttnAttrs a = read_attn_attrs(node);
  AttnShape s;
  s.heads = a.heads;
  s.kv_heads = a.kv_heads;
  s.causal = a.causal;
  s.interleaved = a.interleaved;
  const Tensor& q = ctx.in(0);
  NNFUSE_CHECK(q.rank() == 3, who, ": input 0 must have rank 3, got shape ", dims_str(q.shape()));
  s.batch = q.dim(0);
  s.sq = q.dim(1);
  int64_t hidden = q.dim(2);
  if (a.packed) {
    NNFUSE_CHECK(!ctx.has_input(1) && !ctx.has_input(2), who,
                 ": with qkv_packed = 1, inputs 1 and 2 must be omitted");
    const int64_t parts = s.heads + 2 * s.kv_heads;
    NNFUSE_CHECK(hidden % parts == 0, who, ": packed input of shape ", dims_str(q.shape()),
                 " does not split into Q, K and V of ", s.heads, ", ", s.kv_heads, " and ",
                 s.kv_heads, " heads");
    s.head_size = hidden / parts;
    hidden = s.heads * s.head_size;
    s.sk = s.sq;
    s.q_stride = s.kv_stride = parts * s.head_size;
    s.k_col = hidden;
    s.v_col = hidden + s.kv_heads * s.head_size;
  } else {
    NNFUSE_CHECK(hidden % s.heads == 0, who, ": num_heads ", s.heads,
                 " does not divide the hidden size ", hidden);
    s.head_size = hidden / s.heads;
    const Tensor& k = ctx.in(1);
    const Tensor& v = ctx.in(2);
    const int64_t kv_hidden = s.kv_heads * s.head_size;
    NNFUSE_CHECK(k.rank() == 3 && v.rank() == 3 && k.shape() == v.shape() && k.dim(0) == s.batch &&
                     k.dim(2) == kv_hidden,
                 who, ": K ", dims_str(k.shape()), " and V ", dims_str(v.shape()),
                 " must both be [", s.batch, ", Sk, ", kv_hidden, "] for Q ", dims_str(q.shape()));
    s.sk = k.dim(1);
    s.q_stride = hidden;
    s.kv_stride = kv_hidden;
  }
  NNFUSE_CHECK(ctx.has_input(4) == ctx.has_input(5), who, ": cos and sin come together");
  if (ctx.has_input(4)) {
    const Tensor& c = ctx.in(4);
    NNFUSE_CHECK(c.rank() == 2 && c.dim(0) == s.sq && c.dim(1) % 2 == 0 &&
                     c.dim(1) <= s.head_size && c.shape() == ctx.in(5).shape() && s.sk == s.sq,
                 who, ": cos ", dims_str(c.shape()), " and sin ", dims_str(ctx.in(5).shape()),
                 " must both be [Sq, R] with R even and at most ", s.head_size, ", and Sk = Sq");
    s.rotary = c.dim(1);
  }
  NNFUSE_CHECK(ctx.has_input(6) == ctx.has_input(7), who,
               ": past_key and past_value come together");
  if (ctx.has_input(6)) {
    const Tensor& pk = ctx.in(6);
    NNFUSE_CHECK(pk.rank() == 4 && pk.shape() == ctx.in(7).shape() && pk.dim(0) == s.batch &&
                     pk.dim(1) == s.kv_heads && pk.dim(3) == s.head_size,
                 who, ": past_key ", dims_str(pk.shape()), " and past_value ",
                 dims_str(ctx.in(7).shape()), " must both be [", s.batch, ", ", s.kv_heads, ", P, ",
                 s.head_size, "]");
    s.past = pk.dim(2);
    s.cached = true;
  }
  const double dflt = s.head_size > 0 ? 1.0 / std::sqrt(static_cast<double>(s.head_size)) : 1.0;
  s.scale = node.has_attr("scale") ? static_cast<double>(node.attr_float("scale", 1.0f)) : dflt;
  if (ctx.has_input(3)) {
    const Tensor& m = ctx.in(3);
    const Dims full = {s.batch, s.heads, s.sq, s.past + s.sk};
    bool ok = m.rank() <= 4;
    for (int64_t i = 0; ok && i < m.rank(); ++i) {
      const int64_t want = full[static_cast<size_t>(4 - m.rank() + i)];
      ok = m.dim(i) == 1 || m.dim(i) == want;
    }
    NNFUSE_CHECK(ok, who, ": mask of shape ", dims_str(m.shape()), " does not broadcast to ",
                 dims_str(full));
    s.mask_strides = broadcast_strides(m.shape(), full);
  }
  return s;
}

// Rotary embeddings applied in place to the first R dims of every head of rows [0, S) of x
// (row stride `stride`, heads from column `col`, `heads` of them).
template <typename T>
void rotate(const AttnShape& s, T* x, int64_t stride, int64_t col, int64_t heads, const T* cos,
            const T* sin) {
  const int64_t r = s.rotary, half = r / 2;
  std::vector<double> y(static_cast<size_t>(r));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t i = 0; i < s.sq; ++i) {
      const T* c = cos + i * r;
      const T* sn = sin + i * r;
      for (int64_t h = 0; h < heads; ++h) {
        T* xh = x + (b * s.sq + i) * stride + col + h * s.head_size;
        for (int64_t t = 0; t < r; ++t) {
          double other = 0;
          if (s.interleaved) {
            other = t % 2 == 0 ? -static_cast<double>(xh[t + 1]) : static_cast<double>(xh[t - 1]);
          } else {
            other =
                t < half ? -static_cast<double>(xh[t + half]) : static_cast<double>(xh[t - half]);
          }
          y[static_cast<size_t>(t)] = static_cast<double>(xh[t]) * static_cast<double>(c[t]) +
                                      other * static_cast<double>(sn[t]);
        }
        for (int64_t t = 0; t < r; ++t) xh[t] = static_cast<T>(y[static_cast<size_t>(t)]);
      }
    }
  }
}

template <typename T>
void attention(const AttnShape& s, const T* q, const T* k, const T* v, const T* mask, T* out) {
  const int64_t hidden = s.heads * s.head_size;
  const int64_t group = s.heads / s.kv_heads;
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<double> scores(static_cast<size_t>(s.sk));
  std::vector<double> acc(static_cast<size_t>(s.head_size));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t col = h * s.head_size, kv_col = h / group * s.head_size;
      for (int64_t i = 0; i < s.sq; ++i) {
        const T* qi = q + (b * s.sq + i) * s.q_stride + col;
        double mx = ninf;
        for (int64_t j = 0; j < s.sk; ++j) {
          const T* kj = k + (b * s.sk + j) * s.kv_stride + s.k_col + kv_col;
          double dot = 0.0;
          for (int64_t d = 0; d < s.head_size; ++d) {
            dot += static_cast<double>(qi[d]) * static_cast<double>(kj[d]);
          }
          double x = s.scale * dot;
          if (mask) {
            const Dims& ms = s.mask_strides;
            x += static_cast<double>(mask[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]]);
          }
          if (s.causal && j > i + (s.sk - s.sq)) x = ninf;
          scores[static_cast<size_t>(j)] = x;
          mx = std::fmax(mx, x);
        }
        // Softmax as the ONNX op: exp(x - max) / sum. All -inf gives (-inf) - (-inf) = NaN.
        double sum = 0.0;
        for (double& x : scores) {
          x = std::exp(x - mx);
          sum += x;
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < s.sk; ++j) {
          const double p = scores[static_cast<size_t>(j)] / sum;
          const T* vj = v + (b * s.sk + j) * s.kv_stride + s.v_col + kv_col;
          for (int64_t d = 0; d < s.head_size; ++d) {
            acc[static_cast<size_t>(d)] += p * static_cast<double>(vj[d]);
          }
        }
        T* oi = out + (b * s.sq + i) * hidden + col;
        for (int64_t d = 0; d < s.head_size; ++d)
          oi[d] = static_cast<T>(acc[static_cast<size_t>(d)]);
      }
    }
  }
}

void run_attention(KernelContext& ctx) {
  const AttnShape s = attn_shape(ctx);
  const Tensor& q = ctx.in(0);
  for (size_t i = 1; i < 4; ++i) check_input_dtype(ctx, i, q.dtype());
  const bool packed = !ctx.has_input(1);
  for (size_t i = 4; i < 8; ++i) check_input_dtype(ctx, i, q.dtype());
  dispatch_float(q.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y(q.dtype(), {s.batch, s.sq, s.heads * s.head_size});
    // With rotary embeddings, Q and K are rotated copies (a packed input: one copy of it).
    Tensor rq, rk;
    if (s.rotary > 0) {
      const T* cos = ctx.in(4).data<T>();
      const T* sin = ctx.in(5).data<T>();
      rq = q.clone();
      rotate<T>(s, rq.data<T>(), s.q_stride, 0, s.heads, cos, sin);
      if (packed) {
        rotate<T>(s, rq.data<T>(), s.kv_stride, s.k_col, s.kv_heads, cos, sin);
      } else {
        rk = ctx.in(1).clone();
        rotate<T>(s, rk.data<T>(), s.kv_stride, 0, s.kv_heads, cos, sin);
      }
    }
    const T* pq = s.rotary > 0 ? rq.data<T>() : q.data<T>();
    const T* pk = packed ? pq : s.rotary > 0 ? rk.data<T>() : ctx.in(1).data<T>();
    const T* pv = packed ? pq : ctx.in(2).data<T>();
    const T* pm = ctx.has_input(3) ? ctx.in(3).data<T>() : nullptr;
    if (!s.cached) {
      attention<T>(s, pq, pk, pv, pm, y.data<T>());
      ctx.outputs[0] = std::move(y);
      return;
    }
    // The cache: present [B, G, P + S, D] is the past then the new rows; attention reads them
    // as [B, P + S, G*D].
    const int64_t g = s.kv_heads, d = s.head_size, total = s.past + s.sk;
    Tensor present[2] = {Tensor(q.dtype(), {s.batch, g, total, d}),
                         Tensor(q.dtype(), {s.batch, g, total, d})};
    Tensor rows[2] = {Tensor(q.dtype(), {s.batch, total, g * d}),
                      Tensor(q.dtype(), {s.batch, total, g * d})};
    const T* fresh[2] = {pk + s.k_col, pv + s.v_col};
    for (int c = 0; c < 2; ++c) {
      const T* past = ctx.in(6 + static_cast<size_t>(c)).data<T>();
      T* pr = present[c].data<T>();
      for (int64_t b = 0; b < s.batch; ++b) {
        for (int64_t h = 0; h < g; ++h) {
          for (int64_t j = 0; j < total; ++j) {
            const T* from = j < s.past ? past + ((b * g + h) * s.past + j) * d
                                       : fresh[c] + (b * s.sk + j - s.past) * s.kv_stride + h * d;
            std::copy(from, from + d, pr + ((b * g + h) * total + j) * d);
            std::copy(from, from + d, rows[c].data<T>() + (b * total + j) * g * d + h * d);
          }
        }
      }
    }
    AttnShape all = s;
    all.sk = total;
    all.kv_stride = g * d;
    all.k_col = all.v_col = 0;
    attention<T>(all, pq, rows[0].data<T>(), rows[1].data<T>(), pm, y.data<T>());
    ctx.outputs[0] = std::move(y);
    if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(present[0]);
    if (ctx.outputs.size() > 2) ctx.outputs[2] = std::move(present[1]);
  });
}

std::string support_attention(const Node& node, int64_t /*opset*/) {
  std::string why = float_inputs_reason(node);
  if (!why.empty()) return why;
  if (node.num_inputs() < 1 || node.num_inputs() > 8 || !node.input(0)) {
    return "expects inputs Q, K, V, an optional mask, cos and sin, past key and value";
  }
  const bool cached = node.num_inputs() > 6 && node.input(6);
  if (node.num_outputs() > (cached ? 3u : 1u)) {
    return "present key and value outputs come with past key and value inputs";
  }
  try {
    const AttnAttrs a = read_attn_attrs(node);
    const bool kv = node.input(1) || node.input(2);
    if (a.packed && kv) return "with qkv_packed = 1, inputs 1 and 2 must be omitted";
    if (!a.packed && !(node.input(1) && node.input(2))) return "inputs K and V are required";
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace
}  // namespace nnfuse::ref

namespace nnfuse {

void append_attention_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"MultiHeadAttention", ref::run_attention, ref::support_attention});
}

}  // namespace nnfuse
