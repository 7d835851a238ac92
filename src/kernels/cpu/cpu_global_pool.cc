// GlobalAveragePool (float32): the mean over every spatial position, per image and channel,
// written [N, C, 1, ...] (the same bytes in either layout). SqueezeExcite (ai.nnfuse,
// kernels/ref/squeeze_excite.h): that mean, then the block's two 1x1 products of one row per
// image with their activations, in one kernel.
//
// Channels-last X (a squeeze-and-excitation's pool over a depthwise conv's NHWC output) is
// split by pixel rows: each thread sums its contiguous rows of C values into partial sums of its
// own (vectorized across channels), and the partials are added at the end. The threads so read
// the rows the elementwise kernels after it read (the SE scale's Mul splits the same way),
// where a split by channels reads every row in pieces from both cores' caches (EfficientNet's
// pools ran at half the speed). Plain X is one contiguous row per (image, channel), split by
// rows. Sums are taken in float over blocks of kBlock pixels and added up in double.
#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/fused.h"
#include "kernels/ref/squeeze_excite.h"

namespace nnfuse::cpu {
namespace {

constexpr int64_t kBlock = 256;

// The sum of p[0, len): in float over blocks of kBlock values, the blocks added in double.
double blocked_sum(const float* p, int64_t len) {
  double total = 0.0;
  for (int64_t b = 0; b < len; b += kBlock) {
    const int64_t e = std::min(len, b + kBlock);
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t k = b; k < e; ++k) acc += p[k];
    total += acc;
  }
  return total;
}

// total[k] (zeroed here) = the sum of x[r * c + k] over rows [r0, r1): in float over blocks of
// kBlock rows, the blocks added in double.
void sum_rows(const float* x, int64_t r0, int64_t r1, int64_t c, double* total) {
  std::fill(total, total + c, 0.0);
  std::vector<float> acc(static_cast<size_t>(c));
  float* a = acc.data();
  for (int64_t b = r0; b < r1; b += kBlock) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t r = b; r < std::min(r1, b + kBlock); ++r) {
      const float* row = x + r * c;
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) a[k] += row[k];
    }
    for (int64_t k = 0; k < c; ++k) total[k] += a[k];
  }
}

// y[k] = x[k] * s[k] for k in [0, c): one channels-last pixel scaled per channel. x may be y.
NNFUSE_TARGET_CLONES void scale_row(const float* x, const float* s, float* y, int64_t c) {
  for (int64_t k = 0; k < c; ++k) y[k] = x[k] * s[k];
}

// y[k] = x[k] * s for k in [0, n): one plain channel's plane. x may be y.
NNFUSE_TARGET_CLONES void scale_plane(const float* x, float s, float* y, int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] = x[k] * s;
}

// y[k] = inv * the sum over `parts` of partial[p * stride + k], for k in [k0, k1).
void mean_of_partials(const double* partial, int64_t parts, int64_t stride, double inv, int64_t k0,
                      int64_t k1, float* y) {
  for (int64_t k = k0; k < k1; ++k) {
    double sum = 0.0;
    for (int64_t p = 0; p < parts; ++p) sum += partial[p * stride + k];
    y[k] = static_cast<float>(sum * inv);
  }
}

// Plain X: y[r] = inv * the sum of row r (`pixels` values), for rows [r0, r1).
void plain_means(const float* x, int64_t pixels, double inv, int64_t r0, int64_t r1, float* y) {
  for (int64_t r = r0; r < r1; ++r)
    y[r] = static_cast<float>(blocked_sum(x + r * pixels, pixels) * inv);
}

// One image: `pixels` rows of `c` values -> y[c] (the mean of each column).
void channels_last(const float* x, int64_t pixels, int64_t c, double inv, float* y) {
  const int64_t threads = omp_get_max_threads();
  const int64_t parts =
      std::clamp<int64_t>(pixels * c / (kParallelGrain / 4), 1, std::min(threads, pixels));
  std::vector<double> partials(static_cast<size_t>(parts * c));
  double* partial = partials.data();
  parallel_blocks(parts, parts > 1 ? kParallelGrain : 0, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      sum_rows(x, pixels * p / parts, pixels * (p + 1) / parts, c, partial + p * c);
    }
  });
  mean_of_partials(partial, parts, c, inv, 0, c, y);
}

// The per-image, per-channel means of X (plain or channels-last) into y [N * C].
void channel_means(const Tensor& x, const std::string& who, float* y) {
  const Dims& s = x.shape();
  const int64_t n = s[0], c = s[1], pixels = numel_of(s, 2, s.size());
  const float* px = x.data<float>();
  const double inv = 1.0 / static_cast<double>(pixels);
  if (x.layout() == Layout::kNHWC) {
    for (int64_t i = 0; i < n; ++i) channels_last(px + i * pixels * c, pixels, c, inv, y + i * c);
    return;
  }
  if (x.layout() != Layout::kPlain) {
    fail(ErrorKind::kRuntime, who, ": input in ", layout_name(x.layout()), " layout");
  }
  parallel_blocks(n * c, n * c * pixels,
                  [&](int64_t b, int64_t e) { plain_means(px, pixels, inv, b, e, y); });
}

// Why input 0 cannot be pooled here ("" when it can): float32 of static shape, rank 3 or more
// (4 when channels-last), plain or channels-last, not empty.
std::string pooled_input_declines(const NodeInfo& info) {
  if (std::string why = not_static_f32(info, 0); !why.empty()) return why;
  const Dims x = *info.input_shape(0);
  if (x.size() < 3) return "input of rank " + std::to_string(x.size()) + " (at least 3)";
  const bool nhwc = !info.input_layouts.empty() && info.input_layouts[0] == Layout::kNHWC;
  if (nhwc && x.size() != 4) return "a channels-last input of rank other than 4";
  if (!info.input_layouts.empty() && info.input_layouts[0] != Layout::kPlain && !nhwc) {
    return std::string("input in ") + layout_name(info.input_layouts[0]) + " layout";
  }
  for (int64_t d : x) {
    if (d == 0) return "an empty input";
  }
  return "";
}

class GlobalAveragePoolKernel : public Kernel {
 public:
  explicit GlobalAveragePoolKernel(const NodeInfo& info) : who_(info.node.describe()) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    const Dims& s = x.shape();
    Dims out(s.size(), 1);
    out[0] = s[0];
    out[1] = s[1];
    Tensor& y = io.output(0, DType::kFloat32, out);
    channel_means(x, who_, y.data<float>());
  }

 private:
  std::string who_;
};

// SqueezeExcite: the pooled rows, then each part's product y = act(x W + b) through the one-row
// product over its weights packed in panels of 64 outputs (cpu_rows.h), the panels split over the
// threads. The parts' weights are small (at most 576 x 144 in MobileNetV3, 1152 x 48 in
// EfficientNet-B0) but read from the last-level cache on every run.
class SqueezeExciteKernel : public Kernel {
 public:
  explicit SqueezeExciteKernel(const NodeInfo& info)
      : who_(info.node.describe()), apply_(ref::squeeze_excite_applies(info.node)) {
    const Dims x = *info.input_shape(0);
    n_ = x[0];
    for (bool excite : {false, true}) {
      Part& p = parts_[excite ? 1 : 0];
      const size_t at = excite ? ref::kExciteWeight : ref::kSqueezeWeight;
      const Tensor* w = info.constant(at);
      p.out = w->dim(0);
      p.in = w->dim(1);
      p.w = pack_row_panels(w->data<float>(), p.out, p.in);
      p.b.assign(static_cast<size_t>(p.out), 0.0f);
      if (const Tensor* b = info.has_input(at + 1) ? info.constant(at + 1) : nullptr) {
        p.b.assign(b->data<float>(), b->data<float>() + b->numel());
      }
      p.act = ref::read_activation(*ref::squeeze_excite_part(info.node, excite).node);
    }
  }

  // The weights and biases are copied.
  bool reads_input(size_t i) const override { return i == 0; }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    NNFUSE_CHECK(x.rank() == 4 && x.dim(0) == n_ && x.dim(1) == parts_[0].in, who_,
                 ": X has shape ", dims_str(x.shape()), ", expected [", n_, ", ", parts_[0].in,
                 ", H, W]");
    const int64_t c = parts_[0].in, pixels = x.dim(2) * x.dim(3);
    const bool nhwc = x.layout() == Layout::kNHWC;
    if (!nhwc && x.layout() != Layout::kPlain) {
      fail(ErrorKind::kRuntime, who_, ": input in ", layout_name(x.layout()), " layout");
    }
    // The scale, or X times it in X's layout (apply_).
    Tensor& y = apply_ ? io.output(0, DType::kFloat32, x.shape(), x.layout())
                       : io.output(0, DType::kFloat32, {n_, parts_[1].out, 1, 1});
    std::vector<float> pooled(nhwc ? 0 : static_cast<size_t>(n_ * c));
    std::vector<float> squeezed(static_cast<size_t>(n_ * parts_[0].out));
    std::vector<float> scale(apply_ ? static_cast<size_t>(n_ * c) : 0);
    float* excited = apply_ ? scale.data() : y.data<float>();
    const int64_t work =
        x.numel() * (apply_ ? 2 : 1) + n_ * (c * parts_[0].out + parts_[1].in * parts_[1].out);
    const int nt = work < kParallelGrain / 2 || omp_in_parallel()
                       ? 1
                       : static_cast<int>(std::min<int64_t>(omp_get_max_threads(), pixels));
    std::vector<double> partial(nhwc ? static_cast<size_t>(nt * n_ * c) : 0);
    std::vector<float> own_means(nhwc ? static_cast<size_t>(nt * n_ * c) : 0);
    const float* px = x.data<float>();
    const double inv = 1.0 / static_cast<double>(pixels);
    SpinBarrier barrier(nt);
    // The pool, the products and their activations in one parallel region, a barrier between
    // the steps: each of the three would otherwise start and join the threads of its own. Each
    // thread takes the means of every channel from the partial sums itself (a few hundred adds),
    // where a step of its own would cost a barrier more.
#pragma omp parallel num_threads(nt)
    {
      const int64_t t = omp_get_thread_num(), tn = omp_get_num_threads();
      auto sync = [&] {
        if (tn == nt) {
          barrier.wait();
        } else {
#pragma omp barrier
        }
      };
      if (nhwc) {
        for (int64_t i = 0; i < n_; ++i) {
          sum_rows(px + i * pixels * c, pixels * t / tn, pixels * (t + 1) / tn, c,
                   partial.data() + (t * n_ + i) * c);
        }
        sync();
      } else {
        plain_means(px, pixels, inv, n_ * c * t / tn, n_ * c * (t + 1) / tn, pooled.data());
        sync();
      }
      // The squeeze reads every channel's mean: channels-last, each thread's own copy.
      float* means = pooled.data();
      if (nhwc) {
        means = own_means.data() + t * n_ * c;
        mean_of_partials(partial.data(), tn, n_ * c, inv, 0, n_ * c, means);
      }
      product(parts_[0], means, squeezed.data(), t, tn);
      sync();
      product(parts_[1], squeezed.data(), excited, t, tn);
      if (apply_) {
        sync();
        // Each thread scales the rows it pooled (channels-last) or its planes (plain); X may be
        // Y's storage: every read of X for the pool is behind the barriers above.
        float* py = y.data<float>();
        for (int64_t i = 0; i < n_; ++i) {
          const float* s = excited + i * c;
          if (nhwc) {
            for (int64_t p = pixels * t / tn; p < pixels * (t + 1) / tn; ++p) {
              scale_row(px + (i * pixels + p) * c, s, py + (i * pixels + p) * c, c);
            }
          } else {
            for (int64_t k = c * t / tn; k < c * (t + 1) / tn; ++k) {
              scale_plane(px + (i * c + k) * pixels, s[k], py + (i * c + k) * pixels, pixels);
            }
          }
        }
      }
    }
  }

 private:
  struct Part {
    int64_t in = 0, out = 0;
    std::vector<float> w, b;  // panels of [in, kRowPanel] (pack_row_panels), [out]
    ref::Activation act;
  };

  // Thread t's share (of tn) of the part's (image, panel) products.
  void product(const Part& p, const float* x, float* y, int64_t t, int64_t tn) const {
    const int64_t panels = (p.out + kRowPanel - 1) / kRowPanel, panel = p.in * kRowPanel;
    const int64_t tasks = n_ * panels;
    for (int64_t task = tasks * t / tn; task < tasks * (t + 1) / tn; ++task) {
      const int64_t i = task / panels, b = task % panels;
      float* yi = y + i * p.out;
      row_times_panels(x + i * p.in, p.in, p.w.data(), panel, b, b + 1, p.out, p.b.data(), false,
                       yi);
      if (p.act.kind == ref::ActivationKind::kNone) continue;
      for (int64_t o = b * kRowPanel; o < std::min(p.out, (b + 1) * kRowPanel); ++o)
        yi[o] = static_cast<float>(ref::apply_activation(p.act, static_cast<double>(yi[o])));
    }
  }

  std::string who_;
  bool apply_ = false;
  int64_t n_ = 0;
  Part parts_[2];
};

std::string squeeze_excite_declines(const NodeInfo& info) {
  if (std::string why = pooled_input_declines(info); !why.empty()) return why;
  if (info.input_shape(0)->size() != 4) return "X is not 4-D";
  if (std::string why = ref::squeeze_excite_reason(info.node); !why.empty()) return why;
  int64_t channels = (*info.input_shape(0))[1];
  for (size_t at : {ref::kSqueezeWeight, ref::kExciteWeight}) {
    const Tensor* w = info.constant(at);
    if (!w || w->dtype() != DType::kFloat32)
      return input_label(info, at) + " is not a float32 constant";
    if (w->rank() != 4 || w->dim(1) != channels || w->dim(2) != 1 || w->dim(3) != 1) {
      return input_label(info, at) + " is not [out, " + std::to_string(channels) + ", 1, 1]";
    }
    if (info.has_input(at + 1)) {
      const Tensor* b = info.constant(at + 1);
      if (!b || b->dtype() != DType::kFloat32 || b->numel() != w->dim(0)) {
        return input_label(info, at + 1) + " is not a float32 constant of " +
               std::to_string(w->dim(0)) + " values";
      }
    }
    channels = w->dim(0);
  }
  return "";
}

}  // namespace

void append_global_pool_kernels(FactoryTable& t) {
  t.emplace_back(
      "GlobalAveragePool",
      KernelFactory{"cpu.global_pool", accepts_unless_declined<pooled_input_declines>, nullptr,
                    [](const NodeInfo& info) -> std::unique_ptr<Kernel> {
                      return std::make_unique<GlobalAveragePoolKernel>(info);
                    },
                    nullptr, pooled_input_declines});
  // The scale is [N, C, 1, 1] plain; X times it (apply) is in X's layout, and may overwrite X.
  t.emplace_back(
      "SqueezeExcite",
      KernelFactory{"cpu.squeeze_excite", accepts_unless_declined<squeeze_excite_declines>,
                    [](const NodeInfo& info, size_t k) {
                      return ref::squeeze_excite_applies(info.node) ? same_as_input(info, k)
                                                                    : Layout::kPlain;
                    },
                    [](const NodeInfo& info) -> std::unique_ptr<Kernel> {
                      return std::make_unique<SqueezeExciteKernel>(info);
                    },
                    [](const NodeInfo& info, size_t k) {
                      return ref::squeeze_excite_applies(info.node) ? in_place_output0(info, k)
                                                                    : -1;
                    },
                    squeeze_excite_declines});
}

}  // namespace nnfuse::cpu
