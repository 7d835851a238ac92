// Reference kernels for elementwise ops: unary math and activations, numpy-broadcasting
// binary arithmetic, comparisons, logic, Clip, PRelu, BitShift, Shrink and Where.
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

#include "ir/half.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

// ---------------------------------------------------------------------------------------
// Type sets and support functions.

const std::vector<DType>& float_types() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat64};
  return v;
}
const std::vector<DType>& signed_types() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat64, DType::kInt8,
                                       DType::kInt16,   DType::kInt32,   DType::kInt64};
  return v;
}
using ref::numeric_types;
const std::vector<DType>& numeric_bool_types() {
  static const std::vector<DType> v = [] {
    std::vector<DType> r = numeric_types();
    r.push_back(DType::kBool);
    return r;
  }();
  return v;
}
// numeric_types() and both 16-bit float types.
const std::vector<DType>& numeric_half_types() {
  static const std::vector<DType> v = [] {
    std::vector<DType> r = numeric_types();
    r.push_back(DType::kFloat16);
    r.push_back(DType::kBFloat16);
    return r;
  }();
  return v;
}
const std::vector<DType>& unsigned_types() {
  static const std::vector<DType> v = {DType::kUInt8, DType::kUInt16, DType::kUInt32,
                                       DType::kUInt64};
  return v;
}

std::string supports_float(const Node& n, int64_t) {
  return ref::require_input_types(n, float_types());
}
std::string supports_numeric(const Node& n, int64_t) {
  return ref::require_input_types(n, numeric_types());
}
std::string supports_numeric_half(const Node& n, int64_t) {
  return ref::require_input_types(n, numeric_half_types());
}
std::string supports_numeric_bool(const Node& n, int64_t) {
  return ref::require_input_types(n, numeric_bool_types());
}
std::string supports_bool(const Node& n, int64_t) {
  return ref::require_input_types(n, {DType::kBool});
}

// ---------------------------------------------------------------------------------------
// Shared helpers.

// Requires every present input to have the dtype of input 0.
void check_same_dtype(const KernelContext& ctx, size_t first = 0) {
  DType t = ctx.in(first).dtype();
  for (size_t i = first + 1; i < ctx.num_inputs(); ++i) {
    NNFUSE_CHECK(!ctx.has_input(i) || ctx.in(i).dtype() == t, ctx.node.describe(), ": input ", i,
                 " has type ", dtype_name(ctx.in(i).dtype()), " but input ", first, " has type ",
                 dtype_name(t));
  }
}

// y = f(a, b) with numpy broadcasting; R, A, B are the element types of y, a, b.
template <typename R, typename A, typename B, typename F>
Tensor map2(const Tensor& a, const Tensor& b, DType out, const Node& node, F f) {
  Dims shape = ref::broadcast_shapes(a.shape(), b.shape(), node);
  Tensor y(out, shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* py = y.data<R>();
  ref::BroadcastIter it(
      shape, {ref::broadcast_strides(a.shape(), shape), ref::broadcast_strides(b.shape(), shape)});
  for (; !it.done(); it.next()) py[it.linear()] = f(pa[it.offset(0)], pb[it.offset(1)]);
  return y;
}

// The exact float64 values of a float16 or bfloat16 tensor.
Tensor half_to_float64(const Tensor& t) {
  Tensor y(DType::kFloat64, t.shape());
  double* py = y.data<double>();
  auto widen = [&](auto tag) {
    using H = decltype(tag);
    const H* px = t.data<H>();
    for (int64_t i = 0; i < t.numel(); ++i) py[i] = half_to_double(px[i]);
  };
  if (t.dtype() == DType::kFloat16) {
    widen(Float16{});
  } else {
    widen(BFloat16{});
  }
  return y;
}

// A float64 tensor rounded to float16 or bfloat16 (nearest, ties to even).
Tensor float64_to_half(const Tensor& t, DType half) {
  Tensor y(half, t.shape());
  const double* px = t.data<double>();
  auto narrow = [&](auto tag) {
    using H = decltype(tag);
    H* py = y.data<H>();
    for (int64_t i = 0; i < t.numel(); ++i) py[i] = to_half<H>(px[i]);
  };
  if (half == DType::kFloat16) {
    narrow(Float16{});
  } else {
    narrow(BFloat16{});
  }
  return y;
}

// Runs `Run`, the kernel of an op whose inputs share one type; when that type is float16 or
// bfloat16, on exact float64 copies of the inputs, each float64 output then rounded back to it:
// the op computes in double and rounds once, as its float32 form does. Outputs of other types
// (none for the ops that use this yet) pass as they are.
template <RefKernelFn Run>
void run_widened(KernelContext& ctx) {
  const DType half = ctx.in(0).dtype();
  if (!dtype_is_half(half)) return Run(ctx);
  check_same_dtype(ctx);
  std::vector<Tensor> wide(ctx.num_inputs());
  KernelContext w{ctx.node, ctx.opset, {}, std::vector<Tensor>(ctx.outputs.size())};
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) wide[i] = half_to_float64(ctx.in(i));
    w.inputs.push_back(ctx.has_input(i) ? &wide[i] : nullptr);
  }
  Run(w);
  for (size_t i = 0; i < w.outputs.size(); ++i) {
    const Tensor& y = w.outputs[i];
    ctx.outputs[i] = y.defined() && y.dtype() == DType::kFloat64 ? float64_to_half(y, half) : y;
  }
}

// Wrapping integer arithmetic (through uint64, where overflow is defined); plain for floats.
template <typename T>
T add_wrap(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <typename T>
T sub_wrap(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  } else {
    return a - b;
  }
}
template <typename T>
T mul_wrap(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

// Max/Min; for floats a NaN operand gives NaN (as numpy.maximum / numpy.minimum).
template <typename T>
T max_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename T>
T min_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return b < a ? b : a;
}

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

// ---------------------------------------------------------------------------------------
// Binary and variadic arithmetic.

// Folds the inputs left to right with f (a generic lambda on two T), broadcasting.
template <typename F>
void fold_inputs(KernelContext& ctx, F f) {
  check_same_dtype(ctx);
  const Tensor& first = ctx.in(0);
  ref::dispatch(first.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {  // dispatch never passes bool here
      Tensor acc = ctx.num_inputs() == 1 ? first.clone() : first;
      for (size_t i = 1; i < ctx.num_inputs(); ++i) {
        acc = map2<T, T, T>(acc, ctx.in(i), first.dtype(), ctx.node,
                            [&](T a, T b) { return f(a, b); });
      }
      ctx.outputs[0] = acc;
    }
  });
}

void run_add(KernelContext& ctx) {
  fold_inputs(ctx, [](auto a, auto b) { return add_wrap(a, b); });
}
void run_sub(KernelContext& ctx) {
  fold_inputs(ctx, [](auto a, auto b) { return sub_wrap(a, b); });
}
void run_mul(KernelContext& ctx) {
  fold_inputs(ctx, [](auto a, auto b) { return mul_wrap(a, b); });
}
void run_max(KernelContext& ctx) {
  fold_inputs(ctx, [](auto a, auto b) { return max_nan(a, b); });
}
void run_min(KernelContext& ctx) {
  fold_inputs(ctx, [](auto a, auto b) { return min_nan(a, b); });
}

void run_div(KernelContext& ctx) {
  const Node& node = ctx.node;
  fold_inputs(ctx, [&](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      NNFUSE_CHECK(b != 0, node.describe(), ": integer division by zero");
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return sub_wrap(T{0}, a);  // lowest / -1 wraps instead of trapping
      }
      return static_cast<T>(a / b);  // truncates toward zero, as C
    } else {
      return a / b;
    }
  });
}

void run_mean(KernelContext& ctx) {
  fold_inputs(ctx, [](auto a, auto b) { return add_wrap(a, b); });
  Tensor& y = ctx.outputs[0];
  double n = static_cast<double>(ctx.num_inputs());
  ref::dispatch_float(y.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    T* p = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = static_cast<T>(p[i] / n);
  });
}

// Mod: fmod=1 is C fmod (sign of the dividend); fmod=0 takes the sign of the divisor, as
// Python's %. (The spec requires fmod=1 for floats; fmod=0 on floats follows numpy.mod.)
void run_mod(KernelContext& ctx) {
  const Node& node = ctx.node;
  bool c_fmod = node.attr_int("fmod", 0) != 0;
  fold_inputs(ctx, [&](auto a, auto b) {
    using T = decltype(a);
    T r;
    if constexpr (std::is_integral_v<T>) {
      NNFUSE_CHECK(b != 0, node.describe(), ": integer modulo by zero");
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T{0};  // lowest % -1 would trap
      }
      r = static_cast<T>(a % b);
    } else {
      r = std::fmod(a, b);
    }
    if constexpr (std::is_signed_v<T>) {
      if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    }
    return r;
  });
}

// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0, in double (NaN gives 0); integer
// results round toward zero and saturate (an integer beyond 2^53 loses its low bits).
void run_shrink(KernelContext& ctx) {
  const double lambd = ctx.node.attr_float("lambd", 0.5f);
  const double bias = ctx.node.attr_float("bias", 0.f);
  const Tensor& x = ctx.in(0);
  Tensor y(x.dtype(), x.shape());
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = static_cast<double>(px[i]);
      py[i] = saturate_cast<T>(v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
    }
  });
  ctx.outputs[0] = y;
}

std::string supports_shrink(const Node& n, int64_t) {
  static const std::vector<DType> types = [] {  // the spec's: float16, not bfloat16
    std::vector<DType> r = numeric_types();
    r.push_back(DType::kFloat16);
    return r;
  }();
  return ref::require_input_types(n, types);
}

// Pow: the output has the base's type; the exponent may have another numeric type.
void run_pow(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& e = ctx.in(1);
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto xt) {
    using X = decltype(xt);
    ref::dispatch(e.dtype(), ctx.node.describe(), [&](auto et) {
      using E = decltype(et);
      ctx.outputs[0] = map2<X, X, E>(x, e, x.dtype(), ctx.node, [](X a, E b) {
        return saturate_cast<X>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      });
    });
  });
}

std::string supports_pow(const Node& n, int64_t) {
  std::string why = ref::require_input_types(n, numeric_types(), 0, 1);
  return why.empty() ? ref::require_input_types(n, numeric_types(), 1, 1) : why;
}

// PRelu: slope broadcasts to X (unidirectionally); the output has X's shape.
void run_prelu(KernelContext& ctx) {
  check_same_dtype(ctx);
  const Tensor& x = ctx.in(0);
  const Tensor& slope = ctx.in(1);
  NNFUSE_CHECK(ref::broadcast_shapes(x.shape(), slope.shape(), ctx.node) == x.shape(),
               ctx.node.describe(), ": slope of shape ", dims_str(slope.shape()),
               " does not broadcast to X of shape ", dims_str(x.shape()));
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    ctx.outputs[0] = map2<T, T, T>(x, slope, x.dtype(), ctx.node, [](T v, T s) {
      if constexpr (std::is_signed_v<T>) return v < 0 ? mul_wrap(s, v) : v;
      return v;
    });
  });
}

void run_bitshift(KernelContext& ctx) {
  check_same_dtype(ctx);
  std::string dir = ctx.node.attr_string("direction", "");
  NNFUSE_CHECK(dir == "LEFT" || dir == "RIGHT", ctx.node.describe(), ": direction '", dir,
               "' is not LEFT or RIGHT");
  bool left = dir == "LEFT";
  const Tensor& x = ctx.in(0);
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
      ctx.outputs[0] = map2<T, T, T>(x, ctx.in(1), x.dtype(), ctx.node, [&](T v, T s) {
        if (s >= sizeof(T) * 8) return T{0};  // C leaves this undefined; all bits shift out
        return static_cast<T>(left ? static_cast<uint64_t>(v) << s : v >> s);
      });
    } else {
      fail(ErrorKind::kUnsupported, ctx.node.describe(), ": BitShift needs unsigned integers");
    }
  });
}

std::string supports_bitshift(const Node& n, int64_t) {
  std::string dir = n.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") return "direction must be LEFT or RIGHT";
  return ref::require_input_types(n, unsigned_types());
}

// ---------------------------------------------------------------------------------------
// Comparisons and logic (bool outputs).

template <typename F>
void compare(KernelContext& ctx, F f) {
  check_same_dtype(ctx);
  const Tensor& a = ctx.in(0);
  ref::dispatch(
      a.dtype(), ctx.node.describe(),
      [&](auto tag) {
        using T = decltype(tag);
        ctx.outputs[0] = map2<bool, T, T>(a, ctx.in(1), DType::kBool, ctx.node, f);
      },
      /*with_bool=*/true);
}

void run_equal(KernelContext& ctx) {
  compare(ctx, [](auto a, auto b) { return a == b; });
}
void run_less(KernelContext& ctx) {
  compare(ctx, [](auto a, auto b) { return a < b; });
}
void run_greater(KernelContext& ctx) {
  compare(ctx, [](auto a, auto b) { return a > b; });
}
void run_less_equal(KernelContext& ctx) {
  compare(ctx, [](auto a, auto b) { return a <= b; });
}
void run_greater_equal(KernelContext& ctx) {
  compare(ctx, [](auto a, auto b) { return a >= b; });
}

template <typename F>
void logic(KernelContext& ctx, F f) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  NNFUSE_CHECK(a.dtype() == DType::kBool && b.dtype() == DType::kBool, ctx.node.describe(),
               ": inputs must be bool");
  ctx.outputs[0] = map2<bool, bool, bool>(a, b, DType::kBool, ctx.node, f);
}

void run_and(KernelContext& ctx) {
  logic(ctx, [](bool a, bool b) { return a && b; });
}
void run_or(KernelContext& ctx) {
  logic(ctx, [](bool a, bool b) { return a || b; });
}
void run_xor(KernelContext& ctx) {
  logic(ctx, [](bool a, bool b) { return a != b; });
}

// Where(cond, X, Y): three-way broadcast; the output has X's type.
void run_where(KernelContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const Tensor& y = ctx.in(2);
  NNFUSE_CHECK(c.dtype() == DType::kBool, ctx.node.describe(), ": condition must be bool");
  check_same_dtype(ctx, 1);
  Dims shape = ref::broadcast_shapes(ref::broadcast_shapes(c.shape(), x.shape(), ctx.node),
                                     y.shape(), ctx.node);
  Tensor out(x.dtype(), shape);
  ref::dispatch(
      x.dtype(), ctx.node.describe(),
      [&](auto tag) {
        using T = decltype(tag);
        const bool* pc = c.data<bool>();
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        T* po = out.data<T>();
        ref::BroadcastIter it(shape, {ref::broadcast_strides(c.shape(), shape),
                                      ref::broadcast_strides(x.shape(), shape),
                                      ref::broadcast_strides(y.shape(), shape)});
        for (; !it.done(); it.next()) {
          po[it.linear()] = pc[it.offset(0)] ? px[it.offset(1)] : py[it.offset(2)];
        }
      },
      /*with_bool=*/true);
  ctx.outputs[0] = out;
}

std::string supports_where(const Node& n, int64_t) {
  std::string why = ref::require_input_types(n, {DType::kBool}, 0, 1);
  return why.empty() ? ref::require_input_types(n, numeric_bool_types(), 1) : why;
}

}  // namespace

void append_elementwise_kernels(std::vector<RefKernelEntry>& t) {
  for (const UnaryOp& u : unary_ops()) t.push_back({u.op, run_unary, supports_unary});
  const RefKernelEntry entries[] = {
      {"IsNaN", run_isnan, supports_float},
      {"IsInf", run_isinf, supports_float},
      {"Not", run_not, supports_bool},
      {"Clip", run_clip, supports_numeric},
      {"Add", run_add, supports_numeric},
      {"Sub", run_sub, supports_numeric},
      {"Mul", run_mul, supports_numeric},
      {"Div", run_div, supports_numeric},
      {"Pow", run_pow, supports_pow},
      {"Mod", run_widened<run_mod>, supports_numeric_half},
      {"Max", run_widened<run_max>, supports_numeric_half},
      {"Min", run_widened<run_min>, supports_numeric_half},
      {"Sum", run_add, supports_numeric},
      {"Mean", run_mean, supports_float},
      {"PRelu", run_prelu, supports_numeric},
      {"Shrink", run_widened<run_shrink>, supports_shrink},
      {"BitShift", run_bitshift, supports_bitshift},
      {"Equal", run_equal, supports_numeric_bool},
      {"Less", run_less, supports_numeric},
      {"Greater", run_greater, supports_numeric},
      {"LessOrEqual", run_less_equal, supports_numeric},
      {"GreaterOrEqual", run_greater_equal, supports_numeric},
      {"And", run_and, supports_bool},
      {"Or", run_or, supports_bool},
      {"Xor", run_xor, supports_bool},
      {"Where", run_where, supports_where},
  };
  t.insert(t.end(), std::begin(entries), std::end(entries));
}

}  // namespace nnfuse
