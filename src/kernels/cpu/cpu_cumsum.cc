// CumSum (float32, int32, int64; plain): running sums along one axis, exclusive and reverse as
// the attributes say. The data is viewed as [outer, n, inner]; each task takes an outer index and
// a block of inner columns and walks the axis once, keeping one accumulator per column (double
// for float32, wrapping 64-bit integers for the integer types: the reference kernel's, so the
// results are its own bit for bit), so the rows it reads and writes are contiguous.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_internal.h"

namespace nnfuse::cpu {
namespace {

constexpr int64_t kColumns = 256;  // inner columns per task

class CumSumKernel : public Kernel {
 public:
  explicit CumSumKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        exclusive_(info.node.attr_int("exclusive", 0) != 0),
        reverse_(info.node.attr_int("reverse", 0) != 0) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& axis_t = io.in(1);
    NNFUSE_CHECK(axis_t.numel() == 1, who_, ": axis must be a scalar, got shape ",
                 dims_str(axis_t.shape()));
    const int64_t rank = x.rank();
    NNFUSE_CHECK(rank >= 1, who_, ": the input is a scalar; CumSum needs a rank of 1 or more");
    const int64_t axis = checked_axis(axis_t.int_at(0), rank, who_);
    Tensor& y = io.output(0, x.dtype(), x.shape());
    if (x.numel() == 0) return;
    const Dims& s = x.shape();
    const size_t a = static_cast<size_t>(axis);
    const int64_t outer = numel_of(s, 0, a), n = s[a], inner = numel_of(s, a + 1, s.size());
    switch (x.dtype()) {
      case DType::kFloat32:
        return sums<float, double>(x, y, outer, n, inner);
      case DType::kInt32:
        return sums<int32_t, uint64_t>(x, y, outer, n, inner);
      default:
        return sums<int64_t, uint64_t>(x, y, outer, n, inner);
    }
  }

 private:
  template <typename T, typename Acc>
  void sums(const Tensor& x, Tensor& y, int64_t outer, int64_t n, int64_t inner) const {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t blocks = (inner + kColumns - 1) / kColumns;
    parallel_tasks(outer * blocks, outer * n * inner, [&](int64_t task) {
      const int64_t o = task / blocks, j0 = task % blocks * kColumns;
      const int64_t w = std::min(inner, j0 + kColumns) - j0;
      Acc acc[kColumns] = {};
      for (int64_t step = 0; step < n; ++step) {
        const int64_t i = reverse_ ? n - 1 - step : step;
        const T* xr = px + (o * n + i) * inner + j0;
        T* yr = py + (o * n + i) * inner + j0;
        for (int64_t j = 0; j < w; ++j) {
          if (exclusive_) yr[j] = static_cast<T>(acc[j]);
          acc[j] += static_cast<Acc>(xr[j]);
          if (!exclusive_) yr[j] = static_cast<T>(acc[j]);
        }
      }
    });
  }

  std::string who_;
  bool exclusive_, reverse_;
};

std::string cumsum_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 2 || !single_output(n)) return "not a plain node";
  if (!info.has_input(1)) return "no axis";
  const DType t = info.input_dtype(0);
  if (t != DType::kFloat32 && t != DType::kInt32 && t != DType::kInt64) {
    return "elements of " + dtype_name(t);
  }
  if (!info.all_inputs_in(Layout::kPlain)) return "an input that is not plain";
  return "";
}

std::unique_ptr<Kernel> make_cumsum(const NodeInfo& info) {
  return std::make_unique<CumSumKernel>(info);
}

}  // namespace

void append_cumsum_kernels(FactoryTable& t) {
  t.emplace_back("CumSum", KernelFactory{"cpu.cumsum", accepts_unless_declined<cumsum_declines>,
                                         nullptr, make_cumsum, nullptr, cumsum_declines});
}

}  // namespace nnfuse::cpu
