// Reference kernels for the detection and sampling ops of vision models: NonMaxSuppression,
// RoiAlign, GridSample and MaxUnpool. Coordinates and sums are computed in double.
//
// NonMaxSuppression(boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class?,
// iou_threshold?, score_threshold?) -> selected [K, 3] int64 of (batch, class, box) triples.
// For each batch and class, the boxes scoring strictly above score_threshold (every box when
// it is absent) are visited by descending score (ties: lower box index first); a box is kept
// unless its IoU with a box already kept for that class is strictly above iou_threshold
// (default 0), until max_output_boxes_per_class (default 0: none; negative counts as 0) are
// kept. center_point_box 0 reads a box as two opposite corners [y1, x1, y2, x2] in any order,
// 1 as [x_center, y_center, width, height]. Boxes with an empty intersection or a non-positive
// area never suppress. K depends on the data: the kernel sizes the output.
//
// RoiAlign(X [N, C, H, W], rois [R, 4] of [x1, y1, x2, y2], batch_indices [R]) ->
// Y [R, C, output_height, output_width]. Each roi, scaled by spatial_scale (and shifted by
// -0.5 in coordinate_transformation_mode half_pixel, the default from opset 16; opset 10 and
// output_half_pixel shift nothing and widen a roi to at least 1x1), is split into bins; each
// bin samples a grid of sampling_ratio^2 points (0: ceil(roi size / bins) per axis) at the
// sub-bin centers. A sample outside [-1, H] x [-1, W] is 0; otherwise its coordinates are
// clamped to >= 0 and, at or past the last row/column, to that row/column, then interpolated
// bilinearly. mode avg averages a bin's samples; mode max takes, as ONNX's reference and
// onnxruntime do, the largest of the four weighted corner terms w_i * x_i over the samples.
//
// GridSample(X [N, C, H, W], grid [N, Ho, Wo, 2] of normalized (x, y)) -> Y [N, C, Ho, Wo],
// each output the weighted sum of the input pixels its grid point reads (kernels/ref/
// grid_sample.h); only 4-D X (two spatial dims) is supported.
//
// MaxUnpool(X [N, C, d1..dk], I [same], output_shape?) -> Y. The unpooled tensor U of shape
// [N, C, (d_j - 1) * stride_j - pad_begin_j - pad_end_j + kernel_j ...] is zeros except
// U.flat[I[i]] = X[i] (I holds MaxPool's indices, flat over the whole of U; a repeated index
// keeps the last). Y is U, or with output_shape (which must keep N and C and be at least U's
// shape), U placed at the origin of a zero tensor of that shape, as ONNX's reference and its
// node tests do.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/ref/grid_sample.h"
#include "kernels/ref/roi_align.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat64};
const std::vector<DType> kIndexTypes = {DType::kInt64, DType::kInt32};

// Every element of a float tensor as double.
std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.double_at(i);
  return v;
}

// The single value of an optional scalar input (shape [] or [1]), or `fallback` when absent.
double scalar_or(const KernelContext& ctx, size_t i, const char* name, double fallback) {
  if (!ctx.has_input(i)) return fallback;
  const Tensor& t = ctx.in(i);
  NNFUSE_CHECK(t.numel() == 1, ctx.node.describe(), ": ", name, " must hold one value, got shape ",
               dims_str(t.shape()));
  return t.double_at(0);
}

// ---- NonMaxSuppression ----------------------------------------------------------------------

struct Box {
  double y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
};

Box read_box(const double* b, bool center_point) {
  if (center_point) {
    const double xc = b[0], yc = b[1], w = b[2], h = b[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Whether `a` and `b` overlap with an IoU strictly above `threshold`.
bool suppresses(const Box& a, const Box& b, double threshold) {
  const double ix1 = std::max(a.x1, b.x1), ix2 = std::min(a.x2, b.x2);
  const double iy1 = std::max(a.y1, b.y1), iy2 = std::min(a.y2, b.y2);
  if (ix2 <= ix1 || iy2 <= iy1) return false;
  const double inter = (ix2 - ix1) * (iy2 - iy1);
  const double area_a = (a.x2 - a.x1) * (a.y2 - a.y1);
  const double area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

// Greedy NMS over the candidates `order` (box indices by descending score): the indices kept.
//
// A box suppresses another only where their x ranges overlap (suppresses: an empty intersection
// never does), so each kept box is tested only against the candidates whose left edge lies
// within the widest candidate's width of its own, found by binary search in the candidates
// sorted by left edge; a suppressed candidate is marked for when its turn comes. Same result as
// testing each candidate against every kept box, which torchvision's batched NMS (every class
// in one call, each class's boxes offset apart) makes quadratic in the boxes kept: SSDlite's
// 3,000 candidates of 90 classes took 144 ms so. Boxes with a non-finite x never suppress or
// are suppressed (their area or union is infinite or NaN) and are left out of the search.
struct NmsPruner {
  struct Entry {
    Box box;
    int64_t rank;  // position in `order`
  };
  std::vector<Entry> by_x;
  std::vector<char> suppressed;
  std::vector<int64_t> kept;
};

const std::vector<int64_t>& greedy_nms(const std::vector<Box>& bx,
                                       const std::vector<int64_t>& order, int64_t max_out,
                                       double iou, NmsPruner& p) {
  using Entry = NmsPruner::Entry;
  const int64_t n = static_cast<int64_t>(order.size());
  p.kept.clear();
  p.by_x.clear();
  p.suppressed.assign(static_cast<size_t>(n), 0);
  double widest = 0;
  for (int64_t r = 0; r < n; ++r) {
    const Box& b = bx[static_cast<size_t>(order[static_cast<size_t>(r)])];
    if (!std::isfinite(b.x1) || !std::isfinite(b.x2)) continue;
    p.by_x.push_back({b, r});
    widest = std::max(widest, b.x2 - b.x1);
  }
  std::sort(p.by_x.begin(), p.by_x.end(), [](const Entry& a, const Entry& b) {
    return a.box.x1 < b.box.x1 || (a.box.x1 == b.box.x1 && a.rank < b.rank);
  });
  for (int64_t r = 0; r < n && static_cast<int64_t>(p.kept.size()) < max_out; ++r) {
    if (p.suppressed[static_cast<size_t>(r)]) continue;
    const int64_t i = order[static_cast<size_t>(r)];
    p.kept.push_back(i);
    const Box k = bx[static_cast<size_t>(i)];
    if (!std::isfinite(k.x1) || !std::isfinite(k.x2)) continue;
    // A candidate overlapping k in x has x2 > k.x1 and x2 - x1 <= widest (up to rounding, which
    // the margin covers), so x1 > k.x1 - widest; and x1 < k.x2.
    const double lo = k.x1 - widest - 1e-9 * (std::abs(k.x1) + widest) - 1e-300;
    auto it = std::lower_bound(p.by_x.begin(), p.by_x.end(), lo,
                               [](const Entry& e, double v) { return e.box.x1 < v; });
    for (; it != p.by_x.end() && it->box.x1 < k.x2; ++it) {
      if (it->box.x2 <= k.x1 || it->rank <= r) continue;  // no x overlap, or not later
      char& gone = p.suppressed[static_cast<size_t>(it->rank)];
      if (!gone && suppresses(k, it->box, iou)) gone = 1;
    }
  }
  return p.kept;
}

std::string nms_support(const Node& n, int64_t) {
  const int64_t cpb = n.attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return "center_point_box " + std::to_string(cpb) + " is not 0 or 1";
  std::string why = ref::require_input_types(n, kFloatTypes, 0, 2);
  if (why.empty()) why = ref::require_input_types(n, kIndexTypes, 2, 1);
  if (why.empty()) why = ref::require_input_types(n, kFloatTypes, 3, 2);
  return why;
}

void run_nms(KernelContext& ctx) {
  const std::string what = ctx.node.describe();
  const Tensor& boxes = ctx.in(0);
  const Tensor& scores = ctx.in(1);
  NNFUSE_CHECK(boxes.rank() == 3 && boxes.dim(2) == 4, what,
               ": boxes must be [num_batches, spatial_dimension, 4], got ",
               dims_str(boxes.shape()));
  NNFUSE_CHECK(scores.rank() == 3, what,
               ": scores must be [num_batches, num_classes, spatial_dimension], got ",
               dims_str(scores.shape()));
  NNFUSE_CHECK(scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1), what, ": scores ",
               dims_str(scores.shape()), " do not match boxes ", dims_str(boxes.shape()),
               " (batches and box counts must agree)");
  int64_t max_out = 0;
  if (ctx.has_input(2)) {
    const Tensor& m = ctx.in(2);
    NNFUSE_CHECK(m.numel() == 1, what, ": max_output_boxes_per_class must hold one value, got ",
                 "shape ", dims_str(m.shape()));
    max_out = std::max<int64_t>(m.int_at(0), 0);
  }
  const double iou = scalar_or(ctx, 3, "iou_threshold", 0.0);
  NNFUSE_CHECK(iou >= 0 && iou <= 1, what, ": iou_threshold ", iou, " is outside [0, 1]");
  const bool has_score_threshold = ctx.has_input(4);
  const double score_threshold = scalar_or(ctx, 4, "score_threshold", 0.0);
  const bool center_point = ctx.node.attr_int("center_point_box", 0) == 1;

  const int64_t nb = boxes.dim(0), nbox = boxes.dim(1), nc = scores.dim(1);
  const std::vector<double> bv = doubles_of(boxes), sv = doubles_of(scores);
  std::vector<int64_t> selected;  // (batch, class, box) triples
  std::vector<int64_t> order;
  NmsPruner pruner;
  for (int64_t b = 0; b < nb; ++b) {
    std::vector<Box> bx(static_cast<size_t>(nbox));
    for (int64_t i = 0; i < nbox; ++i) {
      bx[static_cast<size_t>(i)] =
          read_box(&bv[static_cast<size_t>((b * nbox + i) * 4)], center_point);
    }
    for (int64_t c = 0; c < nc; ++c) {
      const double* s = &sv[static_cast<size_t>((b * nc + c) * nbox)];
      order.clear();
      for (int64_t i = 0; i < nbox; ++i) {
        if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      for (int64_t i : greedy_nms(bx, order, max_out, iou, pruner)) {
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  const int64_t k = static_cast<int64_t>(selected.size()) / 3;
  Tensor y(DType::kInt64, {k, 3});
  std::copy(selected.begin(), selected.end(), y.data<int64_t>());
  ctx.outputs[0] = y;
}

// ---- RoiAlign -------------------------------------------------------------------------------

// The coordinate transformation mode in force: the attribute from opset 16, else the
// pre-16 behaviour (no half-pixel shift).
std::string roi_align_ctm(const Node& n, int64_t opset) {
  if (opset > 0 && opset < 16) return "output_half_pixel";
  return n.attr_string("coordinate_transformation_mode", "half_pixel");
}

std::string roi_align_support(const Node& n, int64_t opset) {
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") return "mode '" + mode + "' is not supported";
  const std::string ctm = roi_align_ctm(n, opset);
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return "coordinate_transformation_mode '" + ctm + "' is not supported";
  }
  std::string why = ref::require_input_types(n, kFloatTypes, 0, 2);
  if (why.empty()) why = ref::require_input_types(n, kIndexTypes, 2, 1);
  return why;
}

}  // namespace

namespace ref {

RoiSample roi_sample(double y, double x, int64_t h, int64_t w) {
  RoiSample s;
  if (!(y >= -1.0 && y <= static_cast<double>(h) && x >= -1.0 && x <= static_cast<double>(w))) {
    return s;  // outside the feature map (or NaN): contributes 0
  }
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<double>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<double>(x0);
  } else {
    x1 = x0 + 1;
  }
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0);
  const double hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * w + x0;
  s.pos[1] = y0 * w + x1;
  s.pos[2] = y1 * w + x0;
  s.pos[3] = y1 * w + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

RoiAlignGeometry roi_align_geometry(const Node& n, int64_t opset) {
  const std::string what = n.describe();
  RoiAlignGeometry g;
  g.out_h = n.attr_int("output_height", 1);
  g.out_w = n.attr_int("output_width", 1);
  g.ratio = n.attr_int("sampling_ratio", 0);
  NNFUSE_CHECK(g.out_h > 0 && g.out_w > 0, what, ": output_height ", g.out_h, " and output_width ",
               g.out_w, " must be positive");
  NNFUSE_CHECK(g.ratio >= 0, what, ": sampling_ratio ", g.ratio, " is negative");
  g.scale = n.attr_float("spatial_scale", 1.0f);
  g.half_pixel = roi_align_ctm(n, opset) == "half_pixel";
  g.is_max = n.attr_string("mode", "avg") == "max";
  return g;
}

double roi_bin_samples(const RoiAlignGeometry& g, const double* roi, int64_t h, int64_t w,
                       std::vector<RoiSample>& samples, size_t* per_bin, const std::string& what,
                       int64_t r) {
  const double offset = g.half_pixel ? 0.5 : 0.0;
  const double x1 = roi[0] * g.scale - offset, y1 = roi[1] * g.scale - offset;
  const double x2 = roi[2] * g.scale - offset, y2 = roi[3] * g.scale - offset;
  double roi_w = x2 - x1, roi_h = y2 - y1;
  if (!g.half_pixel) {  // the legacy mode makes malformed rois 1x1
    roi_w = std::max(roi_w, 1.0);
    roi_h = std::max(roi_h, 1.0);
  }
  const double bin_h = roi_h / static_cast<double>(g.out_h);
  const double bin_w = roi_w / static_cast<double>(g.out_w);
  NNFUSE_CHECK(std::isfinite(bin_h) && std::isfinite(bin_w), what, ": roi ", r,
               " has a non-finite size");
  const int64_t gh = g.ratio > 0 ? g.ratio : static_cast<int64_t>(std::max(0.0, std::ceil(bin_h)));
  const int64_t gw = g.ratio > 0 ? g.ratio : static_cast<int64_t>(std::max(0.0, std::ceil(bin_w)));
  samples.clear();
  for (int64_t ph = 0; ph < g.out_h; ++ph) {
    for (int64_t pw = 0; pw < g.out_w; ++pw) {
      for (int64_t iy = 0; iy < gh; ++iy) {
        const double yy = y1 + static_cast<double>(ph) * bin_h +
                          (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(gh);
        for (int64_t ix = 0; ix < gw; ++ix) {
          const double xx = x1 + static_cast<double>(pw) * bin_w +
                            (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(gw);
          samples.push_back(roi_sample(yy, xx, h, w));
        }
      }
    }
  }
  *per_bin = static_cast<size_t>(gh * gw);
  return static_cast<double>(std::max<int64_t>(gh * gw, 1));
}

}  // namespace ref

namespace {

void run_roi_align(KernelContext& ctx) {
  const std::string what = ctx.node.describe();
  const Tensor& x = ctx.in(0);
  const Tensor& rois = ctx.in(1);
  const Tensor& bi = ctx.in(2);
  NNFUSE_CHECK(x.rank() == 4, what, ": X must be [N, C, H, W], got ", dims_str(x.shape()));
  NNFUSE_CHECK(rois.rank() == 2 && rois.dim(1) == 4, what, ": rois must be [num_rois, 4], got ",
               dims_str(rois.shape()));
  NNFUSE_CHECK(bi.rank() == 1 && bi.dim(0) == rois.dim(0), what, ": batch_indices ",
               dims_str(bi.shape()), " must be [num_rois] for rois ", dims_str(rois.shape()));
  const ref::RoiAlignGeometry g = ref::roi_align_geometry(ctx.node, ctx.opset);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), nr = rois.dim(0);
  NNFUSE_CHECK(nr == 0 || (h > 0 && w > 0), what, ": X ", dims_str(x.shape()),
               " has an empty spatial extent");
  const std::vector<double> rv = doubles_of(rois);
  ref::dispatch_float(x.dtype(), what, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    Tensor y(x.dtype(), {nr, c, g.out_h, g.out_w});
    T* py = y.data<T>();
    std::vector<ref::RoiSample> samples;
    for (int64_t r = 0; r < nr; ++r) {
      const int64_t b = bi.int_at(r);
      NNFUSE_CHECK(b >= 0 && b < n, what, ": batch index ", b, " of roi ", r, " is outside [0, ", n,
                   ")");
      // The samples of every bin, shared by the channels.
      size_t per_bin = 0;
      const double count = ref::roi_bin_samples(g, &rv[static_cast<size_t>(r * 4)], h, w, samples,
                                                &per_bin, what, r);
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* plane = px + (b * c + ch) * h * w;
        T* out = py + (r * c + ch) * g.out_h * g.out_w;
        for (int64_t bin = 0; bin < g.out_h * g.out_w; ++bin) {
          double acc = 0;
          for (size_t k = 0; k < per_bin; ++k) {
            const ref::RoiSample& s = samples[static_cast<size_t>(bin) * per_bin + k];
            if (g.is_max) {
              double v = s.w[0] * static_cast<double>(plane[s.pos[0]]);
              for (int j = 1; j < 4; ++j) {
                v = std::max(v, s.w[j] * static_cast<double>(plane[s.pos[j]]));
              }
              acc = k == 0 ? v : std::max(acc, v);
            } else {
              for (int j = 0; j < 4; ++j) acc += s.w[j] * static_cast<double>(plane[s.pos[j]]);
            }
          }
          out[bin] = static_cast<T>(g.is_max ? acc : acc / count);
        }
      }
    }
    ctx.outputs[0] = y;
  });
}

// ---- GridSample -----------------------------------------------------------------------------

std::string grid_sample_support(const Node& n, int64_t opset) {
  const std::string why = ref::grid_sample_attrs_problem(n, opset);
  return why.empty() ? ref::require_input_types(n, kFloatTypes, 0, 2) : why;
}

void run_grid_sample(KernelContext& ctx) {
  const std::string what = ctx.node.describe();
  const Tensor& x = ctx.in(0);
  const Tensor& grid = ctx.in(1);
  if (x.rank() != 4) {
    fail(ErrorKind::kUnsupported, what, ": only 4-D X [N, C, H, W] is supported, got ",
         dims_str(x.shape()));
  }
  NNFUSE_CHECK(grid.rank() == 4 && grid.dim(3) == 2 && grid.dim(0) == x.dim(0), what,
               ": grid must be [N, H_out, W_out, 2] with N = ", x.dim(0), ", got ",
               dims_str(grid.shape()));
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh = grid.dim(1), ow = grid.dim(2);
  NNFUSE_CHECK((h > 0 && w > 0) || n * oh * ow == 0, what, ": X ", dims_str(x.shape()),
               " has an empty spatial extent");
  const ref::GridSampleGeometry geo(ctx.node, ctx.opset, h, w);
  const std::vector<double> gv = doubles_of(grid);
  ref::dispatch_float(x.dtype(), what, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    Tensor y(x.dtype(), {n, c, oh, ow});
    T* py = y.data<T>();
    ref::GsTaps t;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t p = 0; p < oh * ow; ++p) {
        const size_t g = static_cast<size_t>((b * oh * ow + p) * 2);
        geo.taps(gv[g], gv[g + 1], t);
        for (int64_t ch = 0; ch < c; ++ch) {
          const T* plane = px + (b * c + ch) * h * w;
          double v = 0;
          if (t.nan) {
            v = std::numeric_limits<double>::quiet_NaN();
          } else {
            for (int k = 0; k < t.n; ++k) {
              if (t.idx[k] >= 0) v += t.w[k] * static_cast<double>(plane[t.idx[k]]);
            }
          }
          py[((b * c + ch) * oh * ow) + p] = static_cast<T>(v);
        }
      }
    }
    ctx.outputs[0] = y;
  });
}

// ---- MaxUnpool ------------------------------------------------------------------------------

std::string max_unpool_support(const Node& n, int64_t) {
  if (!n.has_attr("kernel_shape")) return "the kernel_shape attribute is missing";
  std::string why = ref::require_input_types(n, kFloatTypes, 0, 1);
  if (why.empty()) why = ref::require_input_types(n, kIndexTypes, 1, 2);
  return why;
}

void run_max_unpool(KernelContext& ctx) {
  const std::string what = ctx.node.describe();
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  NNFUSE_CHECK(x.rank() >= 3, what, ": X must be [N, C, d1, ..., dk], got ", dims_str(x.shape()));
  NNFUSE_CHECK(ind.shape() == x.shape(), what, ": the indices ", dims_str(ind.shape()),
               " do not have X's shape ", dims_str(x.shape()));
  const size_t k = static_cast<size_t>(x.rank() - 2);
  const Dims kernel = ctx.node.attr_ints("kernel_shape");
  const Dims strides = ctx.node.attr_ints("strides", Dims(k, 1));
  const Dims pads = ctx.node.attr_ints("pads", Dims(2 * k, 0));
  NNFUSE_CHECK(kernel.size() == k && strides.size() == k && pads.size() == 2 * k, what,
               ": kernel_shape, strides and pads must have ", k, ", ", k, " and ", 2 * k,
               " values for X ", dims_str(x.shape()));
  // The inferred shape: the indices are flat positions in a tensor of this shape.
  Dims inferred = {x.dim(0), x.dim(1)};
  for (size_t j = 0; j < k; ++j) {
    const int64_t d =
        (x.dim(static_cast<int64_t>(j) + 2) - 1) * strides[j] - pads[j] - pads[j + k] + kernel[j];
    NNFUSE_CHECK(d > 0, what, ": spatial dim ", j, " of the output would be ", d, " (X ",
                 dims_str(x.shape()), ", kernel_shape ", dims_str(kernel), ")");
    inferred.push_back(d);
  }
  Dims out = inferred;
  if (ctx.has_input(2)) {
    out = ctx.in(2).to_int64_vector();
    NNFUSE_CHECK(out.size() == inferred.size(), what, ": output_shape ", dims_str(out),
                 " does not have X's rank ", x.rank());
    for (size_t j = 0; j < out.size(); ++j) {
      NNFUSE_CHECK(out[j] >= inferred[j] && (j >= 2 || out[j] == inferred[j]), what,
                   ": output_shape ", dims_str(out), " must keep N, C and be at least the ",
                   "unpooled shape ", dims_str(inferred), " in every spatial dim");
    }
  }
  ref::dispatch_float(x.dtype(), what, [&](auto tag) {
    using T = decltype(tag);
    Tensor full(x.dtype(), inferred);
    const T* px = x.data<T>();
    T* pf = full.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t at = ind.int_at(i);
      NNFUSE_CHECK(at >= 0 && at < full.numel(), what, ": index ", at, " at element ", i,
                   " is outside the unpooled shape ", dims_str(inferred));
      pf[at] = px[i];
    }
    if (out == inferred) {
      ctx.outputs[0] = full;
      return;
    }
    // A larger output_shape holds the unpooled tensor at its origin, zeros elsewhere.
    Tensor y(x.dtype(), out);
    T* py = y.data<T>();
    const Dims ostr = contiguous_strides(out);
    Dims idx(inferred.size(), 0);
    for (int64_t i = 0; i < full.numel(); ++i) {
      int64_t o = 0;
      for (size_t j = 0; j < idx.size(); ++j) o += idx[j] * ostr[j];
      py[o] = pf[i];
      for (size_t j = idx.size(); j-- > 0;) {
        if (++idx[j] < inferred[j]) break;
        idx[j] = 0;
      }
    }
    ctx.outputs[0] = y;
  });
}

}  // namespace

void append_vision_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"NonMaxSuppression", run_nms, nms_support});
  t.push_back({"RoiAlign", run_roi_align, roi_align_support});
  t.push_back({"GridSample", run_grid_sample, grid_sample_support});
  t.push_back({"MaxUnpool", run_max_unpool, max_unpool_support});
}

}  // namespace nnfuse
