// Reference ScaleShift(X, Scale, Shift) (ai.nnfuse): y = act(x * Scale[c] + Shift[c]) over
// the channel dim 1 of X [N, C, ...], in double, rounded once: an inference BatchNormalization
// with its statistics folded into the two vectors, and the epilogue activation of fused.h
// (attributes activation, activation_alpha, activation_beta; none when absent).
#include "kernels/ref/fused.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/util.h"

namespace nnfuse {

namespace {

void run_scale_shift(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& a = ctx.in(1);
  const Tensor& b = ctx.in(2);
  const std::string who = ctx.node.describe();
  NNFUSE_CHECK(
      x.dtype() == DType::kFloat32 && a.dtype() == DType::kFloat32 && b.dtype() == DType::kFloat32,
      who, ": ScaleShift takes float32 tensors");
  NNFUSE_CHECK(x.rank() >= 2, who, ": X must have rank >= 2, got ", dims_str(x.shape()));
  const int64_t c = x.dim(1);
  NNFUSE_CHECK(a.shape() == Dims{c} && b.shape() == Dims{c}, who, ": Scale ", dims_str(a.shape()),
               " and Shift ", dims_str(b.shape()), " must be [", c, "]");
  const ref::Activation act = ref::read_activation(ctx.node);
  const int64_t inner = x.numel() / std::max<int64_t>(1, x.dim(0) * c);
  Tensor y(DType::kFloat32, x.shape());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t ch = (i / inner) % c;
    py[i] = static_cast<float>(ref::apply_activation(
        act, static_cast<double>(px[i]) * a.data<float>()[ch] + b.data<float>()[ch]));
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void append_scale_shift_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"ScaleShift", run_scale_shift, nullptr});
}

}  // namespace nnfuse
