// Reference kernels for Constant, ConstantOfShape, Range, Cast, CastLike and Pad (Resize is in
// resize.cc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/half.h"
#include "kernels/ref/shape_internal.h"

namespace nnfuse {

namespace {

using ref::copy_elems;

// Types with a plain C++ element type (everything ref::dispatch handles, plus bool).
const std::vector<DType> kPlainTypes = {
    DType::kFloat32, DType::kFloat64, DType::kInt8,  DType::kUInt8,  DType::kInt16, DType::kUInt16,
    DType::kInt32,   DType::kUInt32,  DType::kInt64, DType::kUInt64, DType::kBool};
// Types Cast converts between (and Pad-2's value is written in): those and the 16-bit floats.
const std::vector<DType> kCastTypes = [] {
  std::vector<DType> v = kPlainTypes;
  v.push_back(DType::kFloat16);
  v.push_back(DType::kBFloat16);
  return v;
}();

bool is_cast_type(DType t) {
  return std::find(kCastTypes.begin(), kCastTypes.end(), t) != kCastTypes.end();
}

// Calls f(T{}) with T the C++ type of `t`: those of ref::dispatch, bool, Float16 and BFloat16.
template <typename F>
void dispatch_cast(DType t, const std::string& what, F&& f) {
  if (t == DType::kFloat16) return f(Float16{});
  if (t == DType::kBFloat16) return f(BFloat16{});
  ref::dispatch(t, what, f, /*with_bool=*/true);
}

// One value converted as Cast does: convert_value, with a 16-bit float rounded to (nearest,
// ties to even; infinity past the largest finite value) or read exactly (then as a float or
// double would be: truncated toward zero and saturated for integers, NaN to 0).
template <typename To, typename From>
To cast_value(From v) {
  if constexpr (is_half_v<To>) {
    return to_half<To>(v);
  } else if constexpr (is_half_v<From> && std::is_same_v<To, float>) {
    return half_to_float(v);
  } else if constexpr (is_half_v<From>) {
    return convert_value<To>(half_to_double(v));
  } else {
    return convert_value<To, From>(v);
  }
}

void run_constant(KernelContext& ctx) {
  const Node& node = ctx.node;
  if (const Attribute* a = node.find_attr("value")) {
    NNFUSE_CHECK(a->kind == Attribute::Kind::kTensor && a->t.defined(), node.describe(),
                 ": attribute 'value' must be a tensor");
    ctx.outputs[0] = a->t.clone();
  } else if (node.has_attr("value_float")) {
    ctx.outputs[0] = Tensor::scalar<float>(node.attr_float("value_float", 0));
  } else if (node.has_attr("value_floats")) {
    std::vector<float> v = node.attr_floats("value_floats");
    ctx.outputs[0] = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  } else if (node.has_attr("value_int")) {
    ctx.outputs[0] = Tensor::scalar<int64_t>(node.attr_int("value_int", 0));
  } else if (node.has_attr("value_ints")) {
    std::vector<int64_t> v = node.attr_ints("value_ints");
    ctx.outputs[0] = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  } else {
    fail(ErrorKind::kUnsupported, node.describe(), ": no supported value attribute");
  }
}

std::string constant_support(const Node& node, int64_t) {
  for (const char* a : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    if (node.has_attr(a)) return "";
  }
  for (const char* a : {"sparse_value", "value_string", "value_strings"}) {
    if (node.has_attr(a)) return std::string("attribute '") + a + "' is not supported";
  }
  return "no value attribute";
}

void run_constant_of_shape(KernelContext& ctx) {
  Dims shape = ctx.in(0).to_int64_vector();
  Tensor value = Tensor::scalar<float>(0.f);
  if (const Attribute* a = ctx.node.find_attr("value")) {
    NNFUSE_CHECK(a->kind == Attribute::Kind::kTensor && a->t.numel() == 1, ctx.node.describe(),
                 ": attribute 'value' must be a one-element tensor");
    value = a->t;
  }
  for (int64_t d : shape) {
    NNFUSE_CHECK(d >= 0, ctx.node.describe(), ": negative dim in shape ", dims_str(shape));
  }
  Tensor y(value.dtype(), shape);  // zeroed
  const size_t es = dtype_size(value.dtype());
  const auto* v = static_cast<const std::byte*>(value.raw());
  if (std::any_of(v, v + es, [](std::byte b) { return b != std::byte{0}; })) {
    // The value once, then doubling copies of what is filled (a detector's zeros of
    // [rois, 256, 7, 7] were one call per element).
    auto* out = static_cast<std::byte*>(y.raw());
    const size_t total = static_cast<size_t>(y.numel()) * es;
    if (total > 0) std::memcpy(out, v, es);
    for (size_t done = es; done < total;) {
      const size_t n = std::min(done, total - done);
      std::memcpy(out + done, out, n);
      done += n;
    }
  }
  ctx.outputs[0] = y;
}

std::string constant_of_shape_support(const Node& node, int64_t) {
  return ref::require_int_input(node, 0);
}

void run_range(KernelContext& ctx) {
  const Tensor &start = ctx.in(0), &limit = ctx.in(1), &delta = ctx.in(2);
  NNFUSE_CHECK(start.numel() == 1 && limit.numel() == 1 && delta.numel() == 1 &&
                   limit.dtype() == start.dtype() && delta.dtype() == start.dtype(),
               ctx.node.describe(), ": start, limit and delta must be scalars of one type");
  ref::dispatch(start.dtype(), ctx.node.describe(), [&](auto z) {
    using T = decltype(z);
    T s = start.data<T>()[0], l = limit.data<T>()[0], d = delta.data<T>()[0];
    NNFUSE_CHECK(d != T(0), ctx.node.describe(), ": delta is zero");
    int64_t n = 0;
    if constexpr (std::is_floating_point_v<T>) {
      double count = std::ceil((static_cast<double>(l) - s) / d);
      NNFUSE_CHECK(!std::isnan(count) && count < 4.6e18, ctx.node.describe(),
                   ": cannot make a range from ", s, " to ", l, " by ", d);
      n = count > 0 ? static_cast<int64_t>(count) : 0;
    } else {
      // Exact in unsigned arithmetic: the span of two values of T always fits in uint64.
      bool up = d > T(0);
      if (up ? l > s : s > l) {
        uint64_t span = up ? static_cast<uint64_t>(l) - static_cast<uint64_t>(s)
                           : static_cast<uint64_t>(s) - static_cast<uint64_t>(l);
        uint64_t step = up ? static_cast<uint64_t>(d) : uint64_t{0} - static_cast<uint64_t>(d);
        uint64_t count = (span - 1) / step + 1;
        NNFUSE_CHECK(count < (uint64_t{1} << 62), ctx.node.describe(), ": range is too long");
        n = static_cast<int64_t>(count);
      }
    }
    Tensor y(start.dtype(), {n});
    T* p = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        p[i] = static_cast<T>(s + static_cast<T>(i) * d);
      } else {  // each value lies between start and limit, so the running sum cannot overflow
        p[i] = i == 0 ? s : static_cast<T>(p[i - 1] + d);
      }
    }
    ctx.outputs[0] = y;
  });
}

std::string range_support(const Node& node, int64_t) {
  std::vector<DType> types(kPlainTypes.begin(), kPlainTypes.end() - 1);  // not bool
  return ref::require_input_types(node, types);
}

Tensor cast_to(const Tensor& x, DType to, const Node& node) {
  Tensor y(to, x.shape());
  dispatch_cast(x.dtype(), node.describe(), [&](auto a) {
    using From = decltype(a);
    dispatch_cast(to, node.describe(), [&](auto b) {
      using To = decltype(b);
      const From* src = x.data<From>();
      To* dst = y.data<To>();
      for (int64_t i = 0; i < x.numel(); ++i) dst[i] = cast_value<To, From>(src[i]);
    });
  });
  return y;
}

DType cast_target(const Node& node) {
  return dtype_from_onnx(static_cast<int32_t>(node.attr_int("to", 0)));
}

void run_cast(KernelContext& ctx) {
  NNFUSE_CHECK(ctx.node.has_attr("to"), ctx.node.describe(), ": attribute 'to' is required");
  ctx.outputs[0] = cast_to(ctx.in(0), cast_target(ctx.node), ctx.node);
}

std::string cast_support(const Node& node, int64_t) {
  if (!node.has_attr("to")) return "attribute 'to' is missing";
  int64_t to = node.attr_int("to", 0);
  if (to <= 0 || to > 16 || !is_cast_type(static_cast<DType>(to))) {
    return "cast to type " + std::to_string(to) + " (" +
           (to > 0 && to <= 16 ? dtype_name(static_cast<DType>(to)) : "invalid") +
           ") is not supported";
  }
  return ref::require_input_types(node, kCastTypes, 0, 1);
}

void run_cast_like(KernelContext& ctx) {
  ctx.outputs[0] = cast_to(ctx.in(0), ctx.in(1).dtype(), ctx.node);
}

std::string cast_like_support(const Node& node, int64_t) {
  return ref::require_input_types(node, kCastTypes, 0, 2);
}

void run_pad(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  size_t r = x.shape().size();
  std::string mode = node.attr_string("mode", "constant");
  const std::optional<ref::PadMode> parsed = ref::pad_mode(mode);
  NNFUSE_CHECK(parsed, node.describe(), ": mode '", mode, "' is not supported");
  const ref::PadMode pad_mode = *parsed;
  std::vector<int64_t> pads;
  Tensor value(x.dtype(), {});  // zero
  if (ctx.opset >= 11) {
    pads = ctx.in(1).to_int64_vector();
    if (ctx.has_input(2) && ctx.in(2).numel() > 0) {
      const Tensor& c = ctx.in(2);
      NNFUSE_CHECK(c.dtype() == x.dtype(), node.describe(), ": constant_value type differs");
      copy_elems(value, 0, c, 0);
    }
  } else {  // Pad-2: pads and value are attributes
    pads = node.attr_ints("pads");
    float v = node.attr_float("value", 0.f);
    dispatch_cast(x.dtype(), node.describe(), [&](auto z) {
      using T = decltype(z);
      value.data<T>()[0] = cast_value<T, float>(v);
    });
  }
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {  // opset 18
    for (int64_t a : ctx.in(3).to_int64_vector()) {
      axes.push_back(ref::normalize_axis(a, static_cast<int64_t>(r), node));
    }
  } else {
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  size_t n = axes.size();
  NNFUSE_CHECK(pads.size() == 2 * n, node.describe(), ": ", pads.size(), " pads for ", n, " axes");
  Dims begin(r, 0), out = x.shape();
  for (size_t i = 0; i < n; ++i) {
    size_t a = static_cast<size_t>(axes[i]);
    begin[a] = pads[i];
    out[a] = ref::checked_add(ref::checked_add(out[a], pads[i], node), pads[i + n], node);
    NNFUSE_CHECK(out[a] >= 0, node.describe(), ": pads ", dims_str(pads), " crop axis ", a,
                 " below zero");
    NNFUSE_CHECK(mode == "constant" || x.shape()[a] > 0 || out[a] == 0, node.describe(),
                 ": cannot pad an empty axis in mode ", mode);
  }
  Tensor y(x.dtype(), out);
  if (y.numel() == 0) {
    ctx.outputs[0] = y;
    return;
  }
  // Per axis, the source index of every output position (-1: the constant).
  std::vector<std::vector<int64_t>> src(r);
  for (size_t a = 0; a < r; ++a) {
    for (int64_t o = 0; o < out[a]; ++o) {
      src[a].push_back(ref::pad_source(o - begin[a], x.dim(a), pad_mode));
    }
  }
  Dims idx(r, 0), strides = contiguous_strides(x.shape());
  int64_t pos = 0;
  do {
    int64_t off = 0;
    for (size_t a = 0; a < r && off >= 0; ++a) {
      int64_t s = src[a][static_cast<size_t>(idx[a])];
      off = s < 0 ? -1 : off + s * strides[a];
    }
    if (off >= 0) {
      copy_elems(y, pos, x, off);
    } else {
      copy_elems(y, pos, value, 0);
    }
    ++pos;
  } while (ref::next_index(idx, out));
  ctx.outputs[0] = y;
}

std::string pad_support(const Node& node, int64_t opset) {
  std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return "mode '" + mode + "' is not supported";
  }
  if (opset < 11) return ref::require_input_types(node, kCastTypes, 0, 1);
  std::string r = ref::require_fixed_size(node, 0);
  if (r.empty()) r = ref::require_int_input(node, 1);
  return r.empty() ? ref::require_int_input(node, 3) : r;
}

}  // namespace

void append_misc_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"Constant", run_constant, constant_support});
  t.push_back({"ConstantOfShape", run_constant_of_shape, constant_of_shape_support});
  t.push_back({"Range", run_range, range_support});
  t.push_back({"Cast", run_cast, cast_support});
  t.push_back({"CastLike", run_cast_like, cast_like_support});
  t.push_back({"Pad", run_pad, pad_support});
  ref::append_resize_kernels(t);
}

}  // namespace nnfuse

namespace nnfuse::ref {

std::optional<PadMode> pad_mode(const std::string& s) {
  if (s == "constant") return PadMode::kConstant;
  if (s == "reflect") return PadMode::kReflect;
  if (s == "edge") return PadMode::kEdge;
  if (s == "wrap") return PadMode::kWrap;
  return std::nullopt;
}

int64_t pad_source(int64_t src, int64_t d, PadMode mode) {
  if (src >= 0 && src < d) return src;
  if (mode == PadMode::kConstant) return -1;
  if (mode == PadMode::kEdge) return src < 0 ? 0 : d - 1;
  if (mode == PadMode::kWrap) return ((src % d) + d) % d;
  if (d == 1) return 0;  // reflect
  const int64_t period = 2 * (d - 1), m = ((src % period) + period) % period;
  return m < d ? m : period - m;
}

}  // namespace nnfuse::ref
