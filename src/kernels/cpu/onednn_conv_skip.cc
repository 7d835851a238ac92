// FusedConv whose residual is a second convolution (ref/conv_skip.h: a ResBlock's projected skip
// connection): the skip convolution, a ConvKernel of its own whose weights are prepacked like
// the main one's, writes its result into Y first, and the main conv's sum post-op adds it.
#include <algorithm>

#include "kernels/cpu/onednn_conv.h"

namespace nnfuse::onednn {

namespace {

class SkipConvKernel : public Kernel {
 public:
  SkipConvKernel(const NodeInfo& info, const ConvSpec& s, const ConvSpec& skip)
      : what_(info.node.describe()),
        x_shape_(s.x_shape),
        y_shape_(s.y_shape),
        x_layout_(s.in_layout),
        y_layout_(s.out_layout),
        main_(info, s) {
    const ref::SkipPart part = ref::skip_part(info.node);
    skip_ = std::make_unique<ConvKernel>(skip_info(info, part), skip);
  }

  // The weights and biases of both convolutions are prepacked.
  bool reads_input(size_t i) const override {
    return main_.reads_input(i) && i != ref::kSkipInput + 1 && i != ref::kSkipInput + 2;
  }
  // The skip convolution runs before the rest, so both use the scratch from its start.
  size_t scratch_bytes() const override {
    return std::max(main_.scratch_bytes(), skip_->scratch_bytes());
  }
  void release_own_scratch() override {
    main_.release_own_scratch();
    skip_->release_own_scratch();
  }

  // The skip convolution of X2 (input 4) into Y, then the conv of X adding Y.
  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, x_shape_, x_layout_, what_, 0);
    Tensor& y = io.output(0, DType::kFloat32, y_shape_, y_layout_);
    NNFUSE_CHECK(io.has_input(ref::kSkipInput), what_, ": the skip convolution's input is missing");
    const Tensor& x2 = io.in(ref::kSkipInput);
    NNFUSE_CHECK(y.raw() != x.raw() && y.raw() != x2.raw(), what_,
                 ": the output may not share an input's storage");
    KernelIO part;
    part.inputs = {&x2};
    part.outputs.push_back(Tensor::borrow(DType::kFloat32, y_shape_, y.raw()));
    part.outputs[0].set_layout(y_layout_);
    part.scratch = io.scratch;
    skip_->run(part);
    main_.run_conv(x, y, &y, io.scratch);
  }

 private:
  std::string what_;
  Dims x_shape_, y_shape_;
  Layout x_layout_, y_layout_;
  ConvKernel main_;
  std::unique_ptr<ConvKernel> skip_;  // the skip convolution (ConvSpec::skip)
};

}  // namespace

std::unique_ptr<Kernel> make_skip_conv_kernel(const NodeInfo& info, const ConvSpec& s,
                                              const ConvSpec& skip) {
  return std::make_unique<SkipConvKernel>(info, s, skip);
}

}  // namespace nnfuse::onednn
