// MatMul of two operands whose shapes are known only at run time: attention over a KV cache
// that grows a position per decoding step (Q K^T and the weighted sum of V inside a Loop), the
// products after a data-dependent Reshape. The prepacked kernels need static shapes and the row
// kernels a constant B; this one takes any float32 operands of rank 1 or more as they come,
// broadcasts their batch dims as numpy does, and runs each matrix of the batch through oneDNN's
// sgemm (batches in parallel when there are several, each sgemm on one thread then).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse::onednn {
namespace {

class RuntimeMatMulKernel : public Kernel {
 public:
  explicit RuntimeMatMulKernel(const NodeInfo& info) : what_(info.node.describe()) {}

  void run(KernelIO& io) override {
    const Tensor& a = io.in(0);
    const Tensor& b = io.in(1);
    NNFUSE_CHECK(a.dtype() == DType::kFloat32 && b.dtype() == DType::kFloat32 &&
                     a.layout() == Layout::kPlain && b.layout() == Layout::kPlain,
                 what_, ": operands are not plain float32");
    NNFUSE_CHECK(a.rank() >= 1 && b.rank() >= 1, what_, ": a scalar operand");
    // 1-D operands as matrices: A [k] is [1, k], B [k] is [k, 1]; the dim is dropped after.
    Dims as = a.shape(), bs = b.shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    NNFUSE_CHECK(bs[bs.size() - 2] == k, what_, ": A ", dims_str(a.shape()), " and B ",
                 dims_str(b.shape()), " do not multiply");
    const Dims a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    const size_t rank = std::max(a_batch.size(), b_batch.size());
    Dims batch(rank, 1);
    auto dim_at = [](const Dims& d, size_t i, size_t r) {
      return i + d.size() < r ? int64_t{1} : d[i + d.size() - r];
    };
    for (size_t i = 0; i < rank; ++i) {
      const int64_t x = dim_at(a_batch, i, rank), y = dim_at(b_batch, i, rank);
      NNFUSE_CHECK(x == y || x == 1 || y == 1, what_, ": batch dims of A ", dims_str(a.shape()),
                   " and B ", dims_str(b.shape()), " do not broadcast");
      batch[i] = x == 1 ? y : x;
    }
    Dims ys = batch;
    if (a.rank() > 1) ys.push_back(m);
    if (b.rank() > 1) ys.push_back(n);
    Tensor& y = io.output(0, DType::kFloat32, ys);
    int64_t count = 1;
    for (int64_t d : batch) count *= d;
    if (count == 0 || m == 0 || n == 0) return;
    float* py = y.data<float>();
    if (k == 0) {
      std::fill(py, py + y.numel(), 0.0f);
      return;
    }
    // Offset of batch `t`'s matrix in an operand of batch dims `d` (broadcast dims repeat).
    auto offset = [&](const Dims& d, int64_t t, int64_t matrix) {
      int64_t off = 0, stride = 1;
      for (size_t i = rank; i-- > 0;) {
        const int64_t extent = dim_at(d, i, rank);
        const int64_t idx = t % batch[i];
        t /= batch[i];
        if (extent != 1) off += idx * stride;
        stride *= extent;
      }
      return off * matrix;
    };
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    auto one = [&](int64_t t) {
      const dnnl_status_t st =
          dnnl_sgemm('N', 'N', m, n, k, 1.0f, pa + offset(a_batch, t, m * k), k,
                     pb + offset(b_batch, t, k * n), n, 0.0f, py + t * m * n, n);
      NNFUSE_CHECK(st == dnnl_success, what_, ": sgemm failed (status ", static_cast<int>(st), ")");
    };
    if (count == 1) {
      one(0);
      return;
    }
    cpu::parallel_range(count, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) one(t);
    });
  }

 private:
  std::string what_;
};

std::string runtime_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (n.num_inputs() != 2 || n.num_outputs() != 1) return "not a MatMul of two inputs";
  for (size_t i = 0; i < 2; ++i) {
    if (!info.has_input(i) || info.input_dtype(i) != DType::kFloat32) {
      return input_label(info, i) + " is not float32";
    }
    if (input_layout(info, i) != Layout::kPlain) return input_label(info, i) + " is not plain";
  }
  if (info.input_shape(0) && info.input_shape(1)) {
    return "both operands have static shapes (the prepacked kernels' case)";
  }
  if (info.constant(1)) return "B is a constant (the row kernels' case)";
  return "";
}

std::unique_ptr<Kernel> runtime_create(const NodeInfo& info) {
  return std::make_unique<RuntimeMatMulKernel>(info);
}

}  // namespace

KernelFactory matmul_runtime_factory() {
  return {"onednn.matmul_runtime",
          accepts_unless_declined<runtime_declines>,
          nullptr,
          runtime_create,
          nullptr,
          runtime_declines};
}

}  // namespace nnfuse::onednn
