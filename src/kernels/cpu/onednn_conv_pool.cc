// FusedConvPool on oneDNN: the conv into a buffer of the kernel's own (Winograd's blocked one,
// or channels-last), then the MaxPool from that buffer while it is in cache, so the full-size
// conv output is never written out, only the pooled one (cost/winograd_rule.h says where that
// pays; ConvMaxPoolFusionPass fuses there).
#include "kernels/cpu/onednn_conv.h"

namespace nnfuse::onednn {

using dnnl::memory;

namespace {

// X (reordered when the conv wants another layout) -> conv into a buffer of our own (Sum
// reordered into it first) -> MaxPool from that buffer into Y.
class ConvPoolKernel : public ConvBase {
 public:
  ConvPoolKernel(const NodeInfo& info, const ConvSpec& spec) : ConvBase(info, spec) {
    ThreadScope threads(info.num_threads);
    guarded(what_, [&] {
      bind_src(cp_.winograd || s_.in_layout == Layout::kPlain || s_.subsample);
      bind_own_dst();
      // oneDNN's fast pooling kernels keep the source's format: pool in the conv's format, then
      // reorder the (4x smaller) result into Y's layout.
      const PoolSpec& p = s_.pool->spec;
      const memory::desc user_dst = f32_desc(p.y_shape, s_.pool->out_layout);
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, p.alg,
                                       cp_.pd.dst_desc(0), f32_desc(p.y_shape, Tag::any),
                                       to_dims(p.strides), to_dims(p.kernel), to_dims(p.dilations),
                                       to_dims(p.pad_l), to_dims(p.pad_r));
      dnnl::pooling_v2_forward::primitive_desc ppd(d, user_scratchpad_attr(), engine());
      pool_ = dnnl::pooling_v2_forward(ppd);
      user_dst_ = memory(user_dst, engine(), DNNL_MEMORY_NONE);
      if (ppd.dst_desc() != user_dst) {
        pooled_ = scratch_memory(ppd.dst_desc());
        from_pooled_ = make_reorder(pooled_, user_dst_);
      }
      make_act_after();
    });
  }

  // Concat in place: the pooled output (channels-last, no residual) reordered at the Concat's
  // pitch; a pool that wrote Y itself (dense) pools into the scratch instead.
  bool write_output_rows(size_t k, int64_t pitch) override {
    const Dims& y = s_.pool->spec.y_shape;
    if (k != 0 || pitch_ != 0 || s_.pool->out_layout != Layout::kNHWC || y.size() != 4 ||
        cp_.nchw_in || pitch < y[1] || s_.sum) {
      return false;
    }
    guarded(what_, [&] {
      if (!pooled_) pooled_ = scratch_memory(user_dst_.get_desc());
      user_dst_ = memory(rows_desc(y, pitch), engine(), DNNL_MEMORY_NONE);
      from_pooled_ = make_reorder(pooled_, user_dst_);
    });
    pitch_ = pitch;
    return true;
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, s_.x_shape, s_.in_layout, what_, 0);
    NNFUSE_CHECK(pitch_ == 0 || io.outputs[0].defined(), what_,
                 ": output 0 is a part of a Concat in place but has no planned storage");
    Tensor& y = io.output(0, DType::kFloat32, s_.pool->spec.y_shape, s_.pool->out_layout);
    std::lock_guard<std::mutex> lock(mu_);
    bind_scratch(io.scratch);
    if (s_.sum) check_input(io.in(3), s_.y_shape, s_.sum_layout, what_, 3);
    guarded(what_, [&] {
      bind_x(x);
      if (s_.sum) {
        user_sum_.set_data_handle(handle(io.in(3)));
        execute(sum_to_dst_, {{DNNL_ARG_FROM, user_sum_}, {DNNL_ARG_TO, dst_}});
      }
      execute(prim_, args_);
      run_act_after();
      user_dst_.set_data_handle(y.raw());
      run_pool(pool_, dst_, pooled_, from_pooled_, user_dst_);
    });
  }

 private:
  dnnl::primitive pool_, from_pooled_;
  memory pooled_, user_dst_;
  int64_t pitch_ = 0;  // the output's pitch as a part of a Concat in place, or 0
};

}  // namespace

std::unique_ptr<Kernel> make_conv_pool_kernel(const NodeInfo& info, const ConvSpec& s) {
  return std::make_unique<ConvPoolKernel>(info, s);
}

}  // namespace nnfuse::onednn
