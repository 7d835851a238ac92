// Reference kernels for ConvInteger and QLinearConv (quant.cc: the contract, the support checks
// and the table): Conv of the input and weight less their zero points, summed in int64;
// QLinearConv adds the int32 bias and requantizes each sum in double.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/quant_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

using ref::check_input_dtypes;
using ref::check_same_shape;
using ref::check_zero_point_dtype;
using ref::dispatch_q8;
using ref::kQ8;
using ref::quantize_value;

struct ConvShapes {
  int64_t n = 0, c = 0, m = 0, group = 1;
  ref::WindowGeometry g;
  Dims out;  // [N, M, spatial out...]
};

// Checks x (input xi) against the weight (input wi) and the node's conv attributes.
ConvShapes conv_shapes(const KernelContext& ctx, size_t xi, size_t wi) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(xi);
  const Tensor& w = ctx.in(wi);
  NNFUSE_CHECK(x.rank() >= 3, node.describe(), ": input x must have rank >= 3 (N, C, spatial...),",
               " got shape ", dims_str(x.shape()));
  NNFUSE_CHECK(w.rank() == x.rank(), node.describe(), ": weight shape ", dims_str(w.shape()),
               " does not match the rank of input shape ", dims_str(x.shape()));
  ConvShapes s;
  s.group = node.attr_int("group", 1);
  NNFUSE_CHECK(s.group >= 1, node.describe(), ": group must be >= 1, got ", s.group);
  s.n = x.dim(0);
  s.c = x.dim(1);
  s.m = w.dim(0);
  NNFUSE_CHECK(w.dim(1) * s.group == s.c, node.describe(), ": input has ", s.c,
               " channels but the weight shape ", dims_str(w.shape()), " with group ", s.group,
               " expects ", w.dim(1) * s.group);
  NNFUSE_CHECK(s.m % s.group == 0, node.describe(), ": output channels ", s.m,
               " are not divisible by group ", s.group);
  const Dims spatial(x.shape().begin() + 2, x.shape().end());
  const Dims kernel(w.shape().begin() + 2, w.shape().end());
  if (node.has_attr("kernel_shape")) {
    NNFUSE_CHECK(node.attr_ints("kernel_shape") == kernel, node.describe(), ": kernel_shape ",
                 dims_str(node.attr_ints("kernel_shape")), " does not match the weight shape ",
                 dims_str(w.shape()));
  }
  s.g = ref::window_geometry(node, spatial, kernel, /*ceil_mode=*/false);
  s.out = {s.n, s.m};
  s.out.insert(s.out.end(), s.g.out.begin(), s.g.out.end());
  return s;
}

// A single-valued quantization parameter (input i); an absent one (a zero point) is 0.
double scalar_param(const KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return 0;
  const Tensor& p = ctx.in(i);
  NNFUSE_CHECK(p.numel() == 1, ctx.node.describe(), ": input ", i,
               " must be a single value (per-tensor quantization), got shape ",
               dims_str(p.shape()));
  return p.double_at(0);
}

// A per-output-channel quantization parameter (input i): one value or 1-D with m values, as m
// values. An absent one (a zero point) is 0.
std::vector<double> per_channel_param(const KernelContext& ctx, size_t i, int64_t m) {
  std::vector<double> v(static_cast<size_t>(m), 0.0);
  if (!ctx.has_input(i)) return v;
  const Tensor& p = ctx.in(i);
  if (p.numel() == 1) {
    std::fill(v.begin(), v.end(), p.double_at(0));
    return v;
  }
  NNFUSE_CHECK(p.rank() == 1 && p.dim(0) == m, ctx.node.describe(), ": input ", i, " of shape ",
               dims_str(p.shape()), " is neither one value nor one per output channel (", m, ")");
  for (int64_t j = 0; j < m; ++j) v[static_cast<size_t>(j)] = p.double_at(j);
  return v;
}

// The integer convolution of x - x_zp and w - w_zp[m], per element of s.out in C order. Window
// positions outside x (padding) contribute 0. The loops follow conv.cc: per output channel,
// over input channels and kernel taps (WindowPlan), the innermost along the last spatial dim.
std::vector<int64_t> int_conv(const ConvShapes& s, const Tensor& x, int64_t x_zp, const Tensor& w,
                              const std::vector<double>& w_zp) {
  const int64_t in_sz = checked_numel(s.g.in), out_sz = checked_numel(s.g.out);
  const int64_t k_sz = checked_numel(s.g.kernel);
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  std::vector<int64_t> xs(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xs[static_cast<size_t>(i)] = x.int_at(i) - x_zp;
  std::vector<int64_t> ws(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t m = i / (cg * k_sz);
    ws[static_cast<size_t>(i)] = w.int_at(i) - static_cast<int64_t>(w_zp[static_cast<size_t>(m)]);
  }
  const ref::WindowPlan plan = ref::plan_window(s.g.out, s.g.in, s.g);
  const int64_t st = plan.stride_last;
  std::vector<int64_t> y(static_cast<size_t>(checked_numel(s.out)), 0);
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t m = 0; m < s.m; ++m) {
      int64_t* acc = y.data() + (n * s.m + m) * out_sz;
      const int64_t c0 = (m / mg) * cg;
      for (int64_t cl = 0; cl < cg; ++cl) {
        const int64_t* xp = xs.data() + (n * s.c + c0 + cl) * in_sz;
        const int64_t* wp = ws.data() + (m * cg + cl) * k_sz;
        for (const ref::WindowPlan::Tap& tap : plan.taps) {
          const int64_t wv = wp[tap.k];
          for (size_t ri = tap.row_begin; ri < tap.row_end; ++ri) {
            int64_t* a = acc + plan.rows[ri].iter_off;
            const int64_t* xr = xp + plan.rows[ri].target_off;
            for (int64_t o = tap.lo; o < tap.hi; ++o) a[o] += wv * xr[o * st];
          }
        }
      }
    }
  }
  return y;
}

}  // namespace

void run_conv_integer(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  for (size_t i : {0, 1, 2, 3}) check_input_dtypes(ctx, i, kQ8);
  check_zero_point_dtype(ctx, 2, x.dtype());
  check_zero_point_dtype(ctx, 3, w.dtype());
  const ConvShapes s = conv_shapes(ctx, 0, 1);
  const std::vector<int64_t> acc =
      int_conv(s, x, static_cast<int64_t>(scalar_param(ctx, 2)), w, per_channel_param(ctx, 3, s.m));
  Tensor y(DType::kInt32, s.out);
  int32_t* py = y.data<int32_t>();
  // Wraps modulo 2^32, as int32 accumulation does.
  for (size_t i = 0; i < acc.size(); ++i) py[i] = static_cast<int32_t>(acc[i]);
  ctx.outputs[0] = std::move(y);
}

void run_qlinear_conv(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(3);
  const Tensor& y_zp = ctx.in(7);
  for (size_t i : {0, 2, 3, 5, 7}) check_input_dtypes(ctx, i, kQ8);
  for (size_t i : {1, 4, 6}) ref::check_input_dtype(ctx, i, DType::kFloat32);
  ref::check_input_dtype(ctx, 8, DType::kInt32);
  check_zero_point_dtype(ctx, 2, x.dtype());
  check_zero_point_dtype(ctx, 5, w.dtype());
  check_same_shape(ctx, 4, 5);
  const ConvShapes s = conv_shapes(ctx, 0, 3);
  const double x_scale = scalar_param(ctx, 1), y_scale = scalar_param(ctx, 6);
  const std::vector<double> w_scale = per_channel_param(ctx, 4, s.m);
  std::vector<int64_t> bias(static_cast<size_t>(s.m), 0);
  if (ctx.has_input(8)) {
    const Tensor& b = ctx.in(8);
    NNFUSE_CHECK(b.rank() == 1 && b.dim(0) == s.m, node.describe(), ": bias shape ",
                 dims_str(b.shape()), " does not match ", s.m, " output channels");
    for (int64_t m = 0; m < s.m; ++m) bias[static_cast<size_t>(m)] = b.int_at(m);
  }
  const std::vector<int64_t> acc =
      int_conv(s, x, static_cast<int64_t>(scalar_param(ctx, 2)), w, per_channel_param(ctx, 5, s.m));
  const int64_t zp = static_cast<int64_t>(scalar_param(ctx, 7));
  const int64_t out_sz = checked_numel(s.g.out);
  Tensor y(y_zp.dtype(), s.out);
  dispatch_q8(y_zp.dtype(), node.describe(), [&](auto tag) {
    using Q = decltype(tag);
    Q* py = y.data<Q>();
    for (size_t i = 0; i < acc.size(); ++i) {
      const size_t m = static_cast<size_t>((static_cast<int64_t>(i) / out_sz) % s.m);
      const double real = static_cast<double>(acc[i] + bias[m]) * x_scale * w_scale[m];
      py[i] = quantize_value<Q>(real / y_scale, zp);
    }
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace nnfuse
