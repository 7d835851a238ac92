// Reference MatMul (numpy semantics: 1-D operands promoted then squeezed, batch dims
// broadcast) and Gemm (alpha * A' * B' + beta * C, C broadcast to (M, N)). Products are
// summed in a double accumulator row (i-k-j order, the inner loop contiguous).
#include <algorithm>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {
namespace {

std::string support_matmul(const Node& node, int64_t /*opset*/) {
  return float_inputs_reason(node);
}

// acc (m x n, row-major) = a (m x k) * b (k x n); all row-major, acc zeroed by the caller.
template <typename TA, typename TB>
void matmul_acc(const TA* a, const TB* b, int64_t m, int64_t k, int64_t n, double* acc) {
  for (int64_t i = 0; i < m; ++i) {
    double* row = acc + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const double av = static_cast<double>(a[i * k + p]);
      const TB* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<double>(brow[j]);
    }
  }
}

void run_matmul(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  check_input_dtype(ctx, 1, a.dtype());
  NNFUSE_CHECK(a.rank() >= 1 && b.rank() >= 1, node.describe(),
               ": operands must have rank >= 1, got shapes ", dims_str(a.shape()), " and ",
               dims_str(b.shape()));
  Dims as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  NNFUSE_CHECK(bs[bs.size() - 2] == k, node.describe(), ": inner dims differ: shapes ",
               dims_str(a.shape()), " and ", dims_str(b.shape()));
  const Dims a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const Dims batch = broadcast_shapes(a_batch, b_batch, node);
  Dims out_shape = batch;
  if (!a_vec) out_shape.push_back(m);
  if (!b_vec) out_shape.push_back(n);
  Tensor y(a.dtype(), out_shape);
  std::vector<double> acc(static_cast<size_t>(checked_numel(Dims{m, n})));
  dispatch_float(a.dtype(), node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* ad = a.data<T>();
    const T* bd = b.data<T>();
    T* yd = y.data<T>();
    for (BroadcastIter it(batch,
                          {broadcast_strides(a_batch, batch), broadcast_strides(b_batch, batch)});
         !it.done(); it.next()) {
      std::fill(acc.begin(), acc.end(), 0.0);
      matmul_acc(ad + it.offset(0) * m * k, bd + it.offset(1) * k * n, m, k, n, acc.data());
      T* yp = yd + it.linear() * m * n;
      for (int64_t i = 0; i < m * n; ++i) yp[i] = static_cast<T>(acc[i]);
    }
  });
  ctx.outputs[0] = std::move(y);
}

void run_gemm(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  check_input_dtype(ctx, 1, a.dtype());
  check_input_dtype(ctx, 2, a.dtype());
  NNFUSE_CHECK(a.rank() == 2 && b.rank() == 2, node.describe(),
               ": A and B must be 2-D, got shapes ", dims_str(a.shape()), " and ",
               dims_str(b.shape()));
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const double alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  NNFUSE_CHECK(k == kb, node.describe(), ": inner dims differ: A ", dims_str(a.shape()),
               (ta ? " (transposed)" : ""), ", B ", dims_str(b.shape()),
               (tb ? " (transposed)" : ""));
  const Dims out_shape = {m, n};
  Dims c_strides;
  if (ctx.has_input(2)) {
    const Dims& cs = ctx.in(2).shape();
    NNFUSE_CHECK(cs.size() <= 2 && broadcast_shapes(cs, out_shape, node) == out_shape,
                 node.describe(), ": C of shape ", dims_str(cs), " does not broadcast to ",
                 dims_str(out_shape));
    c_strides = broadcast_strides(cs, out_shape);
  }
  Tensor y(a.dtype(), out_shape);
  dispatch_float(a.dtype(), node.describe(), [&](auto tag) {
    using T = decltype(tag);
    // Row-major double copies of A' (m x k) and B' (k x n), then one plain product.
    std::vector<double> am(static_cast<size_t>(m * k)), bm(static_cast<size_t>(k * n));
    const T* ad = a.data<T>();
    const T* bd = b.data<T>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) am[i * k + p] = ta ? ad[p * m + i] : ad[i * k + p];
    }
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) bm[p * n + j] = tb ? bd[j * k + p] : bd[p * n + j];
    }
    std::vector<double> acc(static_cast<size_t>(m * n), 0.0);
    matmul_acc(am.data(), bm.data(), m, k, n, acc.data());
    const T* cd = ctx.has_input(2) ? ctx.in(2).data<T>() : nullptr;
    T* yd = y.data<T>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double v = alpha * acc[i * n + j];
        if (cd) v += beta * static_cast<double>(cd[i * c_strides[0] + j * c_strides[1]]);
        yd[i * n + j] = static_cast<T>(v);
      }
    }
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void append_matmul_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"MatMul", run_matmul, support_matmul});
  t.push_back({"Gemm", run_gemm, support_matmul});
}

}  // namespace nnfuse::ref
