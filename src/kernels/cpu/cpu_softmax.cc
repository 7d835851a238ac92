// Softmax and LogSoftmax (float32, plain), numerically stable: y = exp(x - max) / sum, or
// x - max - log(sum). Opset >= 13 normalizes along `axis` (default -1); earlier opsets coerce
// the input to 2-D at `axis` (default 1) and normalize each row of the trailing dims.
//
// Rows along the last axis (attention scores) run one row per task: max, exp and sum in one
// pass (sum in double), scale in a second. Other axes run over [outer, axis, inner] blocks,
// vectorized across `inner`.
#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

// Columns handled together by the non-last-axis path (accumulators stay in L1).
constexpr int64_t kCols = 256;

// Sums of exponentials are taken in float over blocks of this many elements (all terms are in
// [0, 1], so the error stays at a few ulp) and added up in double.
constexpr int64_t kSumBlock = 1024;

// y may be x: every pass reads element i before writing element i, and later passes read y.
NNFUSE_TARGET_CLONES void softmax_row(const float* x, float* y, int64_t n, bool log) {
  const float m = row_max(x, n);
  double s = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t e = std::min(n, b + kSumBlock);
    float fs = 0;
    if (log) {
#pragma omp simd reduction(+ : fs)
      for (int64_t i = b; i < e; ++i) fs += exp_f(x[i] - m);
    } else {
#pragma omp simd reduction(+ : fs)
      for (int64_t i = b; i < e; ++i) {
        const float v = exp_f(x[i] - m);
        y[i] = v;
        fs += v;
      }
    }
    s += static_cast<double>(fs);
  }
  if (log) {
    const float ls = static_cast<float>(std::log(s));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
    return;
  }
  const float inv = static_cast<float>(1.0 / s);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// Softmax over the rows of a [len, stride] block, for columns [0, n) (n <= kCols).
NNFUSE_TARGET_CLONES void softmax_cols(const float* x, float* y, int64_t len, int64_t stride,
                                       int64_t n, bool log) {
  float m[kCols];
  double s[kCols];
  for (int64_t j = 0; j < n; ++j) {
    m[j] = -kInf;
    s[j] = 0;
  }
  for (int64_t k = 0; k < len; ++k) {
    const float* xk = x + k * stride;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) m[j] = xk[j] > m[j] ? xk[j] : m[j];
  }
  for (int64_t k = 0; k < len; ++k) {
    const float* xk = x + k * stride;
    float* yk = y + k * stride;
    if (log) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) s[j] += static_cast<double>(exp_f(xk[j] - m[j]));
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) {
        const float e = exp_f(xk[j] - m[j]);
        yk[j] = e;
        s[j] += static_cast<double>(e);
      }
    }
  }
  float f[kCols];  // log: max + log(sum); softmax: 1 / sum
  for (int64_t j = 0; j < n; ++j) {
    f[j] = log ? m[j] + static_cast<float>(std::log(s[j])) : static_cast<float>(1.0 / s[j]);
  }
  for (int64_t k = 0; k < len; ++k) {
    const float* xk = x + k * stride;
    float* yk = y + k * stride;
    if (log) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yk[j] = xk[j] - f[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yk[j] *= f[j];
    }
  }
}

class SoftmaxKernel : public Kernel {
 public:
  explicit SoftmaxKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        log_(info.node.is(Op::kLogSoftmax)),
        opset_(info.opset),
        axis_(info.node.attr_int("axis", info.opset >= 13 ? -1 : 1)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    if (x.layout() != Layout::kPlain) fail(ErrorKind::kRuntime, who_, ": input must be plain");
    const Dims& d = x.shape();
    const int64_t rank = x.rank();
    int64_t outer = 0, len = 0, inner = 1;
    if (opset_ >= 13) {
      const size_t a = static_cast<size_t>(checked_axis(axis_, rank, who_));
      outer = numel_of(d, 0, a);
      len = d[a];
      inner = numel_of(d, a + 1, d.size());
    } else {
      // axis == rank is a valid coercion point: rows of one element.
      const size_t a = static_cast<size_t>(axis_ == rank ? rank : checked_axis(axis_, rank, who_));
      outer = numel_of(d, 0, a);
      len = numel_of(d, a, d.size());
    }
    Tensor& y = io.output(0, DType::kFloat32, d);
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const bool log = log_;
    if (inner == 1) {
      parallel_tasks(outer, x.numel() * 8,
                     [&](int64_t r) { softmax_row(px + r * len, py + r * len, len, log); });
      return;
    }
    const int64_t chunks = (inner + kCols - 1) / kCols;
    parallel_tasks(outer * chunks, x.numel() * 8, [&](int64_t t) {
      const int64_t o = t / chunks, j0 = t % chunks * kCols;
      const int64_t off = o * len * inner + j0;
      softmax_cols(px + off, py + off, len, inner, std::min(kCols, inner - j0), log);
    });
  }

 private:
  std::string who_;
  bool log_;
  int64_t opset_, axis_;
};

// Why the kernel declines a Softmax or LogSoftmax, "" when it runs it.
std::string softmax_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 1 || !single_output(n)) {
    return "not one input and one output";
  }
  if (std::string r = float_inputs_problem(info); !r.empty()) return r;
  if (!info.all_inputs_in(Layout::kPlain)) return "the input is not plain";
  try {
    n.attr_int("axis", 0);
  } catch (const Error& e) {
    return std::string("attributes: ") + e.what();
  }
  return "";
}

std::unique_ptr<Kernel> softmax_create(const NodeInfo& info) {
  return std::make_unique<SoftmaxKernel>(info);
}

}  // namespace

void append_softmax_kernels(FactoryTable& t) {
  KernelFactory f{"cpu.softmax", accepts_unless_declined<softmax_declines>, nullptr, softmax_create,
                  in_place_output0};
  f.declines = softmax_declines;
  t.emplace_back("Softmax", f);
  t.emplace_back("LogSoftmax", f);
}

}  // namespace nnfuse::cpu
