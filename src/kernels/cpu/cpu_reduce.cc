// ReduceSum, ReduceMean, ReduceMax, ReduceMin, and ReduceL1, ReduceL2, ReduceSumSquare,
// ReduceLogSum, ReduceLogSumExp, ReduceProd (float32, plain): axes from the attribute or the
// axes input, keepdims, noop_with_empty_axes. Sums accumulate in double, like the reference; the
// second group computes each output exactly as the reference does (each element widened to
// double, in the reference's order, LogSumExp as max + log(sum(exp(x - max)))), so it gives the
// reference's numbers.
// ReduceSum, ReduceMax and ReduceMin also take int32 and int64 (shape arithmetic: a detector's
// ReduceMin over the two sides of its image) as the reference computes them.
//
// A channels-last input (a convolution's output) is reduced where it lies, as the tensor of its
// physical dims [N, spatial..., C], when the dims it keeps come in the same order there as in the
// plain output: a mean over all spatial dims (a video network's head) is then a column sum with
// no reorder. Other channels-last reductions read a plain copy.
//
// The input's dims are merged into alternating kept/reduced groups. The common shapes run
// directly: [R] (everything), [K, R] (rows: LayerNorm's mean), [R, K] and [K1, R, K2]
// (columns, vectorized across K2). Anything else first moves the reduced axes last with a
// strided copy, then reduces rows.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <type_traits>

#include "kernels/cpu/cpu_copy.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/layout.h"

namespace nnfuse::cpu {
namespace {

enum class Red { kSum, kMean, kMax, kMin, kL1, kL2, kSumSquare, kLogSum, kLogSumExp, kProd };

const std::map<std::string, Red>& reduce_ops() {
  static const std::map<std::string, Red> kOps = {{"ReduceSum", Red::kSum},
                                                  {"ReduceMean", Red::kMean},
                                                  {"ReduceMax", Red::kMax},
                                                  {"ReduceMin", Red::kMin},
                                                  {"ReduceL1", Red::kL1},
                                                  {"ReduceL2", Red::kL2},
                                                  {"ReduceSumSquare", Red::kSumSquare},
                                                  {"ReduceLogSum", Red::kLogSum},
                                                  {"ReduceLogSumExp", Red::kLogSumExp},
                                                  {"ReduceProd", Red::kProd}};
  return kOps;
}

bool red_of(const std::string& op, Red* r) {
  auto it = reduce_ops().find(op);
  if (it == reduce_ops().end()) return false;
  *r = it->second;
  return true;
}

// The second group: each output computed from its elements in double, as the reference does.
bool mapped(Red r) { return r >= Red::kL1; }

// The reduction of n values (stride apart) in the reference's double arithmetic.
float mapped_reduce(Red r, const float* x, int64_t n, int64_t stride) {
  double acc = 0;
  switch (r) {
    case Red::kL1:
      for (int64_t i = 0; i < n; ++i) acc += std::fabs(static_cast<double>(x[i * stride]));
      return static_cast<float>(acc);
    case Red::kL2:
    case Red::kSumSquare:
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[i * stride];
        acc += v * v;
      }
      return static_cast<float>(r == Red::kL2 ? std::sqrt(acc) : acc);
    case Red::kLogSum:
      for (int64_t i = 0; i < n; ++i) acc += x[i * stride];
      return static_cast<float>(std::log(acc));
    case Red::kProd:
      acc = 1;
      for (int64_t i = 0; i < n; ++i) acc *= x[i * stride];
      return static_cast<float>(acc);
    case Red::kLogSumExp: {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[i * stride];
        if (std::isnan(v)) return static_cast<float>(v);  // NaN propagates, as the reference
        if (v > m) m = v;
      }
      if (std::isinf(m)) return static_cast<float>(m);
      for (int64_t i = 0; i < n; ++i) acc += std::exp(x[i * stride] - m);
      return static_cast<float>(m + std::log(acc));
    }
    default:
      return 0.0f;
  }
}

// Columns per task in the column path (the double accumulators stay in L1).
constexpr int64_t kCols = 1024;

class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const NodeInfo& info, Red red)
      : who_(info.node.describe()),
        red_(red),
        keepdims_(info.node.attr_int("keepdims", 1) != 0),
        noop_(info.node.attr_int("noop_with_empty_axes", 0) != 0),
        attr_axes_(info.node.attr_ints("axes")) {}

  void run(KernelIO& io) override {
    const Tensor& input = io.in(0);
    const bool ints = input.dtype() == DType::kInt64 || input.dtype() == DType::kInt32;
    if (!ints || red_ == Red::kMean || mapped(red_)) require_float(input, who_);
    const size_t rank = input.shape().size();
    const std::vector<int64_t> axes = io.has_input(1) ? io.in(1).to_int64_vector() : attr_axes_;
    std::vector<bool> mask(rank, axes.empty() && !noop_);
    for (int64_t a : axes) mask[static_cast<size_t>(checked_axis(a, input.rank(), who_))] = true;
    Dims out;
    for (size_t i = 0; i < rank; ++i) {
      if (!mask[i]) {
        out.push_back(input.shape()[i]);
      } else if (keepdims_) {
        out.push_back(1);
      }
    }
    // x: the input as a plain tensor of its physical dims (a view of a channels-last input
    // whose kept dims keep their order, else a plain copy); mask in that order.
    Tensor x;
    if (input.layout() == Layout::kPlain) {
      x = input;
    } else if (const Dims order = storage_dims(iota_dims(rank), input.layout());
               input.layout() == Layout::kNHWC && channels_last_rank(rank) &&
               keeps_order(input.shape(), mask, order)) {
      std::vector<bool> pmask;
      for (int64_t i : order) pmask.push_back(mask[static_cast<size_t>(i)]);
      x = input.relaid(storage_dims(input.shape(), input.layout()), Layout::kPlain);
      mask = pmask;
    } else {
      x = to_layout(input, Layout::kPlain);
    }
    if (x.dtype() == DType::kInt64) return run_int<int64_t>(x, mask, out, io);
    if (x.dtype() == DType::kInt32) return run_int<int32_t>(x, mask, out, io);
    Tensor& y = io.output(0, DType::kFloat32, out);
    float* py = y.data<float>();
    if (y.numel() == 0) return;
    if (x.numel() == 0) {  // reducing empty dims: the identity (Mean: 0 / 0)
      const float id = red_ == Red::kMax || red_ == Red::kLogSum || red_ == Red::kLogSumExp ? -kInf
                       : red_ == Red::kMin                                                  ? kInf
                       : red_ == Red::kMean                                                 ? kNaN
                       : red_ == Red::kProd                                                 ? 1.0f
                                                                                            : 0.0f;
      std::fill(py, py + y.numel(), id);
      return;
    }
    // Merge into groups (extent, reduced?), skipping extent-1 dims.
    Dims ext;
    std::vector<bool> red;
    for (size_t i = 0; i < rank; ++i) {
      if (x.shape()[i] == 1) continue;
      if (!ext.empty() && red.back() == mask[i]) {
        ext.back() *= x.shape()[i];
      } else {
        ext.push_back(x.shape()[i]);
        red.push_back(mask[i]);
      }
    }
    const float* px = x.data<float>();
    const size_t g = ext.size();
    if (g == 0 || (g == 1 && !red[0])) {  // nothing reduced with extent > 1
      // The second group still maps each value (L2 of one value is |x|, LogSum log(x)).
      if (mapped(red_)) return reduce_rows(px, x.numel(), 1, py);
      if (py != px) std::memcpy(py, px, x.nbytes());
      return;
    }
    if (g == 1) return reduce_rows(px, 1, ext[0], py);
    if (g == 2 && !red[0]) return reduce_rows(px, ext[0], ext[1], py);
    if (g == 2) return reduce_cols(px, 1, ext[0], ext[1], py);
    if (g == 3 && !red[0]) return reduce_cols(px, ext[0], ext[1], ext[2], py);
    // General: move the reduced dims last, then reduce rows.
    std::vector<float> tmp(static_cast<size_t>(x.numel()));
    const int64_t rlen = reduced_last(x, mask, tmp.data());
    reduce_rows(tmp.data(), x.numel() / rlen, rlen, py);
  }

 private:
  // [0, 1, .., rank - 1]: storage_dims of it lists the logical dims in their stored order.
  static Dims iota_dims(size_t rank) {
    Dims d(rank);
    for (size_t i = 0; i < rank; ++i) d[i] = static_cast<int64_t>(i);
    return d;
  }

  // True when the kept dims of extent > 1 come in increasing logical order in `order`, so the
  // reduction of the stored tensor is already in the plain output's order.
  static bool keeps_order(const Dims& shape, const std::vector<bool>& mask, const Dims& order) {
    int64_t last = -1;
    for (int64_t i : order) {
      const size_t u = static_cast<size_t>(i);
      if (mask[u] || shape[u] == 1) continue;
      if (i < last) return false;
      last = i;
    }
    return true;
  }

  // Copies x into `to` (x.numel() elements of its type) with the reduced dims moved last, so
  // each output element reduces one contiguous row; returns the row length.
  static int64_t reduced_last(const Tensor& x, const std::vector<bool>& mask, void* to) {
    const Dims strides = contiguous_strides(x.shape());
    Dims pd, ps;
    int64_t rlen = 1;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < x.shape().size(); ++i) {
        if (mask[i] != (pass == 1)) continue;
        pd.push_back(x.shape()[i]);
        ps.push_back(strides[i]);
        if (pass == 1) rlen *= x.shape()[i];
      }
    }
    if (x.numel() > 0) {
      strided_copy(static_cast<const std::byte*>(x.raw()), pd, ps, static_cast<std::byte*>(to),
                   dtype_size(x.dtype()));
    }
    return rlen;
  }

  // Integer Sum (wrapping), Max and Min, as the reference kernel computes them (an empty
  // reduction gives 0, the lowest or the highest value): the reduced dims moved last, then one
  // row per output element. Shape and index arithmetic: small tensors.
  template <typename T>
  void run_int(const Tensor& x, const std::vector<bool>& mask, const Dims& out, KernelIO& io) {
    Tensor& y = io.output(0, x.dtype(), out);
    T* py = y.data<T>();
    std::vector<T> tmp(static_cast<size_t>(x.numel()));
    const int64_t rlen = reduced_last(x, mask, tmp.data());
    using U = std::make_unsigned_t<T>;
    for (int64_t r = 0; r < y.numel(); ++r) {
      const T* row = tmp.data() + r * rlen;
      if (red_ == Red::kSum) {
        U acc = 0;
        for (int64_t j = 0; j < rlen; ++j) acc += static_cast<U>(row[j]);
        py[r] = static_cast<T>(acc);
      } else if (red_ == Red::kMax) {
        T m = std::numeric_limits<T>::lowest();
        for (int64_t j = 0; j < rlen; ++j) m = row[j] > m ? row[j] : m;
        py[r] = m;
      } else {
        T m = std::numeric_limits<T>::max();
        for (int64_t j = 0; j < rlen; ++j) m = row[j] < m ? row[j] : m;
        py[r] = m;
      }
    }
  }

  float finish_sum(double s, int64_t n) const {
    return static_cast<float>(red_ == Red::kMean ? s / static_cast<double>(n) : s);
  }

  // y[k] = reduce(x[k * n, (k + 1) * n)) for k < rows.
  void reduce_rows(const float* x, int64_t rows, int64_t n, float* y) const {
    const int64_t threads = omp_get_max_threads();
    if (mapped(red_)) {  // each row whole, in the reference's order
      parallel_tasks(rows, rows * n,
                     [&](int64_t r) { y[r] = mapped_reduce(red_, x + r * n, n, 1); });
      return;
    }
    if (rows < threads && n >= 4 * kParallelGrain) {
      // Few long rows: each row split across threads, partials combined.
      for (int64_t r = 0; r < rows; ++r) y[r] = reduce_long_row(x + r * n, n, threads);
      return;
    }
    parallel_tasks(rows, rows * n, [&](int64_t r) {
      const float* xr = x + r * n;
      switch (red_) {
        case Red::kMax:
          y[r] = row_max(xr, n);
          break;
        case Red::kMin:
          y[r] = row_min(xr, n);
          break;
        default:
          y[r] = finish_sum(row_sum(xr, n), n);
      }
    });
  }

  float reduce_long_row(const float* x, int64_t n, int64_t parts) const {
    std::vector<double> sums(static_cast<size_t>(parts), 0.0);
    std::vector<float> ext(static_cast<size_t>(parts), red_ == Red::kMin ? kInf : -kInf);
    parallel_tasks(parts, n, [&](int64_t p) {
      const int64_t lo = n * p / parts, hi = n * (p + 1) / parts;
      const size_t i = static_cast<size_t>(p);
      if (red_ == Red::kMax) {
        ext[i] = row_max(x + lo, hi - lo);
      } else if (red_ == Red::kMin) {
        ext[i] = row_min(x + lo, hi - lo);
      } else {
        sums[i] = row_sum(x + lo, hi - lo);
      }
    });
    if (red_ == Red::kMax) return row_max(ext.data(), parts);
    if (red_ == Red::kMin) return row_min(ext.data(), parts);
    double s = 0;
    for (double v : sums) s += v;
    return finish_sum(s, n);
  }

  // y[o, j] = reduce over r of x[o, r, j], for x of shape [outer, len, inner].
  void reduce_cols(const float* x, int64_t outer, int64_t len, int64_t inner, float* y) const {
    const int64_t chunks = (inner + kCols - 1) / kCols;
    parallel_tasks(outer * chunks, outer * len * inner, [&](int64_t t) {
      const int64_t o = t / chunks, j0 = t % chunks * kCols, n = std::min(kCols, inner - j0);
      const float* xs = x + o * len * inner + j0;
      float* ys = y + o * inner + j0;
      if (mapped(red_)) {
        for (int64_t j = 0; j < n; ++j) ys[j] = mapped_reduce(red_, xs + j, len, inner);
        return;
      }
      if (red_ == Red::kMax || red_ == Red::kMin) {
        std::fill(ys, ys + n, red_ == Red::kMax ? -kInf : kInf);
        (red_ == Red::kMax ? col_max : col_min)(xs, len, n, inner, ys);
        return;
      }
      double acc[kCols];
      std::fill(acc, acc + n, 0.0);
      col_sum(xs, len, n, inner, acc);
      for (int64_t j = 0; j < n; ++j) ys[j] = finish_sum(acc[j], len);
    });
  }

  std::string who_;
  Red red_;
  bool keepdims_, noop_;
  std::vector<int64_t> attr_axes_;
};

bool reduce_accepts(const NodeInfo& info) {
  const Node& n = info.node;
  Red r;
  if (!red_of(n.op_type(), &r) || !n.domain().empty() || n.num_inputs() < 1 || n.num_inputs() > 2 ||
      !single_output(n) || !info.has_input(0) ||
      (input_layout(info, 0) != Layout::kPlain && input_layout(info, 0) != Layout::kNHWC) ||
      (info.has_input(1) && input_layout(info, 1) != Layout::kPlain)) {
    return false;
  }
  // float32; int32 and int64 for Sum, Max and Min.
  const DType t = info.input_dtype(0);
  if (t != DType::kFloat32 &&
      ((t != DType::kInt64 && t != DType::kInt32) || r == Red::kMean || mapped(r))) {
    return false;
  }
  if (info.has_input(1) && info.input_dtype(1) != DType::kInt64 &&
      info.input_dtype(1) != DType::kInt32) {
    return false;
  }
  try {
    ReduceKernel probe(info, r);
  } catch (const Error&) {
    return false;
  }
  return true;
}

std::unique_ptr<Kernel> reduce_create(const NodeInfo& info) {
  Red r = Red::kSum;
  red_of(info.node.op_type(), &r);
  return std::make_unique<ReduceKernel>(info, r);
}

}  // namespace

void append_reduce_kernels(FactoryTable& t) {
  const KernelFactory f{"cpu.reduce", reduce_accepts, nullptr, reduce_create, nullptr};
  for (const auto& [op, red] : reduce_ops()) t.emplace_back(op, f);
}

}  // namespace nnfuse::cpu
