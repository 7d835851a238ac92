// GlobalAveragePool (float32): the mean over every spatial position, per image and channel,
// written [N, C, 1, ...] (the same bytes in either layout).
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
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

constexpr int64_t kBlock = 256;

std::string global_pool_declines(const NodeInfo& info) {
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
    const int64_t n = s[0], c = s[1], pixels = numel_of(s, 2, s.size());
    Dims out(s.size(), 1);
    out[0] = n;
    out[1] = c;
    Tensor& y = io.output(0, DType::kFloat32, out);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const double inv = 1.0 / static_cast<double>(pixels);
    if (x.layout() == Layout::kNHWC) {
      for (int64_t i = 0; i < n; ++i)
        channels_last(px + i * pixels * c, pixels, c, inv, py + i * c);
      return;
    }
    if (x.layout() != Layout::kPlain) {
      fail(ErrorKind::kRuntime, who_, ": input in ", layout_name(x.layout()), " layout");
    }
    parallel_blocks(n * c, n * c * pixels, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        py[r] = static_cast<float>(row_sum(px + r * pixels, pixels) * inv);
    });
  }

 private:
  static double row_sum(const float* p, int64_t len) {
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

  // One image: `pixels` rows of `c` values -> y[c] (the mean of each column).
  static void channels_last(const float* x, int64_t pixels, int64_t c, double inv, float* y) {
    const int64_t threads = omp_get_max_threads();
    const int64_t parts =
        std::clamp<int64_t>(pixels * c / kParallelGrain, 1, std::min(threads, pixels));
    std::vector<double> partials(static_cast<size_t>(parts * c), 0.0);
    double* partial = partials.data();
    parallel_blocks(parts, parts > 1 ? kParallelGrain : 0, [&](int64_t p0, int64_t p1) {
      std::vector<float> acc(static_cast<size_t>(c));
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t r0 = pixels * p / parts, r1 = pixels * (p + 1) / parts;
        double* total = partial + p * c;
        for (int64_t b = r0; b < r1; b += kBlock) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          float* a = acc.data();
          for (int64_t r = b; r < std::min(r1, b + kBlock); ++r) {
            const float* row = x + r * c;
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) a[k] += row[k];
          }
          for (int64_t k = 0; k < c; ++k) total[k] += a[k];
        }
      }
    });
    for (int64_t k = 0; k < c; ++k) {
      double sum = 0.0;
      for (int64_t p = 0; p < parts; ++p) sum += partial[p * c + k];
      y[k] = static_cast<float>(sum * inv);
    }
  }

  std::string who_;
};

}  // namespace

void append_global_pool_kernels(FactoryTable& t) {
  t.emplace_back(
      "GlobalAveragePool",
      KernelFactory{"cpu.global_pool", accepts_unless_declined<global_pool_declines>, nullptr,
                    [](const NodeInfo& info) -> std::unique_ptr<Kernel> {
                      return std::make_unique<GlobalAveragePoolKernel>(info);
                    },
                    nullptr, global_pool_declines});
}

}  // namespace nnfuse::cpu
