// Reference GroupNorm(X, Gamma, Beta, T?, TW?, TB?) (ai.nnfuse), float32: X [N, C, spatial...]
// with its C channels cut into num_groups groups of C / num_groups consecutive channels;
//   x' = x + a[n, c],  y = act((x' - mean) / sqrt(var + epsilon) * Gamma[c] + Beta[c]),
// mean and var of x' over each (n, group)'s channels and spatial positions, in double with the
// two-pass formula (mean first, then the mean squared deviation), rounded once. The addend a
// (a diffusion UNet's time embedding, added to the conv output the norm reads) is T itself, of
// N or 1 rows of C values ([N, C] or [N, C, 1, ...]), or with TW the dense layer T [N, K] x
// TW [K, C] + TB [C]; absent, a is 0. With t_activation = "SiLU", T is first replaced by its
// SiLU, t * sigmoid(t) (the embedding's activation before its dense layer). The activation
// is the epilogue of fused.h (attributes activation, activation_alpha, activation_beta).
// PyTorch's GroupNorm (exported as Reshape, InstanceNormalization, Reshape, Mul, Add) and
// InstanceNormalization (num_groups = C) are both this op.
#include "kernels/ref/group_norm.h"

#include <cmath>

#include "kernels/ref/fused.h"
#include "kernels/ref/nn_internal.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/util.h"

namespace nnfuse {

std::vector<double> ref::group_norm_addend(const Tensor* t, const Tensor* w, const Tensor* b,
                                           int64_t n, int64_t c, const std::string& who) {
  std::vector<double> a(static_cast<size_t>(n * c));
  if (!t) return a;
  NNFUSE_CHECK(t->dtype() == DType::kFloat32 && (!w || w->dtype() == DType::kFloat32) &&
                   (!b || b->dtype() == DType::kFloat32),
               who, ": T, TW and TB must be float32");
  const int64_t rows = t->rank() >= 1 ? t->dim(0) : 0;
  NNFUSE_CHECK(rows == 1 || rows == n, who, ": T ", dims_str(t->shape()), " has not 1 or ", n,
               " rows");
  if (!w) {
    NNFUSE_CHECK(t->numel() == rows * c, who, ": T ", dims_str(t->shape()), " is not ", c,
                 " values a row");
    for (int64_t i = 0; i < n * c; ++i) a[i] = t->data<float>()[rows == 1 ? i % c : i];
    return a;
  }
  const int64_t k = t->numel() / rows;
  NNFUSE_CHECK(w->shape() == (Dims{k, c}), who, ": TW ", dims_str(w->shape()), " is not [", k, ", ",
               c, "]");
  NNFUSE_CHECK(!b || b->shape() == Dims{c}, who, ": TB ", dims_str(b->shape()), " is not [", c,
               "]");
  for (int64_t i = 0; i < n; ++i) {
    const float* ti = t->data<float>() + (rows == 1 ? 0 : i * k);
    for (int64_t j = 0; j < c; ++j) {
      double v = b ? b->data<float>()[j] : 0.0;
      for (int64_t p = 0; p < k; ++p) v += static_cast<double>(ti[p]) * w->data<float>()[p * c + j];
      a[i * c + j] = v;
    }
  }
  return a;
}

const Tensor* ref::activated_t(bool silu, const Tensor* t, Tensor& storage) {
  if (!t || !silu) return t;
  NNFUSE_CHECK(t->dtype() == DType::kFloat32, "GroupNorm: T must be float32");
  storage = Tensor::uninitialized(DType::kFloat32, t->shape());
  const float* from = t->data<float>();
  float* to = storage.data<float>();
  for (int64_t i = 0; i < t->numel(); ++i) {
    const double v = from[i];
    to[i] = static_cast<float>(v / (1.0 + std::exp(-v)));
  }
  return &storage;
}

namespace {

std::string support_group_norm(const Node& node, int64_t /*opset*/) {
  if (node.num_inputs() < 3 || node.num_inputs() > 6 || node.num_outputs() != 1) {
    return "not 3 to 6 inputs and 1 output";
  }
  if (std::string why = ref::float_inputs_reason(node); !why.empty()) return why;
  if (std::string why = ref::t_activation_reason(node); !why.empty()) return why;
  return ref::activation_reason(node);
}

void run_group_norm(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::string who = ctx.node.describe();
  for (size_t i = 0; i < 3; ++i) ref::check_input_dtype(ctx, i, DType::kFloat32);
  NNFUSE_CHECK(x.rank() >= 3, who, ": X must have rank >= 3 (N, C, spatial...), got ",
               dims_str(x.shape()));
  const int64_t n = x.dim(0), c = x.dim(1), groups = ctx.node.attr_int("num_groups", 0);
  NNFUSE_CHECK(groups >= 1 && c % groups == 0, who, ": num_groups ", groups,
               " does not divide the ", c, " channels");
  const Tensor& gamma = ctx.in(1);
  const Tensor& beta = ctx.in(2);
  NNFUSE_CHECK(gamma.shape() == Dims{c} && beta.shape() == Dims{c}, who, ": Gamma ",
               dims_str(gamma.shape()), " and Beta ", dims_str(beta.shape()), " must be [", c, "]");
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  const ref::Activation act = ref::read_activation(ctx.node);
  const int64_t inner = c == 0 || n == 0 ? 0 : x.numel() / (n * c);
  const int64_t per_group = c / groups * inner;  // elements of one (n, group)
  auto in = [&](size_t i) { return ctx.has_input(i) ? &ctx.in(i) : nullptr; };
  Tensor t_storage;
  const Tensor* t = ref::activated_t(ref::t_silu(ctx.node), in(3), t_storage);
  const std::vector<double> a = ref::group_norm_addend(t, in(4), in(5), n, c, who);
  Tensor y(DType::kFloat32, x.shape());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  std::vector<double> xg(static_cast<size_t>(per_group));
  for (int64_t g = 0; g < n * groups; ++g) {
    const int64_t first = (g % groups) * (c / groups);  // the group's first channel
    for (int64_t i = 0; i < per_group; ++i) {
      xg[i] = px[g * per_group + i] + a[(g / groups) * c + first + i / inner];
    }
    double s = 0;
    for (int64_t i = 0; i < per_group; ++i) s += xg[i];
    const double mean = per_group > 0 ? s / static_cast<double>(per_group) : 0.0;
    double ss = 0;
    for (int64_t i = 0; i < per_group; ++i) ss += (xg[i] - mean) * (xg[i] - mean);
    const double inv = 1.0 / std::sqrt((per_group > 0 ? ss / per_group : 0.0) + eps);
    for (int64_t i = 0; i < per_group; ++i) {
      const int64_t ch = first + i / inner;
      const double v = (xg[i] - mean) * inv * gamma.data<float>()[ch] + beta.data<float>()[ch];
      py[g * per_group + i] = static_cast<float>(ref::apply_activation(act, v));
    }
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void append_group_norm_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"GroupNorm", run_group_norm, support_group_norm});
}

}  // namespace nnfuse
