// Data-movement kernels built on strided_copy (cpu_copy.h): Transpose, Slice, Split, Expand.
// Plain layout only; any element type of 1, 2, 4 or 8 bytes (elements are moved as bytes).
#include <algorithm>
#include <memory>

#include "kernels/cpu/cpu_copy.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/layout.h"
#include "ops/op_math.h"

namespace nnfuse::cpu {
namespace {

const std::byte* bytes_of(const Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* bytes_of(Tensor& t) { return static_cast<std::byte*>(t.raw()); }

// Input 0 movable as bytes; inputs [first, first + n) int32/int64 when present; all plain.
bool movable(const NodeInfo& info, size_t first_int = 1, size_t n_int = 0) {
  if (!info.has_input(0) || !info.node.domain().empty()) return false;
  if (!copyable_elem_size(dtype_size(info.input_dtype(0)))) return false;
  for (size_t i = first_int; i < first_int + n_int && i < info.node.num_inputs(); ++i) {
    if (info.has_input(i) && info.input_dtype(i) != DType::kInt64 &&
        info.input_dtype(i) != DType::kInt32) {
      return false;
    }
  }
  return info.all_inputs_in(Layout::kPlain);
}

void require_plain(const Tensor& t, const std::string& who) {
  if (t.layout() != Layout::kPlain) {
    fail(ErrorKind::kRuntime, who, ": input arrived in ", layout_name(t.layout()),
         " layout, planned plain");
  }
}

// ---- Transpose

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        has_perm_(info.node.has_attr("perm")),
        perm_(info.node.attr_ints("perm")) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_plain(x, who_);
    const size_t r = x.shape().size();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
    }
    if (perm.size() != r) {
      fail(ErrorKind::kRuntime, who_, ": perm has ", perm.size(), " entries for rank ", r);
    }
    std::vector<bool> seen(r, false);
    const Dims in_strides = contiguous_strides(x.shape());
    Dims out(r), strides(r);
    for (size_t i = 0; i < r; ++i) {
      const int64_t p = perm[i];
      if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)]) {
        fail(ErrorKind::kRuntime, who_, ": perm ", dims_str(perm), " is not a permutation");
      }
      seen[static_cast<size_t>(p)] = true;
      out[i] = x.dim(p);
      strides[i] = in_strides[static_cast<size_t>(p)];
    }
    Tensor& y = io.output(0, x.dtype(), out);
    strided_copy(bytes_of(x), out, strides, bytes_of(y), dtype_size(x.dtype()));
  }

 private:
  std::string who_;
  bool has_perm_;
  std::vector<int64_t> perm_;
};

bool transpose_accepts(const NodeInfo& info) {
  if (!movable(info) || info.node.num_inputs() != 1 || !single_output(info.node)) return false;
  try {
    info.node.attr_ints("perm");
  } catch (const Error&) {
    return false;
  }
  return true;
}

// ---- Slice (opset >= 10: starts, ends, axes, steps inputs)

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const NodeInfo& info) : who_(info.node.describe()) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const bool nhwc = x.layout() == Layout::kNHWC;
    if (nhwc && !channels_last_rank(x.rank())) {
      fail(ErrorKind::kRuntime, who_, ": channels-last input of rank ", x.rank());
    }
    if (!nhwc) require_plain(x, who_);
    const std::vector<int64_t> starts = io.in(1).to_int64_vector();
    const std::vector<int64_t> ends = io.in(2).to_int64_vector();
    const size_t n = starts.size();
    std::vector<int64_t> axes, steps(n, 1);
    if (io.has_input(3)) {
      axes = io.in(3).to_int64_vector();
    } else {
      for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (io.has_input(4)) steps = io.in(4).to_int64_vector();
    if (ends.size() != n || axes.size() != n || steps.size() != n) {
      fail(ErrorKind::kRuntime, who_, ": starts, ends, axes and steps differ in length");
    }
    Dims out = x.shape(), start(out.size(), 0), step(out.size(), 1);
    std::vector<bool> used(out.size(), false);
    for (size_t i = 0; i < n; ++i) {
      const size_t ax = static_cast<size_t>(checked_axis(axes[i], x.rank(), who_));
      if (used[ax]) fail(ErrorKind::kRuntime, who_, ": axis ", axes[i], " is repeated");
      used[ax] = true;
      if (steps[i] == 0) fail(ErrorKind::kRuntime, who_, ": step 0 on axis ", ax);
      const SliceAxis sa = slice_axis(out[ax], starts[i], ends[i], steps[i]);
      out[ax] = sa.len;
      start[ax] = sa.start;
      step[ax] = sa.step;
    }
    // Channels-last: the same slice over the stored dims [N, spatial..., C]. Each logical
    // axis's stride is its stored position's.
    const Dims stored_strides = contiguous_strides(storage_dims(x.shape(), x.layout()));
    Dims strides(out.size());
    int64_t base = 0;
    for (size_t a = 0; a < out.size(); ++a) {
      const int64_t in_stride = stored_strides[storage_axis(a, out.size(), x.layout())];
      base += start[a] * in_stride;
      strides[a] = step[a] * in_stride;
    }
    const Dims copy_dims = storage_dims(out, x.layout());
    const Dims copy_strides = storage_dims(strides, x.layout());
    Tensor& y = io.output(0, x.dtype(), out, x.layout());
    const size_t es = dtype_size(x.dtype());
    if (y.numel() > 0) {
      strided_copy(bytes_of(x) + static_cast<size_t>(base) * es, copy_dims, copy_strides,
                   bytes_of(y), es);
    }
  }

 private:
  std::string who_;
};

bool slice_accepts(const NodeInfo& info) {
  const size_t n = info.node.num_inputs();
  if (n < 3 || n > 5 || !info.has_input(1) || !info.has_input(2) || !single_output(info.node)) {
    return false;
  }
  if (input_layout(info, 0) == Layout::kNHWC) {
    // Channels-last data (a conv's output sliced along channels or in time): the stored dims.
    std::optional<Dims> x = info.input_shape(0);
    if (!x || !channels_last_rank(x->size())) return false;
    NodeInfo plain = info;
    plain.input_layouts[0] = Layout::kPlain;
    return movable(plain, 1, 4);
  }
  return movable(info, 1, 4);
}

Layout slice_output_layout(const NodeInfo& info, size_t) { return input_layout(info, 0); }

// ---- Split

class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        axis_(info.node.attr_int("axis", 0)),
        split_attr_(info.node.attr_ints("split")),
        has_split_attr_(info.node.has_attr("split")),
        has_num_outputs_(info.node.has_attr("num_outputs")) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_plain(x, who_);
    const size_t axis = static_cast<size_t>(checked_axis(axis_, x.rank(), who_));
    const int64_t dim = x.shape()[axis], n = static_cast<int64_t>(io.outputs.size());
    std::vector<int64_t> split;
    if (io.has_input(1) && io.in(1).numel() > 0) {
      split = io.in(1).to_int64_vector();
    } else if (has_split_attr_) {
      split = split_attr_;
    } else if (has_num_outputs_) {  // opset 18: the last chunk may be smaller
      const int64_t chunk = n > 0 ? (dim + n - 1) / n : 0;
      for (int64_t i = 0; i < n; ++i) {
        split.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
      }
    } else {
      if (n == 0 || dim % n != 0) {
        fail(ErrorKind::kRuntime, who_, ": dim ", dim, " cannot be split equally into ", n,
             " outputs");
      }
      split.assign(static_cast<size_t>(n), dim / n);
    }
    if (static_cast<int64_t>(split.size()) != n) {
      fail(ErrorKind::kRuntime, who_, ": ", split.size(), " split sizes for ", n, " outputs");
    }
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0 || s > dim) fail(ErrorKind::kRuntime, who_, ": bad split size ", s);
      total += s;
    }
    if (total != dim) {
      fail(ErrorKind::kRuntime, who_, ": split sizes ", dims_str(split), " do not sum to ", dim);
    }
    const Dims strides = contiguous_strides(x.shape());
    const size_t es = dtype_size(x.dtype());
    int64_t start = 0;
    for (size_t k = 0; k < split.size(); ++k) {
      Dims shape = x.shape();
      shape[axis] = split[k];
      Tensor& y = io.output(k, x.dtype(), shape);
      if (y.numel() > 0) {
        strided_copy(bytes_of(x) + static_cast<size_t>(start * strides[axis]) * es, shape, strides,
                     bytes_of(y), es);
      }
      start += split[k];
    }
  }

 private:
  std::string who_;
  int64_t axis_;
  std::vector<int64_t> split_attr_;
  bool has_split_attr_, has_num_outputs_;
};

bool split_accepts(const NodeInfo& info) {
  const size_t n = info.node.num_inputs();
  if (n < 1 || n > 2 || !movable(info, 1, 1) || info.node.num_outputs() < 1) return false;
  for (size_t k = 0; k < info.node.num_outputs(); ++k) {
    if (!info.node.output(k)) return false;
  }
  try {
    SplitKernel probe(info);
  } catch (const Error&) {
    return false;
  }
  return true;
}

// ---- Expand

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const NodeInfo& info) : who_(info.node.describe()) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_plain(x, who_);
    const Dims shape = io.in(1).to_int64_vector();
    for (int64_t d : shape) {
      if (d < 0) fail(ErrorKind::kRuntime, who_, ": negative dim in shape ", dims_str(shape));
    }
    std::optional<Dims> out = broadcast_dims(x.shape(), shape);
    if (!out) {
      fail(ErrorKind::kRuntime, who_, ": shape ", dims_str(x.shape()), " cannot expand to ",
           dims_str(shape));
    }
    Dims strides(out->size(), 0);
    const Dims xs = contiguous_strides(x.shape());
    const size_t off = out->size() - x.shape().size();
    for (size_t i = 0; i < x.shape().size(); ++i) strides[off + i] = x.shape()[i] == 1 ? 0 : xs[i];
    Tensor& y = io.output(0, x.dtype(), *out);
    if (y.numel() > 0) strided_copy(bytes_of(x), *out, strides, bytes_of(y), dtype_size(x.dtype()));
  }

 private:
  std::string who_;
};

bool expand_accepts(const NodeInfo& info) {
  return info.node.num_inputs() == 2 && info.has_input(1) && movable(info, 1, 1) &&
         single_output(info.node);
}

template <typename K>
std::unique_ptr<Kernel> make(const NodeInfo& info) {
  return std::make_unique<K>(info);
}

}  // namespace

void append_data_kernels(FactoryTable& t) {
  t.emplace_back("Transpose", KernelFactory{"cpu.transpose", transpose_accepts, nullptr,
                                            make<TransposeKernel>, nullptr});
  t.emplace_back("Slice", KernelFactory{"cpu.slice", slice_accepts, slice_output_layout,
                                        make<SliceKernel>, nullptr});
  t.emplace_back("Split",
                 KernelFactory{"cpu.split", split_accepts, nullptr, make<SplitKernel>, nullptr});
  t.emplace_back("Expand",
                 KernelFactory{"cpu.expand", expand_accepts, nullptr, make<ExpandKernel>, nullptr});
}

}  // namespace nnfuse::cpu
