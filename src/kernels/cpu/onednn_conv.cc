// oneDNN's conv primitive for a ConvSpec (make_pd), the parts every oneDNN conv kernel shares
// (ConvBase, ScratchParts), and the plain conv kernel (ConvKernel): Conv, ConvTranspose and
// FusedConv into their output. See onednn_conv.h.
#include "kernels/cpu/onednn_conv.h"

#include <algorithm>
#include <cstring>

#include "cost/winograd_rule.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::onednn {

using dnnl::memory;

namespace {

// The activation format the primitive runs on, unless blocked: channels-last (NHWC, NDHWC; a
// 1-D conv's NWC as NHWC of height 1).
Tag act_tag(const ConvSpec& s) { return channels_last_tag(prim(s, s.x_shape).size()); }

// Winograd's scratchpad, as oneDNN sizes it for the blocking it picks, against the work it
// saves (cost/winograd_rule.h: winograd_scratch_pays).
bool winograd_scratch_fits(const dnnl::primitive_desc& pd, const ConvSpec& s) {
  if (s.winograd == ConvSpec::Winograd::kForced) return true;
  const double flops = 2.0 * static_cast<double>(s.x_shape[1] * s.y_shape[1]) * 9.0 *
                       static_cast<double>(s.y_shape[2] * s.y_shape[3]);
  return cost::winograd_scratch_pays(flops, static_cast<int64_t>(pd.scratchpad_desc().get_size()));
}

}  // namespace

memory::desc user_weights_desc(const ConvSpec& s, bool any) {
  const int64_t m = s.y_shape[1], c = s.x_shape[1], g = s.group;
  const Dims k = tail(prim(s, s.w_shape), 2);
  Dims dims = g == 1 ? Dims{m, c} : Dims{g, m / g, c / g};
  dims.insert(dims.end(), k.begin(), k.end());
  Tag tag = plain_tag(dims.size());
  if (s.transpose) {
    const bool volume = k.size() == 3;
    tag = g == 1 ? (volume ? Tag::iodhw : Tag::iohw) : (volume ? Tag::giodhw : Tag::giohw);
  }
  return f32_desc(dims, any ? Tag::any : tag);
}

ConvPd make_pd(ConvSpec& s) {
  Dims src_dims = prim(s, s.x_shape), strides = s.strides;
  const Dims y_dims = prim(s, s.y_shape);
  if (s.subsample) {
    src_dims = {s.x_shape[0], s.x_shape[1], s.y_shape[2], s.y_shape[3]};
    strides = {1, 1};
  }
  const memory::desc src = f32_desc(src_dims, act_tag(s));
  const memory::desc dst = f32_desc(y_dims, act_tag(s));
  const memory::desc wei = user_weights_desc(s, /*any=*/true);
  const memory::desc bias = s.bias ? f32_desc({s.y_shape[1]}, Tag::a) : memory::desc();
  const auto st = to_dims(strides), dil = to_dims(s.dilations);
  const auto pl = to_dims(s.pad_l), pr = to_dims(s.pad_r);
  const auto prop = dnnl::prop_kind::forward_inference;
  const bool winograd = s.winograd != ConvSpec::Winograd::kNo;
  dnnl::post_ops ops;
  if (s.sum) ops.append_sum(1.0f);
  append_activation(s.act, ops, static_cast<int>(y_dims.size()));
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(ops);
  ConvPd r;
  if (!s.transpose && !winograd && !s.subsample && !s.pool && s.split.empty() &&
      s.x_shape.size() == 4 && s.in_layout == Layout::kPlain && s.x_shape[1] <= 4 &&
      s.y_shape[1] == 16 && s.group == 1 && s.x_shape[2] * s.x_shape[3] > 1) {
    dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct,
                                      f32_desc(src_dims, Tag::nchw), wei, bias,
                                      f32_desc(s.y_shape, Tag::nChw16c), st, dil, pl, pr);
    try {
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
      if (std::string(pd.impl_info_str()).rfind("ref", 0) != 0) {
        r.pd = pd;
        r.nchw_in = true;
        return r;
      }
    } catch (const dnnl::error&) {
    }
  }
  if (s.transpose) {
    dnnl::deconvolution_forward::desc d(prop, dnnl::algorithm::deconvolution_direct, src, wei, bias,
                                        dst, st, dil, pl, pr);
    dnnl::deconvolution_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
    r.pd = pd;
    if (s.x_shape.size() == 4 || runs_direct_kernel(pd)) return r;
    // 1-D and 3-D: oneDNN's blocked layouts where it has a kernel for them and none for
    // channels-last.
    dnnl::deconvolution_forward::desc any(prop, dnnl::algorithm::deconvolution_direct,
                                          f32_desc(src_dims, Tag::any), wei, bias,
                                          f32_desc(y_dims, Tag::any), st, dil, pl, pr);
    if (auto blocked =
            direct_pd<dnnl::deconvolution_forward::primitive_desc>(any, user_scratchpad_attr())) {
      r.pd = *blocked;
      r.blocked = true;
    }
    return r;
  }
  if (winograd) {
    // Winograd runs on a blocked layout of its choosing; the kernel reorders around it.
    const memory::desc any_src = f32_desc(src_dims, Tag::any);
    const memory::desc any_dst = f32_desc(y_dims, Tag::any);
    dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_winograd, any_src, wei,
                                      bias, any_dst, st, dil, pl, pr);
    r.winograd = true;
    try {
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
      if (winograd_scratch_fits(pd, s)) {
        r.pd = pd;
        return r;
      }
    } catch (const dnnl::error&) {
    }
    if (s.act.kind != ref::ActivationKind::kNone) {
      // The activation after the conv instead of as its post-op.
      dnnl::post_ops sum_only;
      if (s.sum) sum_only.append_sum(1.0f);
      dnnl::primitive_attr no_act = user_scratchpad_attr();
      no_act.set_post_ops(sum_only);
      try {
        dnnl::convolution_forward::primitive_desc pd(d, no_act, engine());
        if (winograd_scratch_fits(pd, s)) {
          r.pd = pd;
          r.act_after = true;
          return r;
        }
      } catch (const dnnl::error&) {
      }
    }
    // No implementation on this CPU (it needs AVX-512), or one whose scratchpad spills.
    r.winograd = false;
  }
  dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, src, wei, bias, dst,
                                    st, dil, pl, pr);
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
  r.pd = pd;
  if (s.x_shape.size() == 4 || runs_direct_kernel(pd)) return r;
  if (s.lift && !s.lift_h) {
    ConvSpec h = s;
    h.lift_h = true;
    for (Dims* v : {&h.strides, &h.dilations, &h.pad_l, &h.pad_r}) {
      std::reverse(v->begin(), v->end());
    }
    ConvPd hpd = make_pd(h);
    if (runs_direct_kernel(hpd.pd)) {
      s = h;
      return hpd;
    }
  }
  // 1-D and 3-D: a blocked layout where oneDNN has a direct kernel only for that (a volume's
  // one-channel first conv).
  dnnl::convolution_forward::desc any(prop, dnnl::algorithm::convolution_direct,
                                      f32_desc(src_dims, Tag::any), wei, bias,
                                      f32_desc(y_dims, Tag::any), st, dil, pl, pr);
  if (auto blocked = direct_pd<dnnl::convolution_forward::primitive_desc>(any, attr)) {
    r.pd = *blocked;
    r.blocked = true;
  }
  return r;
}

memory::desc rows_desc(const Dims& y, int64_t pitch) {
  return memory::desc(to_dims(y), memory::data_type::f32,
                      to_dims(Dims{y[2] * y[3] * pitch, 1, y[3] * pitch, pitch}));
}

void run_pool(const dnnl::primitive& pool, const memory& conv, const memory& pooled,
              const dnnl::primitive& reorder, const memory& y) {
  if (pooled) {
    execute(pool, {{DNNL_ARG_SRC, conv}, {DNNL_ARG_DST, pooled}});
    execute(reorder, {{DNNL_ARG_FROM, pooled}, {DNNL_ARG_TO, y}});
  } else {
    execute(pool, {{DNNL_ARG_SRC, conv}, {DNNL_ARG_DST, y}});
  }
}

memory ScratchParts::add(const memory::desc& d) {
  memory m(d, engine(), DNNL_MEMORY_NONE);
  parts_.emplace_back(m, bytes_);
  bytes_ += align_up(d.get_size(), 64);
  return m;
}

std::byte* ScratchParts::bind(std::byte* scratch) {
  if (bytes_ == 0) return nullptr;
  scratch = scratch_or_own(scratch, bytes_, own_);
  for (auto& [m, offset] : parts_) m.set_data_handle(scratch + offset);
  return scratch;
}

ConvBase::ConvBase(const NodeInfo& info, const ConvSpec& spec)
    : what_(info.node.describe()), s_(spec) {
  ThreadScope threads(info.num_threads);
  guarded(what_, [&] {
    cp_ = make_pd(s_);
    prim_ = dnnl::primitive(cp_.pd);
    if (!cp_.act_after) {
      bind_activation_args(s_.act, cp_.pd.get_primitive_attr().get_post_ops(),
                           static_cast<int>(cp_.pd.dst_desc(0).dims().size()), &divisor_, args_);
    }
    args_[DNNL_ARG_WEIGHTS] =
        prepack(*info.constant(1), user_weights_desc(s_, false), cp_.pd.weights_desc(0), packed_);
    if (s_.bias) {
      args_[DNNL_ARG_BIAS] = prepack(*info.constant(2), f32_desc({s_.y_shape[1]}, Tag::a),
                                     cp_.pd.weights_desc(1), packed_);
    }
  });
}

void ConvBase::bind_src(bool reorder) {
  if (reorder) {
    user_src_ = memory(input_view(s_), engine(), DNNL_MEMORY_NONE);
    src_ = scratch_memory(cp_.pd.src_desc(0));
    to_nhwc_ = make_reorder(user_src_, src_);
  } else {
    src_ = memory(cp_.pd.src_desc(0), engine(), DNNL_MEMORY_NONE);
  }
  args_[DNNL_ARG_SRC] = src_;
}

void ConvBase::bind_x(const Tensor& x) {
  if (user_src_) {
    user_src_.set_data_handle(handle(x));
    execute(to_nhwc_, {{DNNL_ARG_FROM, user_src_}, {DNNL_ARG_TO, src_}});
  } else {
    src_.set_data_handle(handle(x));
  }
}

void ConvBase::bind_own_dst() {
  dst_ = scratch_memory(cp_.pd.dst_desc(0));
  args_[DNNL_ARG_DST] = dst_;
  if (s_.sum) bind_sum();
}

void ConvBase::bind_sum() {
  user_sum_ = memory(f32_desc(prim(s_, s_.y_shape), s_.sum_layout), engine(), DNNL_MEMORY_NONE);
  sum_to_dst_ = make_reorder(user_sum_, dst_);
}

void ConvBase::make_act_after() {
  if (!cp_.act_after) return;
  dnnl::post_ops ops;
  append_activation(s_.act, ops);
  for (int i = 0; i < ops.len(); ++i) {
    float scale = 1.0f, alpha = 0.0f, beta = 0.0f;
    dnnl::algorithm alg;
    ops.get_params_eltwise(i, scale, alg, alpha, beta);
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, cp_.pd.dst_desc(0),
                                  alpha, beta);
    act_after_.push_back(dnnl::eltwise_forward(
        dnnl::eltwise_forward::primitive_desc(d, user_scratchpad_attr(), engine())));
  }
}

void ConvBase::run_act_after() {
  for (const dnnl::primitive& p : act_after_) {
    execute(p, {{DNNL_ARG_SRC, dst_}, {DNNL_ARG_DST, dst_}});
  }
}

ConvKernel::ConvKernel(const NodeInfo& info, const ConvSpec& spec) : ConvBase(info, spec) {
  ThreadScope threads(info.num_threads);
  guarded(what_, [&] {
    if (cp_.winograd || cp_.blocked) {
      // Blocked buffers of our own, with reorders from X and Sum and into Y.
      bind_src(/*reorder=*/true);
      bind_own_dst();
      make_act_after();
      user_dst_ = memory(f32_desc(prim(s_, s_.y_shape), s_.out_layout), engine(), DNNL_MEMORY_NONE);
      from_dst_ = make_reorder(dst_, user_dst_);
      return;
    }
    dst_ = memory(cp_.pd.dst_desc(0), engine(), DNNL_MEMORY_NONE);
    args_[DNNL_ARG_DST] = dst_;
    // A plain input the primitive reads channels-last, or a subsampled one: reorder into a
    // buffer of our own. A plain input of one pixel ([N, C, 1, 1]: a squeeze-and-excitation's
    // pooled vector) is stored as its channels-last form already, and is read as it is.
    const bool plain_in = s_.in_layout == Layout::kPlain;
    const bool one_pixel = plain_in && checked_numel(s_.x_shape) == s_.x_shape[0] * s_.x_shape[1];
    bind_src((plain_in && !one_pixel && !cp_.nchw_in) || s_.subsample);
    if (s_.sum && s_.sum_layout != s_.out_layout) bind_sum();
  });
}

bool ConvKernel::write_output_rows(size_t k, int64_t pitch) {
  const Dims& y = s_.y_shape;
  if (k != 0 || pitch_ != 0 || s_.out_layout != Layout::kNHWC || y.size() != 4 || s_.transpose ||
      s_.lift || cp_.nchw_in || pitch < y[1]) {
    return false;
  }
  if (s_.sum || !(cp_.winograd || cp_.blocked)) return false;
  guarded(what_, [&] {
    user_dst_ = memory(rows_desc(y, pitch), engine(), DNNL_MEMORY_NONE);
    from_dst_ = make_reorder(dst_, user_dst_);
  });
  pitch_ = pitch;
  return true;
}

void ConvKernel::run(KernelIO& io) {
  const Tensor& x = io.in(0);
  check_input(x, s_.x_shape, s_.in_layout, what_, 0);
  NNFUSE_CHECK(pitch_ == 0 || io.outputs[0].defined(), what_,
               ": output 0 is a part of a Concat in place but has no planned storage");
  Tensor& y = io.output(0, DType::kFloat32, s_.y_shape, s_.out_layout);
  run_conv(x, y, s_.sum ? &io.in(3) : nullptr, io.scratch);
}

void ConvKernel::run_conv(const Tensor& x, Tensor& y, const Tensor* sum, std::byte* scratch) {
  std::lock_guard<std::mutex> lock(mu_);
  bind_scratch(scratch);
  if (cp_.winograd || cp_.blocked) {
    run_reordered(x, y, sum);
    return;
  }
  if (sum) put_sum(*sum, x, y);
  guarded(what_, [&] {
    bind_x(x);
    dst_.set_data_handle(y.raw());
    execute(prim_, args_);
  });
}

void ConvKernel::run_reordered(const Tensor& x, Tensor& y, const Tensor* sum) {
  if (sum) check_input(*sum, s_.y_shape, s_.sum_layout, what_, 3);
  guarded(what_, [&] {
    user_src_.set_data_handle(handle(x));
    execute(to_nhwc_, {{DNNL_ARG_FROM, user_src_}, {DNNL_ARG_TO, src_}});
    if (sum) {
      user_sum_.set_data_handle(handle(*sum));
      execute(sum_to_dst_, {{DNNL_ARG_FROM, user_sum_}, {DNNL_ARG_TO, dst_}});
    }
    execute(prim_, args_);
    run_act_after();
    user_dst_.set_data_handle(y.raw());
    execute(from_dst_, {{DNNL_ARG_FROM, dst_}, {DNNL_ARG_TO, user_dst_}});
  });
}

void ConvKernel::put_sum(const Tensor& sum, const Tensor& x, Tensor& y) {
  check_input(sum, s_.y_shape, s_.sum_layout, what_, 3);
  NNFUSE_CHECK(y.raw() != x.raw(), what_, ": the output may not share X's storage");
  if (y.raw() == sum.raw()) {
    NNFUSE_CHECK(!sum_to_dst_, what_, ": the output shares Sum's storage in another layout");
    return;
  }
  if (sum_to_dst_) {
    guarded(what_, [&] {
      user_sum_.set_data_handle(handle(sum));
      dst_.set_data_handle(y.raw());
      execute(sum_to_dst_, {{DNNL_ARG_FROM, user_sum_}, {DNNL_ARG_TO, dst_}});
    });
    return;
  }
  const auto* from = static_cast<const std::byte*>(sum.raw());
  auto* to = static_cast<std::byte*>(y.raw());
  cpu::parallel_range(static_cast<int64_t>(y.nbytes()), 4 * cpu::kParallelGrain,
                      [&](int64_t b, int64_t e) { std::memcpy(to + b, from + b, e - b); });
}

std::unique_ptr<Kernel> make_conv_kernel(const NodeInfo& info, const ConvSpec& s) {
  if (s.pool) return make_conv_pool_kernel(info, s);
  if (!s.split.empty()) return make_conv_split_kernel(info, s);
  return std::make_unique<ConvKernel>(info, s);
}

}  // namespace nnfuse::onednn
