// BatchNormalization (inference) and ScaleShift, float32.
//
// BatchNorm folds its constant statistics into y = x * a[c] + b[c] at plan time, with
// a = scale / sqrt(var + eps) and b = B - mean * a (in double, rounded once); it runs on plain
// tensors (per-channel planes) and on NHWC ones (channel innermost), in place if allowed.
// ScaleShift (ai.nnfuse) is the folded form, with a piecewise-linear activation, also of a
// concatenation (inputs 3 on are further parts of X, each written once into its channels).
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

namespace {

// ---- Loops (y may be x).

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
    parts_ = scale_shift && info.node.num_inputs() > 3;
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
    if (parts_) return run_parts(io);
    const Tensor& x = io.in(0);
    require_float(x, who_);
    const int64_t c = static_cast<int64_t>(a_.size());
    if (x.rank() < 2 || x.dim(1) != c) {
      fail(ErrorKind::kRuntime, who_, ": input of shape ", dims_str(x.shape()), " does not have ",
           c, " channels in dim 1");
    }
    if (x.layout() == Layout::kNHWC && !channels_last_rank(x.rank())) {
      fail(ErrorKind::kRuntime, who_, ": channels-last input must have rank 3 to 5");
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
      parallel_range(
          rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(c, 1)),
          [&](int64_t lo, int64_t hi) { affine(px + lo * c, py + lo * c, hi - lo, c, a, b); });
      return;
    }
    // Planes of `inner` elements, channel (plane % C): walk element ranges plane by plane.
    parallel_range(x.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi;) {
        const int64_t plane = i / inner, end = std::min(hi, (plane + 1) * inner);
        const int64_t ch = plane % c;
        affine(px + i, py + i, end - i, a[ch], b[ch]);
        i = end;
      }
    });
  }

 private:
  // y = act(x * a + b), with the epilogue when there is one: over `rows` rows of c channels
  // (a and b per channel), or over n elements of one channel.
  void affine(const float* x, float* y, int64_t rows, int64_t c, const float* a,
              const float* b) const {
    if (epilogue_) {
      affine_rows_act(x, y, rows, c, a, b, *epilogue_);
    } else {
      affine_rows(x, y, rows, c, a, b);
    }
  }
  void affine(const float* x, float* y, int64_t n, float a, float b) const {
    if (epilogue_) {
      affine_plane_act(x, y, n, a, b, *epilogue_);
    } else {
      affine_plane(x, y, n, a, b);
    }
  }

  // ScaleShift of a concatenation: X is inputs 0, 3, 4, ... joined along dim 1, each part
  // written once into its channels of Y (all parts in Y's layout).
  void run_parts(KernelIO& io) {
    std::vector<const Tensor*> parts = {&io.in(0)};
    for (size_t i = 3; i < io.inputs.size(); ++i) parts.push_back(&io.in(i));
    const Tensor& x = *parts[0];
    Dims shape = x.shape();
    if (shape.size() < 2) fail(ErrorKind::kRuntime, who_, ": X must have rank >= 2");
    std::vector<int64_t> first;  // each part's first channel in Y
    shape[1] = 0;
    for (const Tensor* p : parts) {
      require_float(*p, who_);
      Dims d = p->shape();
      if (d.size() != shape.size() || p->layout() != x.layout()) {
        fail(ErrorKind::kRuntime, who_, ": the parts of X ", dims_str(x.shape()), " and ",
             dims_str(d), " differ in rank or layout");
      }
      first.push_back(shape[1]);
      shape[1] += d[1];
      d[1] = shape[1];
      if (d != shape) {
        fail(ErrorKind::kRuntime, who_, ": the parts of X ", dims_str(x.shape()), " and ",
             dims_str(p->shape()), " differ outside dim 1");
      }
    }
    const int64_t c = static_cast<int64_t>(a_.size());
    if (shape[1] != c) {
      fail(ErrorKind::kRuntime, who_, ": the parts of X have ", shape[1], " channels, not ", c);
    }
    Tensor& y = io.output(0, DType::kFloat32, shape, x.layout());
    float* py = y.data<float>();
    const int64_t inner = numel_of(shape, 2, shape.size());
    if (x.layout() == Layout::kNHWC || inner == 1) {
      // Rows of C channels: each part's row of its channels into its span of Y's row.
      const int64_t rows = y.numel() / std::max<int64_t>(c, 1);
      parallel_range(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(c, 1)),
                     [&](int64_t lo, int64_t hi) {
                       for (int64_t r = lo; r < hi; ++r) {
                         for (size_t j = 0; j < parts.size(); ++j) {
                           const int64_t pc = parts[j]->dim(1), f = first[j];
                           affine(parts[j]->data<float>() + r * pc, py + r * c + f, 1, pc,
                                  a_.data() + f, b_.data() + f);
                         }
                       }
                     });
      return;
    }
    // Planes of `inner` elements, (n, channel) of Y: read from the part holding the channel.
    parallel_range(y.numel() / inner, std::max<int64_t>(1, kParallelGrain / inner),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t plane = lo; plane < hi; ++plane) {
                       const int64_t n = plane / c, ch = plane % c;
                       size_t j = parts.size() - 1;
                       while (first[j] > ch) --j;
                       const int64_t pc = parts[j]->dim(1);
                       affine(parts[j]->data<float>() + (n * pc + ch - first[j]) * inner,
                              py + plane * inner, inner, a_[ch], b_[ch]);
                     }
                   });
  }

  std::string who_;
  std::vector<float> a_, b_;
  std::optional<Epilogue> epilogue_;  // ScaleShift's activation
  bool parts_ = false;                // a ScaleShift of a concatenation
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

// Why the kernel declines a ScaleShift, "" when it runs it.
std::string scale_shift_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (n.num_inputs() < 3 || !single_output(n)) return "not 3 or more inputs and 1 output";
  std::vector<size_t> parts = {0};
  for (size_t i = 3; i < n.num_inputs(); ++i) parts.push_back(i);
  int64_t channels = 0;
  for (size_t i : parts) {
    if (!input_is(info, i, DType::kFloat32)) return not_static_f32(info, i);
    if (input_layout(info, i) != input_layout(info, 0)) {
      return input_label(info, i) + " is not in the layout of " + input_label(info, 0);
    }
    std::optional<Dims> s = info.input_shape(i);
    channels = s && s->size() >= 2 && channels >= 0 ? channels + (*s)[1] : -1;
  }
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
    if (s->size() < 2 || (parts.size() == 1 && (*s)[1] != static_cast<int64_t>(a.size()))) {
      return input_label(info, 0) + " of shape " + dims_str(*s) + " has not " +
             std::to_string(a.size()) + " channels";
    }
  }
  if (parts.size() > 1 && channels >= 0 && channels != static_cast<int64_t>(a.size())) {
    return "the parts of X have " + std::to_string(channels) + " channels, not " +
           std::to_string(a.size());
  }
  return "";
}

std::unique_ptr<Kernel> scale_shift_create(const NodeInfo& info) {
  return std::make_unique<BatchNormKernel>(info, true);
}

std::unique_ptr<Kernel> batch_norm_create(const NodeInfo& info) {
  return std::make_unique<BatchNormKernel>(info);
}

// A ScaleShift of one part may write over it; of a concatenation, Y is larger than any part.
int in_place_one_part(const NodeInfo& info, size_t k) {
  return info.node.num_inputs() > 3 ? -1 : in_place_output0(info, k);
}

}  // namespace

void append_norm_kernels(FactoryTable& t) {
  t.emplace_back(
      "BatchNormalization",
      KernelFactory{"cpu.batch_norm", accepts_unless_declined<batch_norm_declines>, same_as_input,
                    batch_norm_create, in_place_output0, batch_norm_declines});
  t.emplace_back(
      "ScaleShift",
      KernelFactory{"cpu.scale_shift", accepts_unless_declined<scale_shift_declines>, same_as_input,
                    scale_shift_create, in_place_one_part, scale_shift_declines});
}

}  // namespace nnfuse::cpu
