// Reference kernels for ops that sort or deduplicate: TopK and Unique.
//
// TopK(X, K) (K an attribute before opset 10): the k largest (or, with largest 0, smallest)
// elements along `axis` and their int64 indices, equal values in index order; `sorted` 0 may
// return them in any order, and this kernel returns them sorted either way.
//
// Unique(X): the distinct elements of X flattened, or with `axis` the distinct slices along
// it; sorted ascending (slices compared element by element) or, with sorted 0, in the order
// they first occur. Outputs: Y, the index of each one's first occurrence, for each element
// (slice) of X the index of its value in Y, and the count of each.
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

using ref::numeric_types;

// X viewed as [outer, len, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisView view_at(const Dims& shape, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis) v.outer *= shape[static_cast<size_t>(i)];
    if (i == axis) v.len = shape[static_cast<size_t>(i)];
    if (i > axis) v.inner *= shape[static_cast<size_t>(i)];
  }
  return v;
}

std::string topk_support(const Node& n, int64_t) {
  std::string why = ref::require_input_types(n, numeric_types(), 0, 1);
  return why.empty() ? ref::require_input_types(n, {DType::kInt64}, 1, 1) : why;
}

void run_topk(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::string what = ctx.node.describe();
  NNFUSE_CHECK(x.rank() >= 1, what, ": X must have rank 1 or more");
  const int64_t axis = ref::normalize_axis(ctx.node.attr_int("axis", -1), x.rank(), ctx.node);
  int64_t k = 0;
  if (ctx.opset < 10) {
    k = ctx.node.attr_int("k", -1);
  } else {
    NNFUSE_CHECK(ctx.in(1).numel() == 1, what, ": K must hold one value, got shape ",
                 dims_str(ctx.in(1).shape()));
    k = ctx.in(1).int_at(0);
  }
  const AxisView v = view_at(x.shape(), axis);
  NNFUSE_CHECK(k >= 0 && k <= v.len, what, ": K = ", k, " is outside [0, ", v.len,
               "] (the size of axis ", axis, ")");
  const bool largest = ctx.opset < 11 || ctx.node.attr_int("largest", 1) != 0;
  Dims out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = k;
  Tensor values(x.dtype(), out_shape), indices(DType::kInt64, out_shape);
  int64_t* pi = indices.data<int64_t>();
  ref::dispatch(x.dtype(), what, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = values.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(v.len));
    std::vector<T> row(static_cast<size_t>(v.len));
    std::vector<int64_t> heap;
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t in = 0; in < v.inner; ++in) {
        bool nan = false;
        for (int64_t j = 0; j < v.len; ++j) {
          const T e = px[(o * v.len + j) * v.inner + in];
          row[static_cast<size_t>(j)] = e;
          nan = nan || e != e;
        }
        auto at = [&](int64_t j) { return row[static_cast<size_t>(j)]; };
        // Without NaN, value then index is a total order, and its first k are the stable sort's.
        auto before = [&](int64_t a, int64_t b) {
          const T p = at(a), q = at(b);
          if (p != q) return largest ? p > q : p < q;
          return a < b;
        };
        if (nan) {
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return largest ? at(a) > at(b) : at(a) < at(b);
          });
        } else if (k > 0 && k * 16 <= v.len) {
          // k much smaller than the slice (a detector's top 1,000 of 800,000 scores): a heap of
          // the k best so far, the worst of them on top, so most elements cost one comparison.
          heap.clear();
          for (int64_t j = 0; j < v.len; ++j) {
            if (static_cast<int64_t>(heap.size()) < k) {
              heap.push_back(j);
              std::push_heap(heap.begin(), heap.end(), before);
            } else if (before(j, heap.front())) {
              std::pop_heap(heap.begin(), heap.end(), before);
              heap.back() = j;
              std::push_heap(heap.begin(), heap.end(), before);
            }
          }
          std::sort(heap.begin(), heap.end(), before);
          std::copy(heap.begin(), heap.end(), order.begin());
        } else {
          // Selected in O(len), then sorted in O(k log k) (a detector's per-class top 300 of
          // 3,000 anchors).
          std::iota(order.begin(), order.end(), 0);
          if (k < v.len) std::nth_element(order.begin(), order.begin() + k, order.end(), before);
          std::sort(order.begin(), order.begin() + k, before);
        }
        for (int64_t j = 0; j < k; ++j) {
          const int64_t dst = (o * k + j) * v.inner + in;
          pv[dst] = at(order[static_cast<size_t>(j)]);
          pi[dst] = order[static_cast<size_t>(j)];
        }
      }
    }
  });
  ctx.outputs[0] = values;
  if (ctx.outputs.size() > 1) ctx.outputs[1] = indices;
}

// Element-by-element order of equal-length slices (a loop of its own: GCC 12 warns wrongly on
// std::vector's operator< for byte elements at -O3).
struct SliceLess {
  template <typename T>
  bool operator()(const std::vector<T>& a, const std::vector<T>& b) const {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i] != b[i]) return a[i] < b[i];
    }
    return a.size() < b.size();
  }
};

std::string unique_support(const Node& n, int64_t) {
  return ref::require_input_types(n, numeric_types(), 0, 1);
}

void run_unique(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::string what = ctx.node.describe();
  const bool has_axis = ctx.node.has_attr("axis");
  const int64_t axis =
      has_axis ? ref::normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node) : 0;
  const bool sorted = ctx.node.attr_int("sorted", 1) != 0;
  // Slices along the axis (single elements without one).
  const AxisView v = has_axis ? view_at(x.shape(), axis) : AxisView{1, x.numel(), 1};
  Tensor y;
  std::vector<int64_t> first, inverse(static_cast<size_t>(v.len)), counts;
  ref::dispatch(x.dtype(), what, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    auto slice = [&](int64_t j) {
      std::vector<T> s;
      s.reserve(static_cast<size_t>(v.outer * v.inner));
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t in = 0; in < v.inner; ++in) s.push_back(px[(o * v.len + j) * v.inner + in]);
      }
      return s;
    };
    std::map<std::vector<T>, int64_t, SliceLess>
        seen;  // slice -> its index among the distinct ones
    std::vector<std::vector<T>> distinct;
    for (int64_t j = 0; j < v.len; ++j) {
      auto s = slice(j);
      auto [it, added] = seen.emplace(s, static_cast<int64_t>(distinct.size()));
      if (added) {
        distinct.push_back(std::move(s));
        first.push_back(j);
        counts.push_back(0);
      }
      inverse[static_cast<size_t>(j)] = it->second;
      ++counts[static_cast<size_t>(it->second)];
    }
    // Output order: ascending slices, or first occurrence.
    std::vector<int64_t> order(distinct.size()), rank(distinct.size());
    std::iota(order.begin(), order.end(), 0);
    if (sorted) {
      std::sort(order.begin(), order.end(),
                [&](int64_t a, int64_t b) { return SliceLess()(distinct[a], distinct[b]); });
    }
    for (size_t r = 0; r < order.size(); ++r) rank[static_cast<size_t>(order[r])] = r;
    const int64_t u = static_cast<int64_t>(distinct.size());
    Dims ys = has_axis ? x.shape() : Dims{u};
    if (has_axis) ys[static_cast<size_t>(axis)] = u;
    y = Tensor(x.dtype(), ys);
    T* py = y.data<T>();
    for (int64_t r = 0; r < u; ++r) {
      const std::vector<T>& s = distinct[static_cast<size_t>(order[static_cast<size_t>(r)])];
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t in = 0; in < v.inner; ++in) {
          py[(o * u + r) * v.inner + in] = s[static_cast<size_t>(o * v.inner + in)];
        }
      }
    }
    std::vector<int64_t> f(first), c(counts);
    for (size_t i = 0; i < order.size(); ++i) {
      first[i] = f[static_cast<size_t>(order[i])];
      counts[i] = c[static_cast<size_t>(order[i])];
    }
    for (int64_t& i : inverse) i = rank[static_cast<size_t>(i)];
  });
  auto vec = [](const std::vector<int64_t>& a) {
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(a.size())}, a);
  };
  ctx.outputs[0] = y;
  if (ctx.outputs.size() > 1) ctx.outputs[1] = vec(first);
  if (ctx.outputs.size() > 2) ctx.outputs[2] = vec(inverse);
  if (ctx.outputs.size() > 3) ctx.outputs[3] = vec(counts);
}

}  // namespace

void append_sort_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"TopK", run_topk, topk_support});
  t.push_back({"Unique", run_unique, unique_support});
}

}  // namespace nnfuse
