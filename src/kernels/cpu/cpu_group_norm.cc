// GroupNorm (ai.nnfuse), float32, plain (NCHW and any rank >= 3) or channels-last (NHWC, the
// layout the 2-D convs write, so a UNet's conv - GroupNorm - SiLU - conv chain is never
// reordered): statistics per (image, group) in double with two passes (mean, then the squared
// deviations, as the reference kernel), then y = act(x * a[c] + b[c]) with
// a = gamma * inv_std and b = beta - mean * a, the activation applied to each row while it is in
// cache. oneDNN 2.6's group normalization primitive does not exist (layer and batch
// normalization do), so the kernel is the project's own.
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/fused.h"

namespace nnfuse::cpu {

namespace {

// Rows of channels-last data handled per task in the statistics and the apply passes.
constexpr int64_t kRowBlock = 64;

// Gamma or beta: a float32 constant of [c]; empty when it is not.
std::vector<float> channel_constant(const NodeInfo& info, size_t i, int64_t c) {
  const Tensor* t = info.constant(i);
  if (!t || t->dtype() != DType::kFloat32 || t->shape() != Dims{c}) return {};
  return std::vector<float>(t->data<float>(), t->data<float>() + c);
}

std::string group_norm_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (n.num_inputs() != 3 || !single_output(n)) return "not 3 inputs and 1 output";
  if (std::string r = not_static_f32(info, 0); !r.empty()) return r;
  const Dims x = *info.input_shape(0);
  const Layout l = input_layout(info, 0);
  if (x.size() < 3) return input_label(info, 0) + " has rank " + std::to_string(x.size());
  if (l != Layout::kPlain && !(l == Layout::kNHWC && x.size() == 4)) {
    return input_label(info, 0) + " arrives in layout " + layout_name(l);
  }
  int64_t groups = 0;
  try {
    groups = n.attr_int("num_groups", 0);
    n.attr_float("epsilon", 1e-5f);
  } catch (const Error& e) {
    return std::string("attributes: ") + e.what();
  }
  if (groups < 1 || x[1] % groups != 0) {
    return "num_groups " + std::to_string(groups) + " does not divide the channels";
  }
  if (channel_constant(info, 1, x[1]).empty() || channel_constant(info, 2, x[1]).empty()) {
    return "gamma and beta are not float32 constants of [C]";
  }
  return ref::activation_reason(n);
}

class GroupNormKernel : public Kernel {
 public:
  explicit GroupNormKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        shape_(*info.input_shape(0)),
        groups_(info.node.attr_int("num_groups", 0)),
        eps_(info.node.attr_float("epsilon", 1e-5f)),
        gamma_(channel_constant(info, 1, shape_[1])),
        beta_(channel_constant(info, 2, shape_[1])),
        act_(ref::read_activation(info.node)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    if (x.shape() != shape_) {
      fail(ErrorKind::kRuntime, who_, ": input of shape ", dims_str(x.shape()), ", expected ",
           dims_str(shape_));
    }
    Tensor& y = io.output(0, DType::kFloat32, x.shape(), x.layout());
    if (x.layout() == Layout::kNHWC) {
      run_nhwc(x.data<float>(), y.data<float>());
    } else {
      run_plain(x.data<float>(), y.data<float>());
    }
  }

 private:
  // Each (image, group) is one contiguous block of C / G planes.
  void run_plain(const float* px, float* py) const {
    const int64_t c = shape_[1], cpg = c / groups_;
    const int64_t inner = numel_of(shape_, 2, shape_.size()), per_group = cpg * inner;
    parallel_tasks(shape_[0] * groups_, shape_[0] * c * inner * 4, [&](int64_t t) {
      const float* xg = px + t * per_group;
      float* yg = py + t * per_group;
      const double mean = row_sum(xg, per_group) / static_cast<double>(per_group);
      const double var = row_sq_dev(xg, per_group, static_cast<float>(mean)) / per_group;
      const double inv = 1.0 / std::sqrt(var + eps_);
      for (int64_t j = 0; j < cpg; ++j) {
        const int64_t ch = (t % groups_) * cpg + j;
        const double a = inv * gamma_[ch];
        affine_plane(xg + j * inner, yg + j * inner, inner, static_cast<float>(a),
                     static_cast<float>(beta_[ch] - mean * a));
        activation_row(act_, yg + j * inner, inner);
      }
    });
  }

  // Rows of C channels per image: per-channel sums over row blocks (each thread its own
  // accumulators), reduced per group; then the squared deviations the same way; then the rows.
  void run_nhwc(const float* px, float* py) const {
    const int64_t c = shape_[1], cpg = c / groups_, rows = shape_[2] * shape_[3];
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
    const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), blocks));
    std::vector<double> acc(static_cast<size_t>(threads * c));
    std::vector<double> mean(static_cast<size_t>(c));
    std::vector<float> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
    // Per-channel sums of f over the image's rows, folded into per-group totals spread back to
    // the group's channels in out.
    auto channel_totals = [&](const float* xi, auto f, std::vector<double>& out) {
      std::fill(acc.begin(), acc.end(), 0.0);
      parallel_blocks(threads, rows * c, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t lo = rows * t / threads, hi = rows * (t + 1) / threads;
          f(xi + lo * c, hi - lo, acc.data() + t * c);
        }
      });
      for (int64_t g = 0; g < groups_; ++g) {
        double s = 0;
        for (int64_t t = 0; t < threads; ++t) {
          for (int64_t j = g * cpg; j < (g + 1) * cpg; ++j) s += acc[t * c + j];
        }
        for (int64_t j = g * cpg; j < (g + 1) * cpg; ++j) out[j] = s;
      }
    };
    const double count = static_cast<double>(cpg * rows);
    std::vector<double> var(static_cast<size_t>(c));
    for (int64_t n = 0; n < shape_[0]; ++n) {
      const float* xi = px + n * rows * c;
      float* yi = py + n * rows * c;
      channel_totals(
          xi, [&](const float* x, int64_t r, double* s) { col_sum(x, r, c, c, s); }, mean);
      for (double& m : mean) m /= count;
      channel_totals(
          xi, [&](const float* x, int64_t r, double* s) { col_sq_dev(x, r, c, c, mean.data(), s); },
          var);
      for (int64_t j = 0; j < c; ++j) {
        const double ad = gamma_[j] / std::sqrt(var[j] / count + eps_);
        a[j] = static_cast<float>(ad);
        b[j] = static_cast<float>(beta_[j] - mean[j] * ad);
      }
      parallel_range(blocks, std::max<int64_t>(1, kParallelGrain / (kRowBlock * c)),
                     [&](int64_t lo, int64_t hi) {
                       for (int64_t k = lo; k < hi; ++k) {
                         const int64_t r0 = k * kRowBlock, nr = std::min(kRowBlock, rows - r0);
                         affine_rows(xi + r0 * c, yi + r0 * c, nr, c, a.data(), b.data());
                         activation_row(act_, yi + r0 * c, nr * c);
                       }
                     });
    }
  }

  std::string who_;
  Dims shape_;
  int64_t groups_;
  double eps_;
  std::vector<float> gamma_, beta_;
  ref::Activation act_;
};

std::unique_ptr<Kernel> group_norm_create(const NodeInfo& info) {
  return std::make_unique<GroupNormKernel>(info);
}

}  // namespace

void append_group_norm_kernels(FactoryTable& t) {
  t.emplace_back(
      "GroupNorm",
      KernelFactory{"cpu.group_norm", accepts_unless_declined<group_norm_declines>, same_as_input,
                    group_norm_create, in_place_output0, group_norm_declines});
}

}  // namespace nnfuse::cpu
