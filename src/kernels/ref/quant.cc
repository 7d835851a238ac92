// Reference kernels for ONNX's linear quantization ops (default domain, opsets 10 to 17):
//
//   QuantizeLinear(x, y_scale, y_zero_point?) -> y
//       y = saturate(round(x / y_scale) + y_zero_point). x is float32 or int32; y has the zero
//       point's type, int8 or uint8 (uint8 when the zero point is absent, or the type the
//       opset-21 attribute output_dtype names).
//   DequantizeLinear(x, x_scale, x_zero_point?) -> y
//       y = (x - x_zero_point) * x_scale as float32. x is int8, uint8 or int32.
//   DynamicQuantizeLinear(x) -> (y, y_scale, y_zero_point)
//       Quantizes float32 x to uint8 over the range [min(0, min(x)), max(0, max(x))]:
//       y_scale = (max - min) / 255, y_zero_point = saturate(round(-min / y_scale)), then y as
//       QuantizeLinear computes it. When x is all zeros (or empty) the scale is 0, and y and the
//       zero point are 0.
//   MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> int32
//       numpy matmul of (A - a_zero_point) and (B - b_zero_point).
//   MatMulIntegerToFloat(A, B, A_scale, B_scale, A_zero_point?, B_zero_point?, Bias?) -> float32
//       (nnfuse's, ops/quant.h) MatMulInteger's int32 sums, then the graph it stands for in
//       float32: Cast, Mul by (A_scale * B_scale), Add Bias.
//   ConvInteger(x, w, x_zero_point?, w_zero_point?) -> int32
//       Conv (auto_pad, pads, strides, dilations, group) of (x - x_zero_point) and
//       (w - w_zero_point). Padding holds the zero point, so it adds nothing.
//   QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> y
//   QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?) -> y
//       The integer product (plus the int32 bias B, whose scale is x_scale * w_scale)
//       requantized: y = saturate(round(acc * scale_in_a * scale_in_b / y_scale) + y_zp).
//
// Scales are float32 and zero points have their data's type (int8 or uint8; int32 for
// DequantizeLinear). A scale and its zero point have the same shape; an absent zero point is 0.
// A single value is per-tensor quantization. Otherwise:
//   - QuantizeLinear / DequantizeLinear (opset >= 13): a 1-D tensor with one value per index
//     along attribute `axis` (default 1, negative counts from the back).
//   - MatMulInteger / QLinearMatMul: per row of A (and of the output y) and per column of B.
//     For A of shape [..., M, K] a 1-D parameter lists the M rows; an N-D one has shape
//     [..., M, 1] (broadcasting like the batch dims). For B of shape [..., K, N]: [N] or
//     [..., 1, N].
//   - ConvInteger / QLinearConv: w's scale and zero point may be 1-D with one value per
//     output channel; x's and y's are single values.
//
// "round" is round half to even and "saturate" clamps to the output type's range; a NaN
// quantizes to the zero point. x / y_scale of a float32 x (QuantizeLinear and all of
// DynamicQuantizeLinear) is float32 arithmetic, as in the spec's formulas and its tests: a
// quotient that float32 rounds onto a tie (0.5 / (5 / 255) is 25.5 in float32) rounds to even.
// An int32 x is divided in double. Otherwise the arithmetic is exact where it can be: integer
// products are summed in int64 (the int32 outputs of MatMulInteger and ConvInteger then wrap as
// int32 accumulation would) and requantization (acc * scales / y_scale) is done in double.
//
// MatMulInteger and QLinearMatMul are in quant_matmul.cc, ConvInteger and QLinearConv in
// quant_conv.cc; this file holds the others, every op's support check and the table.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/quant_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

using ref::check_input_dtypes;
using ref::check_same_shape;
using ref::check_zero_point_dtype;
using ref::dispatch_q8;
using ref::kQ8;
using ref::quantize_value;

const std::vector<DType> kFloat = {DType::kFloat32};

// ---- Support checks ----------------------------------------------------------------------

// "" or the first reason among (input index, allowed types) pairs.
std::string input_types_reason(const Node& node,
                               const std::vector<std::pair<size_t, std::vector<DType>>>& rules) {
  for (const auto& [i, allowed] : rules) {
    std::string why = ref::require_input_types(node, allowed, i, 1);
    if (!why.empty()) return why;
  }
  return "";
}

// Opset 21 adds blocked quantization; only block_size 0 (none) is handled.
std::string block_size_reason(const Node& node) {
  if (node.attr_int("block_size", 0) != 0)
    return "blocked quantization (block_size) is not supported";
  return "";
}

std::string support_quantize(const Node& node, int64_t /*opset*/) {
  std::string why =
      input_types_reason(node, {{0, {DType::kFloat32, DType::kInt32}}, {1, kFloat}, {2, kQ8}});
  if (why.empty()) why = block_size_reason(node);
  const int64_t out = node.attr_int("output_dtype", 0);
  if (why.empty() && out != 0 && out != static_cast<int64_t>(DType::kInt8) &&
      out != static_cast<int64_t>(DType::kUInt8)) {
    why = "output_dtype " + std::to_string(out) + " is not supported (only int8 and uint8)";
  }
  return why;
}

std::string support_dequantize(const Node& node, int64_t /*opset*/) {
  const std::vector<DType> ints = {DType::kInt8, DType::kUInt8, DType::kInt32};
  std::string why = input_types_reason(node, {{0, ints}, {1, kFloat}, {2, ints}});
  if (why.empty()) why = block_size_reason(node);
  const int64_t out = node.attr_int("output_dtype", 0);
  if (why.empty() && out != 0 && out != static_cast<int64_t>(DType::kFloat32)) {
    why = "output_dtype " + std::to_string(out) + " is not supported (only float32)";
  }
  return why;
}

std::string support_dynamic_quantize(const Node& node, int64_t /*opset*/) {
  return input_types_reason(node, {{0, kFloat}});
}

std::string support_matmul_integer(const Node& node, int64_t /*opset*/) {
  return input_types_reason(node, {{0, kQ8}, {1, kQ8}, {2, kQ8}, {3, kQ8}});
}

std::string support_matmul_integer_to_float(const Node& node, int64_t /*opset*/) {
  return input_types_reason(
      node, {{0, kQ8}, {1, kQ8}, {2, kFloat}, {3, kFloat}, {4, kQ8}, {5, kQ8}, {6, kFloat}});
}

std::string support_conv_integer(const Node& node, int64_t /*opset*/) {
  std::string why = input_types_reason(node, {{0, kQ8}, {1, kQ8}, {2, kQ8}, {3, kQ8}});
  return why.empty() ? ref::auto_pad_reason(node) : why;
}

std::string support_qlinear_matmul(const Node& node, int64_t /*opset*/) {
  return input_types_reason(
      node,
      {{0, kQ8}, {1, kFloat}, {2, kQ8}, {3, kQ8}, {4, kFloat}, {5, kQ8}, {6, kFloat}, {7, kQ8}});
}

std::string support_qlinear_conv(const Node& node, int64_t /*opset*/) {
  std::string why = input_types_reason(node, {{0, kQ8},
                                              {1, kFloat},
                                              {2, kQ8},
                                              {3, kQ8},
                                              {4, kFloat},
                                              {5, kQ8},
                                              {6, kFloat},
                                              {7, kQ8},
                                              {8, {DType::kInt32}}});
  return why.empty() ? ref::auto_pad_reason(node) : why;
}
// ---- QuantizeLinear, DequantizeLinear -----------------------------------------------------

// The scale and zero point of each element of x: one pair per tensor, or one per index along
// the axis.
struct AxisParams {
  std::vector<double> scale;
  std::vector<int64_t> zp;
  int64_t count = 1;  // values along the axis (1: per tensor)
  int64_t inner = 1;  // elements per step along the axis: the product of the dims after it

  size_t at(int64_t i) const { return static_cast<size_t>(count == 1 ? 0 : (i / inner) % count); }
};

AxisParams axis_params(const KernelContext& ctx, const Tensor& x, size_t scale_i, size_t zp_i) {
  const std::string what = ctx.node.describe();
  const Tensor& s = ctx.in(scale_i);
  check_same_shape(ctx, scale_i, zp_i);
  AxisParams p;
  if (s.numel() != 1) {
    NNFUSE_CHECK(s.rank() == 1, what, ": the scale must be one value or 1-D, got shape ",
                 dims_str(s.shape()));
    NNFUSE_CHECK(ctx.opset >= 13, what, ": a per-axis scale (shape ", dims_str(s.shape()),
                 ") needs opset 13, the model has opset ", ctx.opset);
    const int64_t axis = ref::normalize_axis(ctx.node.attr_int("axis", 1), x.rank(), ctx.node);
    NNFUSE_CHECK(s.dim(0) == x.dim(axis), what, ": the scale has ", s.dim(0),
                 " values but the input ", dims_str(x.shape()), " has ", x.dim(axis),
                 " along axis ", axis);
    p.count = s.dim(0);
    for (int64_t d = axis + 1; d < x.rank(); ++d) p.inner *= x.dim(d);
  }
  for (int64_t i = 0; i < p.count; ++i) {
    p.scale.push_back(s.double_at(i));
    p.zp.push_back(ctx.has_input(zp_i) ? ctx.in(zp_i).int_at(i) : 0);
  }
  return p;
}

void run_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  check_input_dtypes(ctx, 0, {DType::kFloat32, DType::kInt32});
  ref::check_input_dtype(ctx, 1, DType::kFloat32);
  const int64_t out_attr = ctx.node.attr_int("output_dtype", 0);
  DType out = out_attr != 0 ? static_cast<DType>(out_attr) : DType::kUInt8;
  if (ctx.has_input(2)) {
    NNFUSE_CHECK(out_attr == 0 || ctx.in(2).dtype() == out, ctx.node.describe(), ": output_dtype ",
                 dtype_name(out), " differs from the zero point's type ",
                 dtype_name(ctx.in(2).dtype()));
    out = ctx.in(2).dtype();
  }
  const AxisParams p = axis_params(ctx, x, 1, 2);
  Tensor y(out, x.shape());
  dispatch_q8(out, ctx.node.describe(), [&](auto tag) {
    using Q = decltype(tag);
    Q* py = y.data<Q>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const size_t k = p.at(i);
      // The scale came from float32, so narrowing it back is exact.
      const double q = x.dtype() == DType::kFloat32
                           ? x.data<float>()[i] / static_cast<float>(p.scale[k])
                           : x.double_at(i) / p.scale[k];
      py[i] = quantize_value<Q>(q, p.zp[k]);
    }
  });
  ctx.outputs[0] = std::move(y);
}

void run_dequantize(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  check_input_dtypes(ctx, 0, {DType::kInt8, DType::kUInt8, DType::kInt32});
  ref::check_input_dtype(ctx, 1, DType::kFloat32);
  check_zero_point_dtype(ctx, 2, x.dtype());
  const AxisParams p = axis_params(ctx, x, 1, 2);
  Tensor y(DType::kFloat32, x.shape());
  float* py = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t k = p.at(i);
    py[i] = static_cast<float>(static_cast<double>(x.int_at(i) - p.zp[k]) * p.scale[k]);
  }
  ctx.outputs[0] = std::move(y);
}

// ---- DynamicQuantizeLinear -----------------------------------------------------------------

void run_dynamic_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ref::check_input_dtype(ctx, 0, DType::kFloat32);
  const float* px = x.data<float>();
  // The range always includes 0, so that 0 is exactly representable; NaNs are left out.
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(px[i])) continue;
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  const uint8_t zp = scale == 0 ? 0 : quantize_value<uint8_t>((0 - lo) / scale, 0);
  Tensor y(DType::kUInt8, x.shape());
  uint8_t* py = y.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    py[i] = scale == 0 ? 0 : quantize_value<uint8_t>(px[i] / scale, zp);
  }
  ctx.outputs[0] = std::move(y);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = Tensor::scalar<float>(scale);
  if (ctx.outputs.size() > 2) ctx.outputs[2] = Tensor::scalar<uint8_t>(zp);
}
}  // namespace

void append_quant_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"QuantizeLinear", run_quantize, support_quantize});
  t.push_back({"DequantizeLinear", run_dequantize, support_dequantize});
  t.push_back({"DynamicQuantizeLinear", run_dynamic_quantize, support_dynamic_quantize});
  t.push_back({"MatMulInteger", run_matmul_integer, support_matmul_integer});
  t.push_back({"QLinearMatMul", run_qlinear_matmul, support_qlinear_matmul});
  t.push_back({"ConvInteger", run_conv_integer, support_conv_integer});
  t.push_back({"QLinearConv", run_qlinear_conv, support_qlinear_conv});
}

void append_quant_fused_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back(
      {"MatMulIntegerToFloat", run_matmul_integer_to_float, support_matmul_integer_to_float});
}

}  // namespace nnfuse
