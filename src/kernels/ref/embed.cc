// Reference kernel of EmbedLayerNorm (domain ai.nnfuse), the embedding block of a transformer:
//
//   EmbedLayerNorm(gamma, beta?, addend?, table_1, ids_1, ..., table_n, ids_n)
//     s      = addend + sum_k Gather(table_k, ids_k, axis=0)   (shape ids.shape + [E])
//     Y      = LayerNormalization(s, gamma, beta, axis=-1, epsilon)
//     outputs: Y, and optionally s (when the sum has other consumers)
//
// gamma and beta are [E], every table [V_k, E], every ids tensor int32 or int64 of one shape,
// the addend broadcasts to the output without growing it. Ids wrap when negative as Gather's
// do; an id out of range is an error naming the node. Sums and statistics are taken in double.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {
namespace {

constexpr size_t kFirstPair = 3;

bool int_ids(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

std::string support_embed(const Node& node, int64_t /*opset*/) {
  const size_t n = node.num_inputs();
  if (n < kFirstPair + 2 || (n - kFirstPair) % 2 != 0) {
    return "expects gamma, beta, addend, then (table, ids) pairs";
  }
  if (!node.input(0)) return "gamma (input 0) is required";
  for (size_t i = kFirstPair; i < n; i += 2) {
    if (!node.input(i) || !node.input(i + 1)) {
      return "table and ids of pair " + std::to_string((i - kFirstPair) / 2) + " are required";
    }
    const DType t = node.input(i + 1)->dtype();
    if (t != DType::kUndefined && !int_ids(t)) {
      return "ids (input " + std::to_string(i + 1) + ") of type " + dtype_name(t) +
             " are not int32 or int64";
    }
    std::string why = float_inputs_reason(node, i, 1);
    if (!why.empty()) return why;
  }
  std::string why = float_inputs_reason(node, 0, kFirstPair);
  if (!why.empty()) return why;
  try {
    node.attr_float("epsilon", 1e-5f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Wraps a negative id; throws naming the node when it is out of range.
int64_t checked_id(int64_t v, int64_t rows, const Node& node, size_t input) {
  const int64_t r = v < 0 ? v + rows : v;
  NNFUSE_CHECK(r >= 0 && r < rows, node.describe(), ": id ", v, " (input ", input,
               ") is out of range for a table of ", rows, " rows");
  return r;
}

void run_embed(KernelContext& ctx) {
  const Node& node = ctx.node;
  const std::string who = node.describe();
  const Tensor& gamma = ctx.in(0);
  const DType dt = gamma.dtype();
  NNFUSE_CHECK(gamma.rank() == 1, who, ": gamma has shape ", dims_str(gamma.shape()),
               ", expected [E]");
  const int64_t e = gamma.dim(0);
  if (ctx.has_input(1)) {
    NNFUSE_CHECK(ctx.in(1).shape() == Dims{e}, who, ": beta has shape ",
                 dims_str(ctx.in(1).shape()), ", expected [", e, "]");
    check_input_dtype(ctx, 1, dt);
  }
  const size_t pairs = (ctx.num_inputs() - kFirstPair) / 2;
  const Tensor& ids0 = ctx.in(kFirstPair + 1);
  std::vector<std::vector<int64_t>> ids(pairs);
  for (size_t k = 0; k < pairs; ++k) {
    const size_t ti = kFirstPair + 2 * k;
    const Tensor& table = ctx.in(ti);
    const Tensor& id = ctx.in(ti + 1);
    check_input_dtype(ctx, ti, dt);
    NNFUSE_CHECK(table.rank() == 2 && table.dim(1) == e, who, ": table (input ", ti, ") has shape ",
                 dims_str(table.shape()), ", expected [V, ", e, "]");
    NNFUSE_CHECK(int_ids(id.dtype()), who, ": ids (input ", ti + 1, ") have type ",
                 dtype_name(id.dtype()), ", expected int32 or int64");
    NNFUSE_CHECK(id.shape() == ids0.shape(), who, ": ids (input ", ti + 1, ") have shape ",
                 dims_str(id.shape()), ", the first ids have ", dims_str(ids0.shape()));
    ids[k] = id.to_int64_vector();
    for (int64_t& v : ids[k]) v = checked_id(v, table.dim(0), node, ti + 1);
  }
  Dims out = ids0.shape();
  out.push_back(e);
  Dims addend_strides;
  if (ctx.has_input(2)) {
    const Tensor& a = ctx.in(2);
    check_input_dtype(ctx, 2, dt);
    NNFUSE_CHECK(a.rank() <= static_cast<int64_t>(out.size()) &&
                     broadcast_shapes(a.shape(), out, node) == out,
                 who, ": the addend of shape ", dims_str(a.shape()),
                 " does not broadcast to the output shape ", dims_str(out));
    addend_strides = broadcast_strides(a.shape(), out);
  }
  const int64_t rows = static_cast<int64_t>(ids0.numel());
  const double eps = node.attr_float("epsilon", 1e-5f);
  const bool want_sum = ctx.wants_output(1);
  Tensor y(dt, out);
  Tensor sum_out = want_sum ? Tensor(dt, out) : Tensor();
  dispatch_float(dt, who, [&](auto tag) {
    using T = decltype(tag);
    // s = addend (broadcast) + the gathered rows, in double.
    std::vector<double> s(static_cast<size_t>(rows * e), 0.0);
    if (ctx.has_input(2)) {
      const T* pa = ctx.in(2).template data<T>();
      for (BroadcastIter it(out, {addend_strides}); !it.done(); it.next()) {
        s[static_cast<size_t>(it.linear())] = static_cast<double>(pa[it.offset(0)]);
      }
    }
    for (size_t k = 0; k < pairs; ++k) {
      const T* table = ctx.in(kFirstPair + 2 * k).template data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const T* src = table + ids[k][static_cast<size_t>(r)] * e;
        for (int64_t j = 0; j < e; ++j) s[static_cast<size_t>(r * e + j)] += src[j];
      }
    }
    const T* pg = gamma.data<T>();
    const T* pb = ctx.has_input(1) ? ctx.in(1).template data<T>() : nullptr;
    T* py = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const double* sr = s.data() + r * e;
      double mean = 0;
      for (int64_t j = 0; j < e; ++j) mean += sr[j];
      mean /= static_cast<double>(e);
      double var = 0;
      for (int64_t j = 0; j < e; ++j) var += (sr[j] - mean) * (sr[j] - mean);
      var /= static_cast<double>(e);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < e; ++j) {
        double v = (sr[j] - mean) * inv * static_cast<double>(pg[j]);
        if (pb) v += static_cast<double>(pb[j]);
        py[r * e + j] = static_cast<T>(v);
      }
    }
    if (want_sum) {
      T* ps = sum_out.data<T>();
      for (int64_t i = 0; i < rows * e; ++i) ps[i] = static_cast<T>(s[static_cast<size_t>(i)]);
    }
  });
  ctx.outputs[0] = std::move(y);
  if (want_sum) ctx.outputs[1] = std::move(sum_out);
}

}  // namespace
}  // namespace nnfuse::ref

namespace nnfuse {

void append_embed_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"EmbedLayerNorm", ref::run_embed, ref::support_embed});
}

}  // namespace nnfuse
