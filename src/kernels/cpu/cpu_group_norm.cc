// GroupNorm (ai.nnfuse), float32, plain (NCHW and any rank >= 3) or channels-last (NHWC, the
// layout the 2-D convs write, so a UNet's conv - GroupNorm - SiLU - conv chain is never
// reordered): statistics per (image, group) in double with two passes (mean, then the squared
// deviations, as the reference kernel), then y = act(x * s[c] + t[c]) with s = gamma * inv_std
// and t = beta + (addend[c] - mean) * s, the activation applied to each row while it is in cache.
// The per-channel addend (the time embedding of a UNet's ResBlock, T or its dense layer
// T x TW + TB, T's SiLU taken first with t_activation) is never added to X: it shifts each
// channel's sums and its t. oneDNN 2.6's group normalization primitive does not exist (layer and
// batch normalization do), so the kernel is the project's own.
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/fused.h"
#include "kernels/ref/group_norm.h"

namespace nnfuse::cpu {

namespace {

// Rows of channels-last data handled per task in the statistics and the apply passes.
constexpr int64_t kRowBlock = 64;

// acc[j] += sum over p of t[p] * w[p * c + j], for w [k, c].
NNFUSE_TARGET_CLONES void scaled_rows_into(const float* t, const float* w, int64_t k, int64_t c,
                                           double* acc) {
  for (int64_t p = 0; p < k; ++p) {
    const double tp = t[p];
    const float* wp = w + p * c;
#pragma omp simd
    for (int64_t j = 0; j < c; ++j) acc[j] += tp * wp[j];
  }
}

// Gamma or beta: a float32 constant of [c]; empty when it is not.
std::vector<float> channel_constant(const NodeInfo& info, size_t i, int64_t c) {
  const Tensor* t = info.constant(i);
  if (!t || t->dtype() != DType::kFloat32 || t->shape() != Dims{c}) return {};
  return std::vector<float>(t->data<float>(), t->data<float>() + c);
}

// "" when the addend inputs (3: T, 4: TW, 5: TB) are absent or fit X [N, C, ...]: T a float32
// value of static shape [1 or N, ...] (its values contiguous: plain, or [.., 1, 1] channels-last),
// TW a constant [K, C], TB a constant [C].
std::string addend_declines(const NodeInfo& info, const Dims& x) {
  if (!info.has_input(3)) return info.has_input(4) || info.has_input(5) ? "TW or TB without T" : "";
  if (std::string r = not_static_f32(info, 3); !r.empty()) return r;
  const Dims t = *info.input_shape(3);
  const bool one_pixel = t.size() == 4 && t[2] == 1 && t[3] == 1;
  if (input_layout(info, 3) != Layout::kPlain && !one_pixel) {
    return input_label(info, 3) + " arrives in layout " + layout_name(input_layout(info, 3));
  }
  const int64_t rows = t.empty() ? 0 : t[0], c = x[1];
  const int64_t per_row = rows > 0 ? numel_of(t, 0, t.size()) / rows : 0;
  if (rows != 1 && rows != x[0]) return "T " + dims_str(t) + " has not 1 or N rows";
  if (!info.has_input(4)) {
    return per_row == c ? "" : "T " + dims_str(t) + " is not one value a channel";
  }
  const Tensor* w = info.constant(4);
  if (!w || w->dtype() != DType::kFloat32 || w->shape() != (Dims{per_row, c})) {
    return "TW is not a float32 constant of [" + std::to_string(per_row) + ", " +
           std::to_string(c) + "]";
  }
  if (info.has_input(5) && channel_constant(info, 5, c).empty()) {
    return "TB is not a float32 constant of [C]";
  }
  return "";
}

std::string group_norm_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (n.num_inputs() < 3 || n.num_inputs() > 6 || !single_output(n)) {
    return "not 3 to 6 inputs and 1 output";
  }
  if (std::string r = not_static_f32(info, 0); !r.empty()) return r;
  const Dims x = *info.input_shape(0);
  const Layout l = input_layout(info, 0);
  if (x.size() < 3) return input_label(info, 0) + " has rank " + std::to_string(x.size());
  if (l != Layout::kPlain && !(l == Layout::kNHWC && channels_last_rank(x.size()))) {
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
  if (std::string r = addend_declines(info, x); !r.empty()) return r;
  if (std::string r = ref::t_activation_reason(n); !r.empty()) return r;
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
        act_(ref::read_activation(info.node)),
        t_silu_(ref::t_silu(info.node)) {
    if (info.has_input(4)) tw_ = *info.constant(4);
    if (info.has_input(5)) tb_ = channel_constant(info, 5, shape_[1]);
  }

  // TW and TB are used from the kernel's own copies.
  bool reads_input(size_t i) const override { return i != 4 && i != 5; }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    if (x.shape() != shape_) {
      fail(ErrorKind::kRuntime, who_, ": input of shape ", dims_str(x.shape()), ", expected ",
           dims_str(shape_));
    }
    const std::vector<double> a = addend(io);
    Tensor& y = io.output(0, DType::kFloat32, x.shape(), x.layout());
    if (x.layout() == Layout::kNHWC) {
      run_nhwc(x.data<float>(), y.data<float>(), a);
    } else {
      run_plain(x.data<float>(), y.data<float>(), a);
    }
  }

 private:
  // The addend per (image, channel), in double; zeros without T.
  std::vector<double> addend(const KernelIO& io) const {
    const int64_t n = shape_[0], c = shape_[1];
    if (!io.has_input(3)) return std::vector<double>(static_cast<size_t>(n * c));
    require_float(io.in(3), who_, "T");
    // The embedding's SiLU (t_activation): T is a few hundred values.
    Tensor t_storage;
    const Tensor& t = *ref::activated_t(t_silu_, &io.in(3), t_storage);
    if (!tw_.defined()) return ref::group_norm_addend(&t, nullptr, nullptr, n, c, who_);
    const int64_t rows = t.rank() >= 1 ? t.dim(0) : 0, k = tw_.dim(0);
    if ((rows != 1 && rows != n) || t.numel() != rows * k) {
      fail(ErrorKind::kRuntime, who_, ": T of shape ", dims_str(t.shape()), " does not fit TW ",
           dims_str(tw_.shape()));
    }
    // a[i, :] = TB + T[i] x TW, accumulated a row of TW at a time (vectorized over channels).
    std::vector<double> a(static_cast<size_t>(n * c));
    for (int64_t i = 0; i < n; ++i) {
      double* ai = a.data() + i * c;
      for (int64_t j = 0; j < c && !tb_.empty(); ++j) ai[j] = tb_[j];
      scaled_rows_into(t.data<float>() + (rows == 1 ? 0 : i * k), tw_.data<float>(), k, c, ai);
    }
    return a;
  }

  // Each (image, group) is one contiguous block of C / G planes.
  void run_plain(const float* px, float* py, const std::vector<double>& add) const {
    const int64_t c = shape_[1], cpg = c / groups_;
    const int64_t inner = numel_of(shape_, 2, shape_.size()), per_group = cpg * inner;
    parallel_tasks(shape_[0] * groups_, shape_[0] * c * inner * 4, [&](int64_t t) {
      const float* xg = px + t * per_group;
      float* yg = py + t * per_group;
      const double* a = add.data() + (t / groups_) * c + (t % groups_) * cpg;
      double sum = 0;
      for (int64_t j = 0; j < cpg; ++j) sum += row_sum(xg + j * inner, inner) + a[j] * inner;
      const double mean = sum / static_cast<double>(per_group);
      double sq = 0;
      for (int64_t j = 0; j < cpg; ++j) {
        sq += row_sq_dev(xg + j * inner, inner, static_cast<float>(mean - a[j]));
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(per_group) + eps_);
      for (int64_t j = 0; j < cpg; ++j) {
        const int64_t ch = (t % groups_) * cpg + j;
        const double sc = inv * gamma_[ch];
        affine_plane(xg + j * inner, yg + j * inner, inner, static_cast<float>(sc),
                     static_cast<float>(beta_[ch] + (a[j] - mean) * sc));
        activation_row(act_, yg + j * inner, inner);
      }
    });
  }

  // Rows of C channels per image: per-channel sums over row blocks (each thread its own
  // accumulators), then per group; then the squared deviations the same way; then the rows.
  void run_nhwc(const float* px, float* py, const std::vector<double>& add) const {
    const int64_t c = shape_[1], cpg = c / groups_, rows = numel_of(shape_, 2, shape_.size());
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
    const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), blocks));
    std::vector<double> acc(static_cast<size_t>(threads * c));
    std::vector<double> shift(static_cast<size_t>(c));  // the group's mean less the addend
    std::vector<float> sc(static_cast<size_t>(c)), sh(static_cast<size_t>(c));
    // Per-group totals of f (per-channel sums over the image's rows) plus rows * extra[j].
    auto group_totals = [&](const float* xi, auto f, const double* extra) {
      std::fill(acc.begin(), acc.end(), 0.0);
      parallel_blocks(threads, rows * c, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t lo = rows * t / threads, hi = rows * (t + 1) / threads;
          f(xi + lo * c, hi - lo, acc.data() + t * c);
        }
      });
      std::vector<double> total(static_cast<size_t>(groups_));
      for (int64_t j = 0; j < c; ++j) {
        double v = extra ? extra[j] * static_cast<double>(rows) : 0.0;
        for (int64_t t = 0; t < threads; ++t) v += acc[t * c + j];
        total[j / cpg] += v;
      }
      return total;
    };
    const double count = static_cast<double>(cpg * rows);
    for (int64_t n = 0; n < shape_[0]; ++n) {
      const float* xi = px + n * rows * c;
      float* yi = py + n * rows * c;
      const double* a = add.data() + n * c;
      const std::vector<double> sums = group_totals(
          xi, [&](const float* x, int64_t r, double* s) { col_sum(x, r, c, c, s); }, a);
      for (int64_t j = 0; j < c; ++j) shift[j] = sums[j / cpg] / count - a[j];
      const std::vector<double> sq = group_totals(
          xi,
          [&](const float* x, int64_t r, double* s) { col_sq_dev(x, r, c, c, shift.data(), s); },
          nullptr);
      for (int64_t j = 0; j < c; ++j) {
        const double s = gamma_[j] / std::sqrt(sq[j / cpg] / count + eps_);
        sc[j] = static_cast<float>(s);
        sh[j] = static_cast<float>(beta_[j] - shift[j] * s);
      }
      parallel_range(blocks, std::max<int64_t>(1, kParallelGrain / (kRowBlock * c)),
                     [&](int64_t lo, int64_t hi) {
                       for (int64_t k = lo; k < hi; ++k) {
                         const int64_t r0 = k * kRowBlock, nr = std::min(kRowBlock, rows - r0);
                         affine_rows(xi + r0 * c, yi + r0 * c, nr, c, sc.data(), sh.data());
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
  bool t_silu_ = false;    // T's SiLU is taken first (t_activation)
  Tensor tw_;              // TW [K, C], when the addend is a dense layer of T
  std::vector<float> tb_;  // TB [C]
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
