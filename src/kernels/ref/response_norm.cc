// Reference GlobalResponseNorm (ops/response_norm.h): each map's L2 norm, its ratio to their
// mean, and Gamma * (X * N) + Beta + X, in double, rounded once.
#include "ops/response_norm.h"

#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

namespace {

std::string support_response_norm(const Node& node, int64_t) {
  for (size_t i = 0; i < 3; ++i) {
    const Value* v = node.input(i);
    if (!v) return "input " + std::to_string(i) + " is missing";
    if (v->dtype() != DType::kFloat32 && v->dtype() != DType::kUndefined) {
      return "input '" + v->name() + "' is " + dtype_name(v->dtype()) + ", not float32";
    }
  }
  return "";
}

void run_response_norm(KernelContext& ctx) {
  const Tensor& x = ctx.in(ops::response_norm::kX);
  const Tensor& gamma = ctx.in(ops::response_norm::kGamma);
  const Tensor& beta = ctx.in(ops::response_norm::kBeta);
  const std::string who = ctx.node.describe();
  NNFUSE_CHECK(x.dtype() == DType::kFloat32 && gamma.dtype() == DType::kFloat32 &&
                   beta.dtype() == DType::kFloat32,
               who, ": GlobalResponseNorm takes float32 tensors");
  NNFUSE_CHECK(x.rank() >= 3, who, ": X must have rank 3 or more, got ", dims_str(x.shape()));
  const int64_t axis = ops::response_norm_channel_axis(ctx.node, x.rank());
  const int64_t n = x.dim(0), c = x.dim(axis);
  NNFUSE_CHECK(gamma.numel() == c && beta.numel() == c, who, ": Gamma ", dims_str(gamma.shape()),
               " and Beta ", dims_str(beta.shape()), " must hold ", c, " values");
  const int64_t p = c == 0 || n == 0 ? 0 : x.numel() / (n * c);  // spatial positions
  const bool last = axis == x.rank() - 1;
  // Element (image i, position q, channel k).
  auto at = [&](int64_t i, int64_t q, int64_t k) {
    return last ? (i * p + q) * c + k : (i * c + k) * p + q;
  };
  const float* xd = x.data<float>();
  Tensor y(DType::kFloat32, x.shape());
  float* yd = y.data<float>();
  std::vector<double> norm(static_cast<size_t>(c));
  for (int64_t i = 0; i < n; ++i) {
    double mean = 0;
    for (int64_t k = 0; k < c; ++k) {
      double s = 0;
      for (int64_t q = 0; q < p; ++q) s += static_cast<double>(xd[at(i, q, k)]) * xd[at(i, q, k)];
      norm[k] = std::sqrt(s);
      mean += norm[k];
    }
    mean = c > 0 ? mean / static_cast<double>(c) : 0.0;
    const double eps = ctx.node.attr_float("epsilon", 1e-6f);
    for (int64_t k = 0; k < c; ++k) {
      const double scale = norm[k] / (mean + eps);
      for (int64_t q = 0; q < p; ++q) {
        const double v = xd[at(i, q, k)];
        yd[at(i, q, k)] =
            static_cast<float>(gamma.data<float>()[k] * (v * scale) + beta.data<float>()[k] + v);
      }
    }
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void append_response_norm_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"GlobalResponseNorm", run_response_norm, support_response_norm});
}

}  // namespace nnfuse
