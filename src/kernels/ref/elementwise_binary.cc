// Reference kernels for elementwise binary and variadic arithmetic (elementwise.cc lists them):
// Add, Sub, Mul, Div, Pow, Mod, Max, Min, Sum, Mean, PRelu, Shrink and BitShift, with numpy
// broadcasting. Integer arithmetic wraps (two's complement) instead of overflowing; integer
// division or modulo by zero is a runtime error. Max, Min, Mod and Shrink on float16 and
// bfloat16 compute in double and round once (run_widened).
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/half.h"
#include "kernels/ref/elementwise_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

using ref::check_same_dtype;
using ref::map2;
using ref::numeric_types;
using ref::supports_float;
using ref::supports_numeric;
using ref::supports_numeric_half;
using ref::unsigned_types;

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

}  // namespace

void append_elementwise_binary_kernels(std::vector<RefKernelEntry>& t) {
  const RefKernelEntry entries[] = {
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
  };
  t.insert(t.end(), std::begin(entries), std::end(entries));
}

}  // namespace nnfuse
