// Reference GroupNorm(X, Gamma, Beta) (ai.nnfuse), float32: X [N, C, spatial...] with its C
// channels cut into num_groups groups of C / num_groups consecutive channels;
//   y = act((x - mean) / sqrt(var + epsilon) * Gamma[c] + Beta[c]),
// mean and var over each (n, group)'s channels and spatial positions, in double with the
// two-pass formula (mean first, then the mean squared deviation), rounded once. The activation
// is the epilogue of fused.h (attributes activation, activation_alpha, activation_beta).
// PyTorch's GroupNorm (exported as Reshape, InstanceNormalization, Reshape, Mul, Add) and
// InstanceNormalization (num_groups = C) are both this op.
#include <cmath>

#include "kernels/ref/fused.h"
#include "kernels/ref/nn_internal.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/util.h"

namespace nnfuse {

namespace {

std::string support_group_norm(const Node& node, int64_t /*opset*/) {
  if (node.num_inputs() != 3 || node.num_outputs() != 1) return "not 3 inputs and 1 output";
  if (std::string why = ref::float_inputs_reason(node); !why.empty()) return why;
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
  Tensor y(DType::kFloat32, x.shape());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t g = 0; g < n * groups; ++g) {
    const float* xg = px + g * per_group;
    double s = 0;
    for (int64_t i = 0; i < per_group; ++i) s += xg[i];
    const double mean = per_group > 0 ? s / static_cast<double>(per_group) : 0.0;
    double ss = 0;
    for (int64_t i = 0; i < per_group; ++i) ss += (xg[i] - mean) * (xg[i] - mean);
    const double inv = 1.0 / std::sqrt((per_group > 0 ? ss / per_group : 0.0) + eps);
    for (int64_t i = 0; i < per_group; ++i) {
      const int64_t ch = (g % groups) * (c / groups) + i / inner;
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
