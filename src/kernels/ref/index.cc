// Reference kernels for index-driven data movement: Gather, GatherElements, GatherND,
// ScatterND, ScatterElements, Compress, ReverseSequence, OneHot, EyeLike, NonZero.
// Every index is range-checked before use; bad indices throw a runtime error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/ref/shape_internal.h"

namespace nnfuse::ref {

namespace {

// Index `v` into a dim of size `d`, negatives counting from the back; throws when out of range.
int64_t checked_index(int64_t v, int64_t d, const Node& node) {
  int64_t r = v < 0 ? v + d : v;
  NNFUSE_CHECK(r >= 0 && r < d, node.describe(), ": index ", v, " is out of range for a dim of ",
               d);
  return r;
}

std::string data_and_indices(const Node& node, int64_t) {
  std::string r = require_fixed_size(node, 0);
  return r.empty() ? require_int_input(node, 1) : r;
}

void run_gather(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  size_t axis =
      static_cast<size_t>(normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node));
  int64_t d = x.shape()[axis];
  std::vector<int64_t> ids = ind.to_int64_vector();
  for (int64_t& v : ids) v = checked_index(v, d, ctx.node);
  Dims out(x.shape().begin(), x.shape().begin() + static_cast<int64_t>(axis));
  out.insert(out.end(), ind.shape().begin(), ind.shape().end());
  out.insert(out.end(), x.shape().begin() + static_cast<int64_t>(axis) + 1, x.shape().end());
  Tensor y(x.dtype(), out);
  int64_t outer = dims_product(x.shape(), 0, axis);
  int64_t inner = dims_product(x.shape(), axis + 1, x.shape().size());
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t v : ids) {
      copy_elems(y, pos, x, (o * d + v) * inner, inner);
      pos += inner;
    }
  }
  ctx.outputs[0] = y;
}

// For GatherElements/ScatterElements: indices of data's rank, no larger than data off the axis.
// Returns data's strides with the axis stride zeroed (the index supplies that part).
Dims elements_strides(const Tensor& data, const Tensor& ind, int64_t axis, const Node& node) {
  NNFUSE_CHECK(ind.rank() == data.rank(), node.describe(), ": indices have rank ", ind.rank(),
               ", data has ", data.rank());
  for (int64_t i = 0; i < data.rank(); ++i) {
    NNFUSE_CHECK(i == axis || ind.dim(i) <= data.dim(i), node.describe(), ": indices shape ",
                 dims_str(ind.shape()), " exceeds data shape ", dims_str(data.shape()));
  }
  Dims s = contiguous_strides(data.shape());
  s[static_cast<size_t>(axis)] = 0;
  return s;
}

// For each element of `ind` (GatherElements' and ScatterElements' indices, of data's rank) in C
// order: f(i, offset), i its linear index and offset that of the data element it addresses (its
// own coordinates with the one along `axis` replaced by the index, checked). `strides` are
// elements_strides'. A row of the last dim at a time, the indices read as int64 once.
template <typename F>
void for_each_addressed(const Tensor& data, const Tensor& ind, int64_t axis, const Dims& strides,
                        const Node& node, F&& f) {
  const int64_t r = ind.rank(), total = ind.numel();
  if (total == 0) return;
  std::vector<int64_t> owned;
  const int64_t* ids = nullptr;
  if (ind.dtype() == DType::kInt64) {
    ids = ind.data<int64_t>();
  } else {
    owned = ind.to_int64_vector();
    ids = owned.data();
  }
  const int64_t d = data.dim(axis);
  const int64_t axis_stride = contiguous_strides(data.shape())[static_cast<size_t>(axis)];
  const int64_t inner = ind.dim(r - 1), inner_stride = strides[static_cast<size_t>(r - 1)];
  Dims idx(static_cast<size_t>(r), 0);
  int64_t base = 0;
  for (int64_t lin = 0; lin < total; lin += inner) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t v = checked_index(ids[lin + j], d, node);
      f(lin + j, base + j * inner_stride + v * axis_stride);
    }
    for (int64_t k = r - 2; k >= 0; --k) {
      const size_t sk = static_cast<size_t>(k);
      base += strides[sk];
      if (++idx[sk] < ind.dim(k)) break;
      base -= strides[sk] * ind.dim(k);
      idx[sk] = 0;
    }
  }
}

// Calls f(U{}) with U an unsigned integer type of the element size of `t` (1, 2, 4 or 8
// bytes); false for other sizes.
template <typename F>
bool by_element_size(const Tensor& t, F&& f) {
  switch (dtype_size(t.dtype())) {
    case 1:
      f(uint8_t{});
      return true;
    case 2:
      f(uint16_t{});
      return true;
    case 4:
      f(uint32_t{});
      return true;
    case 8:
      f(uint64_t{});
      return true;
    default:
      return false;
  }
}

void run_gather_elements(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node);
  Dims strides = elements_strides(x, ind, axis, ctx.node);
  Tensor y(x.dtype(), ind.shape());
  const bool done = ind.rank() > 0 && by_element_size(x, [&](auto z) {
                      using U = decltype(z);
                      const U* px = static_cast<const U*>(x.raw());
                      U* py = static_cast<U*>(y.raw());
                      for_each_addressed(x, ind, axis, strides, ctx.node,
                                         [&](int64_t i, int64_t off) { py[i] = px[off]; });
                    });
  int64_t d = x.dim(axis), axis_stride = contiguous_strides(x.shape())[static_cast<size_t>(axis)];
  for (BroadcastIter it(ind.shape(), {strides}); !done && !it.done(); it.next()) {
    int64_t v = checked_index(ind.int_at(it.linear()), d, ctx.node);
    copy_elems(y, it.linear(), x, it.offset(0) + v * axis_stride);
  }
  ctx.outputs[0] = y;
}

// Offsets into `data` of the slices that ND-indices address: data has rank r, indices
// [..., k]; the first `batch` dims of both match. Returns one offset per index tuple, and
// the slice length.
std::vector<int64_t> nd_offsets(const Tensor& data, const Tensor& ind, int64_t batch,
                                const Node& node, int64_t* slice) {
  int64_t r = data.rank(), q = ind.rank();
  NNFUSE_CHECK(q >= 1 && r >= 1 && batch >= 0 && batch < std::min(q, r), node.describe(),
               ": bad ranks or batch_dims (data rank ", r, ", indices rank ", q, ")");
  int64_t k = ind.dim(q - 1);
  NNFUSE_CHECK(k >= 0 && k <= r - batch, node.describe(), ": index tuples of length ", k,
               " for data of rank ", r);
  for (int64_t i = 0; i < batch; ++i) {
    NNFUSE_CHECK(ind.dim(i) == data.dim(i), node.describe(), ": batch dim ", i, " differs");
  }
  Dims strides = contiguous_strides(data.shape());
  size_t bk = static_cast<size_t>(batch + k);
  *slice = dims_product(data.shape(), bk, data.shape().size());
  int64_t batches = dims_product(ind.shape(), 0, static_cast<size_t>(batch));
  int64_t tuples = k > 0 ? ind.numel() / k : dims_product(ind.shape(), 0, ind.shape().size() - 1);
  int64_t per_batch = batches > 0 ? tuples / batches : 0;
  int64_t batch_stride = batch > 0 ? strides[static_cast<size_t>(batch - 1)] : 0;
  std::vector<int64_t> offs(static_cast<size_t>(std::max<int64_t>(tuples, 0)));
  // The indices read in their own type (a detector gathers hundreds of thousands of scores).
  auto fill = [&](const auto* ids) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = (per_batch > 0 ? t / per_batch : 0) * batch_stride;
      for (int64_t j = 0; j < k; ++j) {
        const size_t a = static_cast<size_t>(batch + j);
        const int64_t v = static_cast<int64_t>(ids[t * k + j]), d = data.shape()[a];
        const int64_t r = v < 0 ? v + d : v;
        if (r < 0 || r >= d) checked_index(v, d, node);  // throws, naming the node
        off += r * strides[a];
      }
      offs[static_cast<size_t>(t)] = off;
    }
  };
  if (ind.dtype() == DType::kInt64) {
    fill(ind.data<int64_t>());
  } else if (ind.dtype() == DType::kInt32) {
    fill(ind.data<int32_t>());
  } else {
    const std::vector<int64_t> ids = ind.to_int64_vector();
    fill(ids.data());
  }
  return offs;
}

void run_gather_nd(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  int64_t batch = ctx.node.attr_int("batch_dims", 0), slice = 0;
  std::vector<int64_t> offs = nd_offsets(x, ind, batch, ctx.node, &slice);
  Dims out(ind.shape().begin(), ind.shape().end() - 1);
  out.insert(out.end(), x.shape().begin() + batch + ind.dim(ind.rank() - 1), x.shape().end());
  Tensor y = Tensor::uninitialized(x.dtype(), out);
  // Slices of a few bytes (a detector's per-anchor score or box) copied as one word each,
  // not through memcpy.
  const size_t bytes = static_cast<size_t>(slice) * dtype_size(x.dtype());
  auto gather = [&]<typename W>(W) {
    const W* from = static_cast<const W*>(x.raw());
    W* to = static_cast<W*>(y.raw());
    const int64_t words = static_cast<int64_t>(bytes / sizeof(W));
    const int64_t per = static_cast<int64_t>(dtype_size(x.dtype()) / sizeof(W));
    for (size_t t = 0; t < offs.size(); ++t) {
      const W* f = from + offs[t] * per;
      W* d = to + static_cast<int64_t>(t) * words;
      for (int64_t w = 0; w < words; ++w) d[w] = f[w];
    }
  };
  const size_t es = dtype_size(x.dtype());
  if (bytes != 0 && bytes <= 32 && es % 4 == 0 && reinterpret_cast<uintptr_t>(x.raw()) % 4 == 0 &&
      reinterpret_cast<uintptr_t>(y.raw()) % 4 == 0) {
    gather(uint32_t{});
  } else {
    for (size_t t = 0; t < offs.size(); ++t) {
      copy_elems(y, static_cast<int64_t>(t) * slice, x, offs[t], slice);
    }
  }
  ctx.outputs[0] = y;
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction parse_reduction(const Node& node) {
  std::string s = node.attr_string("reduction", "none");
  if (s == "add") return Reduction::kAdd;
  if (s == "mul") return Reduction::kMul;
  if (s == "max") return Reduction::kMax;
  if (s == "min") return Reduction::kMin;
  NNFUSE_CHECK(s == "none", node.describe(), ": reduction '", s, "' is not supported");
  return Reduction::kNone;
}

template <typename T>
T reduce(Reduction r, T a, T b) {
  if (r == Reduction::kMax) return std::max(a, b);
  if (r == Reduction::kMin) return std::min(a, b);
  if constexpr (std::is_integral_v<T>) {  // wrap around like the hardware, without UB
    uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    return static_cast<T>(r == Reduction::kAdd ? ua + ub : ua * ub);
  } else {
    return r == Reduction::kAdd ? a + b : a * b;
  }
}

// y[di + i] = reduce(y[di + i], u[si + i]) for i < n.
void scatter(Tensor& y, int64_t di, const Tensor& u, int64_t si, int64_t n, Reduction r,
             const Node& node) {
  if (r == Reduction::kNone) return copy_elems(y, di, u, si, n);
  dispatch(y.dtype(), node.describe(), [&](auto z) {
    using T = decltype(z);
    T* d = y.data<T>() + di;
    const T* s = u.data<T>() + si;
    for (int64_t i = 0; i < n; ++i) d[i] = reduce<T>(r, d[i], s[i]);
  });
}

std::string scatter_support(const Node& node, int64_t) {
  std::string red = node.attr_string("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min") {
    return "reduction '" + red + "' is not supported";
  }
  std::string r =
      red == "none"
          ? require_fixed_size(node, 0)
          : require_input_types(
                node,
                {DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kUInt8, DType::kInt16,
                 DType::kUInt16, DType::kInt32, DType::kUInt32, DType::kInt64, DType::kUInt64},
                0, 1);
  return r.empty() ? require_int_input(node, 1) : r;
}

void run_scatter_nd(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  const Tensor& upd = ctx.in(2);
  Reduction red = parse_reduction(ctx.node);
  int64_t slice = 0;
  std::vector<int64_t> offs = nd_offsets(x, ind, 0, ctx.node, &slice);
  Dims want(ind.shape().begin(), ind.shape().end() - 1);
  want.insert(want.end(), x.shape().begin() + ind.dim(ind.rank() - 1), x.shape().end());
  NNFUSE_CHECK(upd.shape() == want && upd.dtype() == x.dtype(), ctx.node.describe(),
               ": updates have shape ", dims_str(upd.shape()), ", expected ", dims_str(want));
  Tensor y = x.clone();
  for (size_t t = 0; t < offs.size(); ++t) {
    scatter(y, offs[t], upd, static_cast<int64_t>(t) * slice, slice, red, ctx.node);
  }
  ctx.outputs[0] = y;
}

void run_scatter_elements(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  const Tensor& upd = ctx.in(2);
  Reduction red = parse_reduction(ctx.node);
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node);
  Dims strides = elements_strides(x, ind, axis, ctx.node);
  NNFUSE_CHECK(upd.shape() == ind.shape() && upd.dtype() == x.dtype(), ctx.node.describe(),
               ": updates must match the indices' shape and the data's type");
  int64_t d = x.dim(axis), axis_stride = contiguous_strides(x.shape())[static_cast<size_t>(axis)];
  Tensor y = x.clone();
  // Without a reduction, element copies in index order (a later duplicate wins, as below).
  const bool done = red == Reduction::kNone && ind.rank() > 0 && by_element_size(x, [&](auto z) {
                      using U = decltype(z);
                      const U* pu = static_cast<const U*>(upd.raw());
                      U* py = static_cast<U*>(y.raw());
                      for_each_addressed(x, ind, axis, strides, ctx.node,
                                         [&](int64_t i, int64_t off) { py[off] = pu[i]; });
                    });
  for (BroadcastIter it(ind.shape(), {strides}); !done && !it.done(); it.next()) {
    int64_t v = checked_index(ind.int_at(it.linear()), d, ctx.node);
    scatter(y, it.offset(0) + v * axis_stride, upd, it.linear(), 1, red, ctx.node);
  }
  ctx.outputs[0] = y;
}

void run_compress(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> cond = ctx.in(1).to_int64_vector();
  bool has_axis = ctx.node.has_attr("axis");
  Tensor src = has_axis ? x : x.reshaped({x.numel()});
  size_t axis =
      has_axis
          ? static_cast<size_t>(normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node))
          : 0;
  int64_t d = src.shape()[axis];
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond.size(); ++i) {
    if (!cond[i]) continue;
    NNFUSE_CHECK(static_cast<int64_t>(i) < d, ctx.node.describe(), ": condition selects index ", i,
                 " beyond the dim of ", d);
    keep.push_back(static_cast<int64_t>(i));
  }
  Dims out = src.shape();
  out[axis] = static_cast<int64_t>(keep.size());
  Tensor y(x.dtype(), out);
  int64_t outer = dims_product(out, 0, axis), inner = dims_product(out, axis + 1, out.size());
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k : keep) {
      copy_elems(y, pos, src, (o * d + k) * inner, inner);
      pos += inner;
    }
  }
  ctx.outputs[0] = y;
}

std::string compress_support(const Node& node, int64_t) {
  std::string r = require_fixed_size(node, 0);
  return r.empty() ? require_input_types(node, {DType::kBool}, 1, 1) : r;
}

void run_reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> lens = ctx.in(1).to_int64_vector();
  int64_t ba = ctx.node.attr_int("batch_axis", 1), ta = ctx.node.attr_int("time_axis", 0);
  NNFUSE_CHECK(x.rank() >= 2 && ba != ta && (ba == 0 || ba == 1) && (ta == 0 || ta == 1),
               ctx.node.describe(), ": needs rank >= 2 and batch/time axes 0 and 1");
  int64_t batch = x.dim(ba), time = x.dim(ta);
  NNFUSE_CHECK(static_cast<int64_t>(lens.size()) == batch, ctx.node.describe(), ": ", lens.size(),
               " sequence lengths for a batch of ", batch);
  for (int64_t l : lens) {
    NNFUSE_CHECK(l >= 0 && l <= time, ctx.node.describe(), ": sequence length ", l,
                 " is out of range [0, ", time, "]");
  }
  Dims strides = contiguous_strides(x.shape());
  int64_t bs = strides[static_cast<size_t>(ba)], ts = strides[static_cast<size_t>(ta)];
  Tensor y(x.dtype(), x.shape());
  for (int64_t pos = 0; pos < x.numel(); ++pos) {
    int64_t b = pos / bs % batch, t = pos / ts % time, l = lens[static_cast<size_t>(b)];
    copy_elems(y, pos, x, t < l ? pos + (l - 1 - 2 * t) * ts : pos);
  }
  ctx.outputs[0] = y;
}

// An integral value of a numeric tensor element (floats truncated); false when not finite or
// beyond +-2^62.
bool integral_at(const Tensor& t, int64_t i, int64_t* v) {
  double d = std::trunc(t.double_at(i));
  if (!(std::abs(d) < 4.6e18)) return false;
  *v = t.dtype() == DType::kFloat32 || t.dtype() == DType::kFloat64 ? static_cast<int64_t>(d)
                                                                    : t.int_at(i);
  return true;
}

void run_one_hot(KernelContext& ctx) {
  const Tensor& ind = ctx.in(0);
  const Tensor& depth_t = ctx.in(1);
  const Tensor& vals = ctx.in(2);
  int64_t depth = 0;
  NNFUSE_CHECK(depth_t.numel() == 1 && integral_at(depth_t, 0, &depth) && depth > 0,
               ctx.node.describe(), ": depth must be one positive number");
  NNFUSE_CHECK(vals.numel() == 2, ctx.node.describe(), ": values must hold [off, on]");
  int64_t axis = ctx.node.attr_int("axis", -1), r = ind.rank() + 1;
  NNFUSE_CHECK(axis >= -r && axis < r, ctx.node.describe(), ": axis ", axis,
               " is out of range for output rank ", r);
  size_t a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  Dims out = ind.shape();
  out.insert(out.begin() + static_cast<int64_t>(a), depth);
  Tensor y(vals.dtype(), out);
  for (int64_t i = 0; i < y.numel(); ++i) copy_elems(y, i, vals, 0);
  int64_t inner = dims_product(ind.shape(), a, ind.shape().size());
  for (int64_t i = 0; i < ind.numel(); ++i) {
    int64_t v = 0;
    if (!integral_at(ind, i, &v)) continue;
    if (v < 0) v += depth;
    if (v < 0 || v >= depth) continue;  // out of range: all off, per the spec
    copy_elems(y, (i / inner * depth + v) * inner + i % inner, vals, 1);
  }
  ctx.outputs[0] = y;
}

std::string one_hot_support(const Node& node, int64_t) {
  std::string r = require_input_types(node, numeric_types(), 0, 2);
  return r.empty() ? require_fixed_size(node, 2) : r;
}

// The dtype EyeLike produces: the 'dtype' attribute, else the input's.
DType eye_like_type(const Node& node, DType input) {
  return node.has_attr("dtype") ? dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 0)))
                                : input;
}

void run_eye_like(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  NNFUSE_CHECK(x.rank() == 2, ctx.node.describe(), ": input must have rank 2");
  int64_t rows = x.dim(0), cols = x.dim(1), k = ctx.node.attr_int("k", 0);
  Tensor y(eye_like_type(ctx.node, x.dtype()), x.shape());
  dispatch(
      y.dtype(), ctx.node.describe(),
      [&](auto z) {
        using T = decltype(z);
        T* p = y.data<T>();
        if (k >= cols || k <= -rows) return;
        for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i) {
          p[i * cols + i + k] = T(1);
        }
      },
      /*with_bool=*/true);
  ctx.outputs[0] = y;
}

std::string eye_like_support(const Node& node, int64_t) {
  const Value* v = node.input(0);
  if (!node.has_attr("dtype") && (!v || v->dtype() == DType::kUndefined)) return "";
  if (node.has_attr("dtype")) {
    int64_t t = node.attr_int("dtype", 0);
    if (t <= 0 || t > 16) return "dtype " + std::to_string(t) + " is not valid";
  }
  DType t = eye_like_type(node, v ? v->dtype() : DType::kUndefined);
  if (t != DType::kBool &&
      std::find(numeric_types().begin(), numeric_types().end(), t) == numeric_types().end()) {
    return "output type " + dtype_name(t) + " is not supported";
  }
  return "";
}

void run_non_zero(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> hits;  // linear indices of the non-zero elements
  dispatch(
      x.dtype(), ctx.node.describe(),
      [&](auto z) {
        using T = decltype(z);
        const T* p = x.data<T>();
        // Counted first, so the indices are written without the vector growing (a detector's
        // NonZero over hundreds of thousands of scores above its threshold).
        int64_t count = 0;
        for (int64_t i = 0; i < x.numel(); ++i) count += p[i] != T(0) ? 1 : 0;
        // One slot past the hits: each element is written, and kept only when non-zero.
        hits.resize(static_cast<size_t>(count) + 1);
        int64_t* h = hits.data();
        for (int64_t i = 0; i < x.numel(); ++i) {
          *h = i;
          h += p[i] != T(0) ? 1 : 0;
        }
        hits.resize(static_cast<size_t>(count));
      },
      /*with_bool=*/true);
  // A scalar counts as shape [1], as numpy and ONNX Runtime treat it.
  Dims shape = x.rank() == 0 ? Dims{1} : x.shape();
  Dims strides = contiguous_strides(shape);
  int64_t r = static_cast<int64_t>(shape.size()), n = static_cast<int64_t>(hits.size());
  Tensor y = Tensor::uninitialized(DType::kInt64, {r, n});
  int64_t* out = y.data<int64_t>();
  if (r == 1) {
    std::copy(hits.begin(), hits.end(), out);
  } else {
    for (int64_t j = 0; j < n; ++j) {
      int64_t rest = hits[static_cast<size_t>(j)];
      for (int64_t d = 0; d < r; ++d) {
        const size_t sd = static_cast<size_t>(d);
        const int64_t c = strides[sd] == 1 ? rest : rest / strides[sd];
        out[d * n + j] = c;
        rest -= c * strides[sd];
      }
    }
  }
  ctx.outputs[0] = y;
}

std::string non_zero_support(const Node& node, int64_t) {
  std::vector<DType> types = numeric_types();
  types.push_back(DType::kBool);
  return require_input_types(node, types, 0, 1);
}

}  // namespace

void append_index_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"Gather", run_gather, data_and_indices});
  t.push_back({"GatherElements", run_gather_elements, data_and_indices});
  t.push_back({"GatherND", run_gather_nd, data_and_indices});
  t.push_back({"ScatterND", run_scatter_nd, scatter_support});
  t.push_back({"ScatterElements", run_scatter_elements, scatter_support});
  t.push_back({"Compress", run_compress, compress_support});
  t.push_back({"ReverseSequence", run_reverse_sequence, data_and_indices});
  t.push_back({"OneHot", run_one_hot, one_hot_support});
  t.push_back({"EyeLike", run_eye_like, eye_like_support});
  t.push_back({"NonZero", run_non_zero, non_zero_support});
}

}  // namespace nnfuse::ref
