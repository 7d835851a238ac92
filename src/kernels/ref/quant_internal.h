// Private to the quantization reference kernels (quant.cc: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear and the table; quant_matmul.cc: MatMulInteger, QLinearMatMul;
// quant_conv.cc: ConvInteger, QLinearConv): the rounding and the input checks they share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse::ref {

// The quantized data types.
inline const std::vector<DType> kQ8 = {DType::kInt8, DType::kUInt8};

// ---- Arithmetic --------------------------------------------------------------------------

// Calls f(Q{}) for the 8-bit quantized types.
template <typename F>
void dispatch_q8(DType t, const std::string& what, F&& f) {
  if (t == DType::kInt8) return f(int8_t{});
  if (t == DType::kUInt8) return f(uint8_t{});
  fail(ErrorKind::kUnsupported, what, ": quantized type ", dtype_name(t),
       " is not supported (only int8 and uint8)");
}

// saturate(round_half_to_even(q) + zp) in Q; a NaN q counts as 0.
template <typename Q>
Q quantize_value(double q, int64_t zp) {
  // std::nearbyint rounds in the current rounding mode, round-to-nearest-even by default.
  const double r = (std::isnan(q) ? 0.0 : std::nearbyint(q)) + static_cast<double>(zp);
  const double lo = std::numeric_limits<Q>::lowest(), hi = std::numeric_limits<Q>::max();
  return static_cast<Q>(std::clamp(r, lo, hi));
}

// Throws unless input i (when present) has one of the types `allowed`.
inline void check_input_dtypes(const KernelContext& ctx, size_t i,
                               const std::vector<DType>& allowed) {
  if (!ctx.has_input(i)) return;
  const DType got = ctx.inputs[i]->dtype();
  if (std::find(allowed.begin(), allowed.end(), got) == allowed.end()) {
    fail(ErrorKind::kUnsupported, ctx.node.describe(), ": input ", i, " of type ", dtype_name(got),
         " is not supported");
  }
}

// A zero point (input zp_i, when present) must have the type of the data it belongs to.
inline void check_zero_point_dtype(const KernelContext& ctx, size_t zp_i, DType data) {
  if (!ctx.has_input(zp_i)) return;
  NNFUSE_CHECK(ctx.in(zp_i).dtype() == data, ctx.node.describe(), ": zero point (input ", zp_i,
               ") has type ", dtype_name(ctx.in(zp_i).dtype()), " but its data has type ",
               dtype_name(data));
}

// A scale (input scale_i) and its zero point (input zp_i, when present) must have one shape;
// a single value is accepted in any shape ([] or [1]).
inline void check_same_shape(const KernelContext& ctx, size_t scale_i, size_t zp_i) {
  if (!ctx.has_input(zp_i)) return;
  const Tensor& s = ctx.in(scale_i);
  const Tensor& z = ctx.in(zp_i);
  NNFUSE_CHECK(s.shape() == z.shape() || (s.numel() == 1 && z.numel() == 1), ctx.node.describe(),
               ": scale (input ", scale_i, ") of shape ", dims_str(s.shape()),
               " and zero point (input ", zp_i, ") of shape ", dims_str(z.shape()), " differ");
}

}  // namespace nnfuse::ref

namespace nnfuse {

void run_matmul_integer(KernelContext& ctx);  // quant_matmul.cc
void run_qlinear_matmul(KernelContext& ctx);
void run_matmul_integer_to_float(KernelContext& ctx);
void run_conv_integer(KernelContext& ctx);  // quant_conv.cc
void run_qlinear_conv(KernelContext& ctx);

}  // namespace nnfuse
