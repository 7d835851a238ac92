// Pad in every opset: pads and value as attributes before opset 11, pads and constant_value as
// inputs from 11 on, the axes input of opset 18 and the modes constant, reflect, edge and wrap
// (opset 19), negative pads (cropping) included, for any rank and any element type of 1, 2, 4
// or 8 bytes (elements are moved as bytes, the constant converted as the reference kernel
// does). Plain layout, or channels-last 4-D input, padded on its physical dims with the pads
// permuted and written channels-last too.
//
// Pure data movement, bit-equal to the reference kernel. The pads are usually constants: the
// movement is then planned once, at plan time (pads, axes or shape known only at run time are
// planned per run). Axes that are not padded merge: trailing ones into the unit moved as one
// (a channels-last pixel when only H and W are padded), others into their neighbours. The
// output is a sequence of rows along the last padded axis; each row is the constant (a row
// padded away on an outer axis, in constant mode) or its source row moved in segments planned
// once: contiguous runs memcpy'd, constant and edge runs filled by doubling copies, reflected
// runs copied unit by unit. Parallel over blocks of rows.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "kernels/cpu/cpu_copy.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/util.h"

namespace nnfuse::cpu {
namespace {

using Mode = ref::PadMode;
constexpr auto parse_mode = ref::pad_mode;
constexpr auto source_index = ref::pad_source;

// Types the attribute value of Pad before opset 11 converts to (the reference kernel's).
bool attr_value_type(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt8 || t == DType::kUInt8 ||
         t == DType::kInt16 || t == DType::kUInt16 || t == DType::kInt32 || t == DType::kUInt32 ||
         t == DType::kInt64 || t == DType::kUInt64 || t == DType::kBool;
}

// The constant: one element's bytes.
struct Fill {
  std::array<std::byte, 8> bytes{};
  size_t size = 0;
  bool zero = true;

  static Fill of(const void* p, size_t size) {
    Fill f;
    f.size = size;
    std::memcpy(f.bytes.data(), p, size);
    f.zero = std::all_of(f.bytes.begin(), f.bytes.begin() + static_cast<int64_t>(size),
                         [](std::byte b) { return b == std::byte{0}; });
    return f;
  }
};

// dst[0, n) = the `size` bytes at pattern, repeated (n a multiple of size): one copy, then
// doubling copies of what is written.
void fill_pattern(std::byte* dst, size_t n, const std::byte* pattern, size_t size) {
  if (n == 0) return;
  std::memcpy(dst, pattern, size);
  for (size_t done = size; done < n;) {
    const size_t k = std::min(done, n - done);
    std::memcpy(dst + done, dst, k);
    done += k;
  }
}

void fill_value(std::byte* dst, size_t n, const Fill& f) {
  if (f.zero) {
    std::memset(dst, 0, n);
  } else {
    fill_pattern(dst, n, f.bytes.data(), f.size);
  }
}

// A run of a row, in units: output [dst, dst + len) from source src.. (kCopy: ascending,
// kReverse: descending, kRepeat: src every time), or the constant (kFill).
struct Segment {
  enum Kind : uint8_t { kCopy, kRepeat, kReverse, kFill };
  Kind kind;
  int64_t dst, src, len;
};

// The movement of one Pad on one input shape.
struct Geometry {
  Dims in_shape, out_shape;  // logical
  int64_t out_numel = 0;
  size_t unit = 0;          // bytes moved as one
  bool whole_copy = false;  // nothing padded: the output is the input
  // Output rows along the last padded axis, indexed over the `outer` dims of the axes before
  // it; per outer axis and output position, the source offset in units (-1: the constant).
  Dims outer;
  std::vector<std::vector<int64_t>> outer_src;
  int64_t rows = 1, out_row = 0;
  std::vector<Segment> segs;
};

// Appends source index s (-1: the constant) for the next output unit of a row.
void extend(std::vector<Segment>& segs, int64_t o, int64_t s) {
  if (!segs.empty()) {
    Segment& b = segs.back();
    if (s < 0 && b.kind == Segment::kFill) {
      ++b.len;
      return;
    }
    if (s >= 0 && b.kind != Segment::kFill) {
      const int64_t last = b.kind == Segment::kCopy      ? b.src + b.len - 1
                           : b.kind == Segment::kReverse ? b.src - (b.len - 1)
                                                         : b.src;
      if (b.len == 1 && (s == last + 1 || s == last || s == last - 1)) {
        b.kind = s == last + 1 ? Segment::kCopy : s == last ? Segment::kRepeat : Segment::kReverse;
        ++b.len;
        return;
      }
      if ((b.kind == Segment::kCopy && s == last + 1) ||
          (b.kind == Segment::kRepeat && s == last) ||
          (b.kind == Segment::kReverse && s == last - 1)) {
        ++b.len;
        return;
      }
    }
  }
  segs.push_back({s < 0 ? Segment::kFill : Segment::kCopy, o, s, 1});
}

// The output shape and leading pad of every logical axis, exactly as the reference kernel
// computes them; "" or why the pads are invalid (the reference kernel fails on them too).
std::string pad_extents(const Dims& in, const std::vector<int64_t>& pads,
                        const std::optional<std::vector<int64_t>>& axes_in, Mode mode, Dims* begin,
                        Dims* out) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (axes_in) {
    for (int64_t a : *axes_in) {
      if (a < -r || a >= r) return detail::cat("axis ", a, " is out of range for rank ", r);
      axes.push_back(a < 0 ? a + r : a);
    }
  } else {
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  }
  const size_t n = axes.size();
  if (pads.size() != 2 * n) return detail::cat(pads.size(), " pads for ", n, " axes");
  *begin = Dims(in.size(), 0);
  *out = in;
  for (size_t i = 0; i < n; ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    (*begin)[a] = pads[i];
    int64_t len = 0;
    if (__builtin_add_overflow((*out)[a], pads[i], &len) ||
        __builtin_add_overflow(len, pads[i + n], &len)) {
      return detail::cat("pads ", dims_str(pads), " overflow axis ", a);
    }
    (*out)[a] = len;
    if (len < 0) return detail::cat("pads ", dims_str(pads), " crop axis ", a, " below zero");
    if (mode != Mode::kConstant && in[a] == 0 && len != 0) {
      return detail::cat("cannot pad an empty axis in mode ", mode == Mode::kReflect ? "reflect"
                                                              : mode == Mode::kEdge  ? "edge"
                                                                                     : "wrap");
    }
  }
  checked_numel(*out, 1);
  return "";
}

// Plans the movement over the physical dims (channels-last: N, H, W, C).
Geometry make_geometry(const Dims& in, const Dims& begin, const Dims& out, Layout layout, size_t es,
                       Mode mode) {
  Geometry g;
  g.in_shape = in;
  g.out_shape = out;
  g.out_numel = numel_of(out, 0, out.size());
  if (g.out_numel == 0) return g;
  const size_t r = in.size();
  std::vector<size_t> perm(r);
  for (size_t j = 0; j < r; ++j) perm[j] = j;
  if (layout == Layout::kNHWC) perm = {0, 2, 3, 1};
  // Trailing axes not padded join the unit.
  size_t m = r;
  g.unit = es;
  auto unpadded = [&](size_t j) { return begin[perm[j]] == 0 && out[perm[j]] == in[perm[j]]; };
  while (m > 0 && unpadded(m - 1)) g.unit *= static_cast<size_t>(in[perm[--m]]);
  if (m == 0) {
    g.whole_copy = true;
    return g;
  }
  // Runs of axes not padded merge into one.
  Dims di, dout, db;
  bool prev_unpadded = false;
  for (size_t j = 0; j < m; ++j) {
    const bool u = unpadded(j);
    const size_t a = perm[j];
    if (u && prev_unpadded) {
      di.back() *= in[a];
      dout.back() *= out[a];
    } else {
      di.push_back(in[a]);
      dout.push_back(out[a]);
      db.push_back(begin[a]);
    }
    prev_unpadded = u;
  }
  const size_t k = di.size();
  Dims stride(k, 1);
  for (size_t j = k - 1; j-- > 0;) stride[j] = stride[j + 1] * di[j + 1];
  for (size_t j = 0; j + 1 < k; ++j) {
    g.outer.push_back(dout[j]);
    g.rows *= dout[j];
    std::vector<int64_t> src(static_cast<size_t>(dout[j]));
    for (int64_t o = 0; o < dout[j]; ++o) {
      const int64_t s = source_index(o - db[j], di[j], mode);
      src[static_cast<size_t>(o)] = s < 0 ? -1 : s * stride[j];
    }
    g.outer_src.push_back(std::move(src));
  }
  g.out_row = dout[k - 1];
  for (int64_t o = 0; o < g.out_row; ++o) {
    extend(g.segs, o, source_index(o - db[k - 1], di[k - 1], mode));
  }
  return g;
}

void copy_unit(std::byte* dst, const std::byte* src, size_t unit) {
  switch (unit) {
    case 1:
      *dst = *src;
      return;
    case 2:
      std::memcpy(dst, src, 2);
      return;
    case 4:
      std::memcpy(dst, src, 4);
      return;
    case 8:
      std::memcpy(dst, src, 8);
      return;
    default:
      std::memcpy(dst, src, unit);
  }
}

// One output row from its source row (nullptr: the constant).
void write_row(const Geometry& g, const std::byte* src, std::byte* dst, const Fill& fill) {
  const size_t u = g.unit;
  if (!src) {
    fill_value(dst, static_cast<size_t>(g.out_row) * u, fill);
    return;
  }
  for (const Segment& s : g.segs) {
    std::byte* d = dst + static_cast<size_t>(s.dst) * u;
    const size_t n = static_cast<size_t>(s.len) * u;
    switch (s.kind) {
      case Segment::kCopy:
        std::memcpy(d, src + static_cast<size_t>(s.src) * u, n);
        break;
      case Segment::kRepeat:
        fill_pattern(d, n, src + static_cast<size_t>(s.src) * u, u);
        break;
      case Segment::kReverse:
        for (int64_t i = 0; i < s.len; ++i) {
          copy_unit(d + static_cast<size_t>(i) * u, src + static_cast<size_t>(s.src - i) * u, u);
        }
        break;
      case Segment::kFill:
        fill_value(d, n, fill);
        break;
    }
  }
}

void run_geometry(const Geometry& g, const std::byte* x, std::byte* y, const Fill& fill) {
  if (g.out_numel == 0) return;
  if (g.whole_copy) {
    const int64_t n = static_cast<int64_t>(g.unit);
    parallel_range(n, 4 * kParallelGrain, [&](int64_t b, int64_t e) {
      std::memcpy(y + b, x + b, static_cast<size_t>(e - b));
    });
    return;
  }
  const size_t row_bytes = static_cast<size_t>(g.out_row) * g.unit;
  parallel_blocks(g.rows, g.out_numel, [&](int64_t begin, int64_t end) {
    const size_t k = g.outer.size();
    Dims idx(k, 0);
    for (size_t j = k, t = static_cast<size_t>(begin); j-- > 0;) {
      idx[j] = static_cast<int64_t>(t % static_cast<size_t>(g.outer[j]));
      t /= static_cast<size_t>(g.outer[j]);
    }
    for (int64_t row = begin; row < end; ++row) {
      int64_t off = 0;
      for (size_t j = 0; j < k && off >= 0; ++j) {
        const int64_t s = g.outer_src[j][static_cast<size_t>(idx[j])];
        off = s < 0 ? -1 : off + s;
      }
      write_row(g, off < 0 ? nullptr : x + static_cast<size_t>(off) * g.unit,
                y + static_cast<size_t>(row) * row_bytes, fill);
      for (size_t j = k; j-- > 0;) {
        if (++idx[j] < g.outer[j]) break;
        idx[j] = 0;
      }
    }
  });
}

// Everything fixed at plan time.
struct Plan {
  DType dtype = DType::kUndefined;
  size_t es = 0;
  Mode mode = Mode::kConstant;
  Layout layout = Layout::kPlain;
  bool pads_attr = false;  // before opset 11: pads (and value) are attributes
  std::vector<int64_t> attr_pads;
  Fill fill;  // the constant when not given at run time (zero, or the attribute's value)
  bool value_input = false;      // constant_value given at run time
  std::optional<Geometry> geom;  // pads, axes and input shape known at plan time
};

const std::byte* bytes_of(const Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* bytes_of(Tensor& t) { return static_cast<std::byte*>(t.raw()); }

bool int_type(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

std::optional<Plan> make_plan(const NodeInfo& info, std::string* why) {
  const Node& n = info.node;
  if (!is_default_domain(n.domain()) || !info.has_input(0) || !single_output(n)) {
    return decline(why, "not a Pad with one output");
  }
  Plan p;
  std::string mode_name;
  try {
    mode_name = n.attr_string("mode", "constant");
    if (info.opset < 11) {
      if (!n.has_attr("pads")) return decline(why, "Pad before opset 11 without attribute 'pads'");
      p.attr_pads = n.attr_ints("pads");
    }
  } catch (const Error& e) {
    return decline(why, "attributes: ", e.what());
  }
  std::optional<Mode> mode = parse_mode(mode_name);
  if (!mode) return decline(why, "mode '", mode_name, "' is not supported");
  p.mode = *mode;
  p.dtype = info.input_dtype(0);
  p.es = dtype_size(p.dtype);
  if (!copyable_elem_size(p.es)) {
    return decline(why, input_label(info, 0), " is ", dtype_name(p.dtype),
                   ": elements of 1, 2, 4 or 8 bytes are supported");
  }
  p.layout = input_layout(info, 0);
  if (p.layout == Layout::kNHWC) {
    const Shape& s = info.input(0)->shape();
    if (s.has_rank && s.dims.size() != 4) return decline(why, "a channels-last input not 4-D");
  }
  for (size_t i = 1; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && input_layout(info, i) != Layout::kPlain) {
      return decline(why, input_label(info, i), " is not plain");
    }
  }

  std::optional<std::vector<int64_t>> pads, axes;
  bool pads_known = true;
  if (info.opset < 11) {
    p.pads_attr = true;
    pads = p.attr_pads;
    if (!attr_value_type(p.dtype)) {
      return decline(why, input_label(info, 0), " is ", dtype_name(p.dtype),
                     ": Pad before opset 11 converts its value to numeric and bool types only");
    }
    float v = 0;
    try {
      v = n.attr_float("value", 0.f);
    } catch (const Error& e) {
      return decline(why, "attributes: ", e.what());
    }
    ref::dispatch(
        p.dtype, n.describe(),
        [&](auto z) {
          using T = decltype(z);
          const T c = convert_value<T, float>(v);
          p.fill = Fill::of(&c, sizeof(T));
        },
        /*with_bool=*/true);
  } else {
    std::array<std::byte, 8> zero{};
    p.fill = Fill::of(zero.data(), p.es);
    if (!info.has_input(1)) return decline(why, "pads (input 1) is missing");
    if (!int_type(info.input_dtype(1))) {
      return decline(why, input_label(info, 1), " (pads) is ", dtype_name(info.input_dtype(1)),
                     ", not int64 or int32");
    }
    if (const Tensor* c = info.constant(1)) {
      pads = c->to_int64_vector();
    } else {
      pads_known = false;
    }
    if (info.has_input(2)) {
      if (info.input_dtype(2) != p.dtype) {
        return decline(why, input_label(info, 2), " (constant_value) is ",
                       dtype_name(info.input_dtype(2)), ", the data ", dtype_name(p.dtype));
      }
      if (const Tensor* c = info.constant(2)) {
        if (c->numel() > 0) p.fill = Fill::of(c->raw(), p.es);
      } else {
        p.value_input = true;
      }
    }
  }
  if (info.has_input(3)) {
    if (!int_type(info.input_dtype(3))) {
      return decline(why, input_label(info, 3), " (axes) is ", dtype_name(info.input_dtype(3)),
                     ", not int64 or int32");
    }
    if (const Tensor* c = info.constant(3)) {
      axes = c->to_int64_vector();
    } else {
      pads_known = false;
    }
  }
  const std::optional<Dims> in = info.input_shape(0);
  if (pads_known && in) {
    Dims begin, out;
    std::string bad;
    try {
      bad = pad_extents(*in, *pads, axes, p.mode, &begin, &out);
    } catch (const Error& e) {
      bad = e.what();
    }
    if (!bad.empty()) return decline(why, bad, " (left to the reference kernel)");
    if (std::optional<Dims> o = info.output_shape(0); o && *o != out) {
      return decline(why, "the output's static shape ", dims_str(*o), " is not the computed ",
                     dims_str(out));
    }
    p.geom = make_geometry(*in, begin, out, p.layout, p.es, p.mode);
  }
  return p;
}

class PadKernel : public Kernel {
 public:
  PadKernel(const NodeInfo& info, Plan p) : who_(info.node.describe()), p_(std::move(p)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    if (x.dtype() != p_.dtype || x.layout() != p_.layout) {
      fail(ErrorKind::kRuntime, who_, ": input is ", dtype_name(x.dtype()), " ",
           layout_name(x.layout()), ", planned ", dtype_name(p_.dtype), " ",
           layout_name(p_.layout));
    }
    if (x.layout() == Layout::kNHWC && x.rank() != 4) {
      fail(ErrorKind::kRuntime, who_, ": a channels-last input of rank ", x.rank());
    }
    std::optional<Geometry> local;
    const Geometry* g = p_.geom && p_.geom->in_shape == x.shape() ? &*p_.geom : nullptr;
    if (!g) {
      local = plan_now(io, x);
      g = &*local;
    }
    Fill fill = p_.fill;
    if (p_.value_input && io.has_input(2) && io.in(2).numel() > 0) {
      const Tensor& c = io.in(2);
      if (c.dtype() != x.dtype()) fail(ErrorKind::kRuntime, who_, ": constant_value type differs");
      fill = Fill::of(c.raw(), p_.es);
    }
    Tensor& y = io.output(0, x.dtype(), g->out_shape, p_.layout);
    run_geometry(*g, bytes_of(x), bytes_of(y), fill);
  }

 private:
  // The movement for pads, axes or a shape known only now.
  Geometry plan_now(const KernelIO& io, const Tensor& x) const {
    std::vector<int64_t> pads = p_.pads_attr ? p_.attr_pads : io.in(1).to_int64_vector();
    std::optional<std::vector<int64_t>> axes;
    if (io.has_input(3)) axes = io.in(3).to_int64_vector();
    Dims begin, out;
    std::string bad = pad_extents(x.shape(), pads, axes, p_.mode, &begin, &out);
    if (!bad.empty()) fail(ErrorKind::kRuntime, who_, ": ", bad);
    return make_geometry(x.shape(), begin, out, p_.layout, p_.es, p_.mode);
  }

  std::string who_;
  Plan p_;
};

std::string pad_declines(const NodeInfo& info) {
  std::string why;
  if (!make_plan(info, &why) && why.empty()) why = "does not support this configuration";
  return why;
}

std::unique_ptr<Kernel> pad_create(const NodeInfo& info) {
  std::string why;
  std::optional<Plan> p = make_plan(info, &why);
  if (!p) fail(ErrorKind::kInternal, info.node.describe(), ": cpu.pad declines: ", why);
  return std::make_unique<PadKernel>(info, std::move(*p));
}

Layout pad_output_layout(const NodeInfo& info, size_t k) {
  return k == 0 ? input_layout(info, 0) : Layout::kPlain;
}

}  // namespace

void append_pad_kernels(FactoryTable& t) {
  KernelFactory f{"cpu.pad", accepts_unless_declined<pad_declines>, pad_output_layout, pad_create,
                  nullptr};
  f.declines = pad_declines;
  t.emplace_back("Pad", f);
}

}  // namespace nnfuse::cpu
