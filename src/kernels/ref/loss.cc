// Reference kernels for the loss ops a model may compute at inference:
// NegativeLogLikelihoodLoss(input, target, weight?) and SoftmaxCrossEntropyLoss(scores,
// labels, weights?) -> (output, log_prob?).
//
// input is [N, C, d1, ..., dk] (k >= 0) and target [N, d1, ..., dk] of class indices. Each
// sample's loss is -input[n, c, d...] * weight[c] for c = target[n, d...] (weight 1 when
// absent), and 0, with weight 0, where c equals the ignore_index attribute. reduction "none"
// keeps the per-sample losses; "sum" adds them; "mean" (the default) divides that sum by the
// sum of the samples' weights. SoftmaxCrossEntropyLoss is that loss over LogSoftmax(scores)
// along the class axis, which it also returns as log_prob.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

struct LossShape {
  int64_t n = 0, c = 0, d = 1;  // d: the product of the spatial dims
  Dims per_sample;              // [N, d1, ..., dk]
};

LossShape loss_shape(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& t = ctx.in(1);
  const std::string what = ctx.node.describe();
  NNFUSE_CHECK(x.rank() >= 2, what, ": the input must be [N, C, d1, ..., dk], got ",
               dims_str(x.shape()));
  LossShape s;
  s.n = x.dim(0);
  s.c = x.dim(1);
  s.per_sample = {s.n};
  for (int64_t i = 2; i < x.rank(); ++i) {
    s.d *= x.dim(i);
    s.per_sample.push_back(x.dim(i));
  }
  NNFUSE_CHECK(t.shape() == s.per_sample, what, ": the target is ", dims_str(t.shape()),
               ", not [N, d1, ..., dk] = ", dims_str(s.per_sample), " of the input ",
               dims_str(x.shape()));
  if (ctx.has_input(2)) {
    NNFUSE_CHECK(ctx.in(2).shape() == Dims{s.c}, what, ": the weight is ",
                 dims_str(ctx.in(2).shape()), ", not [C] = [", s.c, "]");
  }
  return s;
}

// The reduced loss of log-probabilities `logp` ([N, C, d...], in C order) for the node's
// target (input 1), weight (input 2) and attributes.
template <typename T>
Tensor nll(const KernelContext& ctx, const LossShape& s, const T* logp, DType dtype) {
  const Tensor& target = ctx.in(1);
  const T* weight = ctx.has_input(2) ? ctx.in(2).data<T>() : nullptr;
  const bool has_ignore = ctx.node.has_attr("ignore_index");
  const int64_t ignore = ctx.node.attr_int("ignore_index", 0);
  const std::string reduction = ctx.node.attr_string("reduction", "mean");
  std::vector<double> loss(static_cast<size_t>(s.n * s.d));
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t p = 0; p < s.d; ++p) {
      const int64_t i = n * s.d + p, c = target.int_at(i);
      if (has_ignore && c == ignore) continue;
      NNFUSE_CHECK(c >= 0 && c < s.c, ctx.node.describe(), ": target value ", c, " at element ", i,
                   " is outside [0, ", s.c, ")",
                   has_ignore ? "" : " (the node has no ignore_index)");
      const double w = weight ? static_cast<double>(weight[c]) : 1.0;
      loss[static_cast<size_t>(i)] = -static_cast<double>(logp[(n * s.c + c) * s.d + p]) * w;
      loss_sum += loss[static_cast<size_t>(i)];
      weight_sum += w;
    }
  }
  if (reduction == "none") {
    Tensor y(dtype, s.per_sample);
    T* py = y.data<T>();
    for (size_t i = 0; i < loss.size(); ++i) py[i] = static_cast<T>(loss[i]);
    return y;
  }
  Tensor y(dtype, Dims{});
  y.data<T>()[0] = static_cast<T>(reduction == "sum" ? loss_sum : loss_sum / weight_sum);
  return y;
}

std::string loss_support(const Node& n, int64_t) {
  const std::string r = n.attr_string("reduction", "mean");
  if (r != "none" && r != "sum" && r != "mean") return "reduction '" + r + "' is not supported";
  std::string why = ref::require_input_types(n, {DType::kFloat32, DType::kFloat64}, 0, 1);
  if (why.empty()) why = ref::require_input_types(n, {DType::kInt32, DType::kInt64}, 1, 1);
  if (why.empty()) why = ref::require_input_types(n, {DType::kFloat32, DType::kFloat64}, 2, 1);
  return why;
}

void run_nll_loss(KernelContext& ctx) {
  const LossShape s = loss_shape(ctx);
  const Tensor& x = ctx.in(0);
  ref::dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    ctx.outputs[0] = nll<T>(ctx, s, x.data<T>(), x.dtype());
  });
}

void run_softmax_cross_entropy_loss(KernelContext& ctx) {
  const LossShape s = loss_shape(ctx);
  const Tensor& x = ctx.in(0);
  Tensor logp(x.dtype(), x.shape());
  ref::dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pl = logp.data<T>();
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t p = 0; p < s.d; ++p) {
        const int64_t base = n * s.c * s.d + p;
        double m = -INFINITY, sum = 0;
        for (int64_t c = 0; c < s.c; ++c) m = std::max(m, static_cast<double>(px[base + c * s.d]));
        for (int64_t c = 0; c < s.c; ++c)
          sum += std::exp(static_cast<double>(px[base + c * s.d]) - m);
        const double lse = m + std::log(sum);
        for (int64_t c = 0; c < s.c; ++c) {
          pl[base + c * s.d] = static_cast<T>(static_cast<double>(px[base + c * s.d]) - lse);
        }
      }
    }
    ctx.outputs[0] = nll<T>(ctx, s, pl, x.dtype());
  });
  if (ctx.outputs.size() > 1) ctx.outputs[1] = logp;
}

}  // namespace

void append_loss_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"NegativeLogLikelihoodLoss", run_nll_loss, loss_support});
  t.push_back({"SoftmaxCrossEntropyLoss", run_softmax_cross_entropy_loss, loss_support});
}

}  // namespace nnfuse
