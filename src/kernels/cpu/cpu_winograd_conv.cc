// The project's own Winograd F(4x4, 3x3) kernel (cpu_winograd.h) as the kernel of a conv node
// (Conv, FusedConv, FusedConvPool): NHWC in, NHWC out (at a Concat's pitch where it is a part of
// one), the bias, residual and activation applied as the tiles are written. FusedConvPool's conv
// writes an NHWC buffer in the run's scratch, which oneDNN's pooling reads (in cache) into Y,
// through a reorder where Y wants another layout or is a part of a Concat.
#include <mutex>

#include "kernels/cpu/cpu_conv.h"
#include "kernels/cpu/cpu_winograd.h"
#include "kernels/cpu/onednn_conv.h"

namespace nnfuse::onednn {

using dnnl::memory;

namespace {

cpu::WinogradGeometry winograd_geometry_of(const ConvSpec& s) {
  cpu::WinogradGeometry g;
  g.n = s.x_shape[0];
  g.cin = s.x_shape[1];
  g.h = s.x_shape[2];
  g.w = s.x_shape[3];
  g.cout = s.y_shape[1];
  g.oh = s.y_shape[2];
  g.ow = s.y_shape[3];
  g.pad_t = s.pad_l[0];
  g.pad_l = s.pad_l[1];
  return g;
}

class OwnWinogradKernel : public Kernel {
 public:
  OwnWinogradKernel(const NodeInfo& info, const ConvSpec& s)
      : what_(info.node.describe()),
        s_(s),
        conv_(winograd_geometry_of(s), info.constant(1)->data<float>(),
              s.bias ? info.constant(2)->data<float>() : nullptr, s.act, info.num_threads),
        scratch_(conv_.scratch_bytes()) {
    if (s_.pool) guarded(what_, [&] { init_pool(); });
  }

  bool reads_input(size_t i) const override { return i != 1 && i != 2; }
  size_t scratch_bytes() const override { return scratch_.bytes(); }
  void release_own_scratch() override { scratch_.release_own(); }

  // Concat in place: the output tiles (or the pooled output, reordered) are written at any
  // pitch. Not with a residual, which is read at the output's own.
  bool write_output_rows(size_t k, int64_t pitch) override {
    const Dims& y = s_.pool ? s_.pool->spec.y_shape : s_.y_shape;
    const Layout layout = s_.pool ? s_.pool->out_layout : s_.out_layout;
    if (k != 0 || pitch_ != 0 || s_.sum || layout != Layout::kNHWC || pitch < y[1]) return false;
    if (s_.pool) {
      guarded(what_, [&] {
        const memory::desc rows = rows_desc(y, pitch);
        if (!pooled_) pooled_ = scratch_.add(pool_dst_desc_);
        user_dst_ = memory(rows, engine(), DNNL_MEMORY_NONE);
        from_pooled_ = make_reorder(pooled_, user_dst_);
      });
    }
    pitch_ = pitch;
    return true;
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, s_.x_shape, s_.in_layout, what_, 0);
    NNFUSE_CHECK(pitch_ == 0 || io.outputs[0].defined(), what_,
                 ": output 0 is a part of a Concat in place but has no planned storage");
    Tensor& y = s_.pool ? io.output(0, DType::kFloat32, s_.pool->spec.y_shape, s_.pool->out_layout)
                        : io.output(0, DType::kFloat32, s_.y_shape, s_.out_layout);
    NNFUSE_CHECK(y.raw() != x.raw(), what_, ": the output may not share X's storage");
    const float* sum = nullptr;
    if (s_.sum) {
      const Tensor& t = io.in(3);
      check_input(t, s_.y_shape, s_.sum_layout, what_, 3);
      sum = t.data<float>();
      NNFUSE_CHECK(!s_.pool || t.raw() != y.raw(), what_,
                   ": the pooled output may not share Sum's storage");
    }
    std::lock_guard<std::mutex> lock(mu_);  // guards the memory objects and the own scratch
    std::byte* scratch = scratch_.bind(io.scratch);
    if (!s_.pool) {
      conv_.run(x.data<float>(), y.data<float>(), pitch_ != 0 ? pitch_ : s_.y_shape[1], sum,
                scratch);
      return;
    }
    conv_.run(x.data<float>(), static_cast<float*>(conv_out_.get_data_handle()), s_.y_shape[1], sum,
              scratch);
    guarded(what_, [&] {
      user_dst_.set_data_handle(y.raw());
      run_pool(pool_, conv_out_, pooled_, from_pooled_, user_dst_);
    });
  }

 private:
  // The pool over the conv's NHWC output, in oneDNN's format for it; pooled into a scratch
  // buffer and reordered where Y's layout differs.
  void init_pool() {
    const PoolSpec& p = s_.pool->spec;
    conv_out_ = scratch_.add(f32_desc(s_.y_shape, Layout::kNHWC));
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, p.alg,
                                     conv_out_.get_desc(), f32_desc(p.y_shape, Tag::any),
                                     to_dims(p.strides), to_dims(p.kernel), to_dims(p.dilations),
                                     to_dims(p.pad_l), to_dims(p.pad_r));
    dnnl::pooling_v2_forward::primitive_desc ppd(d, user_scratchpad_attr(), engine());
    pool_ = dnnl::pooling_v2_forward(ppd);
    pool_dst_desc_ = ppd.dst_desc();
    user_dst_ = memory(f32_desc(p.y_shape, s_.pool->out_layout), engine(), DNNL_MEMORY_NONE);
    if (pool_dst_desc_ != user_dst_.get_desc()) {
      pooled_ = scratch_.add(pool_dst_desc_);
      from_pooled_ = make_reorder(pooled_, user_dst_);
    }
  }

  std::string what_;
  ConvSpec s_;
  cpu::WinogradConv conv_;
  // The Winograd kernel's scratch first, then the pool's buffers.
  ScratchParts scratch_;
  int64_t pitch_ = 0;  // the output's pitch as a part of a Concat in place, or 0
  dnnl::primitive pool_, from_pooled_;
  memory conv_out_, pooled_, user_dst_;
  memory::desc pool_dst_desc_;
  std::mutex mu_;
};

}  // namespace

std::string own_winograd_declines(const ConvSpec& s) {
  if (!winograd_geometry(s)) return "not an unstrided, undilated, ungrouped 2-D 3x3 conv";
  if (s.skip) return "a skip convolution";
  if (s.in_layout != Layout::kNHWC || s.out_layout != Layout::kNHWC) {
    return "its input is not channels-last";
  }
  if (s.sum && s.sum_layout != Layout::kNHWC) return "its residual is not channels-last";
  for (size_t j = 0; j < 2; ++j) {
    if (s.pad_l[j] < 0 || s.pad_r[j] < 0) return "negative pads";
  }
  return cpu::winograd_declines(s.act);
}

std::unique_ptr<Kernel> make_own_winograd_kernel(const NodeInfo& info, const ConvSpec& s) {
  return std::make_unique<OwnWinogradKernel>(info, s);
}

}  // namespace nnfuse::onednn
