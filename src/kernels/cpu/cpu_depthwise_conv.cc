// The project's own depthwise kernel (cpu_depthwise.h) as the kernel of a conv node (Conv,
// FusedConv): NHWC in and out, the bias and activation applied as the outputs are written.
#include "kernels/cpu/cpu_conv.h"
#include "kernels/cpu/cpu_depthwise.h"

namespace nnfuse::onednn {

namespace {

cpu::DepthwiseGeometry depthwise_geometry(const ConvSpec& s) {
  cpu::DepthwiseGeometry g;
  g.n = s.x_shape[0];
  g.c = s.x_shape[1];
  g.h = s.x_shape[2];
  g.w = s.x_shape[3];
  g.oh = s.y_shape[2];
  g.ow = s.y_shape[3];
  g.k = s.w_shape[2];
  g.stride = s.strides[0];
  g.pad_t = s.pad_l[0];
  g.pad_l = s.pad_l[1];
  return g;
}

class OwnDepthwiseKernel : public Kernel {
 public:
  OwnDepthwiseKernel(const NodeInfo& info, const ConvSpec& s)
      : what_(info.node.describe()),
        s_(s),
        conv_(depthwise_geometry(s), info.constant(1)->data<float>(),
              s.bias ? info.constant(2)->data<float>() : nullptr, s.act, info.num_threads) {}

  bool reads_input(size_t i) const override { return i != 1 && i != 2; }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, s_.x_shape, s_.in_layout, what_, 0);
    Tensor& y = io.output(0, DType::kFloat32, s_.y_shape, s_.out_layout);
    NNFUSE_CHECK(y.raw() != x.raw(), what_, ": the output may not share X's storage");
    conv_.run(x.data<float>(), y.data<float>());
  }

 private:
  std::string what_;
  ConvSpec s_;
  cpu::DepthwiseConv conv_;
};

}  // namespace

std::string own_depthwise_declines(const ConvSpec& s) {
  if (s.transpose || s.lift || s.x_shape.size() != 4) return "not a 2-D conv";
  if (s.group != s.x_shape[1] || s.w_shape[0] != s.group || s.w_shape[1] != 1 ||
      s.y_shape[1] != s.group) {
    return "not a depthwise conv (one input and one output channel per group)";
  }
  if (s.skip || s.sum || s.pool || !s.split.empty()) {
    return "a residual, pool or split it does not compute";
  }
  if (s.subsample) return "a strided 1x1 conv";
  if (s.in_layout != Layout::kNHWC || s.out_layout != Layout::kNHWC) {
    return "its input is not channels-last";
  }
  if (s.w_shape[2] != s.w_shape[3] || s.strides[0] != s.strides[1]) {
    return "a kernel or strides that differ between the axes";
  }
  if (s.dilations[0] != 0 || s.dilations[1] != 0) return "dilated";
  return cpu::depthwise_declines(depthwise_geometry(s));
}

std::unique_ptr<Kernel> make_own_depthwise_kernel(const NodeInfo& info, const ConvSpec& s) {
  return std::make_unique<OwnDepthwiseKernel>(info, s);
}

}  // namespace nnfuse::onednn
