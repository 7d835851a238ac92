// Resize (opsets 11-17) on float32: nearest (every nearest_mode), linear and cubic
// (exclude_outside, cubic_coeff_a) over at most the last three axes, with the coordinate modes
// half_pixel, pytorch_half_pixel, align_corners, asymmetric and tf_half_pixel_for_nn. Plain
// layout, or channels-last 4-D input when N and C are kept: the output stays channels-last (a
// Resize between convolutions needs no reorder), except a graph output, written plain directly.
// Scales or sizes must be constants. tf_crop_and_resize (roi and extrapolation) is left to the
// reference kernel.
//
// Our own loop, not oneDNN's resampling primitive: that maps coordinates by half_pixel with
// F = out / in only and has no nearest_mode choice nor cubic, so most ONNX attribute sets would
// not match it. Shapes are static, so each axis's taps (input index and weight per output
// position, computed in double exactly as the reference kernel does) are built once at plan
// time. A run goes one output row at a time, in two separable passes: the row taps blend whole
// rows (contiguous and vectorized; skipped for a single tap of weight 1, as in nearest mode),
// and the last axis's taps gather within a row. Channels-last rows gather whole pixels. Plain
// rows, where gathers cost most, do the last axis first when that is cheaper (upsampling): each
// source row is resized once into a small per-thread cache and output rows blend cached rows.
// Nearest output is a pure copy, bit-equal to the reference; interpolation accumulates in float.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "kernels/cpu/batch_loop.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

struct Tap {
  int64_t index;
  double weight;
};
using AxisTaps = std::vector<std::vector<Tap>>;  // [output position] -> taps

struct Attrs {
  std::string mode, ctm, nearest_mode;
  double cubic_a;
  bool exclude_outside;

  explicit Attrs(const Node& n)
      : mode(n.attr_string("mode", "nearest")),
        ctm(n.attr_string("coordinate_transformation_mode", "half_pixel")),
        nearest_mode(n.attr_string("nearest_mode", "round_prefer_floor")),
        cubic_a(n.attr_float("cubic_coeff_a", -0.75f)),
        exclude_outside(n.attr_int("exclude_outside", 0) != 0) {}
};

// The spec's x_original, with the reference kernel's arithmetic (align_corners takes the
// resized length as scale * in_len, as the ONNX reference does).
double source_coord(const Attrs& at, int64_t o, double scale, int64_t in_len, int64_t out_len) {
  const double x = static_cast<double>(o);
  if (at.ctm == "asymmetric") return x / scale;
  if (at.ctm == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (at.ctm == "pytorch_half_pixel") return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (at.ctm == "align_corners") {
    const double in_span = static_cast<double>(in_len - 1);
    return out_len > 1 ? x * in_span / (scale * static_cast<double>(in_len) - 1) : 0.0;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(double x, const std::string& mode, int64_t in_len) {
  const double f = std::floor(x);
  double r;
  if (mode == "floor") {
    r = f;
  } else if (mode == "ceil") {
    r = std::ceil(x);
  } else if (x - f == 0.5) {
    r = mode == "round_prefer_ceil" ? f + 1 : f;
  } else {
    r = std::round(x);
  }
  return static_cast<int64_t>(std::clamp(r, 0.0, static_cast<double>(in_len - 1)));
}

// Taps of one output position; zero weights dropped (as the reference does), at least one kept.
std::vector<Tap> position_taps(const Attrs& at, int64_t o, double scale, int64_t in_len,
                               int64_t out_len) {
  double x = source_coord(at, o, scale, in_len, out_len);
  const double last = static_cast<double>(in_len - 1);
  if (at.mode == "nearest") return {{nearest_index(x, at.nearest_mode, in_len), 1.0}};
  std::vector<Tap> taps;
  if (at.mode == "linear") {
    x = std::clamp(x, 0.0, last);
    const double f = std::floor(x);
    const int64_t i0 = static_cast<int64_t>(f);
    taps = {{i0, 1 - (x - f)}, {std::min(i0 + 1, in_len - 1), x - f}};
  } else {  // cubic: weights of floor(x)-1 .. floor(x)+2
    x = std::clamp(x, -2.0, last + 2);
    const double f = std::floor(x), t = x - f, a = at.cubic_a;
    auto w = [a](double d) {
      d = std::abs(d);
      if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
      if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
      return 0.0;
    };
    const std::array<double, 4> ws = {w(t + 1), w(t), w(1 - t), w(2 - t)};
    double sum = 0;
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t i = static_cast<int64_t>(f) - 1 + k;
      const double wk = at.exclude_outside && (i < 0 || i >= in_len) ? 0.0 : ws[k];
      taps.push_back({std::clamp<int64_t>(i, 0, in_len - 1), wk});
      sum += wk;
    }
    if (at.exclude_outside && sum != 0) {
      for (Tap& tp : taps) tp.weight /= sum;
    }
  }
  std::erase_if(taps, [](const Tap& tp) { return tp.weight == 0; });
  if (taps.empty())
    taps.push_back({std::clamp<int64_t>(static_cast<int64_t>(x), 0, in_len - 1), 0});
  return taps;
}

bool is_identity(const AxisTaps& taps, int64_t in_len) {
  if (static_cast<int64_t>(taps.size()) != in_len) return false;
  for (size_t o = 0; o < taps.size(); ++o) {
    const std::vector<Tap>& t = taps[o];
    if (t.size() != 1 || t[0].index != static_cast<int64_t>(o) || t[0].weight != 1.0) return false;
  }
  return true;
}

// Everything a run needs, fixed at plan time. Storage is viewed as [outer, rows, cols * vec]:
// `vec` is C for channels-last input (the channels of a pixel move together), else 1.
struct Plan {
  Dims in_shape, out_shape;
  Layout layout = Layout::kPlain, out_layout = Layout::kPlain;
  int64_t outer = 1, vec = 1;
  int64_t in_rows = 1, out_rows = 1, in_cols = 1, out_cols = 1;
  // Per output row, its source rows and weights: [row_begin[r], row_begin[r + 1]).
  std::vector<int64_t> row_begin, row_src;
  std::vector<float> row_w;
  std::vector<bool> row_repeats;  // the row's taps equal the previous row's: copy that output
  // Last axis: col_k taps per output column, tap-major ([k * out_cols + o]); indices count
  // elements of a row (pixels times vec).
  int col_k = 1;
  bool col_identity = false;
  std::vector<int32_t> col_src;
  std::vector<float> col_w;
  // Plain layout, where the column pass gathers: resize each source row along the last axis
  // once and keep it for the output rows that blend it (when rows are reused, as in
  // upsampling), in a cache of `cache_rows` rows per thread; 0: combine rows first.
  int64_t cache_rows = 0;
};

// Whether output row taps are a single plain copy of one source row.
bool single_copy(const Plan& p, int64_t row) {
  const size_t b = static_cast<size_t>(p.row_begin[static_cast<size_t>(row)]);
  return p.row_begin[static_cast<size_t>(row) + 1] - p.row_begin[static_cast<size_t>(row)] == 1 &&
         p.row_w[b] == 1.0f;
}

// Picks the order of the two passes for plain layout by their cost per plane, a gathered element
// counted as three contiguous ones.
void choose_pass_order(Plan& p) {
  if (p.vec != 1 || p.col_identity) return;
  int64_t combine = 0, blend = 0, max_taps = 1;
  for (int64_t r = 0; r < p.out_rows; ++r) {
    const int64_t taps =
        p.row_begin[static_cast<size_t>(r) + 1] - p.row_begin[static_cast<size_t>(r)];
    max_taps = std::max(max_taps, taps);
    if (!single_copy(p, r) && !p.row_repeats[static_cast<size_t>(r)]) {
      combine += taps * p.in_cols;
      blend += taps * p.out_cols;
    }
  }
  const int64_t gather = 3 * p.col_k * p.out_cols;
  const int64_t rows_first = combine + p.out_rows * gather;
  const int64_t cols_first = blend + std::min(p.in_rows, p.out_rows * max_taps) * gather;
  if (cols_first < rows_first) p.cache_rows = 2 * max_taps;
}

// The Resize's Plan, or nullopt with the reason in *why.
std::optional<Plan> make_plan(const NodeInfo& info, std::string* why) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() < 1 || !single_output(n)) {
    return decline(why, "not a Resize with one output");
  }
  if (info.opset < 11) return decline(why, "Resize before opset 11 is not supported");
  if (std::string r = not_static_f32(info, 0); !r.empty()) return decline(why, r);
  std::optional<Attrs> at;
  try {
    at.emplace(n);
    if (n.attr_int("antialias", 0) != 0 || n.has_attr("axes") ||
        n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
      return decline(why, "the opset 18 attributes antialias, axes and keep_aspect_ratio_policy");
    }
  } catch (const Error& e) {
    return decline(why, "attributes: ", e.what());
  }
  if (at->mode != "nearest" && at->mode != "linear" && at->mode != "cubic") {
    return decline(why, "mode '", at->mode, "' is not supported");
  }
  if (at->ctm == "tf_crop_and_resize") {
    return decline(why, "coordinate_transformation_mode 'tf_crop_and_resize' (roi cropping and ",
                   "extrapolation) is left to the reference kernel");
  }
  static const char* kCtm[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                               "tf_half_pixel_for_nn"};
  if (std::find(std::begin(kCtm), std::end(kCtm), at->ctm) == std::end(kCtm)) {
    return decline(why, "coordinate_transformation_mode '", at->ctm, "' is not supported");
  }
  const std::string& nm = at->nearest_mode;
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil") {
    return decline(why, "nearest_mode '", nm, "' is not supported");
  }

  Plan p;
  p.in_shape = *info.input_shape(0);
  const size_t r = p.in_shape.size();
  if (r == 0) return decline(why, input_label(info, 0), " is a scalar");
  p.layout = input_layout(info, 0);
  if (p.layout == Layout::kNHWC && r != 4) return decline(why, "a channels-last input not 4-D");
  for (size_t i = 1; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && input_layout(info, i) != Layout::kPlain) {
      return decline(why, input_label(info, i), " is not plain");
    }
  }
  // Scales (input 2) or sizes (input 3): each either a constant or statically empty.
  const Tensor* given[2] = {nullptr, nullptr};
  for (size_t k = 0; k < 2; ++k) {
    const size_t i = k + 2;
    if (!info.has_input(i)) continue;
    const Tensor* c = info.constant(i);
    if (c) {
      if (c->numel() > 0) given[k] = c;
      continue;
    }
    std::optional<Dims> s = info.input_shape(i);
    if (!s || numel_of(*s, 0, s->size()) != 0) {
      return decline(why, input_label(info, i), " (", k == 0 ? "scales" : "sizes",
                     ") is not a constant: the taps are built at plan time");
    }
  }
  if ((given[0] != nullptr) == (given[1] != nullptr)) {
    return decline(why, "exactly one of scales and sizes must be given");
  }
  std::vector<double> scale(r);
  p.out_shape.resize(r);
  if (given[1]) {
    if (given[1]->dtype() != DType::kInt64 && given[1]->dtype() != DType::kInt32) {
      return decline(why, "sizes is ", dtype_name(given[1]->dtype()));
    }
    p.out_shape = given[1]->to_int64_vector();
    if (p.out_shape.size() != r) return decline(why, "sizes has ", p.out_shape.size(), " entries");
    for (size_t a = 0; a < r; ++a) {
      if (p.out_shape[a] < 0) return decline(why, "negative size ", p.out_shape[a]);
      scale[a] = p.in_shape[a] > 0 ? static_cast<double>(p.out_shape[a]) / p.in_shape[a] : 1.0;
    }
  } else {
    const Tensor& s = *given[0];
    if (s.dtype() != DType::kFloat32 && s.dtype() != DType::kFloat64) {
      return decline(why, "scales is ", dtype_name(s.dtype()));
    }
    if (static_cast<size_t>(s.numel()) != r)
      return decline(why, "scales has ", s.numel(), " entries");
    for (size_t a = 0; a < r; ++a) {
      scale[a] = s.double_at(static_cast<int64_t>(a));
      const double len = std::floor(scale[a] * static_cast<double>(p.in_shape[a]));
      if (!(scale[a] > 0) || !(len < 1e15)) return decline(why, "bad scale ", scale[a]);
      p.out_shape[a] = static_cast<int64_t>(len);
    }
  }
  const int64_t in_numel = numel_of(p.in_shape, 0, r), out_numel = numel_of(p.out_shape, 0, r);
  if (out_numel > 0 && in_numel == 0) return decline(why, "the input is empty");
  if (std::optional<Dims> o = info.output_shape(0); o && *o != p.out_shape) {
    return decline(why, "the output's static shape ", dims_str(*o), " is not the computed ",
                   dims_str(p.out_shape));
  }
  if (out_numel == 0) {
    p.out_layout = p.layout;
    return p;
  }

  std::vector<AxisTaps> taps(r);
  size_t first_resized = r;
  for (size_t a = 0; a < r; ++a) {
    for (int64_t o = 0; o < p.out_shape[a]; ++o) {
      taps[a].push_back(position_taps(*at, o, scale[a], p.in_shape[a], p.out_shape[a]));
    }
    if (first_resized == r && !is_identity(taps[a], p.in_shape[a])) first_resized = a;
  }
  // Spatial axes [lead, r): at most three, every earlier axis kept as is.
  size_t lead = std::min(first_resized, r - 1);
  if (p.layout == Layout::kNHWC) {
    if (first_resized < 2) return decline(why, "a channels-last input must keep N and C");
    lead = 2;
    p.vec = p.in_shape[1];
    // A graph output would be reordered right after: write it plain instead.
    p.out_layout = n.output(0)->is_graph_output() ? Layout::kPlain : Layout::kNHWC;
  }
  if (r - lead > 3) {
    return decline(why, "resizes axis ", first_resized, " of a rank-", r,
                   " input: only the last three axes may be resized");
  }
  p.outer = numel_of(p.in_shape, 0, p.layout == Layout::kNHWC ? 1 : lead);
  p.in_cols = p.in_shape[r - 1];
  p.out_cols = p.out_shape[r - 1];
  if (p.in_cols * p.vec > std::numeric_limits<int32_t>::max()) {
    return decline(why, "rows of ", p.in_cols * p.vec, " elements are too long");
  }

  // Row taps: the product of the taps of the spatial axes before the last.
  p.row_begin.push_back(0);
  std::vector<std::pair<int64_t, double>> cur = {{0, 1.0}};
  std::vector<std::pair<int64_t, double>> prev;
  Dims idx(r, 0);
  for (size_t a = lead; a + 1 < r; ++a) p.in_rows *= p.in_shape[a], p.out_rows *= p.out_shape[a];
  for (int64_t row = 0; row < p.out_rows; ++row) {
    cur = {{0, 1.0}};
    for (size_t a = lead; a + 1 < r; ++a) {
      std::vector<std::pair<int64_t, double>> next;
      for (const auto& [off, w] : cur) {
        for (const Tap& t : taps[a][static_cast<size_t>(idx[a])]) {
          next.push_back({off * p.in_shape[a] + t.index, w * t.weight});
        }
      }
      cur = std::move(next);
    }
    p.row_repeats.push_back(row > 0 && cur == prev);
    for (const auto& [off, w] : cur) {
      p.row_src.push_back(off);
      p.row_w.push_back(static_cast<float>(w));
    }
    p.row_begin.push_back(static_cast<int64_t>(p.row_src.size()));
    prev = cur;
    for (size_t a = r - 1; a-- > lead;) {  // next output row: odometer over the leading axes
      if (++idx[a] < p.out_shape[a]) break;
      idx[a] = 0;
    }
  }

  // Column taps, padded to the axis's widest with zero weights on a valid index.
  const AxisTaps& ct = taps[r - 1];
  p.col_identity = is_identity(ct, p.in_cols);
  for (const std::vector<Tap>& t : ct) p.col_k = std::max(p.col_k, static_cast<int>(t.size()));
  // k = 1 copies without weighing (nearest); a lone tap of another weight goes through k = 2.
  for (const std::vector<Tap>& t : ct) {
    if (p.col_k == 1 && t[0].weight != 1.0) p.col_k = 2;
  }
  if (p.col_k == 3) p.col_k = 4;
  const size_t oc = static_cast<size_t>(p.out_cols);
  p.col_src.assign(static_cast<size_t>(p.col_k) * oc, 0);
  p.col_w.assign(static_cast<size_t>(p.col_k) * oc, 0.0f);
  for (size_t o = 0; o < oc; ++o) {
    for (size_t k = 0; k < static_cast<size_t>(p.col_k); ++k) {
      const Tap& t = ct[o][std::min(k, ct[o].size() - 1)];
      p.col_src[k * oc + o] = static_cast<int32_t>(t.index * p.vec);
      p.col_w[k * oc + o] = k < ct[o].size() ? static_cast<float>(t.weight) : 0.0f;
    }
  }
  choose_pass_order(p);
  return p;
}

// dst[0, n) = sum_t w[t] * src[t][0, n) over `taps` rows.
NNFUSE_TARGET_CLONES void combine_rows(const float* const* src, const float* w, int64_t taps,
                                       int64_t n, float* dst) {
  if (taps == 2) {
    const float *a = src[0], *b = src[1];
    const float wa = w[0], wb = w[1];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dst[i] = wa * a[i] + wb * b[i];
    return;
  }
  const float* a = src[0];
  const float wa = w[0];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = wa * a[i];
  for (int64_t t = 1; t < taps; ++t) {
    const float* b = src[t];
    const float wb = w[t];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dst[i] += wb * b[i];
  }
}

// One output row of a plain tensor from its source row: dst[o] = sum_k w[k][o] * src[idx[k][o]].
NNFUSE_TARGET_CLONES void gather_cols(const float* src, const int32_t* idx, const float* w, int k,
                                      int64_t n, float* dst) {
  if (k == 1) {
#pragma omp simd
    for (int64_t o = 0; o < n; ++o) dst[o] = src[idx[o]];
  } else if (k == 2) {
#pragma omp simd
    for (int64_t o = 0; o < n; ++o) dst[o] = w[o] * src[idx[o]] + w[n + o] * src[idx[n + o]];
  } else {
#pragma omp simd
    for (int64_t o = 0; o < n; ++o) {
      dst[o] = w[o] * src[idx[o]] + w[n + o] * src[idx[n + o]] +
               w[2 * n + o] * src[idx[2 * n + o]] + w[3 * n + o] * src[idx[3 * n + o]];
    }
  }
}

// The channels-last form: pixels of `vec` channels, each combined channel-wise.
NNFUSE_TARGET_CLONES void gather_pixels(const float* src, const int32_t* idx, const float* w, int k,
                                        int64_t n, int64_t vec, float* dst) {
  for (int64_t o = 0; o < n; ++o) {
    float* d = dst + o * vec;
    if (k == 1) {
      std::memcpy(d, src + idx[o], static_cast<size_t>(vec) * sizeof(float));
      continue;
    }
    const float* s0 = src + idx[o];
    const float w0 = w[o];
#pragma omp simd
    for (int64_t c = 0; c < vec; ++c) d[c] = w0 * s0[c];
    for (int t = 1; t < k; ++t) {
      const float* s = src + idx[t * n + o];
      const float wt = w[t * n + o];
#pragma omp simd
      for (int64_t c = 0; c < vec; ++c) d[c] += wt * s[c];
    }
  }
}

// [rows, cols] -> [cols, rows]: a channels-last row of pixels into the plain rows of its
// channels, `stride` apart.
NNFUSE_TARGET_CLONES void scatter_channels(const float* src, int64_t pixels, int64_t channels,
                                           float* dst, int64_t stride) {
  for (int64_t c = 0; c < channels; ++c) {
    float* d = dst + c * stride;
#pragma omp simd
    for (int64_t o = 0; o < pixels; ++o) d[o] = src[o * channels + c];
  }
}

class ResizeKernel : public Kernel {
 public:
  ResizeKernel(const NodeInfo& info, Plan p) : who_(info.node.describe()), p_(std::move(p)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    if (x.shape() != p_.in_shape || x.layout() != p_.layout) {
      fail(ErrorKind::kRuntime, who_, ": input is ", dims_str(x.shape()), " ",
           layout_name(x.layout()), ", planned ", dims_str(p_.in_shape), " ",
           layout_name(p_.layout));
    }
    Tensor& y = io.output(0, DType::kFloat32, p_.out_shape, p_.out_layout);
    if (y.numel() == 0) return;
    const int64_t taps = static_cast<int64_t>(p_.row_w.size()) / p_.out_rows;
    const int64_t work = y.numel() * (p_.col_k + taps);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    parallel_blocks(p_.outer * p_.out_rows, work,
                    [&](int64_t begin, int64_t end) { run_rows(px, py, begin, end); });
  }

 private:
  // Output rows [begin, end) of the [outer * out_rows] rows.
  void run_rows(const float* px, float* py, int64_t begin, int64_t end) const {
    const int64_t in_len = p_.in_cols * p_.vec, out_len = p_.out_cols * p_.vec;
    const bool to_plain = p_.layout == Layout::kNHWC && p_.out_layout == Layout::kPlain;
    std::vector<float> tmp(static_cast<size_t>(in_len)), row_out;
    if (to_plain) row_out.resize(static_cast<size_t>(out_len));
    std::vector<const float*> rows;
    RowCache cache(p_.cache_rows, p_.out_cols);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t plane = t / p_.out_rows, row = t % p_.out_rows;
      float* dst = to_plain ? row_out.data() : py + t * out_len;
      const bool repeat = p_.row_repeats[static_cast<size_t>(row)] && t > begin;
      if (repeat && !to_plain) {
        std::memcpy(dst, dst - out_len, static_cast<size_t>(out_len) * sizeof(float));
        continue;
      }
      const float* base = px + plane * p_.in_rows * in_len;
      const size_t b = static_cast<size_t>(p_.row_begin[static_cast<size_t>(row)]);
      const size_t e = static_cast<size_t>(p_.row_begin[static_cast<size_t>(row) + 1]);
      if (repeat) {
        // row_out still holds the previous row's pixels.
      } else if (single_copy(p_, row)) {
        resize_cols(base + p_.row_src[b] * in_len, dst);
      } else if (p_.cache_rows > 0) {
        rows.clear();
        for (size_t i = b; i < e; ++i) {
          const int64_t src = plane * p_.in_rows + p_.row_src[i];
          float* r = cache.find(src);
          if (!r) resize_cols(base + p_.row_src[i] * in_len, r = cache.insert(src));
          rows.push_back(r);
        }
        combine_rows(rows.data(), p_.row_w.data() + b, static_cast<int64_t>(e - b), out_len, dst);
      } else {
        rows.clear();
        for (size_t i = b; i < e; ++i) rows.push_back(base + p_.row_src[i] * in_len);
        float* into = p_.col_identity ? dst : tmp.data();
        combine_rows(rows.data(), p_.row_w.data() + b, static_cast<int64_t>(e - b), in_len, into);
        if (!p_.col_identity) resize_cols(into, dst);
      }
      if (to_plain) {
        const int64_t plane_len = p_.out_rows * p_.out_cols;
        scatter_channels(dst, p_.out_cols, p_.vec,
                         py + plane * p_.vec * plane_len + row * p_.out_cols, plane_len);
      }
    }
  }

  // One row along the last axis.
  void resize_cols(const float* src, float* dst) const {
    if (p_.col_identity) {
      std::memcpy(dst, src, static_cast<size_t>(p_.out_cols * p_.vec) * sizeof(float));
    } else if (p_.vec == 1) {
      gather_cols(src, p_.col_src.data(), p_.col_w.data(), p_.col_k, p_.out_cols, dst);
    } else {
      gather_pixels(src, p_.col_src.data(), p_.col_w.data(), p_.col_k, p_.out_cols, p_.vec, dst);
    }
  }

  // Source rows already resized along the last axis. The least recently used is evicted:
  // holding twice an output row's taps, that is never one the current output row uses.
  class RowCache {
   public:
    RowCache(int64_t rows, int64_t len)
        : len_(len),
          keys_(static_cast<size_t>(rows), -1),
          used_(static_cast<size_t>(rows), 0),
          buf_(static_cast<size_t>(rows * len)) {}
    float* find(int64_t key) {
      for (size_t i = 0; i < keys_.size(); ++i) {
        if (keys_[i] == key) return slot(i);
      }
      return nullptr;
    }
    float* insert(int64_t key) {
      const size_t i =
          static_cast<size_t>(std::min_element(used_.begin(), used_.end()) - used_.begin());
      keys_[i] = key;
      return slot(i);
    }

   private:
    float* slot(size_t i) {
      used_[i] = ++clock_;
      return buf_.data() + static_cast<int64_t>(i) * len_;
    }
    int64_t len_;
    std::vector<int64_t> keys_;
    std::vector<uint64_t> used_;
    std::vector<float> buf_;
    uint64_t clock_ = 0;
  };

  std::string who_;
  Plan p_;
};

std::string resize_declines(const NodeInfo& info) {
  std::string why;
  if (!make_plan(info, &why) && why.empty()) why = "does not support this configuration";
  return why;
}

std::unique_ptr<Kernel> resize_create(const NodeInfo& info) {
  std::string why;
  std::optional<Plan> p = make_plan(info, &why);
  if (!p) fail(ErrorKind::kInternal, info.node.describe(), ": cpu.resize declines: ", why);
  return std::make_unique<ResizeKernel>(info, std::move(*p));
}

Layout resize_output_layout(const NodeInfo& info, size_t /*k*/) {
  std::optional<Plan> p = make_plan(info, nullptr);
  return p ? p->out_layout : Layout::kPlain;
}

KernelFactory resize_factory() {
  KernelFactory f{"cpu.resize", accepts_unless_declined<resize_declines>, resize_output_layout,
                  resize_create, nullptr};
  f.declines = resize_declines;
  return f;
}

// A Resize runs image by image only where it keeps the batch: scales with a first entry of 1
// (sizes would name the batch it was exported with).
std::string keeps_batch(const NodeInfo& info) {
  if (info.has_input(3)) {
    const Tensor* sizes = info.constant(3);
    if (!sizes || sizes->numel() != 0) return "sizes given: it names a batch";
  }
  const Tensor* scales = info.has_input(2) ? info.constant(2) : nullptr;
  if (!scales || scales->numel() == 0 || scales->double_at(0) != 1.0) {
    return "scales that do not keep the batch";
  }
  return "";
}

}  // namespace

void append_resize_kernels(FactoryTable& t) {
  t.emplace_back("Resize", resize_factory());
  // The batch known only at run time (Keypoint R-CNN's heatmaps of its detections).
  t.emplace_back("Resize", batch_loop_factory<resize_factory, 1u, keeps_batch>("cpu.resize_batch"));
}

}  // namespace nnfuse::cpu
