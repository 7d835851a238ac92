// Reference kernels for MatMulInteger and QLinearMatMul (quant.cc: the contract, the support
// checks and the table): numpy matmul of the operands less their zero points, summed in int64;
// QLinearMatMul requantizes each sum in double.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/ref/fused.h"
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

}  // namespace

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

void run_matmul_integer_to_float(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  check_input_dtypes(ctx, 0, kQ8);
  check_input_dtypes(ctx, 1, kQ8);
  for (size_t i : {2, 3, 6}) {
    if (ctx.has_input(i)) ref::check_input_dtype(ctx, i, DType::kFloat32);
  }
  check_zero_point_dtype(ctx, 4, a.dtype());
  check_zero_point_dtype(ctx, 5, b.dtype());
  const MatMulShapes s = matmul_shapes(ctx, a, b);
  NNFUSE_CHECK(ctx.in(2).numel() == 1, ctx.node.describe(), ": A_scale of shape ",
               dims_str(ctx.in(2).shape()), " is not one value");
  NNFUSE_CHECK(!ctx.has_input(4) || ctx.in(4).numel() == 1, ctx.node.describe(),
               ": A_zero_point of shape ", dims_str(ctx.in(4).shape()), " is not one value");
  const float a_scale = ctx.in(2).data<float>()[0];
  const std::vector<double> b_scale = matmul_param(ctx, 3, s.b, false);
  const std::vector<int64_t> as = shift(a, s.a, matmul_param(ctx, 4, s.a, true), true);
  const std::vector<int64_t> bs = shift(b, s.b, matmul_param(ctx, 5, s.b, false), false);
  const float* bias = nullptr;
  if (ctx.has_input(6)) {
    NNFUSE_CHECK(ctx.in(6).numel() == s.n, ctx.node.describe(), ": Bias of shape ",
                 dims_str(ctx.in(6).shape()), " is not one value per column (", s.n, ")");
    bias = ctx.in(6).data<float>();
  }
  const ref::Activation act = ref::read_activation(ctx.node);
  Tensor y(DType::kFloat32, s.out);
  float* py = y.data<float>();
  int_matmul(s, as, bs, [&](int64_t acc, int64_t yi, int64_t, int64_t b_col) {
    // The graph's steps in float32: Cast, Mul(A_scale, B_scale), Mul, Add; then the activation.
    const float scale = a_scale * static_cast<float>(b_scale[static_cast<size_t>(b_col)]);
    const float v = static_cast<float>(static_cast<int32_t>(acc)) * scale;
    const float biased = bias ? v + bias[b_col % s.n] : v;
    py[yi] = act.kind == ref::ActivationKind::kNone
                 ? biased
                 : static_cast<float>(ref::apply_activation(act, biased));
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace nnfuse
