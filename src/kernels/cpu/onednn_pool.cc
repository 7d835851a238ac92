// oneDNN MaxPool / AveragePool (1-D to 3-D spatial, with dilations, ceil_mode, pads, auto_pad)
// and GlobalAveragePool / GlobalMaxPool. Pools keep the layout they are given (plain, or
// channels-last); the global pools write [N, C, 1, 1] plain, which is the same bytes as
// channels-last.
// Where oneDNN has only its plain-layout kernel (simple_nchw: a plain 5-D or 3-D input, S3D's
// 1x3x3 max pools over 8 frames of 112x112 at 55 ms), the pool runs channels-last on copies of
// X and Y reordered into and out of the run's scratch (3 ms).
// ceil_mode becomes extra end padding (that padding never counts toward an average that
// excludes padding; an average that includes padding and overhangs it is left to the
// reference kernel, which counts only the declared pads).
#include "kernels/cpu/onednn_pool.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"
#include "kernels/ref/nn_internal.h"

namespace nnfuse::onednn {
namespace {

using dnnl::memory;

Dims spatial(const Dims& x) { return Dims(x.begin() + 2, x.end()); }

// Shape and layout of X when a pool can take it, else false (and the reason in *why).
bool pool_input(const NodeInfo& info, PoolSpec& s, std::string* why) {
  const Node& node = info.node;
  auto no = [why](const auto&... reason) {
    decline(why, reason...);
    return false;
  };
  if (node.num_inputs() != 1) return no(node.num_inputs(), " inputs");
  if (std::string r = not_static_f32(info, 0); !r.empty()) return no(r);
  // MaxPool's optional Indices output is left to the reference kernel.
  if (node.num_outputs() != 1 && !(node.num_outputs() == 2 && node.output(1) == nullptr)) {
    return no("the Indices output is wanted");
  }
  s.x_shape = *known_shape(info, 0);
  const size_t rank = s.x_shape.size();
  if (rank < 3 || rank > 5) return no("input of rank ", rank, " (runs 3-D to 5-D)");
  for (int64_t d : s.x_shape) {
    if (d < 1 || d > ref::kMaxGeometryValue) {
      return no("input ", dims_str(s.x_shape), " outside the sizes it runs");
    }
  }
  s.in_layout = input_layout(info, 0);
  if (s.in_layout == Layout::kPlain || s.in_layout == Layout::kNHWC) return true;
  return no("input in layout ", layout_name(s.in_layout));
}

}  // namespace

std::optional<PoolSpec> pool_spec(const NodeInfo& info, std::string* why) {
  const Node& node = info.node;
  PoolSpec s;
  if (!pool_input(info, s, why)) return {};
  s.out_layout = s.in_layout;
  const bool max = node.is(Op::kMaxPool);
  try {
    if (!node.has_attr("kernel_shape")) return decline(why, "no kernel_shape");
    const Dims in = spatial(s.x_shape);
    const size_t r = in.size();
    const Dims kernel = ref::spatial_attr(node, "kernel_shape", r, 1, true);
    const bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
    const ref::WindowGeometry g = ref::window_geometry(node, in, kernel, ceil_mode);
    bool include_pad = false;
    if (max) {
      const int64_t so = node.attr_int("storage_order", 0);  // affects Indices only
      if (so != 0 && so != 1) return decline(why, "storage_order ", so);
      s.alg = dnnl::algorithm::pooling_max;
    } else {
      include_pad = node.attr_int("count_include_pad", 0) != 0;
      s.alg = include_pad ? dnnl::algorithm::pooling_avg_include_padding
                          : dnnl::algorithm::pooling_avg_exclude_padding;
    }
    s.y_shape = {s.x_shape[0], s.x_shape[1]};
    s.y_shape.insert(s.y_shape.end(), g.out.begin(), g.out.end());
    s.strides = g.strides;
    s.kernel = kernel;
    s.pad_l = g.pad_begin;
    for (size_t j = 0; j < r; ++j) {
      const int64_t span = (kernel[j] - 1) * g.dilations[j] + 1;
      // Windows of padding only have no defined value: the reference kernel reports them.
      if (g.pad_begin[j] >= span || g.pad_end[j] >= span) {
        return decline(why, "pads as large as the window");
      }
      s.dilations.push_back(g.dilations[j] - 1);
      // The end padding the last window reaches into (more than pads with ceil_mode).
      const int64_t reach = (g.out[j] - 1) * g.strides[j] + span - in[j] - g.pad_begin[j];
      if (include_pad && reach > g.pad_end[j]) {
        return decline(why, "count_include_pad with windows past the pads (ceil_mode)");
      }
      s.pad_r.push_back(std::max(reach, g.pad_end[j]));
    }
  } catch (const Error& e) {
    return decline(why, "attributes: ", e.what());  // the reference kernel reports them
  }
  if (!output_shape_is(info, s.y_shape)) {
    return decline(why, "output shape differs from the computed ", dims_str(s.y_shape));
  }
  return s;
}

namespace {

std::optional<PoolSpec> global_pool_spec(const NodeInfo& info, std::string* why) {
  PoolSpec s;
  if (!pool_input(info, s, why)) return {};
  s.out_layout = Layout::kPlain;
  s.alg = info.node.is(Op::kGlobalMaxPool) ? dnnl::algorithm::pooling_max
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
  s.kernel = spatial(s.x_shape);
  const size_t r = s.kernel.size();
  s.strides.assign(r, 1);
  s.dilations.assign(r, 0);
  s.pad_l.assign(r, 0);
  s.pad_r.assign(r, 0);
  s.y_shape.assign(s.x_shape.size(), 1);
  s.y_shape[0] = s.x_shape[0];
  s.y_shape[1] = s.x_shape[1];
  if (!output_shape_is(info, s.y_shape)) {
    return decline(why, "output shape differs from the computed ", dims_str(s.y_shape));
  }
  return s;
}

dnnl::pooling_v2_forward::primitive_desc make_pd(const PoolSpec& s) {
  // The global pools' [N, C, 1, 1] output is described in the input's format: the same bytes.
  dnnl::pooling_v2_forward::desc d(
      dnnl::prop_kind::forward_inference, s.alg, f32_desc(s.x_shape, s.in_layout),
      f32_desc(s.y_shape, s.in_layout), to_dims(s.strides), to_dims(s.kernel), to_dims(s.dilations),
      to_dims(s.pad_l), to_dims(s.pad_r));
  return dnnl::pooling_v2_forward::primitive_desc(d, user_scratchpad_attr(), engine());
}

class PoolKernel : public Kernel {
 public:
  PoolKernel(const NodeInfo& info, PoolSpec spec) : what_(info.node.describe()), s_(spec) {
    ThreadScope threads(info.num_threads);
    guarded(what_, [&] {
      dnnl::pooling_v2_forward::primitive_desc pd = make_pd(s_);
      if (s_.in_layout == Layout::kPlain && !runs_direct_kernel(pd)) {
        if (std::optional<dnnl::pooling_v2_forward::primitive_desc> cl = channels_last_pd()) {
          init_reordered(*cl);
          return;
        }
      }
      prim_ = dnnl::pooling_v2_forward(pd);
      src_ = memory(pd.src_desc(), engine(), DNNL_MEMORY_NONE);
      dst_ = memory(pd.dst_desc(), engine(), DNNL_MEMORY_NONE);
      args_[DNNL_ARG_SRC] = src_;
      args_[DNNL_ARG_DST] = dst_;
    });
  }

  size_t scratch_bytes() const override { return scratch_bytes_; }

  void run(KernelIO& io) override {
    check_input(io.in(0), s_.x_shape, s_.in_layout, what_, 0);
    Tensor& y = io.output(0, DType::kFloat32, s_.y_shape, s_.out_layout);
    std::lock_guard<std::mutex> lock(mu_);
    guarded(what_, [&] {
      if (to_src_) {
        std::byte* scratch = scratch_or_own(io.scratch, scratch_bytes_, own_scratch_);
        src_.set_data_handle(scratch);
        dst_.set_data_handle(scratch + dst_offset_);
        user_src_.set_data_handle(handle(io.in(0)));
        user_dst_.set_data_handle(y.raw());
        execute(to_src_, {{DNNL_ARG_FROM, user_src_}, {DNNL_ARG_TO, src_}});
        execute(prim_, args_);
        execute(from_dst_, {{DNNL_ARG_FROM, dst_}, {DNNL_ARG_TO, user_dst_}});
        return;
      }
      src_.set_data_handle(handle(io.in(0)));
      dst_.set_data_handle(y.raw());
      execute(prim_, args_);
    });
  }

 private:
  // The pool on a channels-last X (nwc, nhwc, ndhwc) into Y in a format of oneDNN's choosing,
  // where that runs a direct kernel.
  std::optional<dnnl::pooling_v2_forward::primitive_desc> channels_last_pd() const {
    dnnl::pooling_v2_forward::desc d(
        dnnl::prop_kind::forward_inference, s_.alg, f32_desc(s_.x_shape, Layout::kNHWC),
        f32_desc(s_.y_shape, Tag::any), to_dims(s_.strides), to_dims(s_.kernel),
        to_dims(s_.dilations), to_dims(s_.pad_l), to_dims(s_.pad_r));
    return direct_pd<dnnl::pooling_v2_forward::primitive_desc>(d, user_scratchpad_attr());
  }

  // Buffers in the run's scratch for the reordered X and the pool's Y, and the reorders.
  void init_reordered(const dnnl::pooling_v2_forward::primitive_desc& pd) {
    prim_ = dnnl::pooling_v2_forward(pd);
    src_ = memory(pd.src_desc(), engine(), DNNL_MEMORY_NONE);
    dst_ = memory(pd.dst_desc(), engine(), DNNL_MEMORY_NONE);
    user_src_ = memory(f32_desc(s_.x_shape, Layout::kPlain), engine(), DNNL_MEMORY_NONE);
    user_dst_ = memory(f32_desc(s_.y_shape, Layout::kPlain), engine(), DNNL_MEMORY_NONE);
    to_src_ = make_reorder(user_src_, src_);
    from_dst_ = make_reorder(dst_, user_dst_);
    dst_offset_ = align_up(pd.src_desc().get_size(), 64);
    scratch_bytes_ = dst_offset_ + align_up(pd.dst_desc().get_size(), 64);
    args_[DNNL_ARG_SRC] = src_;
    args_[DNNL_ARG_DST] = dst_;
  }

  std::string what_;
  PoolSpec s_;
  dnnl::primitive prim_;
  memory src_, dst_;
  // A plain X pooled channels-last (init_reordered): X and Y as the graph has them, the
  // reorders, and where dst_ lies in the scratch.
  memory user_src_, user_dst_;
  dnnl::primitive to_src_, from_dst_;
  size_t dst_offset_ = 0, scratch_bytes_ = 0;
  std::shared_ptr<std::byte[]> own_scratch_;
  std::unordered_map<int, memory> args_;
  std::mutex mu_;  // the memory objects are rebound on every run
};

template <auto kSpec>
std::string declines(const NodeInfo& info) {
  std::string why;
  std::optional<PoolSpec> s = kSpec(info, &why);
  if (!s) return why;
  try {
    ThreadScope threads(info.num_threads);
    make_pd(*s);
    return "";
  } catch (const std::exception& e) {
    return std::string("oneDNN has no implementation for it (") + e.what() + ")";
  }
}

template <auto kSpec>
bool accepts(const NodeInfo& info) {
  return declines<kSpec>(info).empty();
}

Layout same_layout(const NodeInfo& info, size_t /*k*/) { return input_layout(info, 0); }

template <auto kSpec>
std::unique_ptr<Kernel> create(const NodeInfo& info) {
  std::optional<PoolSpec> s = kSpec(info, nullptr);
  if (!s) fail(ErrorKind::kInternal, info.node.describe(), ": not accepted by the oneDNN kernel");
  return std::make_unique<PoolKernel>(info, *s);
}

template <auto kSpec>
KernelFactory factory(const char* name, Layout (*layout)(const NodeInfo&, size_t)) {
  return {name, accepts<kSpec>, layout, create<kSpec>, nullptr, declines<kSpec>};
}

}  // namespace

KernelFactory pool_factory() { return factory<pool_spec>("onednn.pool", same_layout); }

KernelFactory global_pool_factory() {
  return factory<global_pool_spec>("onednn.global_pool", nullptr);
}

}  // namespace nnfuse::onednn
