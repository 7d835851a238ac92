// Reference NN kernels: the table, and the sliding-window geometry shared by Conv,
// ConvTranspose and the pools (the kernels themselves are in conv.cc, pool.cc, matmul.cc and
// norm.cc).
#include <algorithm>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse {

void append_nn_kernels(std::vector<RefKernelEntry>& t) {
  ref::append_conv_kernels(t);
  ref::append_pool_kernels(t);
  ref::append_matmul_kernels(t);
  ref::append_norm_kernels(t);
}

namespace ref {

std::string auto_pad_reason(const Node& node) {
  std::string s = node.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s == "SAME_UPPER" || s == "SAME_LOWER" || s == "VALID" || s.empty()) {
    return "";
  }
  return "auto_pad '" + s + "' is not supported";
}

AutoPad read_auto_pad(const Node& node) {
  std::string s = node.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  fail(ErrorKind::kUnsupported, node.describe(), ": auto_pad '", s, "' is not supported");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

Dims spatial_attr(const Node& node, const std::string& name, size_t n, int64_t fallback,
                  bool positive) {
  if (!node.has_attr(name)) return Dims(n, fallback);
  Dims v = node.attr_ints(name);
  if (v.size() != n) {
    fail(ErrorKind::kRuntime, node.describe(), ": attribute '", name, "' has ", v.size(),
         " values, expected ", n);
  }
  for (int64_t x : v) {
    if (x > kMaxGeometryValue || x < -kMaxGeometryValue || (positive && x < 1)) {
      fail(ErrorKind::kRuntime, node.describe(), ": attribute '", name, "' has bad value ", x);
    }
  }
  return v;
}

WindowGeometry window_geometry(const Node& node, const Dims& in, const Dims& kernel,
                               bool ceil_mode) {
  const size_t r = in.size();
  WindowGeometry g;
  g.in = in;
  g.kernel = kernel;
  g.strides = spatial_attr(node, "strides", r, 1, true);
  g.dilations = spatial_attr(node, "dilations", r, 1, true);
  g.out.assign(r, 0);
  g.pad_begin.assign(r, 0);
  g.pad_end.assign(r, 0);
  AutoPad ap = read_auto_pad(node);
  Dims pads;
  if (ap == AutoPad::kNotSet) {
    pads = spatial_attr(node, "pads", 2 * r, 0, false);
    for (int64_t p : pads) {
      NNFUSE_CHECK(p >= 0, node.describe(), ": negative pads are not supported");
    }
  }
  for (size_t j = 0; j < r; ++j) {
    NNFUSE_CHECK(in[j] <= kMaxGeometryValue && kernel[j] >= 1 && kernel[j] <= kMaxGeometryValue,
                 node.describe(), ": bad spatial size ", in[j], " or kernel size ", kernel[j]);
    const int64_t s = g.strides[j];
    const int64_t span = (kernel[j] - 1) * g.dilations[j] + 1;  // the dilated window
    if (ap == AutoPad::kSameUpper || ap == AutoPad::kSameLower) {
      g.out[j] = ceil_div(in[j], s);
      int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * s + span - in[j]);
      g.pad_begin[j] = ap == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      g.pad_end[j] = total - g.pad_begin[j];
    } else if (ap == AutoPad::kValid) {
      g.out[j] = floor_div(in[j] - span, s) + 1;
    } else {
      g.pad_begin[j] = pads[j];
      g.pad_end[j] = pads[r + j];
      int64_t room = in[j] + g.pad_begin[j] + g.pad_end[j] - span;
      g.out[j] = (ceil_mode ? ceil_div(room, s) : floor_div(room, s)) + 1;
      // With ceil_mode, a last window starting past the input and its leading padding is
      // dropped.
      if (ceil_mode && g.out[j] > 0 && (g.out[j] - 1) * s >= in[j] + g.pad_begin[j]) --g.out[j];
    }
    if (g.out[j] < 1) {
      fail(ErrorKind::kRuntime, node.describe(), ": spatial size ", in[j], " with kernel ",
           kernel[j], ", dilation ", g.dilations[j], ", stride ", s, " and pads ", g.pad_begin[j],
           "+", g.pad_end[j], " gives an empty output");
    }
  }
  return g;
}

WindowPlan plan_window(const Dims& iter, const Dims& target, const WindowGeometry& g) {
  const size_t r = g.rank();
  WindowPlan plan;
  if (r == 0) return plan;
  plan.stride_last = g.strides[r - 1];
  const Dims iter_strides = contiguous_strides(iter);
  const Dims target_strides = contiguous_strides(target);
  const Dims kernel_strides = contiguous_strides(g.kernel);
  // Per dim, the taps that touch the target at all, with their offset and range of p such
  // that 0 <= p * stride + offset < target. Only combinations of these are visited, so the
  // cost follows the real work even for huge (mostly padding) pooling kernels.
  struct DimTap {
    int64_t k, off, lo, hi;
  };
  std::vector<std::vector<DimTap>> dim_taps(r);
  for (size_t j = 0; j < r; ++j) {
    for (int64_t k = 0; k < g.kernel[j]; ++k) {
      const int64_t off = k * g.dilations[j] - g.pad_begin[j];
      const int64_t lo = std::max<int64_t>(0, ceil_div(-off, g.strides[j]));
      const int64_t hi =
          std::min<int64_t>(iter[j], floor_div(target[j] - 1 - off, g.strides[j]) + 1);
      if (lo < hi) dim_taps[j].push_back({k, off, lo, hi});
    }
    if (dim_taps[j].empty()) return plan;
  }
  std::vector<size_t> t(r, 0);  // which valid tap of each dim
  Dims p(r);
  for (;;) {
    const DimTap& last = dim_taps[r - 1][t[r - 1]];
    int64_t flat = 0;
    for (size_t j = 0; j < r; ++j) flat += dim_taps[j][t[j]].k * kernel_strides[j];
    WindowPlan::Tap tap{flat, last.lo, last.hi, plan.rows.size(), 0};
    // Every row of the outer dims within [lo, hi), in C order.
    for (size_t j = 0; j + 1 < r; ++j) p[j] = dim_taps[j][t[j]].lo;
    for (;;) {
      int64_t io = 0, to = last.off;
      for (size_t j = 0; j + 1 < r; ++j) {
        io += p[j] * iter_strides[j];
        to += (p[j] * g.strides[j] + dim_taps[j][t[j]].off) * target_strides[j];
      }
      plan.rows.push_back({io, to});
      size_t j = r - 1;
      while (j > 0 && ++p[j - 1] == dim_taps[j - 1][t[j - 1]].hi) {
        p[j - 1] = dim_taps[j - 1][t[j - 1]].lo;
        --j;
      }
      if (j == 0) break;
    }
    tap.row_end = plan.rows.size();
    plan.taps.push_back(tap);
    size_t j = r;
    while (j > 0 && ++t[j - 1] == dim_taps[j - 1].size()) {
      t[j - 1] = 0;
      --j;
    }
    if (j == 0) break;
  }
  return plan;
}

std::string float_inputs_reason(const Node& node, size_t first, size_t count) {
  return require_input_types(node, {DType::kFloat32, DType::kFloat64}, first, count);
}

void check_input_dtype(const KernelContext& ctx, size_t i, DType want) {
  if (!ctx.has_input(i)) return;
  DType got = ctx.inputs[i]->dtype();
  if (got != want) {
    fail(ErrorKind::kRuntime, ctx.node.describe(), ": input ", i, " has type ", dtype_name(got),
         ", expected ", dtype_name(want));
  }
}

}  // namespace ref
}  // namespace nnfuse
