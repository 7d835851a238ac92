// The Resize kernel's Plan (cpu_resize.cc), made once per node: the attributes checked, the
// output shape from the constant scales or sizes, and each axis's taps (input index and weight
// per output position, computed in double exactly as the reference kernel does), the axes before
// the last combined into taps of whole rows and the last axis's padded to one count per column;
// then the order of the two passes.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_resize_internal.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu::resize {
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

}  // namespace

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

}  // namespace nnfuse::cpu::resize
