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
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

const std::vector<DType> kQ8 = {DType::kInt8, DType::kUInt8};
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
void check_input_dtypes(const KernelContext& ctx, size_t i, const std::vector<DType>& allowed) {
  if (!ctx.has_input(i)) return;
  const DType got = ctx.inputs[i]->dtype();
  if (std::find(allowed.begin(), allowed.end(), got) == allowed.end()) {
    fail(ErrorKind::kUnsupported, ctx.node.describe(), ": input ", i, " of type ", dtype_name(got),
         " is not supported");
  }
}

// A zero point (input zp_i, when present) must have the type of the data it belongs to.
void check_zero_point_dtype(const KernelContext& ctx, size_t zp_i, DType data) {
  if (!ctx.has_input(zp_i)) return;
  NNFUSE_CHECK(ctx.in(zp_i).dtype() == data, ctx.node.describe(), ": zero point (input ", zp_i,
               ") has type ", dtype_name(ctx.in(zp_i).dtype()), " but its data has type ",
               dtype_name(data));
}

// A scale (input scale_i) and its zero point (input zp_i, when present) must have one shape;
// a single value is accepted in any shape ([] or [1]).
void check_same_shape(const KernelContext& ctx, size_t scale_i, size_t zp_i) {
  if (!ctx.has_input(zp_i)) return;
  const Tensor& s = ctx.in(scale_i);
  const Tensor& z = ctx.in(zp_i);
  NNFUSE_CHECK(s.shape() == z.shape() || (s.numel() == 1 && z.numel() == 1), ctx.node.describe(),
               ": scale (input ", scale_i, ") of shape ", dims_str(s.shape()),
               " and zero point (input ", zp_i, ") of shape ", dims_str(z.shape()), " differ");
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

// ---- MatMulInteger, QLinearMatMul ----------------------------------------------------------

// MatMul's shapes with numpy semantics: a 1-D A is a row [1, K] and a 1-D B a column [K, 1]
// (their unit dim dropped from the output); the batch dims broadcast.
struct MatMulShapes {
  Dims a, b;  // the operands' shapes, promoted to rank >= 2
  Dims a_batch, b_batch, batch;
  int64_t m = 0, k = 0, n = 0;
  Dims y;    // batch + [M, N]: the shape the kernel computes
  Dims out;  // the output's shape, without the promoted unit dims
};

MatMulShapes matmul_shapes(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  const Node& node = ctx.node;
  NNFUSE_CHECK(a.rank() >= 1 && b.rank() >= 1, node.describe(),
               ": operands must have rank >= 1, got shapes ", dims_str(a.shape()), " and ",
               dims_str(b.shape()));
  MatMulShapes s;
  s.a = a.shape();
  s.b = b.shape();
  const bool a_vec = s.a.size() == 1, b_vec = s.b.size() == 1;
  if (a_vec) s.a.insert(s.a.begin(), 1);
  if (b_vec) s.b.push_back(1);
  s.m = s.a[s.a.size() - 2];
  s.k = s.a.back();
  s.n = s.b.back();
  NNFUSE_CHECK(s.b[s.b.size() - 2] == s.k, node.describe(), ": inner dims differ: shapes ",
               dims_str(a.shape()), " and ", dims_str(b.shape()));
  s.a_batch.assign(s.a.begin(), s.a.end() - 2);
  s.b_batch.assign(s.b.begin(), s.b.end() - 2);
  s.batch = ref::broadcast_shapes(s.a_batch, s.b_batch, node);
  s.y = s.batch;
  s.y.push_back(s.m);
  s.y.push_back(s.n);
  s.out = s.batch;
  if (!a_vec) s.out.push_back(s.m);
  if (!b_vec) s.out.push_back(s.n);
  return s;
}

// A quantization parameter (input i: a scale or zero point) of a matmul operand or output of
// shape `op` ([..., R, C]), as one value per row (per_row: [..., R, 1]) or per column
// ([..., 1, C]) in C order. One value applies everywhere; a 1-D parameter lists the rows (or
// columns); an N-D one must broadcast to that shape. An absent input (a zero point) is 0.
std::vector<double> matmul_param(const KernelContext& ctx, size_t i, const Dims& op, bool per_row) {
  Dims target = op;
  target[per_row ? op.size() - 1 : op.size() - 2] = 1;
  std::vector<double> v(static_cast<size_t>(checked_numel(target)), 0.0);
  if (!ctx.has_input(i)) return v;
  const Tensor& p = ctx.in(i);
  Dims ps = p.shape();
  if (p.numel() == 1) {
    ps.clear();
  } else if (ps.size() == 1 && per_row) {
    ps = {ps[0], 1};
  }
  bool ok = ps.size() <= target.size();
  for (size_t d = 0; ok && d < ps.size(); ++d) {
    const int64_t have = ps[ps.size() - 1 - d], want = target[target.size() - 1 - d];
    ok = have == want || have == 1;
  }
  NNFUSE_CHECK(ok, ctx.node.describe(), ": input ", i, " of shape ", dims_str(p.shape()),
               " is neither one value nor one per ", per_row ? "row" : "column", " of shape ",
               dims_str(op));
  size_t j = 0;
  for (ref::BroadcastIter it(target, {ref::broadcast_strides(ps, target)}); !it.done(); it.next())
    v[j++] = p.double_at(it.offset(0));
  return v;
}

// The values of quantized tensor t minus its zero points (zp: one per row of t's promoted shape
// `shape` when per_row, else one per column), in int64.
std::vector<int64_t> shift(const Tensor& t, const Dims& shape, const std::vector<double>& zp,
                           bool per_row) {
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t e = 0; e < t.numel(); ++e) {
    const int64_t z = per_row ? e / cols : (e / (rows * cols)) * cols + e % cols;
    v[static_cast<size_t>(e)] = t.int_at(e) - static_cast<int64_t>(zp[static_cast<size_t>(z)]);
  }
  return v;
}

// The integer product of the shifted operands a ([..., M, K]) and b ([..., K, N]): calls
// f(acc, y_index, a_row, b_col) for every element of the [batch..., M, N] result, where a_row
// indexes A's rows ([..., M] flattened) and b_col B's columns ([..., N] flattened).
template <typename F>
void int_matmul(const MatMulShapes& s, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                F&& f) {
  for (ref::BroadcastIter it(s.batch, {ref::broadcast_strides(s.a_batch, s.batch),
                                       ref::broadcast_strides(s.b_batch, s.batch)});
       !it.done(); it.next()) {
    const int64_t ab = it.offset(0), bb = it.offset(1);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        int64_t acc = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          acc += a[static_cast<size_t>((ab * s.m + i) * s.k + p)] *
                 b[static_cast<size_t>((bb * s.k + p) * s.n + j)];
        }
        f(acc, (it.linear() * s.m + i) * s.n + j, ab * s.m + i, bb * s.n + j);
      }
    }
  }
}

void run_matmul_integer(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  check_input_dtypes(ctx, 0, kQ8);
  check_input_dtypes(ctx, 1, kQ8);
  check_zero_point_dtype(ctx, 2, a.dtype());
  check_zero_point_dtype(ctx, 3, b.dtype());
  const MatMulShapes s = matmul_shapes(ctx, a, b);
  const std::vector<int64_t> as = shift(a, s.a, matmul_param(ctx, 2, s.a, true), true);
  const std::vector<int64_t> bs = shift(b, s.b, matmul_param(ctx, 3, s.b, false), false);
  Tensor y(DType::kInt32, s.out);
  int32_t* py = y.data<int32_t>();
  int_matmul(s, as, bs, [&](int64_t acc, int64_t yi, int64_t, int64_t) {
    py[yi] = static_cast<int32_t>(acc);  // wraps modulo 2^32, as int32 accumulation does
  });
  ctx.outputs[0] = std::move(y);
}

void run_qlinear_matmul(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(3);
  const Tensor& y_zp = ctx.in(7);
  for (size_t i : {0, 2, 3, 5, 7}) check_input_dtypes(ctx, i, kQ8);
  for (size_t i : {1, 4, 6}) ref::check_input_dtype(ctx, i, DType::kFloat32);
  check_zero_point_dtype(ctx, 2, a.dtype());
  check_zero_point_dtype(ctx, 5, b.dtype());
  check_same_shape(ctx, 1, 2);
  check_same_shape(ctx, 4, 5);
  check_same_shape(ctx, 6, 7);
  const MatMulShapes s = matmul_shapes(ctx, a, b);
  const std::vector<double> a_scale = matmul_param(ctx, 1, s.a, true);
  const std::vector<double> b_scale = matmul_param(ctx, 4, s.b, false);
  const std::vector<double> y_scale = matmul_param(ctx, 6, s.y, true);
  const std::vector<double> y_zps = matmul_param(ctx, 7, s.y, true);
  const std::vector<int64_t> as = shift(a, s.a, matmul_param(ctx, 2, s.a, true), true);
  const std::vector<int64_t> bs = shift(b, s.b, matmul_param(ctx, 5, s.b, false), false);
  Tensor y(y_zp.dtype(), s.out);
  dispatch_q8(y_zp.dtype(), ctx.node.describe(), [&](auto tag) {
    using Q = decltype(tag);
    Q* py = y.data<Q>();
    int_matmul(s, as, bs, [&](int64_t acc, int64_t yi, int64_t a_row, int64_t b_col) {
      const size_t y_row = static_cast<size_t>(yi / s.n);
      const double real = static_cast<double>(acc) * a_scale[static_cast<size_t>(a_row)] *
                          b_scale[static_cast<size_t>(b_col)];
      py[yi] = quantize_value<Q>(real / y_scale[y_row], static_cast<int64_t>(y_zps[y_row]));
    });
  });
  ctx.outputs[0] = std::move(y);
}

// ---- ConvInteger, QLinearConv ----------------------------------------------------------------

struct ConvShapes {
  int64_t n = 0, c = 0, m = 0, group = 1;
  ref::WindowGeometry g;
  Dims out;  // [N, M, spatial out...]
};

// Checks x (input xi) against the weight (input wi) and the node's conv attributes.
ConvShapes conv_shapes(const KernelContext& ctx, size_t xi, size_t wi) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(xi);
  const Tensor& w = ctx.in(wi);
  NNFUSE_CHECK(x.rank() >= 3, node.describe(), ": input x must have rank >= 3 (N, C, spatial...),",
               " got shape ", dims_str(x.shape()));
  NNFUSE_CHECK(w.rank() == x.rank(), node.describe(), ": weight shape ", dims_str(w.shape()),
               " does not match the rank of input shape ", dims_str(x.shape()));
  ConvShapes s;
  s.group = node.attr_int("group", 1);
  NNFUSE_CHECK(s.group >= 1, node.describe(), ": group must be >= 1, got ", s.group);
  s.n = x.dim(0);
  s.c = x.dim(1);
  s.m = w.dim(0);
  NNFUSE_CHECK(w.dim(1) * s.group == s.c, node.describe(), ": input has ", s.c,
               " channels but the weight shape ", dims_str(w.shape()), " with group ", s.group,
               " expects ", w.dim(1) * s.group);
  NNFUSE_CHECK(s.m % s.group == 0, node.describe(), ": output channels ", s.m,
               " are not divisible by group ", s.group);
  const Dims spatial(x.shape().begin() + 2, x.shape().end());
  const Dims kernel(w.shape().begin() + 2, w.shape().end());
  if (node.has_attr("kernel_shape")) {
    NNFUSE_CHECK(node.attr_ints("kernel_shape") == kernel, node.describe(), ": kernel_shape ",
                 dims_str(node.attr_ints("kernel_shape")), " does not match the weight shape ",
                 dims_str(w.shape()));
  }
  s.g = ref::window_geometry(node, spatial, kernel, /*ceil_mode=*/false);
  s.out = {s.n, s.m};
  s.out.insert(s.out.end(), s.g.out.begin(), s.g.out.end());
  return s;
}

// A single-valued quantization parameter (input i); an absent one (a zero point) is 0.
double scalar_param(const KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return 0;
  const Tensor& p = ctx.in(i);
  NNFUSE_CHECK(p.numel() == 1, ctx.node.describe(), ": input ", i,
               " must be a single value (per-tensor quantization), got shape ",
               dims_str(p.shape()));
  return p.double_at(0);
}

// A per-output-channel quantization parameter (input i): one value or 1-D with m values, as m
// values. An absent one (a zero point) is 0.
std::vector<double> per_channel_param(const KernelContext& ctx, size_t i, int64_t m) {
  std::vector<double> v(static_cast<size_t>(m), 0.0);
  if (!ctx.has_input(i)) return v;
  const Tensor& p = ctx.in(i);
  if (p.numel() == 1) {
    std::fill(v.begin(), v.end(), p.double_at(0));
    return v;
  }
  NNFUSE_CHECK(p.rank() == 1 && p.dim(0) == m, ctx.node.describe(), ": input ", i, " of shape ",
               dims_str(p.shape()), " is neither one value nor one per output channel (", m, ")");
  for (int64_t j = 0; j < m; ++j) v[static_cast<size_t>(j)] = p.double_at(j);
  return v;
}

// The integer convolution of x - x_zp and w - w_zp[m], per element of s.out in C order. Window
// positions outside x (padding) contribute 0. The loops follow conv.cc: per output channel,
// over input channels and kernel taps (WindowPlan), the innermost along the last spatial dim.
std::vector<int64_t> int_conv(const ConvShapes& s, const Tensor& x, int64_t x_zp, const Tensor& w,
                              const std::vector<double>& w_zp) {
  const int64_t in_sz = checked_numel(s.g.in), out_sz = checked_numel(s.g.out);
  const int64_t k_sz = checked_numel(s.g.kernel);
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  std::vector<int64_t> xs(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xs[static_cast<size_t>(i)] = x.int_at(i) - x_zp;
  std::vector<int64_t> ws(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t m = i / (cg * k_sz);
    ws[static_cast<size_t>(i)] = w.int_at(i) - static_cast<int64_t>(w_zp[static_cast<size_t>(m)]);
  }
  const ref::WindowPlan plan = ref::plan_window(s.g.out, s.g.in, s.g);
  const int64_t st = plan.stride_last;
  std::vector<int64_t> y(static_cast<size_t>(checked_numel(s.out)), 0);
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t m = 0; m < s.m; ++m) {
      int64_t* acc = y.data() + (n * s.m + m) * out_sz;
      const int64_t c0 = (m / mg) * cg;
      for (int64_t cl = 0; cl < cg; ++cl) {
        const int64_t* xp = xs.data() + (n * s.c + c0 + cl) * in_sz;
        const int64_t* wp = ws.data() + (m * cg + cl) * k_sz;
        for (const ref::WindowPlan::Tap& tap : plan.taps) {
          const int64_t wv = wp[tap.k];
          for (size_t ri = tap.row_begin; ri < tap.row_end; ++ri) {
            int64_t* a = acc + plan.rows[ri].iter_off;
            const int64_t* xr = xp + plan.rows[ri].target_off;
            for (int64_t o = tap.lo; o < tap.hi; ++o) a[o] += wv * xr[o * st];
          }
        }
      }
    }
  }
  return y;
}

void run_conv_integer(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  for (size_t i : {0, 1, 2, 3}) check_input_dtypes(ctx, i, kQ8);
  check_zero_point_dtype(ctx, 2, x.dtype());
  check_zero_point_dtype(ctx, 3, w.dtype());
  const ConvShapes s = conv_shapes(ctx, 0, 1);
  const std::vector<int64_t> acc =
      int_conv(s, x, static_cast<int64_t>(scalar_param(ctx, 2)), w, per_channel_param(ctx, 3, s.m));
  Tensor y(DType::kInt32, s.out);
  int32_t* py = y.data<int32_t>();
  // Wraps modulo 2^32, as int32 accumulation does.
  for (size_t i = 0; i < acc.size(); ++i) py[i] = static_cast<int32_t>(acc[i]);
  ctx.outputs[0] = std::move(y);
}

void run_qlinear_conv(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(3);
  const Tensor& y_zp = ctx.in(7);
  for (size_t i : {0, 2, 3, 5, 7}) check_input_dtypes(ctx, i, kQ8);
  for (size_t i : {1, 4, 6}) ref::check_input_dtype(ctx, i, DType::kFloat32);
  ref::check_input_dtype(ctx, 8, DType::kInt32);
  check_zero_point_dtype(ctx, 2, x.dtype());
  check_zero_point_dtype(ctx, 5, w.dtype());
  check_same_shape(ctx, 4, 5);
  const ConvShapes s = conv_shapes(ctx, 0, 3);
  const double x_scale = scalar_param(ctx, 1), y_scale = scalar_param(ctx, 6);
  const std::vector<double> w_scale = per_channel_param(ctx, 4, s.m);
  std::vector<int64_t> bias(static_cast<size_t>(s.m), 0);
  if (ctx.has_input(8)) {
    const Tensor& b = ctx.in(8);
    NNFUSE_CHECK(b.rank() == 1 && b.dim(0) == s.m, node.describe(), ": bias shape ",
                 dims_str(b.shape()), " does not match ", s.m, " output channels");
    for (int64_t m = 0; m < s.m; ++m) bias[static_cast<size_t>(m)] = b.int_at(m);
  }
  const std::vector<int64_t> acc =
      int_conv(s, x, static_cast<int64_t>(scalar_param(ctx, 2)), w, per_channel_param(ctx, 5, s.m));
  const int64_t zp = static_cast<int64_t>(scalar_param(ctx, 7));
  const int64_t out_sz = checked_numel(s.g.out);
  Tensor y(y_zp.dtype(), s.out);
  dispatch_q8(y_zp.dtype(), node.describe(), [&](auto tag) {
    using Q = decltype(tag);
    Q* py = y.data<Q>();
    for (size_t i = 0; i < acc.size(); ++i) {
      const size_t m = static_cast<size_t>((static_cast<int64_t>(i) / out_sz) % s.m);
      const double real = static_cast<double>(acc[i] + bias[m]) * x_scale * w_scale[m];
      py[i] = quantize_value<Q>(real / y_scale, zp);
    }
  });
  ctx.outputs[0] = std::move(y);
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

}  // namespace nnfuse
