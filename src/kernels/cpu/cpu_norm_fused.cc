// The fused normalizations of ai.nnfuse (contracts in kernels/ref/norm_fused.cc), float32,
// over rows of the last axis, in parallel over rows:
//   SkipLayerNorm: per row, one pass adds X (+ bias) + Skip into the sum (output 1 when it is
//   wanted, else the output row itself) while summing it in double, then the row, still in
//   cache, gives the variance and is normalized.
//   RMSNorm: per row, the sum of squares in double, then one scaling pass.
#include <cmath>
#include <memory>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

constexpr char kDomain[] = "ai.nnfuse";

// ---- Loops (s may be x; y may be x).

// s = (x + bias) + skip (x + skip without bias); returns the sum of s in double. A skip of
// one element per row (skip_scalar) adds skip[0] everywhere.
NNFUSE_TARGET_CLONES double skip_add_row(const float* x, const float* skip, bool skip_scalar,
                                         const float* bias, float* s, int64_t n) {
  double sum = 0;
  if (skip_scalar) {
    const float k = skip[0];
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) {
      const float v = (bias ? x[i] + bias[i] : x[i]) + k;
      s[i] = v;
      sum += static_cast<double>(v);
    }
  } else if (bias) {
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) {
      const float v = (x[i] + bias[i]) + skip[i];
      s[i] = v;
      sum += static_cast<double>(v);
    }
  } else {
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i] + skip[i];
      s[i] = v;
      sum += static_cast<double>(v);
    }
  }
  return sum;
}

NNFUSE_TARGET_CLONES void scale_row(const float* x, float* y, int64_t n, float inv,
                                    const float* gamma) {
  if (gamma) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * gamma[i];
  } else {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv;
  }
}

// ---- Shapes

// True when `p` holds one value per element of the last axis of `x` ([E] or with leading 1s).
bool per_feature(const Dims& p, const Dims& x) {
  if (p.empty() || x.empty() || p.size() > x.size() || p.back() != x.back()) return false;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i] != 1) return false;
  }
  return true;
}

// True when `skip` broadcasts to `x` without growing it (numpy rules).
bool broadcasts_to(const Dims& skip, const Dims& x) {
  if (skip.size() > x.size()) return false;
  const size_t off = x.size() - skip.size();
  for (size_t i = 0; i < skip.size(); ++i) {
    if (skip[i] != 1 && skip[i] != x[off + i]) return false;
  }
  return true;
}

// Offsets into a broadcast Skip for each row of X: the element offset of the row's first
// element (rows of X are its last axis).
class SkipRows {
 public:
  SkipRows(const Dims& skip, const Dims& x) : x_(x) {
    const size_t rank = x.size();
    strides_.assign(rank, 0);
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      const size_t k = i + skip.size();
      const int64_t d = k >= rank ? skip[k - rank] : 1;
      strides_[i] = d == 1 ? 0 : stride;
      stride *= d;
    }
    same_ = skip == x;
    scalar_ = rank > 0 && strides_[rank - 1] == 0 && x[rank - 1] != 1;
  }
  bool scalar_per_row() const { return scalar_; }
  int64_t offset(int64_t row) const {
    const size_t rank = x_.size();
    if (same_) return row * x_[rank - 1];
    int64_t off = 0;
    for (size_t i = rank - 1; i-- > 0;) {
      off += (row % x_[i]) * strides_[i];
      row /= x_[i];
    }
    return off;
  }

 private:
  Dims x_, strides_;
  bool same_ = false, scalar_ = false;
};

// ---- SkipLayerNorm(X, Skip, gamma, beta?, bias?) -> Y, S?

class SkipLayerNormKernel : public Kernel {
 public:
  explicit SkipLayerNormKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        eps_(info.node.attr_float("epsilon", 1e-5f)),
        want_sum_(info.node.output(1) != nullptr) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& skip = io.in(1);
    const Tensor& gamma = io.in(2);
    const Tensor* beta = io.has_input(3) ? &io.in(3) : nullptr;
    const Tensor* bias = io.has_input(4) ? &io.in(4) : nullptr;
    require_float(x, who_);
    require_float(skip, who_, "Skip");
    require_float(gamma, who_, "gamma");
    if (beta) require_float(*beta, who_, "beta");
    if (bias) require_float(*bias, who_, "bias");
    if (x.rank() < 1 || !broadcasts_to(skip.shape(), x.shape())) {
      fail(ErrorKind::kRuntime, who_, ": Skip of shape ", dims_str(skip.shape()),
           " does not broadcast to X's shape ", dims_str(x.shape()));
    }
    for (const Tensor* p : {&gamma, beta, bias}) {
      if (p && !per_feature(p->shape(), x.shape())) {
        fail(ErrorKind::kRuntime, who_, ": gamma/beta/bias of shape ", dims_str(p->shape()),
             " is not one value per element of the last axis of ", dims_str(x.shape()));
      }
    }
    const int64_t n = x.dim(x.rank() - 1);
    const int64_t rows = n == 0 ? 0 : x.numel() / n;
    Tensor& y = io.output(0, DType::kFloat32, x.shape());
    float* sum_out = nullptr;
    if (io.outputs.size() > 1 && want_sum_) {
      sum_out = io.output(1, DType::kFloat32, x.shape()).data<float>();
    }
    const SkipRows skip_rows(skip.shape(), x.shape());
    const float* px = x.data<float>();
    const float* pk = skip.data<float>();
    const float* pg = gamma.data<float>();
    const float* pb = beta ? beta->data<float>() : nullptr;
    const float* pbias = bias ? bias->data<float>() : nullptr;
    float* py = y.data<float>();
    const double eps = eps_;
    parallel_tasks(rows, rows * n * 4, [&](int64_t r) {
      float* yr = py + r * n;
      float* s = sum_out ? sum_out + r * n : yr;
      const double sum = skip_add_row(px + r * n, pk + skip_rows.offset(r),
                                      skip_rows.scalar_per_row(), pbias, s, n);
      const float mean = static_cast<float>(sum / static_cast<double>(n));
      const double var = row_sq_dev(s, n, mean) / static_cast<double>(n);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
      layer_norm_row(s, yr, n, mean, inv, pg, pb);
    });
  }

 private:
  std::string who_;
  double eps_;
  bool want_sum_;
};

// ---- RMSNorm(X, gamma?) -> Y

class RmsNormKernel : public Kernel {
 public:
  explicit RmsNormKernel(const NodeInfo& info)
      : who_(info.node.describe()), eps_(info.node.attr_float("epsilon", 1e-5f)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor* gamma = io.has_input(1) ? &io.in(1) : nullptr;
    require_float(x, who_);
    if (gamma) require_float(*gamma, who_, "gamma");
    if (x.rank() < 1 || (gamma && !per_feature(gamma->shape(), x.shape()))) {
      fail(ErrorKind::kRuntime, who_, ": gamma of shape ",
           gamma ? dims_str(gamma->shape()) : std::string("[]"),
           " is not one value per element of the last axis of ", dims_str(x.shape()));
    }
    const int64_t n = x.dim(x.rank() - 1);
    const int64_t rows = n == 0 ? 0 : x.numel() / n;
    Tensor& y = io.output(0, DType::kFloat32, x.shape());
    const float* px = x.data<float>();
    const float* pg = gamma ? gamma->data<float>() : nullptr;
    float* py = y.data<float>();
    const double eps = eps_;
    parallel_tasks(rows, rows * n * 3, [&](int64_t r) {
      const float* xr = px + r * n;
      const double ms = row_sq_dev(xr, n, 0.0f) / static_cast<double>(n);
      scale_row(xr, py + r * n, n, static_cast<float>(1.0 / std::sqrt(ms + eps)), pg);
    });
  }

 private:
  std::string who_;
  double eps_;
};

// Common checks: the op in ai.nnfuse with inputs [min_in, max_in] (the first `required`
// present), float32 in the plain layout, a float epsilon.
// Why the common checks fail, "" when they pass: the op in ai.nnfuse with inputs [min_in,
// max_in] (the first `required` present), float32 in the plain layout, a float epsilon.
std::string fused_norm_declines(const NodeInfo& info, size_t min_in, size_t max_in,
                                size_t required) {
  const Node& n = info.node;
  if (n.domain() != kDomain || n.num_inputs() < min_in || n.num_inputs() > max_in || !n.output(0)) {
    return "not an ai.nnfuse node of " + std::to_string(min_in) + " to " + std::to_string(max_in) +
           " inputs";
  }
  for (size_t i = 0; i < required; ++i) {
    if (!info.has_input(i)) return input_label(info, i) + " is missing";
  }
  if (std::string r = float_inputs_problem(info); !r.empty()) return r;
  if (!info.all_inputs_in(Layout::kPlain)) return "an input is not plain";
  try {
    n.attr_float("epsilon", 1e-5f);
  } catch (const Error& e) {
    return std::string("attributes: ") + e.what();
  }
  return "";
}

std::string skip_layer_norm_declines(const NodeInfo& info) {
  if (std::string r = fused_norm_declines(info, 3, 5, 3); !r.empty()) return r;
  std::optional<Dims> x = info.input_shape(0);
  if (!x) return "";  // checked at run time
  if (x->empty()) return "a scalar input";
  std::optional<Dims> skip = info.input_shape(1);
  if (skip && !broadcasts_to(*skip, *x)) {
    return "the skip " + dims_str(*skip) + " does not broadcast to " + dims_str(*x);
  }
  for (size_t i = 2; i < info.node.num_inputs(); ++i) {
    if (!info.has_input(i)) continue;
    std::optional<Dims> p = info.input_shape(i);
    if (p && !per_feature(*p, *x)) return input_label(info, i) + " is not per feature";
  }
  return "";
}

std::string rms_norm_declines(const NodeInfo& info) {
  if (std::string r = fused_norm_declines(info, 1, 2, 1); !r.empty()) return r;
  if (info.node.num_outputs() != 1) return "more than one output";
  std::optional<Dims> x = info.input_shape(0);
  if (!x) return "";
  if (x->empty()) return "a scalar input";
  std::optional<Dims> g = info.has_input(1) ? info.input_shape(1) : std::nullopt;
  return !g || per_feature(*g, *x) ? "" : input_label(info, 1) + " is not per feature";
}

std::unique_ptr<Kernel> skip_layer_norm_create(const NodeInfo& info) {
  return std::make_unique<SkipLayerNormKernel>(info);
}
std::unique_ptr<Kernel> rms_norm_create(const NodeInfo& info) {
  return std::make_unique<RmsNormKernel>(info);
}

}  // namespace

void append_norm_fused_kernels(FactoryTable& t) {
  t.emplace_back(
      "SkipLayerNorm",
      KernelFactory{"cpu.skip_layer_norm", accepts_unless_declined<skip_layer_norm_declines>,
                    nullptr, skip_layer_norm_create, in_place_output0, skip_layer_norm_declines});
  t.emplace_back("RMSNorm",
                 KernelFactory{"cpu.rms_norm", accepts_unless_declined<rms_norm_declines>, nullptr,
                               rms_norm_create, in_place_output0, rms_norm_declines});
}

}  // namespace nnfuse::cpu
