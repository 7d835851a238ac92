// Reference kernels for elementwise ops: unary math and activations, numpy-broadcasting
// binary arithmetic, comparisons, logic, Clip, PRelu, BitShift, Shrink and Where. This file
// holds the unary ops and the table of them all; the binary arithmetic is in
// elementwise_binary.cc, the comparisons, logic and Where in elementwise_compare.cc.
//
// Float unary ops are computed in double and rounded once; so are Max, Min, Mod and Shrink on
// float16 and bfloat16 (run_widened). Integer arithmetic wraps (two's complement) instead of
// overflowing; integer division or modulo by zero is a runtime error.
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/ref/elementwise_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

using ref::float_types;
using ref::numeric_types;
using ref::signed_types;
using ref::supports_bool;
using ref::supports_float;
using ref::supports_numeric;

// ---------------------------------------------------------------------------------------
// Unary ops: one table row each. `f` computes float types in double (a, b are the op's two
// float attributes, when it has them); `s` and `u` handle signed / unsigned integers, or are
// null when the op does not take them.

using FloatFn = double (*)(double x, double a, double b);
using SignedFn = int64_t (*)(int64_t x);
using UnsignedFn = uint64_t (*)(uint64_t x);

int64_t neg_wrap(int64_t x) { return static_cast<int64_t>(0 - static_cast<uint64_t>(x)); }

struct UnaryOp {
  const char* op;
  FloatFn f;
  SignedFn s = nullptr;
  UnsignedFn u = nullptr;
  const char* a_name = nullptr;
  float a_default = 0;
  const char* b_name = nullptr;
  float b_default = 0;
};

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double clamp01(double x) { return std::fmax(0.0, std::fmin(1.0, x)); }

const std::vector<UnaryOp>& unary_ops() {
  static const std::vector<UnaryOp> ops = {
      {"Relu", [](double x, double, double) { return x < 0 ? 0.0 : x; },
       [](int64_t x) { return x > 0 ? x : int64_t{0}; }, [](uint64_t x) { return x; }},
      {"LeakyRelu", [](double x, double a, double) { return x >= 0 ? x : a * x; }, nullptr, nullptr,
       "alpha", 0.01f},
      {"Sigmoid", [](double x, double, double) { return sigmoid(x); }},
      {"HardSigmoid", [](double x, double a, double b) { return clamp01(a * x + b); }, nullptr,
       nullptr, "alpha", 0.2f, "beta", 0.5f},
      {"HardSwish", [](double x, double, double) { return x * clamp01(x / 6.0 + 0.5); }},
      {"Tanh", [](double x, double, double) { return std::tanh(x); }},
      {"Erf", [](double x, double, double) { return std::erf(x); }},
      {"Exp", [](double x, double, double) { return std::exp(x); }},
      {"Log", [](double x, double, double) { return std::log(x); }},
      {"Sqrt", [](double x, double, double) { return std::sqrt(x); }},
      {"Reciprocal", [](double x, double, double) { return 1.0 / x; }},
      {"Neg", [](double x, double, double) { return -x; }, neg_wrap},
      {"Abs", [](double x, double, double) { return std::fabs(x); },
       [](int64_t x) { return x < 0 ? neg_wrap(x) : x; }, [](uint64_t x) { return x; }},
      {"Floor", [](double x, double, double) { return std::floor(x); }},
      {"Ceil", [](double x, double, double) { return std::ceil(x); }},
      // nearbyint rounds half to even in the default rounding mode.
      {"Round", [](double x, double, double) { return std::nearbyint(x); }},
      {"Sign", [](double x, double, double) { return x > 0   ? 1.0
                                                     : x < 0 ? -1.0
                                                             : x * 0.0; },
       [](int64_t x) { return int64_t{x > 0} - int64_t{x < 0}; },
       [](uint64_t x) { return uint64_t{x > 0}; }},
      {"Sin", [](double x, double, double) { return std::sin(x); }},
      {"Cos", [](double x, double, double) { return std::cos(x); }},
      {"Tan", [](double x, double, double) { return std::tan(x); }},
      {"Asin", [](double x, double, double) { return std::asin(x); }},
      {"Acos", [](double x, double, double) { return std::acos(x); }},
      {"Atan", [](double x, double, double) { return std::atan(x); }},
      {"Sinh", [](double x, double, double) { return std::sinh(x); }},
      {"Cosh", [](double x, double, double) { return std::cosh(x); }},
      {"Asinh", [](double x, double, double) { return std::asinh(x); }},
      {"Acosh", [](double x, double, double) { return std::acosh(x); }},
      {"Atanh", [](double x, double, double) { return std::atanh(x); }},
      {"Elu", [](double x, double a, double) { return x >= 0 ? x : a * (std::exp(x) - 1); },
       nullptr, nullptr, "alpha", 1.0f},
      {"Selu", [](double x, double a, double g) { return g * (x > 0 ? x : a * (std::exp(x) - 1)); },
       nullptr, nullptr, "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f},
      {"Celu",
       [](double x, double a, double) {
         return std::fmax(0.0, x) + std::fmin(0.0, a * (std::exp(x / a) - 1));
       },
       nullptr, nullptr, "alpha", 1.0f},
      // log(1 + exp(x)) without overflow for large x.
      {"Softplus",
       [](double x, double, double) {
         return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
       }},
      {"Softsign", [](double x, double, double) { return x / (1 + std::fabs(x)); }},
      {"ThresholdedRelu", [](double x, double a, double) { return x > a ? x : 0.0; }, nullptr,
       nullptr, "alpha", 1.0f},
  };
  return ops;
}

const UnaryOp& find_unary(const std::string& op) {
  for (const UnaryOp& u : unary_ops()) {
    if (op == u.op) return u;
  }
  fail(ErrorKind::kInternal, "no unary reference op ", op);
}

std::string supports_unary(const Node& n, int64_t) {
  const UnaryOp& u = find_unary(n.op_type());
  if (u.u) return ref::require_input_types(n, numeric_types());
  if (u.s) return ref::require_input_types(n, signed_types());
  return ref::require_input_types(n, float_types());
}

void run_unary(KernelContext& ctx) {
  const UnaryOp& op = find_unary(ctx.node.op_type());
  const Tensor& x = ctx.in(0);
  double a = op.a_name ? ctx.node.attr_float(op.a_name, op.a_default) : 0.0;
  double b = op.b_name ? ctx.node.attr_float(op.b_name, op.b_default) : 0.0;
  Tensor y(x.dtype(), x.shape());
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      for (int64_t i = 0; i < x.numel(); ++i) {
        py[i] = static_cast<T>(op.f(static_cast<double>(px[i]), a, b));
      }
    } else if constexpr (std::is_signed_v<T>) {
      if (!op.s) fail(ErrorKind::kUnsupported, ctx.node.describe(), ": integer input");
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = static_cast<T>(op.s(px[i]));
    } else {
      if (!op.u) fail(ErrorKind::kUnsupported, ctx.node.describe(), ": unsigned input");
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = static_cast<T>(op.u(px[i]));
    }
  });
  ctx.outputs[0] = y;
}

// Float -> bool predicates.
template <typename Pred>
void float_predicate(KernelContext& ctx, Pred pred) {
  const Tensor& x = ctx.in(0);
  Tensor y(DType::kBool, x.shape());
  ref::dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    bool* py = y.data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = pred(static_cast<double>(px[i]));
  });
  ctx.outputs[0] = y;
}

void run_isnan(KernelContext& ctx) {
  float_predicate(ctx, [](double x) { return std::isnan(x); });
}

void run_isinf(KernelContext& ctx) {
  bool pos = ctx.node.attr_int("detect_positive", 1) != 0;
  bool neg = ctx.node.attr_int("detect_negative", 1) != 0;
  float_predicate(ctx, [&](double x) { return std::isinf(x) && (x > 0 ? pos : neg); });
}

void run_not(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  NNFUSE_CHECK(x.dtype() == DType::kBool, ctx.node.describe(), ": input must be bool");
  Tensor y(DType::kBool, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<bool>()[i] = !x.data<bool>()[i];
  ctx.outputs[0] = y;
}

// Clip: min/max are optional scalar inputs from opset 11, float attributes before.
void run_clip(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor y(x.dtype(), x.shape());
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    constexpr bool kFloat = std::is_floating_point_v<T>;
    T lo = kFloat ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    T hi = kFloat ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    auto bound = [&](size_t i, T& v) {
      if (!ctx.has_input(i)) return;
      const Tensor& t = ctx.in(i);
      NNFUSE_CHECK(t.dtype() == x.dtype() && t.numel() == 1, ctx.node.describe(), ": input ", i,
                   " must be a scalar of the input's type");
      v = t.data<T>()[0];
    };
    if (ctx.opset < 11) {
      if (ctx.node.has_attr("min")) lo = saturate_cast<T>(ctx.node.attr_float("min", 0));
      if (ctx.node.has_attr("max")) hi = saturate_cast<T>(ctx.node.attr_float("max", 0));
    } else {
      bound(1, lo);
      bound(2, hi);
    }
    const T* px = x.data<T>();
    T* py = y.data<T>();
    // min(max(x, lo), hi): when lo > hi every element becomes hi, as the spec says.
    for (int64_t i = 0; i < x.numel(); ++i) {
      T v = px[i] < lo ? lo : px[i];
      py[i] = hi < v ? hi : v;
    }
  });
  ctx.outputs[0] = y;
}

}  // namespace

void append_elementwise_kernels(std::vector<RefKernelEntry>& t) {
  for (const UnaryOp& u : unary_ops()) t.push_back({u.op, run_unary, supports_unary});
  const RefKernelEntry entries[] = {
      {"IsNaN", run_isnan, supports_float},
      {"IsInf", run_isinf, supports_float},
      {"Not", run_not, supports_bool},
      {"Clip", run_clip, supports_numeric},
  };
  t.insert(t.end(), std::begin(entries), std::end(entries));
  append_elementwise_binary_kernels(t);
  append_elementwise_compare_kernels(t);
}

}  // namespace nnfuse
