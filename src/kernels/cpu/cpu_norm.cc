// BatchNormalization (inference) and LayerNormalization (opset 17), float32.
//
// BatchNorm folds its constant statistics into y = x * a[c] + b[c] at plan time, with
// a = scale / sqrt(var + eps) and b = B - mean * a (in double, rounded once); it runs on plain
// tensors (per-channel planes) and on NHWC ones (channel innermost), in place if allowed.
// LayerNorm normalizes each row of the trailing dims: mean and variance (two passes over the
// row while it is in cache, sums in double), then one pass writing the output.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/fused.h"

namespace nnfuse::cpu {

NNFUSE_TARGET_CLONES void layer_norm_row(const float* x, float* y, int64_t n, float mean, float inv,
                                         const float* scale, const float* bias) {
  if (bias) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i] + bias[i];
  } else {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i];
  }
}

namespace {

// ---- Loops (y may be x).

NNFUSE_TARGET_CLONES void affine_plane(const float* x, float* y, int64_t n, float a, float b) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

NNFUSE_TARGET_CLONES void affine_rows(const float* x, float* y, int64_t rows, int64_t c,
                                      const float* a, const float* b) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
#pragma GCC ivdep
    for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] * a[j] + b[j];
  }
}

// The piecewise-linear epilogues (ScaleShift's activation): LeakyRelu (slope for x < 0), or a
// clamp to [lo, hi] (Relu is [0, inf), Clip its bounds). NaN passes through both, as in ONNX.
struct Epilogue {
  bool leaky = false;
  float slope = 0.0f, lo = 0.0f, hi = 0.0f;
};

NNFUSE_TARGET_CLONES void affine_plane_act(const float* x, float* y, int64_t n, float a, float b,
                                           Epilogue e) {
  if (e.leaky) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i] * a + b;
      y[i] = v >= 0.0f ? v : e.slope * v;
    }
    return;
  }
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] * a + b;
    v = v < e.lo ? e.lo : v;
    y[i] = e.hi < v ? e.hi : v;
  }
}

NNFUSE_TARGET_CLONES void affine_rows_act(const float* x, float* y, int64_t rows, int64_t c,
                                          const float* a, const float* b, Epilogue e) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
    if (e.leaky) {
#pragma GCC ivdep
      for (int64_t j = 0; j < c; ++j) {
        const float v = xr[j] * a[j] + b[j];
        yr[j] = v >= 0.0f ? v : e.slope * v;
      }
      continue;
    }
#pragma GCC ivdep
    for (int64_t j = 0; j < c; ++j) {
      float v = xr[j] * a[j] + b[j];
      v = v < e.lo ? e.lo : v;
      yr[j] = e.hi < v ? e.hi : v;
    }
  }
}

// The epilogue of a ScaleShift's activation attributes; nullopt for one it does not apply.
std::optional<std::optional<Epilogue>> scale_shift_epilogue(const Node& n) {
  ref::Activation a;
  try {
    a = ref::read_activation(n);
  } catch (const Error&) {
    return std::nullopt;
  }
  const float inf = std::numeric_limits<float>::infinity();
  switch (a.kind) {
    case ref::ActivationKind::kNone:
      return std::optional<Epilogue>();
    case ref::ActivationKind::kRelu:
      return Epilogue{false, 0.0f, 0.0f, inf};
    case ref::ActivationKind::kLeakyRelu:
      return Epilogue{true, a.alpha, 0.0f, 0.0f};
    case ref::ActivationKind::kClip:
      return Epilogue{false, 0.0f, a.alpha, a.beta};
    default:
      return std::nullopt;
  }
}

// ---- BatchNormalization

// The per-channel parameter i as doubles, when it is a constant float32 [C] (C from input 1).
bool bn_param(const NodeInfo& info, size_t i, std::vector<double>* v) {
  const Tensor* t = info.constant(i);
  if (!t || t->dtype() != DType::kFloat32 || t->rank() != 1) return false;
  if (i > 1 && t->dim(0) != static_cast<int64_t>(v->size())) return false;
  v->resize(static_cast<size_t>(t->dim(0)));
  for (int64_t c = 0; c < t->dim(0); ++c) (*v)[static_cast<size_t>(c)] = t->data<float>()[c];
  return true;
}

class BatchNormKernel : public Kernel {
 public:
  // ScaleShift (ai.nnfuse): the per-channel a and b given as they are.
  BatchNormKernel(const NodeInfo& info, bool scale_shift) : who_(info.node.describe()) {
    std::vector<double> a, b;
    bn_param(info, 1, &a);
    b.resize(a.size());
    bn_param(info, 2, &b);
    for (size_t c = 0; c < a.size(); ++c) {
      a_.push_back(static_cast<float>(a[c]));
      b_.push_back(static_cast<float>(b[c]));
    }
    (void)scale_shift;
    if (auto e = scale_shift_epilogue(info.node)) epilogue_ = *e;
  }

  explicit BatchNormKernel(const NodeInfo& info) : who_(info.node.describe()) {
    std::vector<double> scale, bias, mean, var;
    bn_param(info, 1, &scale);
    bias.resize(scale.size());
    mean.resize(scale.size());
    var.resize(scale.size());
    bn_param(info, 2, &bias);
    bn_param(info, 3, &mean);
    bn_param(info, 4, &var);
    const double eps = info.node.attr_float("epsilon", 1e-5f);
    for (size_t c = 0; c < scale.size(); ++c) {
      const double a = scale[c] / std::sqrt(var[c] + eps);
      a_.push_back(static_cast<float>(a));
      b_.push_back(static_cast<float>(bias[c] - mean[c] * a));
    }
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    const int64_t c = static_cast<int64_t>(a_.size());
    if (x.rank() < 2 || x.dim(1) != c) {
      fail(ErrorKind::kRuntime, who_, ": input of shape ", dims_str(x.shape()), " does not have ",
           c, " channels in dim 1");
    }
    if (x.layout() == Layout::kNHWC && x.rank() != 4) {
      fail(ErrorKind::kRuntime, who_, ": channels-last input must have rank 4");
    }
    Tensor& y = io.output(0, DType::kFloat32, x.shape(), x.layout());
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const float* a = a_.data();
    const float* b = b_.data();
    const int64_t inner = numel_of(x.shape(), 2, x.shape().size());
    if (x.layout() == Layout::kNHWC || inner == 1) {
      // Channel innermost: rows of C.
      const int64_t rows = x.numel() / std::max<int64_t>(c, 1);
      parallel_range(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(c, 1)),
                     [&](int64_t lo, int64_t hi) {
                       if (epilogue_) {
                         affine_rows_act(px + lo * c, py + lo * c, hi - lo, c, a, b, *epilogue_);
                       } else {
                         affine_rows(px + lo * c, py + lo * c, hi - lo, c, a, b);
                       }
                     });
      return;
    }
    // Planes of `inner` elements, channel (plane % C): walk element ranges plane by plane.
    parallel_range(x.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi;) {
        const int64_t plane = i / inner, end = std::min(hi, (plane + 1) * inner);
        const int64_t ch = plane % c;
        if (epilogue_) {
          affine_plane_act(px + i, py + i, end - i, a[ch], b[ch], *epilogue_);
        } else {
          affine_plane(px + i, py + i, end - i, a[ch], b[ch]);
        }
        i = end;
      }
    });
  }

 private:
  std::string who_;
  std::vector<float> a_, b_;
  std::optional<Epilogue> epilogue_;  // ScaleShift's activation
};

// Why the kernel declines a BatchNormalization, "" when it runs it.
std::string batch_norm_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 5 || !single_output(n)) {
    return "not an inference BatchNormalization of 5 inputs and 1 output";
  }
  if (!input_is(info, 0, DType::kFloat32)) {
    return input_label(info, 0) + " is " + dtype_name(info.input_dtype(0)) + ", not float32";
  }
  for (size_t i = 1; i < 5; ++i) {
    if (!info.constant(i)) return input_label(info, i) + " is not a constant";
  }
  try {
    if (n.attr_int("training_mode", 0) != 0) return "training_mode";
    n.attr_float("epsilon", 1e-5f);
  } catch (const Error& e) {
    return std::string("attributes: ") + e.what();
  }
  std::vector<double> v;
  for (size_t i = 1; i < 5; ++i) {
    if (!bn_param(info, i, &v)) return input_label(info, i) + " is not float32 of [C]";
  }
  for (size_t i = 1; i < 5; ++i) {
    if (input_layout(info, i) != Layout::kPlain) return input_label(info, i) + " is not plain";
  }
  if (std::optional<Dims> s = info.input_shape(0)) {
    if (s->size() < 2 || (*s)[1] != static_cast<int64_t>(v.size())) {
      return input_label(info, 0) + " of shape " + dims_str(*s) + " has not " +
             std::to_string(v.size()) + " channels";
    }
  }
  return "";
}

// ---- LayerNormalization

// True when a scale/bias of shape `s` is one value per element of the normalized trailing
// dims of an input of shape `x` normalized from `axis` (leading dims all 1).
bool per_row_param(const Dims& s, const Dims& x, size_t axis) {
  const size_t inner_rank = x.size() - axis;
  if (s.size() > x.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t xi = x.size() - s.size() + i;
    if (xi < axis ? s[i] != 1 : s[i] != x[xi]) return false;
  }
  return s.size() >= inner_rank || numel_of(x, axis, axis + (inner_rank - s.size())) == 1;
}

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        axis_(info.node.attr_int("axis", -1)),
        eps_(info.node.attr_float("epsilon", 1e-5f)),
        want_mean_(info.node.output(1) != nullptr),
        want_inv_(info.node.output(2) != nullptr) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& scale = io.in(1);
    const Tensor* bias = io.has_input(2) ? &io.in(2) : nullptr;
    require_float(x, who_);
    require_float(scale, who_, "scale");
    if (bias) require_float(*bias, who_, "bias");
    const size_t axis = static_cast<size_t>(checked_axis(axis_, x.rank(), who_));
    if (!per_row_param(scale.shape(), x.shape(), axis) ||
        (bias && !per_row_param(bias->shape(), x.shape(), axis))) {
      fail(ErrorKind::kRuntime, who_, ": scale/bias shapes do not match the normalized dims of ",
           dims_str(x.shape()));
    }
    const int64_t rows = numel_of(x.shape(), 0, axis);
    const int64_t n = numel_of(x.shape(), axis, x.shape().size());
    Tensor& y = io.output(0, DType::kFloat32, x.shape());
    Dims stat_shape = x.shape();
    for (size_t i = axis; i < stat_shape.size(); ++i) stat_shape[i] = 1;
    float* mean_out = nullptr;
    float* inv_out = nullptr;
    if (io.outputs.size() > 1 && want_mean_) {
      mean_out = io.output(1, DType::kFloat32, stat_shape).data<float>();
    }
    if (io.outputs.size() > 2 && want_inv_) {
      inv_out = io.output(2, DType::kFloat32, stat_shape).data<float>();
    }
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const float* ps = scale.data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    const double eps = eps_;
    parallel_tasks(rows, rows * n * 4, [&](int64_t r) {
      const float* xr = px + r * n;
      const float mean = n > 0 ? static_cast<float>(row_sum(xr, n) / static_cast<double>(n)) : kNaN;
      const double var = row_sq_dev(xr, n, mean) / static_cast<double>(n);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
      if (mean_out) mean_out[r] = mean;
      if (inv_out) inv_out[r] = inv;
      layer_norm_row(xr, py + r * n, n, mean, inv, ps, pb);
    });
  }

 private:
  std::string who_;
  int64_t axis_;
  double eps_;
  bool want_mean_, want_inv_;
};

// Why the kernel declines a LayerNormalization, "" when it runs it.
std::string layer_norm_declines(const NodeInfo& info) {
  const Node& n = info.node;
  // Also in ai.nnfuse, where the LayerNorm fusion writes it for models before opset 17.
  if ((!n.domain().empty() && n.domain() != "ai.nnfuse") || n.num_inputs() < 2 ||
      n.num_inputs() > 3 || !n.output(0) || !info.has_input(1)) {
    return "not a LayerNormalization of X, Scale and an optional B";
  }
  if (std::string r = float_inputs_problem(info); !r.empty()) return r;
  if (!info.all_inputs_in(Layout::kPlain)) return "an input is not plain";
  try {
    if (n.attr_int("stash_type", 1) != 1) return "stash_type other than 1 (float32)";
    n.attr_float("epsilon", 1e-5f);
    const int64_t axis = n.attr_int("axis", -1);
    std::optional<Dims> x = info.input_shape(0);
    if (!x) return "";  // checked at run time
    std::optional<int64_t> a = axis_in(axis, static_cast<int64_t>(x->size()));
    if (!a) return "axis " + std::to_string(axis) + " outside " + dims_str(*x);
    for (size_t i = 1; i < n.num_inputs(); ++i) {
      std::optional<Dims> s = info.input_shape(i);
      if (info.has_input(i) && (!s || !per_row_param(*s, *x, static_cast<size_t>(*a)))) {
        return input_label(info, i) + " is not a static per-row parameter";
      }
    }
  } catch (const Error& e) {
    return std::string("attributes: ") + e.what();
  }
  return "";
}

// Why the kernel declines a ScaleShift, "" when it runs it.
std::string scale_shift_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (n.num_inputs() != 3 || !single_output(n)) return "not 3 inputs and 1 output";
  if (!input_is(info, 0, DType::kFloat32)) return not_static_f32(info, 0);
  std::vector<double> a, b;
  if (!info.constant(1) || !info.constant(2) || !bn_param(info, 1, &a)) {
    return "the scale and shift are not float32 constants of [C]";
  }
  b.resize(a.size());
  if (!bn_param(info, 2, &b)) return "the scale and shift differ in size";
  if (input_layout(info, 1) != Layout::kPlain || input_layout(info, 2) != Layout::kPlain) {
    return "the scale or shift is not plain";
  }
  if (!scale_shift_epilogue(n)) {
    return "the activation '" + n.attr_string("activation", "") +
           "' is not one it applies (Relu, LeakyRelu, Clip)";
  }
  if (std::optional<Dims> s = info.input_shape(0)) {
    if (s->size() < 2 || (*s)[1] != static_cast<int64_t>(a.size())) {
      return input_label(info, 0) + " of shape " + dims_str(*s) + " has not " +
             std::to_string(a.size()) + " channels";
    }
  }
  return "";
}

std::unique_ptr<Kernel> scale_shift_create(const NodeInfo& info) {
  return std::make_unique<BatchNormKernel>(info, true);
}

std::unique_ptr<Kernel> layer_norm_create(const NodeInfo& info) {
  return std::make_unique<LayerNormKernel>(info);
}

std::unique_ptr<Kernel> batch_norm_create(const NodeInfo& info) {
  return std::make_unique<BatchNormKernel>(info);
}

Layout same_as_input(const NodeInfo& info, size_t k) {
  return k == 0 ? input_layout(info, 0) : Layout::kPlain;
}
int in_place_output0(const NodeInfo&, size_t k) { return k == 0 ? 0 : -1; }

}  // namespace

void append_norm_kernels(FactoryTable& t) {
  t.emplace_back(
      "BatchNormalization",
      KernelFactory{"cpu.batch_norm", accepts_unless_declined<batch_norm_declines>, same_as_input,
                    batch_norm_create, in_place_output0, batch_norm_declines});
  t.emplace_back(
      "ScaleShift",
      KernelFactory{"cpu.scale_shift", accepts_unless_declined<scale_shift_declines>, same_as_input,
                    scale_shift_create, in_place_output0, scale_shift_declines});
  t.emplace_back("LayerNormalization",
                 KernelFactory{"cpu.layer_norm", accepts_unless_declined<layer_norm_declines>,
                               nullptr, layer_norm_create, in_place_output0, layer_norm_declines});
}

}  // namespace nnfuse::cpu
