// Reference kernels for shape and layout ops: Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
// Concat, Split, Slice, Expand, Tile, Shape, Size, Identity, Dropout, DepthToSpace,
// SpaceToDepth, Trilu. Elements are moved as bytes, so every fixed-size dtype works.
#include <algorithm>
#include <limits>

#include "kernels/ref/shape_internal.h"
#include "ops/op_math.h"

namespace nnfuse {

namespace ref {

std::string require_fixed_size(const Node& node, size_t i) {
  const Value* v = node.input(i);
  if (!v || v->dtype() == DType::kUndefined || dtype_size(v->dtype()) > 0) return "";
  return "input " + std::to_string(i) + " of type " + dtype_name(v->dtype()) + " is not supported";
}

std::string require_int_input(const Node& node, size_t i) {
  return require_input_types(node, {DType::kInt64, DType::kInt32}, i, 1);
}

}  // namespace ref

namespace {

using ref::bytes;
using ref::checked_mul;
using ref::copy_elems;
using ref::dims_product;
using ref::normalize_axis;

// Support: data input 0 of any fixed-size type; inputs [first, first + n) int32/int64.
template <size_t first, size_t n>
std::string data_and_ints(const Node& node, int64_t) {
  std::string r = ref::require_fixed_size(node, 0);
  for (size_t i = first; i < first + n && r.empty(); ++i) r = ref::require_int_input(node, i);
  return r;
}
std::string data_only(const Node& node, int64_t) { return ref::require_fixed_size(node, 0); }

// Axes from input `i` (opset >= 13 style) or else the "axes" attribute (older opsets).
std::vector<int64_t> axes_arg(const KernelContext& ctx, size_t i, bool* given) {
  if (ctx.has_input(i)) {
    *given = true;
    return ctx.in(i).to_int64_vector();
  }
  *given = ctx.node.has_attr("axes");
  return ctx.node.attr_ints("axes");
}

// Normalized, duplicate-free axes.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    const Node& node) {
  std::vector<int64_t> r;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, node);
    NNFUSE_CHECK(std::find(r.begin(), r.end(), n) == r.end(), node.describe(), ": axis ", a,
                 " is repeated");
    r.push_back(n);
  }
  return r;
}

Dims reshape_dims(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Node& node = ctx.node;
  std::vector<int64_t> spec = ctx.in(1).to_int64_vector();
  bool allowzero = node.attr_int("allowzero", 0) != 0;
  Dims out(spec.size());
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      NNFUSE_CHECK(static_cast<int64_t>(i) < x.rank(), node.describe(), ": shape ", dims_str(spec),
                   " copies dim ", i, " of an input of rank ", x.rank());
      d = x.dim(static_cast<int64_t>(i));
    }
    if (d == -1) {
      NNFUSE_CHECK(infer < 0, node.describe(), ": shape ", dims_str(spec), " has two -1 dims");
      infer = static_cast<int64_t>(i);
      continue;
    }
    NNFUSE_CHECK(d >= 0, node.describe(), ": shape ", dims_str(spec), " has a negative dim");
    out[i] = d;
    known = checked_mul(known, d, node);
  }
  if (infer >= 0) {
    NNFUSE_CHECK(known != 0 && x.numel() % known == 0, node.describe(), ": cannot reshape ",
                 dims_str(x.shape()), " to ", dims_str(spec));
    out[static_cast<size_t>(infer)] = x.numel() / known;
  } else {
    NNFUSE_CHECK(known == x.numel(), node.describe(), ": cannot reshape ", dims_str(x.shape()),
                 " (", x.numel(), " elements) to ", dims_str(spec));
  }
  return out;
}

Dims flatten_dims(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = ctx.node.attr_int("axis", 1);
  NNFUSE_CHECK(axis >= -x.rank() && axis <= x.rank(), ctx.node.describe(), ": axis ", axis,
               " is out of range for rank ", x.rank());
  size_t a = static_cast<size_t>(axis < 0 ? axis + x.rank() : axis);
  return {dims_product(x.shape(), 0, a), dims_product(x.shape(), a, x.shape().size())};
}

Dims squeeze_dims(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  bool given = false;
  std::vector<int64_t> axes = normalize_axes(axes_arg(ctx, 1, &given), x.rank(), ctx.node);
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (given) {
      NNFUSE_CHECK(!listed || x.dim(i) == 1, ctx.node.describe(), ": cannot squeeze axis ", i,
                   " of size ", x.dim(i));
    } else {
      listed = x.dim(i) == 1;
    }
    if (!listed) out.push_back(x.dim(i));
  }
  return out;
}

Dims unsqueeze_dims(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  bool given = false;
  std::vector<int64_t> raw = axes_arg(ctx, 1, &given);
  NNFUSE_CHECK(given, ctx.node.describe(), ": axes are required");
  int64_t r = x.rank() + static_cast<int64_t>(raw.size());
  std::vector<int64_t> axes = normalize_axes(raw, r, ctx.node);
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < r; ++i) {
    bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    out.push_back(listed ? 1 : x.shape()[next++]);
  }
  return out;
}

// Reshape, Flatten, Squeeze and Unsqueeze move no element: their output is the input's data
// under the dims these give.
void run_view(KernelContext& ctx) {
  ctx.outputs[0] = ctx.in(0).clone().reshaped(view_output_dims(ctx));
}

void run_transpose(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  size_t r = x.shape().size();
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (!ctx.node.has_attr("perm")) {
    for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
  }
  NNFUSE_CHECK(perm.size() == r, ctx.node.describe(), ": perm has ", perm.size(),
               " entries for rank ", r);
  std::vector<bool> seen(r, false);
  Dims out(r), strides(r), in_strides = contiguous_strides(x.shape());
  for (size_t i = 0; i < r; ++i) {
    int64_t p = perm[i];
    NNFUSE_CHECK(p >= 0 && p < static_cast<int64_t>(r) && !seen[static_cast<size_t>(p)],
                 ctx.node.describe(), ": perm ", dims_str(perm), " is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    out[i] = x.dim(p);
    strides[i] = in_strides[static_cast<size_t>(p)];
  }
  Tensor y(x.dtype(), out);
  for (ref::BroadcastIter it(out, {strides}); !it.done(); it.next()) {
    copy_elems(y, it.linear(), x, it.offset(0));
  }
  ctx.outputs[0] = y;
}

void run_concat(KernelContext& ctx) {
  const Node& node = ctx.node;
  NNFUSE_CHECK(node.has_attr("axis"), node.describe(), ": attribute 'axis' is required");
  const Tensor& first = ctx.in(0);
  int64_t axis = normalize_axis(node.attr_int("axis", 0), first.rank(), node);
  Dims out = first.shape();
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.in(i);
    NNFUSE_CHECK(t.dtype() == first.dtype() && t.rank() == first.rank(), node.describe(),
                 ": input ", i, " differs in type or rank from input 0");
    for (int64_t d = 0; d < t.rank(); ++d) {
      NNFUSE_CHECK(d == axis || t.dim(d) == first.dim(d), node.describe(), ": input ", i,
                   " has shape ", dims_str(t.shape()), ", input 0 has ", dims_str(first.shape()));
    }
    out[static_cast<size_t>(axis)] += t.dim(axis);
  }
  Tensor y = Tensor::uninitialized(first.dtype(), out);
  int64_t outer = dims_product(out, 0, static_cast<size_t>(axis)), pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.in(i);
      int64_t block = outer ? t.numel() / outer : 0;
      copy_elems(y, pos, t, o * block, block);
      pos += block;
    }
  }
  ctx.outputs[0] = y;
}

void run_split(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  int64_t axis = normalize_axis(node.attr_int("axis", 0), x.rank(), node);
  int64_t dim = x.dim(axis), n = static_cast<int64_t>(ctx.outputs.size());
  std::vector<int64_t> split;
  if (ctx.has_input(1) && ctx.in(1).numel() > 0) {
    split = ctx.in(1).to_int64_vector();
  } else if (node.has_attr("split")) {
    split = node.attr_ints("split");
  } else if (node.has_attr("num_outputs")) {  // opset 18: the last chunk may be smaller
    int64_t chunk = n > 0 ? (dim + n - 1) / n : 0;
    for (int64_t i = 0; i < n; ++i) split.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  } else {
    NNFUSE_CHECK(n > 0 && dim % n == 0, node.describe(), ": dim ", dim,
                 " cannot be split equally into ", n, " outputs");
    split.assign(static_cast<size_t>(n), dim / n);
  }
  NNFUSE_CHECK(static_cast<int64_t>(split.size()) == n, node.describe(), ": ", split.size(),
               " split sizes for ", n, " outputs");
  int64_t total = 0;
  for (int64_t s : split) {
    NNFUSE_CHECK(s >= 0 && s <= dim, node.describe(), ": bad split size ", s);
    total += s;
  }
  NNFUSE_CHECK(total == dim, node.describe(), ": split sizes ", dims_str(split), " do not sum to ",
               dim);
  int64_t outer = dims_product(x.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  int64_t start = 0;
  for (int64_t k = 0; k < n; ++k) {
    Dims shape = x.shape();
    shape[static_cast<size_t>(axis)] = split[static_cast<size_t>(k)];
    Tensor y(x.dtype(), shape);
    int64_t block = split[static_cast<size_t>(k)] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      copy_elems(y, o * block, x, (o * dim + start) * inner, block);
    }
    start += split[static_cast<size_t>(k)];
    ctx.outputs[static_cast<size_t>(k)] = y;
  }
}

void run_slice(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> starts = ctx.in(1).to_int64_vector(), ends = ctx.in(2).to_int64_vector();
  size_t n = starts.size();
  std::vector<int64_t> axes, steps(n, 1);
  if (ctx.has_input(3)) {
    axes = ctx.in(3).to_int64_vector();
  } else {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (ctx.has_input(4)) steps = ctx.in(4).to_int64_vector();
  NNFUSE_CHECK(ends.size() == n && axes.size() == n && steps.size() == n, node.describe(),
               ": starts, ends, axes and steps differ in length");
  axes = normalize_axes(axes, x.rank(), node);
  Dims out = x.shape(), start(out.size(), 0), step(out.size(), 1);
  for (size_t i = 0; i < n; ++i) {
    size_t ax = static_cast<size_t>(axes[i]);
    NNFUSE_CHECK(steps[i] != 0, node.describe(), ": step 0 on axis ", ax);
    const SliceAxis a = slice_axis(out[ax], starts[i], ends[i], steps[i]);
    out[ax] = a.len;
    start[ax] = a.start;
    step[ax] = a.step;
  }
  Dims in_strides = contiguous_strides(x.shape()), strides(out.size(), 0);
  int64_t base = 0;
  for (size_t a = 0; a < out.size(); ++a) {
    base += start[a] * in_strides[a];
    strides[a] = step[a] * in_strides[a];  // |step| < dim or step 1: no overflow
  }
  Tensor y = Tensor::uninitialized(x.dtype(), out);
  ref::copy_strided(y, x, out, strides, base);
  ctx.outputs[0] = y;
}

void run_expand(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Dims shape = ctx.in(1).to_int64_vector();
  for (int64_t d : shape) {
    NNFUSE_CHECK(d >= 0, ctx.node.describe(), ": negative dim in shape ", dims_str(shape));
  }
  Dims out = ref::broadcast_shapes(x.shape(), shape, ctx.node);
  Tensor y = Tensor::uninitialized(x.dtype(), out);
  ref::copy_strided(y, x, out, ref::broadcast_strides(x.shape(), out), 0);
  ctx.outputs[0] = y;
}

void run_tile(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> reps = ctx.in(1).to_int64_vector();
  NNFUSE_CHECK(static_cast<int64_t>(reps.size()) == x.rank(), ctx.node.describe(), ": ",
               reps.size(), " repeats for rank ", x.rank());
  Dims out(x.shape().size());
  for (size_t i = 0; i < out.size(); ++i) {
    NNFUSE_CHECK(reps[i] >= 0, ctx.node.describe(), ": negative repeat ", reps[i]);
    out[i] = checked_mul(x.shape()[i], reps[i], ctx.node);
  }
  Tensor y(x.dtype(), out);
  if (y.numel() > 0) {
    Dims idx(out.size(), 0), strides = contiguous_strides(x.shape());
    int64_t pos = 0;
    do {
      int64_t off = 0;
      for (size_t i = 0; i < idx.size(); ++i) off += (idx[i] % x.shape()[i]) * strides[i];
      copy_elems(y, pos++, x, off);
    } while (ref::next_index(idx, out));
  }
  ctx.outputs[0] = y;
}

void run_shape(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t r = x.rank();
  auto clamp_end = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  int64_t start = clamp_end(ctx.node.attr_int("start", 0));
  int64_t end = clamp_end(ctx.node.attr_int("end", r));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x.dim(i));
  ctx.outputs[0] = Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}

void run_size(KernelContext& ctx) { ctx.outputs[0] = Tensor::scalar<int64_t>(ctx.in(0).numel()); }

void run_identity(KernelContext& ctx) { ctx.outputs[0] = ctx.in(0).clone(); }

void run_dropout(KernelContext& ctx) {
  // Inference: the output is the input. Training mode with a non-zero ratio would need
  // random numbers, which the oracle cannot reproduce.
  if (ctx.has_input(2) && ctx.in(2).numel() > 0 && ctx.in(2).int_at(0) != 0) {
    double ratio = ctx.has_input(1) ? ctx.in(1).double_at(0) : 0.5;
    if (ratio != 0) {
      fail(ErrorKind::kUnsupported, ctx.node.describe(),
           ": training-mode dropout is not supported");
    }
  }
  const Tensor& x = ctx.in(0);
  ctx.outputs[0] = x.clone();
  if (ctx.wants_output(1) && ctx.outputs.size() > 1) {
    Tensor mask(DType::kBool, x.shape());
    bool* m = mask.data<bool>();
    std::fill(m, m + mask.numel(), true);
    ctx.outputs[1] = mask;
  }
}

std::string dropout_support(const Node& node, int64_t) {
  std::string r = ref::require_fixed_size(node, 0);
  if (r.empty()) {
    r = ref::require_input_types(node, {DType::kFloat32, DType::kFloat64}, 1, 1);
  }
  return r.empty() ? ref::require_input_types(node, {DType::kBool}, 2, 1) : r;
}

// Block size of DepthToSpace/SpaceToDepth, with a rank-4 input.
int64_t block_size(const KernelContext& ctx) {
  int64_t b = ctx.node.attr_int("blocksize", 0);
  NNFUSE_CHECK(b > 0 && b <= (1 << 20), ctx.node.describe(), ": bad blocksize ", b);
  NNFUSE_CHECK(ctx.in(0).rank() == 4, ctx.node.describe(), ": input must have rank 4, not ",
               ctx.in(0).rank());
  return b;
}

void run_depth_to_space(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t b = block_size(ctx), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  bool crd = ctx.node.attr_string("mode", "DCR") == "CRD";
  NNFUSE_CHECK(C % (b * b) == 0, ctx.node.describe(), ": channels ", C,
               " are not divisible by blocksize^2 ", b * b);
  int64_t oc = C / (b * b), oh = checked_mul(H, b, ctx.node), ow = checked_mul(W, b, ctx.node);
  Tensor y(x.dtype(), {N, oc, oh, ow});
  int64_t pos = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < oc; ++c) {
      for (int64_t h = 0; h < oh; ++h) {
        for (int64_t w = 0; w < ow; ++w) {
          int64_t i = h % b, j = w % b;
          int64_t ic = crd ? c * b * b + i * b + j : (i * b + j) * oc + c;
          copy_elems(y, pos++, x, ((n * C + ic) * H + h / b) * W + w / b);
        }
      }
    }
  }
  ctx.outputs[0] = y;
}

std::string depth_to_space_support(const Node& node, int64_t opset) {
  std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return "mode '" + mode + "' is not supported";
  return data_only(node, opset);
}

void run_space_to_depth(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t b = block_size(ctx), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  NNFUSE_CHECK(H % b == 0 && W % b == 0, ctx.node.describe(), ": spatial dims ", H, "x", W,
               " are not divisible by blocksize ", b);
  int64_t oc = checked_mul(C, b * b, ctx.node), oh = H / b, ow = W / b;
  Tensor y(x.dtype(), {N, oc, oh, ow});
  int64_t pos = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < oc; ++c) {
      int64_t ic = c % C, i = c / C / b, j = c / C % b;
      for (int64_t h = 0; h < oh; ++h) {
        for (int64_t w = 0; w < ow; ++w) {
          copy_elems(y, pos++, x, ((n * C + ic) * H + h * b + i) * W + w * b + j);
        }
      }
    }
  }
  ctx.outputs[0] = y;
}

void run_trilu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  NNFUSE_CHECK(x.rank() >= 2, ctx.node.describe(), ": input must have rank >= 2");
  int64_t k = 0;
  if (ctx.has_input(1)) {
    NNFUSE_CHECK(ctx.in(1).numel() == 1, ctx.node.describe(), ": k must be a scalar");
    k = ctx.in(1).int_at(0);
  }
  bool upper = ctx.node.attr_int("upper", 1) != 0;
  int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  Tensor y(x.dtype(), x.shape());  // zero-filled
  for (int64_t pos = 0; pos < x.numel(); ++pos) {
    int64_t j = pos % cols, i = pos / cols % rows;
    if (upper ? j - i >= k : j - i <= k) copy_elems(y, pos, x, pos);
  }
  ctx.outputs[0] = y;
}

}  // namespace

Dims view_output_dims(const KernelContext& ctx) {
  switch (ctx.node.op()) {
    case Op::kReshape:
      return reshape_dims(ctx);
    case Op::kFlatten:
      return flatten_dims(ctx);
    case Op::kSqueeze:
      return squeeze_dims(ctx);
    case Op::kUnsqueeze:
      return unsqueeze_dims(ctx);
    case Op::kIdentity:
    case Op::kDropout:
      return ctx.in(0).shape();
    default:
      fail(ErrorKind::kInternal, ctx.node.describe(), ": not a view op");
  }
}

void append_shape_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"Reshape", run_view, data_and_ints<1, 1>});
  t.push_back({"Flatten", run_view, data_only});
  t.push_back({"Transpose", run_transpose, data_only});
  t.push_back({"Squeeze", run_view, data_and_ints<1, 1>});
  t.push_back({"Unsqueeze", run_view, data_and_ints<1, 1>});
  t.push_back({"Concat", run_concat, data_only});
  t.push_back({"Split", run_split, data_and_ints<1, 1>});
  t.push_back({"Slice", run_slice, data_and_ints<1, 4>});
  t.push_back({"Expand", run_expand, data_and_ints<1, 1>});
  t.push_back({"Tile", run_tile, data_and_ints<1, 1>});
  t.push_back({"Shape", run_shape, data_only});
  t.push_back({"Size", run_size, data_only});
  t.push_back({"Identity", run_identity, data_only});
  t.push_back({"Dropout", run_dropout, dropout_support});
  t.push_back({"DepthToSpace", run_depth_to_space, depth_to_space_support});
  t.push_back({"SpaceToDepth", run_space_to_depth, data_only});
  t.push_back({"Trilu", run_trilu, data_and_ints<1, 1>});
  ref::append_index_kernels(t);
}

}  // namespace nnfuse
