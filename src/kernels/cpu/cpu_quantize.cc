// QuantizeLinear (float32 to int8 or uint8) and DequantizeLinear (int8, uint8 or int32 to
// float32), per tensor or per index along `axis`: the arithmetic of the reference kernels
// (kernels/ref/quant.cc) in vector loops. Quantize divides in float32 as the reference does,
// rounds half to even and saturates; a NaN quantizes to the zero point.
// DynamicQuantizeLinear finds the range [min(0, min x), max(0, max x)] (NaNs left out) in
// blocks over the threads, then quantizes to uint8 with the reference's float32 scale and zero
// point, in the same vector loop.
// Dequantize multiplies (x - zero point), exact in float32 for 8-bit x, by the scale: one
// rounding, as the reference's product in double rounded to float32 (int32 x in double).
// Per-tensor parameters leave the layout alone, so a QDQ model's Quantize/Dequantize pairs
// between channels-last convolutions cost no reorder. (A QDQ pair over a 64 x 56 x 56
// activation took 2-3 ms on the reference kernels.)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_quant_util.h"

namespace nnfuse::cpu {
namespace {

// The loop bodies, force-inlined into the target-clone functions below (clang does not clone
// templates).
template <typename Q>
NNFUSE_INLINE void quantize_body(const float* x, float s, float zp, Q* y, int64_t n) {
  const float lo = std::numeric_limits<Q>::lowest(), hi = std::numeric_limits<Q>::max();
  // rint rounds half to even (the default rounding mode) and vectorizes where the ISA has a
  // rounding instruction; a NaN passes the clamps and is replaced by the zero point last.
  for (int64_t i = 0; i < n; ++i) {
    const float q = x[i] / s;
    float v = __builtin_rintf(q) + zp;
    v = v < lo ? lo : (v > hi ? hi : v);
    v = q == q ? v : zp;
    y[i] = static_cast<Q>(static_cast<int32_t>(v));
  }
}

template <typename X>
NNFUSE_INLINE void dequantize_body(const X* x, float s, int32_t zp, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * s;
  }
}

NNFUSE_TARGET_CLONES void quantize_run(const float* x, float s, float zp, int8_t* y, int64_t n) {
  quantize_body(x, s, zp, y, n);
}
NNFUSE_TARGET_CLONES void quantize_run(const float* x, float s, float zp, uint8_t* y, int64_t n) {
  quantize_body(x, s, zp, y, n);
}
NNFUSE_TARGET_CLONES void dequantize_run(const int8_t* x, float s, int32_t zp, float* y,
                                         int64_t n) {
  dequantize_body(x, s, zp, y, n);
}
NNFUSE_TARGET_CLONES void dequantize_run(const uint8_t* x, float s, int32_t zp, float* y,
                                         int64_t n) {
  dequantize_body(x, s, zp, y, n);
}

void dequantize_run_i32(const int32_t* x, double s, int64_t zp, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(static_cast<double>(static_cast<int64_t>(x[i]) - zp) * s);
  }
}

// min and max of x[0, n) folded into lo and hi; a NaN is left out (minps and maxps return their
// second operand when either is NaN).
void min_max_scalar(const float* x, int64_t n, float& lo, float& hi) {
  for (int64_t i = 0; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void min_max_avx2(const float* x, int64_t n, float& lo, float& hi) {
  __m256 l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    l = _mm256_min_ps(v, l);
    h = _mm256_max_ps(v, h);
  }
  alignas(32) float ls[8], hs[8];
  _mm256_store_ps(ls, l);
  _mm256_store_ps(hs, h);
  for (int j = 0; j < 8; ++j) {
    lo = std::min(lo, ls[j]);
    hi = std::max(hi, hs[j]);
  }
  min_max_scalar(x + i, n - i, lo, hi);
}
#endif
void min_max(const float* x, int64_t n, float& lo, float& hi) {
#if defined(__x86_64__)
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  if (avx2) return min_max_avx2(x, n, lo, hi);
#endif
  min_max_scalar(x, n, lo, hi);
}

class DynamicQuantizeKernel : public Kernel {
 public:
  explicit DynamicQuantizeKernel(const NodeInfo& info) : node_(info.node), opset_(info.opset) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    if (x.dtype() != DType::kFloat32) return run_reference(node_, opset_, io);
    const float* px = x.data<float>();
    const int64_t n = x.numel();
    constexpr int64_t kBlock = 16384;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<float> lows(static_cast<size_t>(blocks), 0.0f), highs(lows);
    parallel_tasks(blocks, n, [&](int64_t b) {
      min_max(px + b * kBlock, std::min(kBlock, n - b * kBlock), lows[static_cast<size_t>(b)],
              highs[static_cast<size_t>(b)]);
    });
    float lo = 0, hi = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      lo = std::min(lo, lows[static_cast<size_t>(b)]);
      hi = std::max(hi, highs[static_cast<size_t>(b)]);
    }
    // The reference's arithmetic (kernels/ref/quant.cc): float32 scale and quotients.
    const float scale = (hi - lo) / 255.0f;
    float zp = 0;
    if (scale != 0) {
      const float z = (0 - lo) / scale;
      zp = std::isnan(z) ? 0.0f : std::clamp(std::nearbyint(z), 0.0f, 255.0f);
    }
    Tensor& y = io.output(0, DType::kUInt8, x.shape());
    uint8_t* py = y.data<uint8_t>();
    if (scale == 0) {
      std::fill(py, py + n, uint8_t{0});
    } else {
      parallel_range(n, kParallelGrain,
                     [&](int64_t b, int64_t e) { quantize_run(px + b, scale, zp, py + b, e - b); });
    }
    if (io.outputs.size() > 1) io.output(1, DType::kFloat32, {}).data<float>()[0] = scale;
    if (io.outputs.size() > 2) {
      io.output(2, DType::kUInt8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
    }
  }

 private:
  const Node& node_;
  int64_t opset_;
};

std::string dynamic_quantize_declines(const NodeInfo& info) {
  if (!info.has_input(0) || info.input_dtype(0) != DType::kFloat32) return "x is not float32";
  if (input_layout(info, 0) != Layout::kPlain) return "x is not plain";
  return "";
}

std::unique_ptr<Kernel> make_dynamic_quantize(const NodeInfo& info) {
  return std::make_unique<DynamicQuantizeKernel>(info);
}

// The parameters of a run: per tensor (count 1) or per index along the axis, each over `inner`
// contiguous elements, `outer` times.
struct Params {
  std::vector<float> scale;
  std::vector<int64_t> zp;
  int64_t outer = 1, count = 1, inner = 1;
};

class QuantizeKernel : public Kernel {
 public:
  QuantizeKernel(const NodeInfo& info, bool quantize)
      : node_(info.node), opset_(info.opset), quantize_(quantize) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& s = io.in(1);
    const Tensor* z = io.has_input(2) ? &io.in(2) : nullptr;
    Params p;
    if (!params(x, s, z, p)) {
      // Planned only for per-tensor parameters when x is channels-last, whose output the plan
      // then expects channels-last too.
      if (x.layout() != Layout::kPlain) {
        fail(ErrorKind::kRuntime, node_.describe(),
             ": channels-last data was planned for one "
             "scale and zero point, got a scale of shape ",
             dims_str(s.shape()));
      }
      return run_reference(node_, opset_, io);  // names the problem
    }
    if (quantize_) {
      const int64_t attr = node_.attr_int("output_dtype", 0);
      const DType out = z ? z->dtype() : attr != 0 ? static_cast<DType>(attr) : DType::kUInt8;
      if (x.dtype() != DType::kFloat32 || !is_q8(out) ||
          (attr != 0 && static_cast<DType>(attr) != out)) {
        return run_reference(node_, opset_, io);  // names the problem (plain or not)
      }
      Tensor& y = io.output(0, out, x.shape(), x.layout());
      const float* px = x.data<float>();
      if (out == DType::kInt8) {
        each(p, [&](int64_t off, int64_t n, size_t k) {
          quantize_run(px + off, p.scale[k], static_cast<float>(p.zp[k]), y.data<int8_t>() + off,
                       n);
        });
      } else {
        each(p, [&](int64_t off, int64_t n, size_t k) {
          quantize_run(px + off, p.scale[k], static_cast<float>(p.zp[k]), y.data<uint8_t>() + off,
                       n);
        });
      }
      return;
    }
    if (!(is_q8(x.dtype()) || x.dtype() == DType::kInt32) || (z && z->dtype() != x.dtype())) {
      return run_reference(node_, opset_, io);
    }
    Tensor& y = io.output(0, DType::kFloat32, x.shape(), x.layout());
    float* py = y.data<float>();
    each(p, [&](int64_t off, int64_t n, size_t k) {
      if (x.dtype() == DType::kInt8) {
        dequantize_run(x.data<int8_t>() + off, p.scale[k], static_cast<int32_t>(p.zp[k]), py + off,
                       n);
      } else if (x.dtype() == DType::kUInt8) {
        dequantize_run(x.data<uint8_t>() + off, p.scale[k], static_cast<int32_t>(p.zp[k]), py + off,
                       n);
      } else {
        dequantize_run_i32(x.data<int32_t>() + off, p.scale[k], p.zp[k], py + off, n);
      }
    });
  }

 private:
  // Reads the scale and zero point; false for what the reference kernel should judge (another
  // shape, a per-axis form before opset 13, a per-axis form of channels-last data).
  bool params(const Tensor& x, const Tensor& s, const Tensor* z, Params& p) const {
    if (s.dtype() != DType::kFloat32 ||
        (z && !(is_q8(z->dtype()) || z->dtype() == DType::kInt32)) ||
        (z && z->numel() != s.numel()) || node_.attr_int("block_size", 0) != 0) {
      return false;
    }
    if (s.numel() != 1) {
      if (s.rank() != 1 || opset_ < 13 || x.layout() != Layout::kPlain) return false;
      const std::optional<int64_t> axis = axis_in(node_.attr_int("axis", 1), x.rank());
      if (!axis || x.dim(*axis) != s.dim(0)) return false;
      p.count = s.dim(0);
      p.outer = numel_of(x.shape(), 0, static_cast<size_t>(*axis));
      p.inner = numel_of(x.shape(), static_cast<size_t>(*axis) + 1, x.shape().size());
    } else {
      p.inner = x.numel();
    }
    for (int64_t i = 0; i < p.count; ++i) {
      p.scale.push_back(s.data<float>()[i]);
      p.zp.push_back(z ? z->int_at(i) : 0);
    }
    return true;
  }

  // f(offset, count, parameter index) over runs of one parameter, split across threads.
  template <typename F>
  static void each(const Params& p, F&& f) {
    if (p.count == 1) {
      parallel_range(p.inner, kParallelGrain, [&](int64_t lo, int64_t hi) { f(lo, hi - lo, 0); });
      return;
    }
    parallel_tasks(p.outer * p.count, p.outer * p.count * p.inner,
                   [&](int64_t t) { f(t * p.inner, p.inner, static_cast<size_t>(t % p.count)); });
  }

  const Node& node_;
  int64_t opset_;
  bool quantize_;
};

// Whether the scale is known at plan time to be a single value (the parameters are then the
// same for every element, whatever the layout).
bool per_tensor(const NodeInfo& info) {
  if (const Tensor* s = info.constant(1)) return s->numel() == 1;
  std::optional<Dims> d = info.input_shape(1);
  return d && numel_of(*d, 0, d->size()) == 1;
}

std::string quantize_declines(const NodeInfo& info) {
  const Node& n = info.node;
  const bool q = n.is(Op::kQuantizeLinear);
  if (!n.domain().empty() || n.num_inputs() < 2 || !info.has_input(0) || !info.has_input(1) ||
      !single_output(n)) {
    return "not a plain node";
  }
  const DType x = info.input_dtype(0);
  if (q ? x != DType::kFloat32 : !(is_q8(x) || x == DType::kInt32)) {
    return input_label(info, 0) + " is " + dtype_name(x);
  }
  if (info.input_dtype(1) != DType::kFloat32)
    return "a scale of " + dtype_name(info.input_dtype(1));
  if (n.attr_int("block_size", 0) != 0) return "blocked quantization";
  const int64_t out = n.attr_int("output_dtype", 0);
  if (out != 0 &&
      (q ? !is_q8(static_cast<DType>(out)) : static_cast<DType>(out) != DType::kFloat32)) {
    return "output_dtype " + std::to_string(out);
  }
  for (size_t i = 1; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && input_layout(info, i) != Layout::kPlain) {
      return input_label(info, i) + " is not plain";
    }
  }
  if (input_layout(info, 0) != Layout::kPlain && !per_tensor(info)) {
    return "channels-last data with a scale not known to be one value";
  }
  return "";
}

Layout quantize_output_layout(const NodeInfo& info, size_t) { return input_layout(info, 0); }

template <bool kQuantize>
std::unique_ptr<Kernel> make_quantize(const NodeInfo& info) {
  return std::make_unique<QuantizeKernel>(info, kQuantize);
}

}  // namespace

void append_quantize_kernels(FactoryTable& t) {
  t.emplace_back(
      "QuantizeLinear",
      KernelFactory{"cpu.quantize_linear", accepts_unless_declined<quantize_declines>,
                    quantize_output_layout, make_quantize<true>, nullptr, quantize_declines});
  t.emplace_back(
      "DequantizeLinear",
      KernelFactory{"cpu.dequantize_linear", accepts_unless_declined<quantize_declines>,
                    quantize_output_layout, make_quantize<false>, nullptr, quantize_declines});
  t.emplace_back("DynamicQuantizeLinear",
                 KernelFactory{"cpu.dynamic_quantize_linear",
                               accepts_unless_declined<dynamic_quantize_declines>, nullptr,
                               make_dynamic_quantize, nullptr, dynamic_quantize_declines});
}

}  // namespace nnfuse::cpu
