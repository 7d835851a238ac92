// GlobalResponseNorm (ops/response_norm.h), float32, plain layout: one pass over X for each map's
// sum of squares (in double), then one that writes y = x * a[c] + b[c], a = Gamma * N + 1 and
// b = Beta, which is Gamma * (X * N) + Beta + X with the residual folded into the scale.
// Gamma and Beta are copied when the kernel is made.
#include <cmath>

#include "kernels/cpu/cpu_internal.h"
#include "ops/response_norm.h"

namespace nnfuse::cpu {

namespace {

std::vector<float> per_channel(const NodeInfo& info, size_t i, int64_t c) {
  const Tensor* t = info.constant(i);
  if (!t || t->dtype() != DType::kFloat32 || t->numel() != c) return {};
  return std::vector<float>(t->data<float>(), t->data<float>() + c);
}

std::string response_norm_declines(const NodeInfo& info) {
  if (std::string r = not_static_f32(info, 0); !r.empty()) return r;
  if (!info.all_inputs_in(Layout::kPlain)) return "its inputs are not in the plain layout";
  const Dims x = *info.input_shape(0);
  if (x.size() < 3) return "X is not of rank 3 or more";
  const int64_t c = x[ops::response_norm_channel_axis(info.node, static_cast<int64_t>(x.size()))];
  if (per_channel(info, ops::response_norm::kGamma, c).empty() ||
      per_channel(info, ops::response_norm::kBeta, c).empty()) {
    return "Gamma and Beta are not float32 constants of one value per channel";
  }
  if (!single_output(info.node)) return "it has more than one output";
  return "";
}

class ResponseNormKernel : public Kernel {
 public:
  explicit ResponseNormKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        shape_(*info.input_shape(0)),
        axis_(ops::response_norm_channel_axis(info.node, static_cast<int64_t>(shape_.size()))),
        eps_(info.node.attr_float("epsilon", 1e-6f)),
        gamma_(per_channel(info, ops::response_norm::kGamma, shape_[axis_])),
        beta_(per_channel(info, ops::response_norm::kBeta, shape_[axis_])) {}

  bool reads_input(size_t i) const override { return i == ops::response_norm::kX; }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    if (x.shape() != shape_) {
      fail(ErrorKind::kRuntime, who_, ": input of shape ", dims_str(x.shape()), ", expected ",
           dims_str(shape_));
    }
    Tensor& y = io.output(0, DType::kFloat32, shape_);
    const int64_t n = shape_[0], c = shape_[axis_];
    const int64_t p = n * c == 0 ? 0 : checked_numel(shape_) / (n * c);
    const bool last = axis_ == static_cast<int64_t>(shape_.size()) - 1;
    std::vector<float> a(static_cast<size_t>(c));
    for (int64_t i = 0; i < n; ++i) {
      const float* xi = x.data<float>() + i * p * c;
      float* yi = y.data<float>() + i * p * c;
      const std::vector<double> norm = last ? norms_last(xi, p, c) : norms_first(xi, p, c);
      double mean = 0;
      for (double v : norm) mean += v;
      mean /= static_cast<double>(std::max<int64_t>(c, 1));
      for (int64_t k = 0; k < c; ++k) {
        a[k] = static_cast<float>(gamma_[k] * (norm[k] / (mean + eps_)) + 1.0);
      }
      if (last) {
        parallel_range(p * c, kParallelGrain, [&](int64_t begin, int64_t end) {
          // Whole rows: the range is split at multiples of 16 floats, not of c.
          for (int64_t r = begin / c; r * c < end; ++r) {
            const int64_t from = std::max(begin, r * c), to = std::min(end, (r + 1) * c);
            for (int64_t e = from; e < to; ++e) {
              const int64_t k = e - r * c;
              yi[e] = xi[e] * a[k] + beta_[k];
            }
          }
        });
      } else {
        parallel_tasks(c, p * c, [&](int64_t k) {
          const float* xk = xi + k * p;
          float* yk = yi + k * p;
          const float ak = a[k], bk = beta_[k];
          for (int64_t q = 0; q < p; ++q) yk[q] = xk[q] * ak + bk;
        });
      }
    }
  }

 private:
  // Each channel's L2 norm over the positions: X as p rows of c channels.
  std::vector<double> norms_last(const float* x, int64_t p, int64_t c) const {
    constexpr int64_t kBlock = 64;  // channels a task sums (its rows' slices stay in cache lines)
    std::vector<double> s(static_cast<size_t>(c));
    parallel_tasks((c + kBlock - 1) / kBlock, p * c, [&](int64_t b) {
      const int64_t k0 = b * kBlock, k1 = std::min(c, k0 + kBlock);
      double acc[kBlock] = {};
      for (int64_t q = 0; q < p; ++q) {
        const float* row = x + q * c;
        for (int64_t k = k0; k < k1; ++k) acc[k - k0] += static_cast<double>(row[k]) * row[k];
      }
      for (int64_t k = k0; k < k1; ++k) s[k] = std::sqrt(acc[k - k0]);
    });
    return s;
  }
  // The same with X as c planes of p positions.
  std::vector<double> norms_first(const float* x, int64_t p, int64_t c) const {
    std::vector<double> s(static_cast<size_t>(c));
    parallel_tasks(c, p * c, [&](int64_t k) {
      double acc = 0;
      for (int64_t q = 0; q < p; ++q) acc += static_cast<double>(x[k * p + q]) * x[k * p + q];
      s[k] = std::sqrt(acc);
    });
    return s;
  }

  std::string who_;
  Dims shape_;
  int64_t axis_;
  double eps_;
  std::vector<float> gamma_, beta_;
};

}  // namespace

void append_response_norm_kernels(FactoryTable& t) {
  t.emplace_back(
      "GlobalResponseNorm",
      KernelFactory{"cpu.response_norm", accepts_unless_declined<response_norm_declines>, nullptr,
                    [](const NodeInfo& info) -> std::unique_ptr<Kernel> {
                      return std::make_unique<ResponseNormKernel>(info);
                    },
                    in_place_output0, response_norm_declines});
}

}  // namespace nnfuse::cpu
