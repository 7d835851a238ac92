// QuantizeLinear (float32 to int8 or uint8) and DequantizeLinear (int8, uint8 or int32 to
// float32), per tensor or per index along `axis`: the arithmetic of the reference kernels
// (kernels/ref/quant.cc) in vector loops. Quantize divides in float32 as the reference does,
// rounds half to even and saturates; a NaN quantizes to the zero point.
// Dequantize multiplies (x - zero point), exact in float32 for 8-bit x, by the scale: one
// rounding, as the reference's product in double rounded to float32 (int32 x in double).
// Per-tensor parameters leave the layout alone, so a QDQ model's Quantize/Dequantize pairs
// between channels-last convolutions cost no reorder. (A QDQ pair over a 64 x 56 x 56
// activation took 2-3 ms on the reference kernels.)
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"

namespace nnfuse::cpu {
namespace {

bool q8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

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
      if (x.dtype() != DType::kFloat32 || !q8(out) ||
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
    if (!(q8(x.dtype()) || x.dtype() == DType::kInt32) || (z && z->dtype() != x.dtype())) {
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
    if (s.dtype() != DType::kFloat32 || (z && !(q8(z->dtype()) || z->dtype() == DType::kInt32)) ||
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
  if (q ? x != DType::kFloat32 : !(q8(x) || x == DType::kInt32)) {
    return input_label(info, 0) + " is " + dtype_name(x);
  }
  if (info.input_dtype(1) != DType::kFloat32)
    return "a scale of " + dtype_name(info.input_dtype(1));
  if (n.attr_int("block_size", 0) != 0) return "blocked quantization";
  const int64_t out = n.attr_int("output_dtype", 0);
  if (out != 0 && (q ? !q8(static_cast<DType>(out)) : static_cast<DType>(out) != DType::kFloat32)) {
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
}

}  // namespace nnfuse::cpu
