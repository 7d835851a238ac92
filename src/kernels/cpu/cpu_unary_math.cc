// The unary elementwise ops with no vectorized form here (float32): rounding (Floor, Ceil,
// Round), Sign, the trigonometric and hyperbolic functions and their inverses, and the
// activations Selu, Celu, Softsign, ThresholdedRelu and Shrink. Each element is computed with the
// reference kernel's double formula (kernels/ref/elementwise.cc), so the numbers are the
// reference's; what this adds is threads and one inlined loop per op instead of a call through
// a function pointer per element. Layout-transparent and in-place capable.
#include <cmath>
#include <map>
#include <memory>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

enum class MathOp {
  kFloor,
  kCeil,
  kRound,
  kSign,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kSelu,  // a = alpha, b = gamma
  kCelu,  // a = alpha
  kSoftsign,
  kThresholdedRelu,  // a = alpha
  kShrink,           // a = lambd, b = bias
};

struct MathOpInfo {
  MathOp op;
  const char* a_name = nullptr;
  float a_default = 0;
  const char* b_name = nullptr;
  float b_default = 0;
};

const std::map<std::string, MathOpInfo>& math_ops() {
  static const std::map<std::string, MathOpInfo> ops = {
      {"Floor", {MathOp::kFloor}},
      {"Ceil", {MathOp::kCeil}},
      {"Round", {MathOp::kRound}},
      {"Sign", {MathOp::kSign}},
      {"Sin", {MathOp::kSin}},
      {"Cos", {MathOp::kCos}},
      {"Tan", {MathOp::kTan}},
      {"Asin", {MathOp::kAsin}},
      {"Acos", {MathOp::kAcos}},
      {"Atan", {MathOp::kAtan}},
      {"Sinh", {MathOp::kSinh}},
      {"Cosh", {MathOp::kCosh}},
      {"Asinh", {MathOp::kAsinh}},
      {"Acosh", {MathOp::kAcosh}},
      {"Atanh", {MathOp::kAtanh}},
      // The reference's defaults: ONNX's float attributes, as float32.
      {"Selu",
       {MathOp::kSelu, "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f}},
      {"Celu", {MathOp::kCelu, "alpha", 1.0f}},
      {"Softsign", {MathOp::kSoftsign}},
      {"ThresholdedRelu", {MathOp::kThresholdedRelu, "alpha", 1.0f}},
      {"Shrink", {MathOp::kShrink, "lambd", 0.5f, "bias", 0.0f}},
  };
  return ops;
}

template <typename F>
void map_double(const float* x, float* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(f(static_cast<double>(x[i])));
}

// y[i] = op(x[i]) in double, as the reference computes it.
void math_loop(MathOp op, const float* x, float* y, int64_t n, double a, double b) {
  switch (op) {
    case MathOp::kFloor:
      return map_double(x, y, n, [](double v) { return std::floor(v); });
    case MathOp::kCeil:
      return map_double(x, y, n, [](double v) { return std::ceil(v); });
    case MathOp::kRound:  // half to even in the default rounding mode
      return map_double(x, y, n, [](double v) { return std::nearbyint(v); });
    case MathOp::kSign:
      return map_double(x, y, n, [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : v * 0.0; });
    case MathOp::kSin:
      return map_double(x, y, n, [](double v) { return std::sin(v); });
    case MathOp::kCos:
      return map_double(x, y, n, [](double v) { return std::cos(v); });
    case MathOp::kTan:
      return map_double(x, y, n, [](double v) { return std::tan(v); });
    case MathOp::kAsin:
      return map_double(x, y, n, [](double v) { return std::asin(v); });
    case MathOp::kAcos:
      return map_double(x, y, n, [](double v) { return std::acos(v); });
    case MathOp::kAtan:
      return map_double(x, y, n, [](double v) { return std::atan(v); });
    case MathOp::kSinh:
      return map_double(x, y, n, [](double v) { return std::sinh(v); });
    case MathOp::kCosh:
      return map_double(x, y, n, [](double v) { return std::cosh(v); });
    case MathOp::kAsinh:
      return map_double(x, y, n, [](double v) { return std::asinh(v); });
    case MathOp::kAcosh:
      return map_double(x, y, n, [](double v) { return std::acosh(v); });
    case MathOp::kAtanh:
      return map_double(x, y, n, [](double v) { return std::atanh(v); });
    case MathOp::kSelu:
      return map_double(x, y, n,
                        [a, b](double v) { return b * (v > 0 ? v : a * (std::exp(v) - 1)); });
    case MathOp::kCelu:
      return map_double(x, y, n, [a](double v) {
        return std::fmax(0.0, v) + std::fmin(0.0, a * (std::exp(v / a) - 1));
      });
    case MathOp::kSoftsign:
      return map_double(x, y, n, [](double v) { return v / (1 + std::fabs(v)); });
    case MathOp::kThresholdedRelu:
      return map_double(x, y, n, [a](double v) { return v > a ? v : 0.0; });
    case MathOp::kShrink:  // NaN gives 0, as in the reference
      return map_double(x, y, n, [a, b](double v) { return v < -a ? v + b : v > a ? v - b : 0.0; });
  }
}

class MathKernel : public Kernel {
 public:
  MathKernel(const NodeInfo& info, const MathOpInfo& op) : op_(op), who_(info.node.describe()) {
    if (op.a_name) a_ = info.node.attr_float(op.a_name, op.a_default);
    if (op.b_name) b_ = info.node.attr_float(op.b_name, op.b_default);
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    Tensor& y = io.output(0, DType::kFloat32, x.shape(), x.layout());
    const float* px = x.data<float>();
    float* py = y.data<float>();
    parallel_range(x.numel(), kParallelGrain / 8, [&](int64_t lo, int64_t hi) {
      math_loop(op_.op, px + lo, py + lo, hi - lo, a_, b_);
    });
  }

 private:
  MathOpInfo op_;
  std::string who_;
  double a_ = 0, b_ = 0;
};

bool math_accepts(const NodeInfo& info) {
  auto it = math_ops().find(info.node.op_type());
  if (it == math_ops().end() || !info.node.domain().empty() || info.node.num_inputs() != 1 ||
      !input_is(info, 0, DType::kFloat32) || !single_output(info.node)) {
    return false;
  }
  try {  // attributes of the wrong kind are left to the reference kernel to report
    MathKernel probe(info, it->second);
  } catch (const Error&) {
    return false;
  }
  return true;
}

std::unique_ptr<Kernel> math_create(const NodeInfo& info) {
  return std::make_unique<MathKernel>(info, math_ops().at(info.node.op_type()));
}

}  // namespace

void append_unary_math_kernels(FactoryTable& t) {
  const KernelFactory f{"cpu.unary_math", math_accepts, same_as_input, math_create,
                        in_place_output0};
  for (const auto& [op, info] : math_ops()) t.emplace_back(op, f);
}

}  // namespace nnfuse::cpu
