// Reference kernels of the fused normalizations (domain ai.nnfuse), over the last axis of E
// elements, float32, with means and variances in double (two passes, as LayerNormalization's
// reference kernel):
//   SkipLayerNorm(X, Skip, gamma, beta?, bias?) -> Y, S?
//       S = (X + bias) + Skip, added in float32 as the unfused Adds round (X + Skip without
//       bias); Y = (S - mean(S)) / sqrt(mean((S - mean(S))^2) + epsilon) * gamma + beta.
//       Skip broadcasts to X's shape (numpy rules, not growing it).
//   RMSNorm(X, gamma?) -> Y = X / sqrt(mean(X^2) + epsilon) * gamma
// gamma, beta and bias hold one value per element of the last axis (shape [E], or with
// leading 1s, of rank at most X's).
#include <cmath>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {
namespace {

// Input i as E doubles (a per-feature parameter), or empty when the input is absent.
std::vector<double> feature_param(const KernelContext& ctx, size_t i, int64_t e, const char* what) {
  if (!ctx.has_input(i)) return {};
  const Tensor& t = ctx.in(i);
  check_input_dtype(ctx, i, DType::kFloat32);
  bool ok = t.rank() >= 1 && t.rank() <= ctx.in(0).rank() && t.dim(t.rank() - 1) == e;
  for (int64_t d = 0; ok && d + 1 < t.rank(); ++d) ok = t.dim(d) == 1;
  NNFUSE_CHECK(ok, ctx.node.describe(), ": ", what, " has shape ", dims_str(t.shape()),
               ", expected [", e, "] (one value per element of the last axis)");
  std::vector<double> v(static_cast<size_t>(e));
  for (int64_t k = 0; k < e; ++k) v[static_cast<size_t>(k)] = t.data<float>()[k];
  return v;
}

// Rows of E elements of a tensor of rank >= 1: E and the number of rows.
std::pair<int64_t, int64_t> rows_of(const KernelContext& ctx, const Tensor& x) {
  NNFUSE_CHECK(x.rank() >= 1, ctx.node.describe(), ": input must have rank >= 1");
  const int64_t e = x.dim(x.rank() - 1);
  return {e, e == 0 ? 0 : x.numel() / e};
}

void run_skip_layer_norm(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  const Tensor& skip = ctx.in(1);
  check_input_dtype(ctx, 0, DType::kFloat32);
  check_input_dtype(ctx, 1, DType::kFloat32);
  const auto [e, rows] = rows_of(ctx, x);
  NNFUSE_CHECK(
      skip.rank() <= x.rank() && broadcast_shapes(skip.shape(), x.shape(), node) == x.shape(),
      node.describe(), ": Skip of shape ", dims_str(skip.shape()),
      " does not broadcast to X's shape ", dims_str(x.shape()));
  const std::vector<double> gamma = feature_param(ctx, 2, e, "gamma");
  NNFUSE_CHECK(!gamma.empty() || e == 0, node.describe(), ": gamma is required");
  const std::vector<double> beta = feature_param(ctx, 3, e, "beta");
  const std::vector<double> bias = feature_param(ctx, 4, e, "bias");
  const double eps = node.attr_float("epsilon", 1e-5f);

  Tensor s(DType::kFloat32, x.shape());
  const float* xd = x.data<float>();
  const float* kd = skip.data<float>();
  float* sd = s.data<float>();
  for (BroadcastIter it(x.shape(), {broadcast_strides(skip.shape(), x.shape())}); !it.done();
       it.next()) {
    const int64_t i = it.linear();
    float v = xd[i];
    if (!bias.empty()) v = v + static_cast<float>(bias[static_cast<size_t>(i % e)]);
    sd[i] = v + kd[it.offset(0)];
  }
  Tensor y(DType::kFloat32, x.shape());
  float* yd = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* sr = sd + r * e;
    double sum = 0;
    for (int64_t i = 0; i < e; ++i) sum += sr[i];
    const double mu = sum / static_cast<double>(e);
    double ss = 0;
    for (int64_t i = 0; i < e; ++i) ss += (sr[i] - mu) * (sr[i] - mu);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(e) + eps);
    for (int64_t i = 0; i < e; ++i) {
      double v = (sr[i] - mu) * inv * gamma[static_cast<size_t>(i)];
      if (!beta.empty()) v += beta[static_cast<size_t>(i)];
      yd[r * e + i] = static_cast<float>(v);
    }
  }
  ctx.outputs[0] = std::move(y);
  if (ctx.wants_output(1)) ctx.outputs[1] = std::move(s);
}

void run_rms_norm(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  check_input_dtype(ctx, 0, DType::kFloat32);
  const auto [e, rows] = rows_of(ctx, x);
  const std::vector<double> gamma = feature_param(ctx, 1, e, "gamma");
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  Tensor y(DType::kFloat32, x.shape());
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xd + r * e;
    double ss = 0;
    for (int64_t i = 0; i < e; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(e) + eps);
    for (int64_t i = 0; i < e; ++i) {
      double v = xr[i] * inv;
      if (!gamma.empty()) v *= gamma[static_cast<size_t>(i)];
      yd[r * e + i] = static_cast<float>(v);
    }
  }
  ctx.outputs[0] = std::move(y);
}

std::string support_float32(const Node& node, int64_t /*opset*/) {
  return require_input_types(node, {DType::kFloat32});
}

}  // namespace

}  // namespace nnfuse::ref

namespace nnfuse {

void append_norm_fused_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"SkipLayerNorm", ref::run_skip_layer_norm, ref::support_float32});
  t.push_back({"RMSNorm", ref::run_rms_norm, ref::support_float32});
}

}  // namespace nnfuse
