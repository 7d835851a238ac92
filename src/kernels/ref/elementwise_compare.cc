// Reference kernels for elementwise comparisons and logic (bool outputs) and Where
// (elementwise.cc lists them), with numpy broadcasting.
#include <iterator>
#include <string>
#include <vector>

#include "kernels/ref/elementwise_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

using ref::check_same_dtype;
using ref::map2;
using ref::numeric_bool_types;
using ref::supports_bool;
using ref::supports_numeric;
using ref::supports_numeric_bool;

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

void append_elementwise_compare_kernels(std::vector<RefKernelEntry>& t) {
  const RefKernelEntry entries[] = {
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
