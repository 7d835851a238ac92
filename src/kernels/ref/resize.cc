// Reference kernel for Resize (opsets 11-17): nearest, n-d linear and n-d cubic interpolation
// over every axis, with every coordinate transformation mode of those opsets.
//
// Interpolation is separable, so each axis gets a list of (input index, weight) taps per
// output position, and an output element is the weighted sum over the product of its axes'
// taps. Out-of-range neighbours are clamped to the edge, which equals the spec's edge padding.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "kernels/ref/shape_internal.h"

namespace nnfuse::ref {

namespace {

struct Tap {
  int64_t index;
  double weight;
};

struct ResizeAttrs {
  std::string mode, ctm, nearest_mode;
  double cubic_a, extrapolation;
  bool exclude_outside;

  explicit ResizeAttrs(const Node& n)
      : mode(n.attr_string("mode", "nearest")),
        ctm(n.attr_string("coordinate_transformation_mode", "half_pixel")),
        nearest_mode(n.attr_string("nearest_mode", "round_prefer_floor")),
        cubic_a(n.attr_float("cubic_coeff_a", -0.75f)),
        extrapolation(n.attr_float("extrapolation_value", 0.f)),
        exclude_outside(n.attr_int("exclude_outside", 0) != 0) {}
};

// The input coordinate of output position `o` along one axis (the spec's x_original).
double source_coord(const ResizeAttrs& at, int64_t o, double scale, int64_t in_len, int64_t out_len,
                    double roi_start, double roi_end) {
  double x = static_cast<double>(o);
  if (at.ctm == "asymmetric") return x / scale;
  if (at.ctm == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (at.ctm == "pytorch_half_pixel") return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  double in_span = static_cast<double>(in_len - 1), out_span = static_cast<double>(out_len - 1);
  // The ONNX reference takes length_resized as in_len * scale, which differs from out_len when
  // the product is not an integer (onnx/onnx#2462: intended).
  if (at.ctm == "align_corners") {
    return out_len > 1 ? x * in_span / (scale * static_cast<double>(in_len) - 1) : 0.0;
  }
  if (at.ctm == "tf_crop_and_resize") {
    return out_len > 1 ? roi_start * in_span + x * (roi_end - roi_start) * in_span / out_span
                       : 0.5 * (roi_start + roi_end) * in_span;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(double x, const std::string& nearest_mode, int64_t in_len) {
  double f = std::floor(x), r;
  if (nearest_mode == "floor") {
    r = f;
  } else if (nearest_mode == "ceil") {
    r = std::ceil(x);
  } else if (x - f == 0.5) {
    r = nearest_mode == "round_prefer_ceil" ? f + 1 : f;
  } else {
    r = std::round(x);
  }
  return static_cast<int64_t>(std::clamp(r, 0.0, static_cast<double>(in_len - 1)));
}

// Cubic convolution weights of the neighbours floor(x)-1 .. floor(x)+2, t = x - floor(x).
std::array<double, 4> cubic_weights(double t, double a) {
  auto w = [a](double d) {
    d = std::abs(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0.0;
  };
  return {w(t + 1), w(t), w(1 - t), w(2 - t)};
}

// Taps of output position `o` on one axis; empty when the position lies outside the input
// (tf_crop_and_resize only), which yields the extrapolation value.
std::vector<Tap> axis_taps(const ResizeAttrs& at, int64_t o, double scale, int64_t in_len,
                           int64_t out_len, double roi_start, double roi_end) {
  double x = source_coord(at, o, scale, in_len, out_len, roi_start, roi_end);
  double last = static_cast<double>(in_len - 1);
  if (at.ctm == "tf_crop_and_resize" && (x < 0 || x > last)) return {};
  if (at.mode == "nearest") return {{nearest_index(x, at.nearest_mode, in_len), 1.0}};
  std::vector<Tap> taps;
  if (at.mode == "linear") {
    x = std::clamp(x, 0.0, last);
    double f = std::floor(x);
    int64_t i0 = static_cast<int64_t>(f);
    taps = {{i0, 1 - (x - f)}, {std::min(i0 + 1, in_len - 1), x - f}};
  } else {                              // cubic
    x = std::clamp(x, -2.0, last + 2);  // beyond that every neighbour is the edge anyway
    double f = std::floor(x);
    std::array<double, 4> w = cubic_weights(x - f, at.cubic_a);
    double sum = 0;
    for (int64_t k = 0; k < 4; ++k) {
      int64_t i = static_cast<int64_t>(f) - 1 + k;
      double wk = at.exclude_outside && (i < 0 || i >= in_len) ? 0.0 : w[static_cast<size_t>(k)];
      taps.push_back({std::clamp<int64_t>(i, 0, in_len - 1), wk});
      sum += wk;
    }
    if (at.exclude_outside && sum != 0) {
      for (Tap& t : taps) t.weight /= sum;
    }
  }
  std::erase_if(taps, [](const Tap& t) { return t.weight == 0; });
  if (taps.empty())
    taps.push_back({std::clamp<int64_t>(static_cast<int64_t>(x), 0, in_len - 1), 0});
  return taps;
}

void run_resize(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  ResizeAttrs at(node);
  size_t r = x.shape().size();
  bool has_scales = ctx.has_input(2) && ctx.in(2).numel() > 0;
  bool has_sizes = ctx.has_input(3) && ctx.in(3).numel() > 0;
  NNFUSE_CHECK(has_scales != has_sizes, node.describe(),
               ": exactly one of scales and sizes must be given");
  std::vector<double> scale(r);
  Dims out(r);
  if (has_sizes) {
    out = ctx.in(3).to_int64_vector();
    NNFUSE_CHECK(out.size() == r, node.describe(), ": sizes has ", out.size(), " entries for rank ",
                 r);
    for (size_t i = 0; i < r; ++i) {
      NNFUSE_CHECK(out[i] >= 0, node.describe(), ": negative size ", out[i]);
      scale[i] = x.shape()[i] > 0 ? static_cast<double>(out[i]) / x.shape()[i] : 1.0;
    }
  } else {
    const Tensor& s = ctx.in(2);
    NNFUSE_CHECK(static_cast<size_t>(s.numel()) == r, node.describe(), ": scales has ", s.numel(),
                 " entries for rank ", r);
    for (size_t i = 0; i < r; ++i) {
      scale[i] = s.double_at(static_cast<int64_t>(i));
      double n = std::floor(scale[i] * static_cast<double>(x.shape()[i]));
      NNFUSE_CHECK(scale[i] > 0 && n < 4.6e18, node.describe(), ": bad scale ", scale[i]);
      out[i] = static_cast<int64_t>(n);
    }
  }
  std::vector<double> roi(2 * r, 0.0);
  if (at.ctm == "tf_crop_and_resize") {
    NNFUSE_CHECK(ctx.has_input(1) && static_cast<size_t>(ctx.in(1).numel()) == 2 * r,
                 node.describe(), ": tf_crop_and_resize needs a roi of ", 2 * r, " values");
    for (size_t i = 0; i < 2 * r; ++i) roi[i] = ctx.in(1).double_at(static_cast<int64_t>(i));
  }
  Tensor y(x.dtype(), out);
  if (y.numel() > 0) {
    NNFUSE_CHECK(x.numel() > 0, node.describe(), ": cannot resize an empty input to ",
                 dims_str(out));
  }
  if (y.numel() == 0) {
    ctx.outputs[0] = y;
    return;
  }
  std::vector<std::vector<std::vector<Tap>>> taps(r);  // [axis][output position]
  for (size_t a = 0; a < r; ++a) {
    for (int64_t o = 0; o < out[a]; ++o) {
      taps[a].push_back(axis_taps(at, o, scale[a], x.shape()[a], out[a], roi[a], roi[r + a]));
    }
  }
  Dims strides = contiguous_strides(x.shape());
  dispatch(
      x.dtype(), node.describe(),
      [&](auto z) {
        using T = decltype(z);
        const T* in = x.data<T>();
        T* dst = y.data<T>();
        Dims idx(r, 0), k(r, 0), counts(r, 0);
        int64_t pos = 0;
        do {
          bool outside = false;
          for (size_t a = 0; a < r; ++a) {
            counts[a] = static_cast<int64_t>(taps[a][static_cast<size_t>(idx[a])].size());
            outside = outside || counts[a] == 0;
          }
          if (outside) {
            if constexpr (std::is_floating_point_v<T>) dst[pos] = static_cast<T>(at.extrapolation);
          } else {
            std::fill(k.begin(), k.end(), 0);
            double acc = 0;
            do {
              double w = 1;
              int64_t off = 0;
              for (size_t a = 0; a < r; ++a) {
                const Tap& t = taps[a][static_cast<size_t>(idx[a])][static_cast<size_t>(k[a])];
                w *= t.weight;
                off += t.index * strides[a];
              }
              if constexpr (std::is_floating_point_v<T>) {
                acc += w * static_cast<double>(in[off]);
              } else {  // nearest: a single tap per axis
                dst[pos] = in[off];
              }
            } while (next_index(k, counts));
            if constexpr (std::is_floating_point_v<T>) dst[pos] = static_cast<T>(acc);
          }
          ++pos;
        } while (next_index(idx, out));
      },
      /*with_bool=*/true);
  ctx.outputs[0] = y;
}

std::string resize_support(const Node& node, int64_t opset) {
  if (opset < 11) return "Resize before opset 11 is not supported";
  ResizeAttrs at(node);
  if (at.mode != "nearest" && at.mode != "linear" && at.mode != "cubic") {
    return "mode '" + at.mode + "' is not supported";
  }
  static const char* kCtm[] = {"half_pixel",         "asymmetric",         "align_corners",
                               "pytorch_half_pixel", "tf_crop_and_resize", "tf_half_pixel_for_nn"};
  if (std::find(std::begin(kCtm), std::end(kCtm), at.ctm) == std::end(kCtm)) {
    return "coordinate_transformation_mode '" + at.ctm + "' is not supported";
  }
  const std::string& nm = at.nearest_mode;
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil") {
    return "nearest_mode '" + nm + "' is not supported";
  }
  if (node.attr_int("antialias", 0) != 0 || node.has_attr("axes") ||
      node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
    return "the opset 18 attributes antialias, axes and keep_aspect_ratio_policy are not supported";
  }
  std::vector<DType> types = {DType::kFloat32, DType::kFloat64};
  if (at.mode == "nearest" && at.ctm != "tf_crop_and_resize") {
    types.insert(types.end(),
                 {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32,
                  DType::kUInt32, DType::kInt64, DType::kUInt64, DType::kBool});
  }
  std::string r = require_input_types(node, types, 0, 1);
  if (r.empty()) r = require_input_types(node, {DType::kFloat32, DType::kFloat64}, 1, 2);
  return r.empty() ? require_input_types(node, {DType::kInt64, DType::kInt32}, 3, 1) : r;
}

}  // namespace

void append_resize_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"Resize", run_resize, resize_support});
}

}  // namespace nnfuse::ref
