// Reference ScaleShift(X, Scale, Shift, X2, ..., Xn) (ai.nnfuse): y = act(x * Scale[c] + Shift[c])
// over the channel dim 1 of X [N, C, ...], in double, rounded once: an inference
// BatchNormalization with its statistics folded into the two vectors, and the epilogue
// activation of fused.h (attributes activation, activation_alpha, activation_beta; none when
// absent). Inputs from 3 on are further parts of X: X is then the concatenation of X, X2, ...,
// Xn along dim 1 (a pre-activation BatchNormalization of a Concat, applied as it is written),
// and C the sum of their channels.
#include "kernels/ref/fused.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/util.h"

namespace nnfuse {

namespace {

void run_scale_shift(KernelContext& ctx) {
  const Tensor& a = ctx.in(1);
  const Tensor& b = ctx.in(2);
  const std::string who = ctx.node.describe();
  std::vector<const Tensor*> parts = {&ctx.in(0)};
  for (size_t i = 3; i < ctx.inputs.size(); ++i) parts.push_back(&ctx.in(i));
  const Tensor& x = *parts[0];
  NNFUSE_CHECK(a.dtype() == DType::kFloat32 && b.dtype() == DType::kFloat32, who,
               ": ScaleShift takes float32 tensors");
  NNFUSE_CHECK(x.rank() >= 2, who, ": X must have rank >= 2, got ", dims_str(x.shape()));
  Dims shape = x.shape();
  shape[1] = 0;
  for (const Tensor* p : parts) {
    Dims d = p->shape();
    NNFUSE_CHECK(p->dtype() == DType::kFloat32, who, ": ScaleShift takes float32 tensors");
    NNFUSE_CHECK(d.size() == shape.size(), who, ": the parts of X ", dims_str(x.shape()), " and ",
                 dims_str(d), " differ in rank");
    shape[1] += d[1];
    d[1] = shape[1];
    NNFUSE_CHECK(d == shape, who, ": the parts of X ", dims_str(x.shape()), " and ",
                 dims_str(p->shape()), " differ outside dim 1");
  }
  const int64_t c = shape[1];
  NNFUSE_CHECK(a.shape() == Dims{c} && b.shape() == Dims{c}, who, ": Scale ", dims_str(a.shape()),
               " and Shift ", dims_str(b.shape()), " must be [", c, "]");
  const ref::Activation act = ref::read_activation(ctx.node);
  Tensor y(DType::kFloat32, shape);
  const int64_t inner = checked_numel(shape) / std::max<int64_t>(1, shape[0] * c);
  int64_t first = 0;  // the part's first channel in Y
  for (const Tensor* p : parts) {
    const int64_t pc = p->dim(1);
    const float* px = p->data<float>();
    for (int64_t i = 0; i < p->numel(); ++i) {
      const int64_t n = i / (pc * inner), ch = first + (i / inner) % pc;
      y.data<float>()[(n * c + ch) * inner + i % inner] = static_cast<float>(ref::apply_activation(
          act, static_cast<double>(px[i]) * a.data<float>()[ch] + b.data<float>()[ch]));
    }
    first += pc;
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void append_scale_shift_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"ScaleShift", run_scale_shift, nullptr});
}

}  // namespace nnfuse
