// ArgMax and ArgMin (float32, int32, int64; plain or channels-last): axis, keepdims and
// select_last_index, with the reference kernel's answer in every case: the first index of the
// best value (the last with select_last_index), where "best" is a strict comparison, so a NaN
// wins only at index 0 and ties go to the earlier index.
//
// The input is viewed as [outer, K, inner] around the axis (extent K). Rows (inner 1: the last
// axis, or the channel axis of a channels-last conv output, a segmentation head's class map) are
// scanned one by one; columns (inner > 1) keep the best value and its index for a block of inner
// positions while the K slices stream past. The threads split the outer rows or the column
// blocks. Other channels-last inputs read a plain copy.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/layout.h"

namespace nnfuse::cpu {
namespace {

// Inner positions per column block (values and indices stay in L1).
constexpr int64_t kBlock = 512;

template <bool kMax, typename T>
bool better(T v, T b) {
  return kMax ? v > b : v < b;
}

// The best index of each of `rows` rows of k contiguous elements.
template <bool kMax, typename T>
void arg_rows(const T* x, int64_t rows, int64_t k, bool last, int64_t* y) {
  parallel_tasks(rows, rows * k, [&](int64_t r) {
    const T* p = x + r * k;
    int64_t best = 0;
    T b = p[0];
    for (int64_t i = 1; i < k; ++i) {
      if (better<kMax>(p[i], b) || (last && p[i] == b)) {
        best = i;
        b = p[i];
      }
    }
    y[r] = best;
  });
}

// One block of n float32 columns, k slices `inner` apart: b and idx start as slice 0 and index
// 0. Branch-free, so it vectorizes: "better, or equal with select_last_index" is p >= b
// (p <= b), false with a NaN on either side like the strict comparisons.
NNFUSE_TARGET_CLONES void arg_col_block(const float* base, int64_t k, int64_t inner, int64_t n,
                                        bool max, bool last, float* b, int32_t* idx) {
  const int mode = (max ? 2 : 0) + (last ? 1 : 0);
  for (int64_t i = 1; i < k; ++i) {
    const float* p = base + i * inner;
    const int32_t ii = static_cast<int32_t>(i);
    for (int64_t j = 0; j < n; ++j) {
      const bool take = mode == 3   ? p[j] >= b[j]
                        : mode == 2 ? p[j] > b[j]
                        : mode == 1 ? p[j] <= b[j]
                                    : p[j] < b[j];
      b[j] = take ? p[j] : b[j];
      idx[j] = take ? ii : idx[j];
    }
  }
}

// The best index along k of each of the outer x inner columns of [outer, k, inner].
template <bool kMax, typename T>
void arg_cols(const T* x, int64_t outer, int64_t k, int64_t inner, bool last, int64_t* y) {
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_tasks(outer * blocks, outer * k * inner, [&](int64_t t) {
    const int64_t o = t / blocks, c0 = (t % blocks) * kBlock;
    const int64_t n = std::min(kBlock, inner - c0);
    const T* base = x + o * k * inner + c0;
    int64_t* out = y + o * inner + c0;
    T b[kBlock];
    std::memcpy(b, base, static_cast<size_t>(n) * sizeof(T));
    if constexpr (std::is_same_v<T, float>) {
      if (k <= std::numeric_limits<int32_t>::max()) {
        int32_t idx[kBlock] = {};
        arg_col_block(base, k, inner, n, kMax, last, b, idx);
        std::copy(idx, idx + n, out);
        return;
      }
    }
    std::fill(out, out + n, int64_t{0});
    for (int64_t i = 1; i < k; ++i) {
      const T* p = base + i * inner;
      for (int64_t j = 0; j < n; ++j) {
        if (better<kMax>(p[j], b[j]) || (last && p[j] == b[j])) {
          b[j] = p[j];
          out[j] = i;
        }
      }
    }
  });
}

template <typename T>
void arg(bool max, const T* x, int64_t outer, int64_t k, int64_t inner, bool last, int64_t* y) {
  if (inner == 1) {
    return max ? arg_rows<true>(x, outer, k, last, y) : arg_rows<false>(x, outer, k, last, y);
  }
  return max ? arg_cols<true>(x, outer, k, inner, last, y)
             : arg_cols<false>(x, outer, k, inner, last, y);
}

bool arg_dtype(DType t) { return t == DType::kFloat32 || t == DType::kInt32 || t == DType::kInt64; }

class ArgKernel : public Kernel {
 public:
  explicit ArgKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        max_(info.node.is(Op::kArgMax)),
        axis_(info.node.attr_int("axis", 0)),
        keepdims_(info.node.attr_int("keepdims", 1) != 0),
        last_(info.node.attr_int("select_last_index", 0) != 0) {}

  void run(KernelIO& io) override {
    const Tensor& input = io.in(0);
    NNFUSE_CHECK(arg_dtype(input.dtype()), who_, ": ", dtype_name(input.dtype()),
                 " input (float32, int32 or int64 expected)");
    const int64_t rank = input.rank();
    const int64_t axis = checked_axis(axis_, rank, who_);
    const int64_t k = input.dim(axis);
    NNFUSE_CHECK(k > 0, who_, ": axis ", axis, " has size 0");
    Dims out;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != axis) {
        out.push_back(input.dim(i));
      } else if (keepdims_) {
        out.push_back(1);
      }
    }
    // The channel axis of a channels-last input is its innermost physical dim, and the other
    // dims keep their order there: its rows are read where they lie.
    Tensor x;
    int64_t outer = 1, inner = 1;
    if (input.layout() == Layout::kNHWC && channels_last_rank(static_cast<size_t>(rank)) &&
        axis == 1) {
      x = input;
      outer = input.numel() / k;
    } else {
      x = input.layout() == Layout::kPlain ? input : to_layout(input, Layout::kPlain);
      for (int64_t i = 0; i < axis; ++i) outer *= input.dim(i);
      for (int64_t i = axis + 1; i < rank; ++i) inner *= input.dim(i);
    }
    Tensor& y = io.output(0, DType::kInt64, out);
    if (y.numel() == 0) return;
    int64_t* py = y.data<int64_t>();
    switch (x.dtype()) {
      case DType::kFloat32:
        return arg(max_, x.data<float>(), outer, k, inner, last_, py);
      case DType::kInt32:
        return arg(max_, x.data<int32_t>(), outer, k, inner, last_, py);
      default:
        return arg(max_, x.data<int64_t>(), outer, k, inner, last_, py);
    }
  }

 private:
  std::string who_;
  bool max_;
  int64_t axis_;
  bool keepdims_, last_;
};

std::string arg_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 1 || !single_output(n) || !info.has_input(0)) {
    return "not the standard one-input form";
  }
  if (!arg_dtype(info.input_dtype(0))) {
    return std::string(dtype_name(info.input_dtype(0))) + " input (float32, int32 or int64 only)";
  }
  const Layout l = input_layout(info, 0);
  if (l != Layout::kPlain && l != Layout::kNHWC) return "input in a blocked layout";
  return "";
}

std::unique_ptr<Kernel> arg_create(const NodeInfo& info) {
  return std::make_unique<ArgKernel>(info);
}

}  // namespace

void append_arg_kernels(FactoryTable& t) {
  KernelFactory f{"cpu.arg", accepts_unless_declined<arg_declines>, nullptr, arg_create};
  f.declines = arg_declines;
  t.emplace_back("ArgMax", f);
  t.emplace_back("ArgMin", f);
}

}  // namespace nnfuse::cpu
