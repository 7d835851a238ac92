// LayerNormalization (opset 17), float32: each row of the trailing dims normalized, mean and
// variance in two passes over the row while it is in cache (sums in double), then one pass
// writing the output.
#include <cmath>
#include <memory>
#include <optional>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"

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

std::unique_ptr<Kernel> layer_norm_create(const NodeInfo& info) {
  return std::make_unique<LayerNormKernel>(info);
}

}  // namespace

void append_layer_norm_kernels(FactoryTable& t) {
  t.emplace_back("LayerNormalization",
                 KernelFactory{"cpu.layer_norm", accepts_unless_declined<layer_norm_declines>,
                               nullptr, layer_norm_create, in_place_output0, layer_norm_declines});
}

}  // namespace nnfuse::cpu
