// Reference MaxPool (with its optional Indices output), AveragePool, GlobalAveragePool and
// GlobalMaxPool over any number of spatial dims. Windows come from the shared geometry
// (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode); sums are taken in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {
namespace {

Dims spatial_of(const Tensor& x) { return Dims(x.shape().begin() + 2, x.shape().end()); }

void check_pool_input(const Node& node, const Tensor& x, int64_t min_rank) {
  NNFUSE_CHECK(x.rank() >= min_rank, node.describe(), ": input must have rank >= ", min_rank,
               " (N, C, spatial...), got shape ", dims_str(x.shape()));
}

WindowGeometry pool_geometry(const Node& node, const Tensor& x) {
  check_pool_input(node, x, 3);
  NNFUSE_CHECK(node.has_attr("kernel_shape"), node.describe(),
               ": the kernel_shape attribute is required");
  const Dims in = spatial_of(x);
  const Dims kernel = spatial_attr(node, "kernel_shape", in.size(), 1, true);
  WindowGeometry g = window_geometry(node, in, kernel, node.attr_int("ceil_mode", 0) != 0);
  // A pad as wide as the window would make windows of padding only, with no defined value.
  for (size_t j = 0; j < g.rank(); ++j) {
    const int64_t span = (kernel[j] - 1) * g.dilations[j] + 1;
    NNFUSE_CHECK(g.pad_begin[j] < span && g.pad_end[j] < span, node.describe(), ": pads ",
                 g.pad_begin[j], "+", g.pad_end[j], " are not smaller than the window ", span);
  }
  return g;
}

Dims pool_out_shape(const Tensor& x, const WindowGeometry& g) {
  Dims s = {x.dim(0), x.dim(1)};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

std::string support_pool(const Node& node, int64_t /*opset*/) {
  std::string why = float_inputs_reason(node, 0, 1);
  if (why.empty()) why = auto_pad_reason(node);
  if (why.empty() && node.is(Op::kMaxPool)) {
    int64_t so = node.attr_int("storage_order", 0);
    if (so != 0 && so != 1) why = "storage_order " + std::to_string(so) + " is not supported";
  }
  return why;
}

// Maps a C-order flat index within `dims` to the column-major (first dim fastest) flat index.
int64_t column_major_index(int64_t flat, const Dims& dims) {
  int64_t result = 0, scale = 1;
  Dims coord(dims.size());
  for (size_t j = dims.size(); j-- > 0;) {
    coord[j] = flat % dims[j];
    flat /= dims[j];
  }
  for (size_t j = 0; j < dims.size(); ++j) {
    result += coord[j] * scale;
    scale *= dims[j];
  }
  return result;
}

void run_max_pool(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const WindowGeometry g = pool_geometry(ctx.node, x);
  Tensor y(x.dtype(), pool_out_shape(x, g));  // first, so absurd sizes fail before the plan
  const WindowPlan plan = plan_window(g.out, g.in, g);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_sz = checked_numel(g.in), out_sz = checked_numel(g.out);
  const int64_t st = plan.stride_last;
  const bool col_major = ctx.node.attr_int("storage_order", 0) == 1;
  const bool want_idx = ctx.wants_output(1);
  Tensor idx_t = want_idx ? Tensor(DType::kInt64, y.shape()) : Tensor();
  std::vector<int64_t> arg(static_cast<size_t>(out_sz));
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    int64_t* id = want_idx ? idx_t.data<int64_t>() : nullptr;
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = xd + p * in_sz;
      T* best = yd + p * out_sz;
      std::fill(best, best + out_sz, -std::numeric_limits<T>::infinity());
      std::fill(arg.begin(), arg.end(), -1);
      // Taps in kernel order, so the first maximum of a window wins; NaN propagates.
      for (const WindowPlan::Tap& tap : plan.taps) {
        for (size_t ri = tap.row_begin; ri < tap.row_end; ++ri) {
          const WindowPlan::Row& row = plan.rows[ri];
          for (int64_t o = tap.lo; o < tap.hi; ++o) {
            const int64_t a = row.iter_off + o, pos = row.target_off + o * st;
            const T v = xp[pos];
            if (arg[a] < 0 || v > best[a] || (std::isnan(v) && !std::isnan(best[a]))) {
              best[a] = v;
              arg[a] = pos;
            }
          }
        }
      }
      if (!want_idx) continue;
      for (int64_t a = 0; a < out_sz; ++a) {
        if (arg[a] < 0) {
          id[p * out_sz + a] = -1;  // a dilated window that touches only padding
        } else {
          id[p * out_sz + a] = p * in_sz + (col_major ? column_major_index(arg[a], g.in) : arg[a]);
        }
      }
    }
  });
  ctx.outputs[0] = std::move(y);
  if (want_idx) ctx.outputs[1] = std::move(idx_t);
}

void run_average_pool(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const WindowGeometry g = pool_geometry(ctx.node, x);
  Tensor y(x.dtype(), pool_out_shape(x, g));  // first, so absurd sizes fail before the plan
  const WindowPlan plan = plan_window(g.out, g.in, g);
  const bool include_pad = ctx.node.attr_int("count_include_pad", 0) != 0;
  const size_t r = g.rank();
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_sz = checked_numel(g.in), out_sz = checked_numel(g.out);
  const int64_t st = plan.stride_last;
  // The divisor of each window is a product over dims of the taps it counts: those inside the
  // input, or with count_include_pad those inside the padded input [-pad_begin, in + pad_end)
  // (so a ceil_mode window hanging past the end padding counts only its part within it).
  std::vector<std::vector<int64_t>> counts(r);
  for (size_t j = 0; j < r; ++j) {
    const int64_t lim_lo = include_pad ? -g.pad_begin[j] : 0;
    const int64_t lim_hi = include_pad ? g.in[j] + g.pad_end[j] : g.in[j];
    counts[j].resize(static_cast<size_t>(g.out[j]));
    for (int64_t o = 0; o < g.out[j]; ++o) {
      // Taps k in [0, kernel) with lim_lo <= start + k * dilation < lim_hi.
      const int64_t start = o * g.strides[j] - g.pad_begin[j], d = g.dilations[j];
      const int64_t k_lo = std::max<int64_t>(0, ceil_div(lim_lo - start, d));
      const int64_t k_hi = std::min<int64_t>(g.kernel[j], floor_div(lim_hi - 1 - start, d) + 1);
      counts[j][o] = std::max<int64_t>(0, k_hi - k_lo);
    }
  }
  std::vector<double> divisor(static_cast<size_t>(out_sz));
  Dims o(r, 0);
  for (int64_t a = 0; a < out_sz; ++a) {
    double dv = 1;
    for (size_t j = 0; j < r; ++j) dv *= static_cast<double>(counts[j][o[j]]);
    divisor[a] = dv;
    for (size_t j = r; j-- > 0;) {
      if (++o[j] < g.out[j]) break;
      o[j] = 0;
    }
  }
  std::vector<double> acc(static_cast<size_t>(out_sz));
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = x.data<T>() + p * in_sz;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (const WindowPlan::Tap& tap : plan.taps) {
        for (size_t ri = tap.row_begin; ri < tap.row_end; ++ri) {
          double* ar = acc.data() + plan.rows[ri].iter_off;
          const T* xr = xp + plan.rows[ri].target_off;
          for (int64_t i = tap.lo; i < tap.hi; ++i) ar[i] += static_cast<double>(xr[i * st]);
        }
      }
      T* yp = y.data<T>() + p * out_sz;
      for (int64_t a = 0; a < out_sz; ++a) yp[a] = static_cast<T>(acc[a] / divisor[a]);
    }
  });
  ctx.outputs[0] = std::move(y);
}

template <bool kMax>
void run_global_pool(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  check_pool_input(ctx.node, x, 2);
  Dims out_shape(x.shape().size(), 1);
  out_shape[0] = x.dim(0);
  out_shape[1] = x.dim(1);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t sz = checked_numel(spatial_of(x));
  Tensor y(x.dtype(), out_shape);
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = x.data<T>() + p * sz;
      if constexpr (kMax) {
        T best = -std::numeric_limits<T>::infinity();
        for (int64_t i = 0; i < sz; ++i) {
          if (xp[i] > best || std::isnan(xp[i])) {
            best = xp[i];
            if (std::isnan(best)) break;
          }
        }
        y.data<T>()[p] = best;
      } else {
        double s = 0;
        for (int64_t i = 0; i < sz; ++i) s += static_cast<double>(xp[i]);
        y.data<T>()[p] = static_cast<T>(s / static_cast<double>(sz));
      }
    }
  });
  ctx.outputs[0] = std::move(y);
}

std::string support_global_pool(const Node& node, int64_t /*opset*/) {
  return float_inputs_reason(node, 0, 1);
}

}  // namespace

void append_pool_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"MaxPool", run_max_pool, support_pool});
  t.push_back({"AveragePool", run_average_pool, support_pool});
  t.push_back({"GlobalAveragePool", run_global_pool<false>, support_global_pool});
  t.push_back({"GlobalMaxPool", run_global_pool<true>, support_global_pool});
}

}  // namespace nnfuse::ref
