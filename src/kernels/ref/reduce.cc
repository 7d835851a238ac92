// Reference kernels for reductions and ops that work along axes: Reduce*, ArgMax/ArgMin,
// Softmax/LogSoftmax/Hardmax and CumSum.
//
// Every kernel walks the input as "rows": for each index of the kept axes (in C order), the
// elements along the reduced axes. Float types are accumulated in double; integer sums and
// products wrap (two's complement) instead of overflowing.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

const std::vector<DType>& reduce_float_types() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat64};
  return v;
}
using ref::numeric_types;
const std::vector<DType>& int_index_types() {
  static const std::vector<DType> v = {DType::kInt32, DType::kInt64};
  return v;
}

// Data input 0 must be numeric; inputs from 1 on (axes) int32/int64.
std::string supports_numeric_with_axes(const Node& n, int64_t) {
  std::string why = ref::require_input_types(n, numeric_types(), 0, 1);
  return why.empty() ? ref::require_input_types(n, int_index_types(), 1) : why;
}
std::string reduce_supports_float(const Node& n, int64_t) {
  return ref::require_input_types(n, reduce_float_types());
}

// Calls f(offsets) once per row: for every index of the axes with !in_row[axis], in C
// order, `offsets` holds the element offsets along the axes with in_row[axis], in C order of
// those axes. A row may be empty (a reduced dim of size 0).
template <typename F>
void for_each_row(const Dims& shape, const std::vector<bool>& in_row, F f) {
  Dims strides = contiguous_strides(shape);
  Dims pshape, pstrides;
  int64_t rows = 1, row_len = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (in_row[i]) continue;
    pshape.push_back(shape[i]);
    pstrides.push_back(strides[i]);
    rows *= shape[i];
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!in_row[i]) continue;
    pshape.push_back(shape[i]);
    pstrides.push_back(strides[i]);
    row_len *= shape[i];
  }
  std::vector<int64_t> offsets(static_cast<size_t>(row_len));
  ref::BroadcastIter it(pshape, {pstrides});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < row_len; ++k, it.next()) offsets[static_cast<size_t>(k)] = it.offset(0);
    f(offsets);
  }
}

// Shape after reducing the axes in `reduced`.
Dims reduced_shape(const Dims& shape, const std::vector<bool>& reduced, bool keepdims) {
  Dims out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(shape[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

// A mask with only `axis` set.
std::vector<bool> single_axis(int64_t axis, int64_t rank) {
  std::vector<bool> m(static_cast<size_t>(rank), false);
  m[static_cast<size_t>(axis)] = true;
  return m;
}

// ---------------------------------------------------------------------------------------
// Reduce*.

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceOp {
  const char* op;
  Red red;
};
constexpr ReduceOp kReduceOps[] = {
    {"ReduceSum", Red::kSum},
    {"ReduceMean", Red::kMean},
    {"ReduceMax", Red::kMax},
    {"ReduceMin", Red::kMin},
    {"ReduceProd", Red::kProd},
    {"ReduceL1", Red::kL1},
    {"ReduceL2", Red::kL2},
    {"ReduceLogSum", Red::kLogSum},
    {"ReduceLogSumExp", Red::kLogSumExp},
    {"ReduceSumSquare", Red::kSumSquare},
};

Red find_red(const std::string& op) {
  for (const ReduceOp& r : kReduceOps) {
    if (op == r.op) return r.red;
  }
  fail(ErrorKind::kInternal, "no reduce reference op ", op);
}

// The reduction of the values v, in double. An empty set gives the op's identity (Mean: NaN).
double reduce_double(Red op, const std::vector<double>& v) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double acc = 0;
  switch (op) {
    case Red::kSum:
    case Red::kMean:
    case Red::kLogSum:
      for (double x : v) acc += x;
      if (op == Red::kMean) return acc / static_cast<double>(v.size());
      return op == Red::kLogSum ? std::log(acc) : acc;
    case Red::kMax:
    case Red::kMin:
    case Red::kLogSumExp: {
      bool is_min = op == Red::kMin;
      acc = is_min ? kInf : -kInf;
      for (double x : v) {
        if (std::isnan(x)) return x;  // NaN propagates, as numpy
        if (is_min ? x < acc : x > acc) acc = x;
      }
      if (op != Red::kLogSumExp || std::isinf(acc)) return acc;
      double s = 0;  // max + log(sum(exp(x - max))), stable
      for (double x : v) s += std::exp(x - acc);
      return acc + std::log(s);
    }
    case Red::kProd:
      acc = 1;
      for (double x : v) acc *= x;
      return acc;
    case Red::kL1:
      for (double x : v) acc += std::fabs(x);
      return acc;
    case Red::kL2:
    case Red::kSumSquare:
      for (double x : v) acc += x * x;
      return op == Red::kL2 ? std::sqrt(acc) : acc;
  }
  return acc;
}

// Integer reductions: sums and products exact (wrapping), Max/Min exact, Mean truncating;
// L2, LogSum and LogSumExp go through double.
template <typename T>
T reduce_int(Red op, const std::vector<T>& v) {
  uint64_t acc = 0;
  switch (op) {
    case Red::kSum:
      for (T x : v) acc += static_cast<uint64_t>(x);
      return static_cast<T>(acc);
    case Red::kSumSquare:
      for (T x : v) acc += static_cast<uint64_t>(x) * static_cast<uint64_t>(x);
      return static_cast<T>(acc);
    case Red::kL1:
      for (T x : v) {
        bool neg = false;
        if constexpr (std::is_signed_v<T>) neg = x < 0;
        acc += neg ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
      }
      return static_cast<T>(acc);
    case Red::kProd:
      acc = 1;
      for (T x : v) acc *= static_cast<uint64_t>(x);
      return static_cast<T>(acc);
    case Red::kMean: {
      if (v.empty()) return 0;
      for (T x : v) acc += static_cast<uint64_t>(x);
      auto n = static_cast<int64_t>(v.size());
      if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(acc) / n);
      return static_cast<T>(acc / static_cast<uint64_t>(n));
    }
    case Red::kMax: {
      T m = std::numeric_limits<T>::lowest();
      for (T x : v) m = x > m ? x : m;
      return m;
    }
    case Red::kMin: {
      T m = std::numeric_limits<T>::max();
      for (T x : v) m = x < m ? x : m;
      return m;
    }
    default: {
      std::vector<double> d(v.begin(), v.end());
      return saturate_cast<T>(reduce_double(op, d));
    }
  }
}

// Reduced-axes mask from the axes input (ReduceSum from opset 13, all from 18) or the
// attribute. Empty axes reduce everything, unless noop_with_empty_axes (then none).
std::vector<bool> reduce_mask(const KernelContext& ctx, int64_t rank) {
  std::vector<int64_t> axes =
      ctx.has_input(1) ? ctx.in(1).to_int64_vector() : ctx.node.attr_ints("axes", {});
  if (axes.empty()) {
    bool noop = ctx.node.attr_int("noop_with_empty_axes", 0) != 0;
    return std::vector<bool>(static_cast<size_t>(rank), !noop);
  }
  std::vector<bool> m(static_cast<size_t>(rank), false);
  for (int64_t a : axes) m[static_cast<size_t>(ref::normalize_axis(a, rank, ctx.node))] = true;
  return m;
}

void run_reduce(KernelContext& ctx) {
  Red op = find_red(ctx.node.op_type());
  const Tensor& x = ctx.in(0);
  std::vector<bool> mask = reduce_mask(ctx, x.rank());
  bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  Tensor y(x.dtype(), reduced_shape(x.shape(), mask, keepdims));
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    using V = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    std::vector<V> v;  // the values of one row
    int64_t o = 0;
    for_each_row(x.shape(), mask, [&](const std::vector<int64_t>& offs) {
      v.clear();
      for (int64_t off : offs) v.push_back(static_cast<V>(px[off]));
      if constexpr (std::is_floating_point_v<T>) {
        py[o++] = static_cast<T>(reduce_double(op, v));
      } else {
        py[o++] = reduce_int(op, v);
      }
    });
  });
  ctx.outputs[0] = y;
}

// ---------------------------------------------------------------------------------------
// ArgMax / ArgMin.

template <bool kMax>
void run_arg(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = ref::normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node);
  bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  bool last = ctx.node.attr_int("select_last_index", 0) != 0;
  NNFUSE_CHECK(x.dim(axis) > 0, ctx.node.describe(), ": axis ", axis, " has size 0");
  std::vector<bool> mask = single_axis(axis, x.rank());
  Tensor y(DType::kInt64, reduced_shape(x.shape(), mask, keepdims));
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    int64_t* py = y.data<int64_t>();
    int64_t o = 0;
    for_each_row(x.shape(), mask, [&](const std::vector<int64_t>& offs) {
      size_t best = 0;
      for (size_t k = 1; k < offs.size(); ++k) {
        T v = px[offs[k]], b = px[offs[best]];
        bool better = kMax ? v > b : v < b;
        if (better || (last && v == b)) best = k;
      }
      py[o++] = static_cast<int64_t>(best);
    });
  });
  ctx.outputs[0] = y;
}

// ---------------------------------------------------------------------------------------
// Softmax, LogSoftmax, Hardmax.
//
// Opset >= 13 normalizes along `axis` (default -1). Before 13 the input is coerced to 2-D
// at `axis` (default 1) and each row normalizes over all the dims from `axis` on.

enum class Norm { kSoftmax, kLogSoftmax, kHardmax };

template <Norm kNorm>
void run_norm(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t rank = x.rank();
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  if (ctx.opset >= 13) {
    mask = single_axis(ref::normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node), rank);
  } else {
    int64_t axis = ctx.node.attr_int("axis", 1);
    // axis == rank is a valid coercion point too: every row then has one element.
    int64_t a = axis == rank ? rank : ref::normalize_axis(axis, rank, ctx.node);
    for (int64_t i = a; i < rank; ++i) mask[static_cast<size_t>(i)] = true;
  }
  Tensor y(x.dtype(), x.shape());
  ref::dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for_each_row(x.shape(), mask, [&](const std::vector<int64_t>& offs) {
      if (offs.empty()) return;
      double m = -std::numeric_limits<double>::infinity();
      size_t arg = 0;
      for (size_t k = 0; k < offs.size(); ++k) {
        double v = static_cast<double>(px[offs[k]]);
        if (v > m) {
          m = v;
          arg = k;
        }
      }
      if constexpr (kNorm == Norm::kHardmax) {
        for (size_t k = 0; k < offs.size(); ++k) py[offs[k]] = k == arg ? T{1} : T{0};
      } else {
        double s = 0;
        for (int64_t off : offs) s += std::exp(static_cast<double>(px[off]) - m);
        for (int64_t off : offs) {
          double d = static_cast<double>(px[off]) - m;
          py[off] = static_cast<T>(kNorm == Norm::kSoftmax ? std::exp(d) / s : d - std::log(s));
        }
      }
    });
  });
  ctx.outputs[0] = y;
}

// ---------------------------------------------------------------------------------------
// CumSum(x, axis): attributes exclusive and reverse.

void run_cumsum(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& axis_t = ctx.in(1);
  NNFUSE_CHECK(axis_t.numel() == 1, ctx.node.describe(), ": axis must be a scalar, got shape ",
               dims_str(axis_t.shape()));
  int64_t axis = ref::normalize_axis(axis_t.int_at(0), x.rank(), ctx.node);
  bool exclusive = ctx.node.attr_int("exclusive", 0) != 0;
  bool reverse = ctx.node.attr_int("reverse", 0) != 0;
  Tensor y(x.dtype(), x.shape());
  ref::dispatch(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for_each_row(x.shape(), single_axis(axis, x.rank()), [&](std::vector<int64_t> offs) {
      if (reverse) std::reverse(offs.begin(), offs.end());
      Acc acc = 0;
      for (int64_t off : offs) {
        if (exclusive) py[off] = static_cast<T>(acc);
        acc += static_cast<Acc>(px[off]);
        if (!exclusive) py[off] = static_cast<T>(acc);
      }
    });
  });
  ctx.outputs[0] = y;
}

}  // namespace

void append_reduce_kernels(std::vector<RefKernelEntry>& t) {
  for (const ReduceOp& r : kReduceOps) t.push_back({r.op, run_reduce, supports_numeric_with_axes});
  const RefKernelEntry entries[] = {
      {"ArgMax", run_arg<true>, supports_numeric_with_axes},
      {"ArgMin", run_arg<false>, supports_numeric_with_axes},
      {"Softmax", run_norm<Norm::kSoftmax>, reduce_supports_float},
      {"LogSoftmax", run_norm<Norm::kLogSoftmax>, reduce_supports_float},
      {"Hardmax", run_norm<Norm::kHardmax>, reduce_supports_float},
      {"CumSum", run_cumsum, supports_numeric_with_axes},
  };
  t.insert(t.end(), std::begin(entries), std::end(entries));
}

}  // namespace nnfuse
