// Reference Conv and ConvTranspose over any number of spatial dims, with groups, strides,
// dilations, pads and auto_pad. Sums are accumulated in double. The loop nest runs, per
// output channel, over input channels and kernel taps, with the innermost loop along the last
// spatial dim (contiguous for stride 1), using the precomputed WindowPlan so no index
// arithmetic or bounds check happens per element.
#include <algorithm>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {
namespace {

std::string support_conv(const Node& node, int64_t /*opset*/) {
  std::string why = float_inputs_reason(node);
  return why.empty() ? auto_pad_reason(node) : why;
}

Dims tail_dims(const Tensor& t, size_t from) {
  return Dims(t.shape().begin() + from, t.shape().end());
}

int64_t product(const Dims& d) { return checked_numel(d); }

struct ConvDims {
  int64_t n = 0, c = 0, m = 0, group = 1;
  WindowGeometry g;
};

// Checks X, W and B of Conv (transpose = false) or ConvTranspose and fills the channel counts.
ConvDims check_conv_inputs(const KernelContext& ctx, bool transpose) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  check_input_dtype(ctx, 1, x.dtype());
  check_input_dtype(ctx, 2, x.dtype());
  NNFUSE_CHECK(x.rank() >= 3, node.describe(), ": input X must have rank >= 3 (N, C, spatial...),",
               " got shape ", dims_str(x.shape()));
  NNFUSE_CHECK(w.rank() == x.rank(), node.describe(), ": weight shape ", dims_str(w.shape()),
               " does not match the rank of input shape ", dims_str(x.shape()));
  ConvDims d;
  d.group = node.attr_int("group", 1);
  NNFUSE_CHECK(d.group >= 1, node.describe(), ": group must be >= 1, got ", d.group);
  d.n = x.dim(0);
  d.c = x.dim(1);
  NNFUSE_CHECK(d.c % d.group == 0, node.describe(), ": input channels ", d.c,
               " are not divisible by group ", d.group);
  if (transpose) {
    NNFUSE_CHECK(w.dim(0) == d.c, node.describe(), ": input has ", d.c,
                 " channels but the weight shape ", dims_str(w.shape()), " expects ", w.dim(0));
    NNFUSE_CHECK(w.dim(1) <= kMaxGeometryValue, node.describe(), ": weight too large");
    d.m = w.dim(1) * d.group;
  } else {
    d.m = w.dim(0);
    NNFUSE_CHECK(w.dim(1) * d.group == d.c, node.describe(), ": input has ", d.c,
                 " channels but the weight shape ", dims_str(w.shape()), " with group ", d.group,
                 " expects ", w.dim(1) * d.group);
    NNFUSE_CHECK(d.m % d.group == 0, node.describe(), ": output channels ", d.m,
                 " are not divisible by group ", d.group);
  }
  if (ctx.has_input(2)) {
    const Tensor& b = ctx.in(2);
    NNFUSE_CHECK(b.rank() == 1 && b.dim(0) == d.m, node.describe(), ": bias shape ",
                 dims_str(b.shape()), " does not match ", d.m, " output channels");
  }
  Dims kernel = tail_dims(w, 2);
  if (node.has_attr("kernel_shape")) {
    NNFUSE_CHECK(node.attr_ints("kernel_shape") == kernel, node.describe(), ": kernel_shape ",
                 dims_str(node.attr_ints("kernel_shape")), " does not match the weight shape ",
                 dims_str(w.shape()));
  }
  if (!transpose) d.g = window_geometry(node, tail_dims(x, 2), kernel, /*ceil_mode=*/false);
  return d;
}

template <typename T>
void conv_loops(const ConvDims& d, const T* x, const T* w, const T* b, T* y) {
  const WindowPlan plan = plan_window(d.g.out, d.g.in, d.g);
  const int64_t in_sz = product(d.g.in), out_sz = product(d.g.out);
  const int64_t k_sz = product(d.g.kernel);
  const int64_t cg = d.c / d.group, mg = d.m / d.group, st = plan.stride_last;
  std::vector<double> acc(static_cast<size_t>(out_sz));
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t m = 0; m < d.m; ++m) {
      std::fill(acc.begin(), acc.end(), b ? static_cast<double>(b[m]) : 0.0);
      const int64_t c0 = (m / mg) * cg;
      for (int64_t cl = 0; cl < cg; ++cl) {
        const T* xp = x + (n * d.c + c0 + cl) * in_sz;
        const T* wp = w + (m * cg + cl) * k_sz;
        for (const WindowPlan::Tap& tap : plan.taps) {
          const double wv = wp[tap.k];
          for (size_t ri = tap.row_begin; ri < tap.row_end; ++ri) {
            double* a = acc.data() + plan.rows[ri].iter_off;
            const T* xr = xp + plan.rows[ri].target_off;
            if (st == 1) {
              for (int64_t o = tap.lo; o < tap.hi; ++o) a[o] += wv * static_cast<double>(xr[o]);
            } else {
              for (int64_t o = tap.lo; o < tap.hi; ++o) {
                a[o] += wv * static_cast<double>(xr[o * st]);
              }
            }
          }
        }
      }
      T* yp = y + (n * d.m + m) * out_sz;
      for (int64_t i = 0; i < out_sz; ++i) yp[i] = static_cast<T>(acc[i]);
    }
  }
}

template <typename T>
void conv_transpose_loops(const ConvDims& d, const T* x, const T* w, const T* b, T* y) {
  const WindowPlan plan = plan_window(d.g.in, d.g.out, d.g);
  const int64_t in_sz = product(d.g.in), out_sz = product(d.g.out);
  const int64_t k_sz = product(d.g.kernel);
  const int64_t cg = d.c / d.group, mg = d.m / d.group, st = plan.stride_last;
  std::vector<double> acc(static_cast<size_t>(out_sz));
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t m = 0; m < d.m; ++m) {
      std::fill(acc.begin(), acc.end(), b ? static_cast<double>(b[m]) : 0.0);
      const int64_t grp = m / mg, ml = m % mg;
      for (int64_t cl = 0; cl < cg; ++cl) {
        const int64_t c = grp * cg + cl;
        const T* xp = x + (n * d.c + c) * in_sz;
        const T* wp = w + (c * mg + ml) * k_sz;
        for (const WindowPlan::Tap& tap : plan.taps) {
          const double wv = wp[tap.k];
          for (size_t ri = tap.row_begin; ri < tap.row_end; ++ri) {
            double* a = acc.data() + plan.rows[ri].target_off;
            const T* xr = xp + plan.rows[ri].iter_off;
            for (int64_t i = tap.lo; i < tap.hi; ++i) a[i * st] += wv * static_cast<double>(xr[i]);
          }
        }
      }
      T* yp = y + (n * d.m + m) * out_sz;
      for (int64_t i = 0; i < out_sz; ++i) yp[i] = static_cast<T>(acc[i]);
    }
  }
}

void run_conv(KernelContext& ctx) {
  const ConvDims d = check_conv_inputs(ctx, /*transpose=*/false);
  const Tensor& x = ctx.in(0);
  Dims out_shape = {d.n, d.m};
  out_shape.insert(out_shape.end(), d.g.out.begin(), d.g.out.end());
  Tensor y(x.dtype(), out_shape);
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    conv_loops<T>(d, x.data<T>(), ctx.in(1).data<T>(),
                  ctx.has_input(2) ? ctx.in(2).data<T>() : nullptr, y.data<T>());
  });
  ctx.outputs[0] = std::move(y);
}

// ConvTranspose geometry: the output size from the pads, or the pads from output_shape (or
// from auto_pad SAME, which asks for in * stride outputs), as the ONNX spec defines:
// total = stride * (in - 1) + output_padding + dilated kernel - out, split with the odd unit
// at the end for SAME_UPPER and at the beginning otherwise.
WindowGeometry transpose_geometry(const Node& node, const Dims& in, const Dims& kernel) {
  const size_t r = in.size();
  WindowGeometry g;
  g.in = in;
  g.kernel = kernel;
  g.strides = spatial_attr(node, "strides", r, 1, true);
  g.dilations = spatial_attr(node, "dilations", r, 1, true);
  const Dims out_pad = spatial_attr(node, "output_padding", r, 0, false);
  g.out.assign(r, 0);
  g.pad_begin.assign(r, 0);
  g.pad_end.assign(r, 0);
  const AutoPad ap = read_auto_pad(node);
  const bool same = ap == AutoPad::kSameUpper || ap == AutoPad::kSameLower;
  Dims out_shape;
  if (node.has_attr("output_shape")) {
    out_shape = node.attr_ints("output_shape");
    // Some exporters give the full output shape (N, C, spatial...); the spatial part counts.
    if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    NNFUSE_CHECK(out_shape.size() == r, node.describe(), ": output_shape has ", out_shape.size(),
                 " values for ", r, " spatial dims");
  }
  Dims pads;
  if (out_shape.empty() && ap == AutoPad::kNotSet)
    pads = spatial_attr(node, "pads", 2 * r, 0, false);
  for (size_t j = 0; j < r; ++j) {
    NNFUSE_CHECK(in[j] <= kMaxGeometryValue && kernel[j] >= 1 && kernel[j] <= kMaxGeometryValue,
                 node.describe(), ": bad spatial size ", in[j], " or kernel size ", kernel[j]);
    NNFUSE_CHECK(out_pad[j] >= 0, node.describe(), ": negative output_padding");
    const int64_t s = g.strides[j];
    const int64_t full = s * (in[j] - 1) + out_pad[j] + (kernel[j] - 1) * g.dilations[j] + 1;
    if (!out_shape.empty() || same) {
      g.out[j] = out_shape.empty() ? in[j] * s : out_shape[j];
      NNFUSE_CHECK(g.out[j] >= 1 && g.out[j] <= kMaxGeometryValue, node.describe(),
                   ": bad output size ", g.out[j]);
      const int64_t total = full - g.out[j];
      if (ap == AutoPad::kSameUpper) {
        g.pad_begin[j] = floor_div(total, 2);
        g.pad_end[j] = total - g.pad_begin[j];
      } else {
        g.pad_end[j] = floor_div(total, 2);
        g.pad_begin[j] = total - g.pad_end[j];
      }
    } else {
      if (!pads.empty()) {
        g.pad_begin[j] = pads[j];
        g.pad_end[j] = pads[r + j];
        NNFUSE_CHECK(g.pad_begin[j] >= 0 && g.pad_end[j] >= 0, node.describe(),
                     ": negative pads are not supported");
      }
      g.out[j] = full - g.pad_begin[j] - g.pad_end[j];
      NNFUSE_CHECK(g.out[j] >= 1, node.describe(), ": spatial size ", in[j],
                   " gives an empty output");
    }
  }
  return g;
}

void run_conv_transpose(KernelContext& ctx) {
  ConvDims d = check_conv_inputs(ctx, /*transpose=*/true);
  const Tensor& x = ctx.in(0);
  d.g = transpose_geometry(ctx.node, tail_dims(x, 2), tail_dims(ctx.in(1), 2));
  Dims out_shape = {d.n, d.m};
  out_shape.insert(out_shape.end(), d.g.out.begin(), d.g.out.end());
  Tensor y(x.dtype(), out_shape);
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    conv_transpose_loops<T>(d, x.data<T>(), ctx.in(1).data<T>(),
                            ctx.has_input(2) ? ctx.in(2).data<T>() : nullptr, y.data<T>());
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void append_conv_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"Conv", run_conv, support_conv});
  t.push_back({"ConvTranspose", run_conv_transpose, support_conv});
}

}  // namespace nnfuse::ref
