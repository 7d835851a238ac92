// Private to the elementwise reference kernels (elementwise.cc: unary; elementwise_binary.cc:
// arithmetic; elementwise_compare.cc: comparisons, logic and Where): the dtypes each family
// takes, the input checks and the broadcasting map they share.
#pragma once

#include <string>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse::ref {

// ---------------------------------------------------------------------------------------
// Type sets and support functions.

inline const std::vector<DType>& float_types() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat64};
  return v;
}
inline const std::vector<DType>& signed_types() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat64, DType::kInt8,
                                       DType::kInt16,   DType::kInt32,   DType::kInt64};
  return v;
}
inline const std::vector<DType>& numeric_bool_types() {
  static const std::vector<DType> v = [] {
    std::vector<DType> r = numeric_types();
    r.push_back(DType::kBool);
    return r;
  }();
  return v;
}
// numeric_types() and both 16-bit float types.
inline const std::vector<DType>& numeric_half_types() {
  static const std::vector<DType> v = [] {
    std::vector<DType> r = numeric_types();
    r.push_back(DType::kFloat16);
    r.push_back(DType::kBFloat16);
    return r;
  }();
  return v;
}
inline const std::vector<DType>& unsigned_types() {
  static const std::vector<DType> v = {DType::kUInt8, DType::kUInt16, DType::kUInt32,
                                       DType::kUInt64};
  return v;
}

inline std::string supports_float(const Node& n, int64_t) {
  return ref::require_input_types(n, float_types());
}
inline std::string supports_numeric(const Node& n, int64_t) {
  return ref::require_input_types(n, numeric_types());
}
inline std::string supports_numeric_half(const Node& n, int64_t) {
  return ref::require_input_types(n, numeric_half_types());
}
inline std::string supports_numeric_bool(const Node& n, int64_t) {
  return ref::require_input_types(n, numeric_bool_types());
}
inline std::string supports_bool(const Node& n, int64_t) {
  return ref::require_input_types(n, {DType::kBool});
}

// ---------------------------------------------------------------------------------------
// Shared helpers.

// Requires every present input to have the dtype of input 0.
inline void check_same_dtype(const KernelContext& ctx, size_t first = 0) {
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

}  // namespace nnfuse::ref

namespace nnfuse {

// The families' table rows, in the order append_elementwise_kernels lists them.
void append_elementwise_binary_kernels(std::vector<RefKernelEntry>& t);   // Add .. BitShift
void append_elementwise_compare_kernels(std::vector<RefKernelEntry>& t);  // Equal .. Where

}  // namespace nnfuse
