#include "ops/window.h"

#include <algorithm>

#include "ir/builder.h"

namespace nnfuse::ops {

namespace {

template <typename T>
void read(const Node& n, const std::string& name, std::optional<T>& v);

template <>
void read(const Node& n, const std::string& name, std::optional<std::string>& v) {
  if (n.has_attr(name)) v = n.attr_string(name, "");
}
template <>
void read(const Node& n, const std::string& name, std::optional<int64_t>& v) {
  if (n.has_attr(name)) v = n.attr_int(name, 0);
}
template <>
void read(const Node& n, const std::string& name, std::optional<Dims>& v) {
  if (n.has_attr(name)) v = n.attr_ints(name);
}

void put(Attrs& a, const std::string& name, const std::optional<std::string>& v) {
  if (v) a[name] = attr_string(*v);
}
void put(Attrs& a, const std::string& name, const std::optional<int64_t>& v) {
  if (v) a[name] = attr_int(*v);
}
void put(Attrs& a, const std::string& name, const std::optional<Dims>& v) {
  if (v) a[name] = attr_ints(*v);
}

std::optional<AutoPad> parse_auto_pad(const std::optional<std::string>& s) {
  if (!s || s->empty() || *s == "NOTSET") return AutoPad::kNotSet;
  if (*s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (*s == "SAME_LOWER") return AutoPad::kSameLower;
  if (*s == "VALID") return AutoPad::kValid;
  return std::nullopt;
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

ConvAttrs ConvAttrs::of(const Node& n, const std::string& prefix) {
  ConvAttrs a;
  read(n, prefix + "auto_pad", a.auto_pad);
  read(n, prefix + "dilations", a.dilations);
  read(n, prefix + "group", a.group);
  read(n, prefix + "kernel_shape", a.kernel_shape);
  read(n, prefix + "pads", a.pads);
  read(n, prefix + "strides", a.strides);
  return a;
}

void ConvAttrs::write(Attrs& attrs, const std::string& prefix) const {
  put(attrs, prefix + "auto_pad", auto_pad);
  put(attrs, prefix + "dilations", dilations);
  put(attrs, prefix + "group", group);
  put(attrs, prefix + "kernel_shape", kernel_shape);
  put(attrs, prefix + "pads", pads);
  put(attrs, prefix + "strides", strides);
}

PoolAttrs PoolAttrs::of(const Node& n, const std::string& prefix) {
  PoolAttrs a;
  read(n, prefix + "auto_pad", a.auto_pad);
  read(n, prefix + "ceil_mode", a.ceil_mode);
  read(n, prefix + "count_include_pad", a.count_include_pad);
  read(n, prefix + "storage_order", a.storage_order);
  read(n, prefix + "dilations", a.dilations);
  read(n, prefix + "kernel_shape", a.kernel_shape);
  read(n, prefix + "pads", a.pads);
  read(n, prefix + "strides", a.strides);
  return a;
}

void PoolAttrs::write(Attrs& attrs, const std::string& prefix) const {
  put(attrs, prefix + "auto_pad", auto_pad);
  put(attrs, prefix + "ceil_mode", ceil_mode);
  put(attrs, prefix + "count_include_pad", count_include_pad);
  put(attrs, prefix + "storage_order", storage_order);
  put(attrs, prefix + "dilations", dilations);
  put(attrs, prefix + "kernel_shape", kernel_shape);
  put(attrs, prefix + "pads", pads);
  put(attrs, prefix + "strides", strides);
}

int64_t window_extent(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                      int64_t pad_begin, int64_t pad_end, AutoPad auto_pad, bool ceil_mode) {
  if (in < 0 || kernel < 1 || stride < 1 || dilation < 1) return -1;
  const int64_t span = (kernel - 1) * dilation + 1;
  int64_t out = 0;
  if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
    out = -floor_div(-in, stride);
  } else if (auto_pad == AutoPad::kValid) {
    out = floor_div(in - span, stride) + 1;
  } else {
    const int64_t room = in + pad_begin + pad_end - span;
    out = (ceil_mode ? -floor_div(-room, stride) : floor_div(room, stride)) + 1;
    if (ceil_mode && out > 0 && (out - 1) * stride >= in + pad_begin) --out;
  }
  return out >= 1 ? out : -1;
}

std::string window_output(const Shape& x, int64_t channels, const Dims& kernel,
                          const std::optional<std::string>& auto_pad,
                          const std::optional<Dims>& strides, const std::optional<Dims>& dilations,
                          const std::optional<Dims>& pads, bool ceil_mode, Shape* out) {
  *out = Shape::unknown();
  if (!x.has_rank) return "";
  const size_t r = kernel.size();
  if (x.dims.size() != r + 2) {
    return "a window of " + std::to_string(r) + " spatial dims over an input of rank " +
           std::to_string(x.dims.size());
  }
  const auto ap = parse_auto_pad(auto_pad);
  if (!ap) return "auto_pad '" + *auto_pad + "' is not understood";
  auto sized = [&](const std::optional<Dims>& v, size_t n) { return !v || v->size() == n; };
  if (!sized(strides, r) || !sized(dilations, r) || !sized(pads, 2 * r)) {
    return "strides, dilations or pads of another rank than the kernel's";
  }
  out->has_rank = true;
  out->dims = {x.dims[0], channels >= 0 ? Dim{channels, ""} : x.dims[1]};
  for (size_t j = 0; j < r; ++j) {
    const int64_t e = window_extent(x.dims[j + 2].value, kernel[j], strides ? (*strides)[j] : 1,
                                    dilations ? (*dilations)[j] : 1, pads ? (*pads)[j] : 0,
                                    pads ? (*pads)[r + j] : 0, *ap, ceil_mode);
    out->dims.push_back(e >= 0 ? Dim{e, ""} : Dim{});
  }
  return "";
}

std::string conv_output(const Shape& x, const Shape& w, const ConvAttrs& a, Shape* out) {
  *out = Shape::unknown();
  if (!w.has_rank || w.dims.size() < 3)
    return w.has_rank ? "the weight is not of rank 3 or more" : "";
  Dims kernel;
  if (a.kernel_shape) {
    kernel = *a.kernel_shape;
  } else {
    for (size_t i = 2; i < w.dims.size(); ++i) {
      if (!w.dims[i].known()) return "";
      kernel.push_back(w.dims[i].value);
    }
  }
  const int64_t m = w.dims[0].known() ? w.dims[0].value : -1;
  std::string why =
      window_output(x, m, kernel, a.auto_pad, a.strides, a.dilations, a.pads, false, out);
  if (why.empty() && out->has_rank && m < 0) out->dims[1] = Dim{};
  return why;
}

std::string pool_output(const Shape& x, const PoolAttrs& a, Shape* out) {
  if (!a.kernel_shape) {
    *out = Shape::unknown();
    return "the pool has no kernel_shape";
  }
  return window_output(x, -1, *a.kernel_shape, a.auto_pad, a.strides, a.dilations, a.pads,
                       a.ceil_mode.value_or(0) != 0, out);
}

}  // namespace nnfuse::ops
