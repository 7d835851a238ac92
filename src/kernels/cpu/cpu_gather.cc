// Gather, Concat (blocks of bytes, any element type of 1, 2, 4 or 8 bytes; Gather in plain
// layout, Concat in plain or channels-last, where it concatenates the stored dims) and Cast
// between float32, float64, int32, int64 and bool (layout-transparent).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "ir/half.h"
#include "kernels/cpu/cpu_copy.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/layout.h"
#include "kernels/ref/util.h"

namespace nnfuse::cpu {
namespace {

const std::byte* bytes_of(const Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* bytes_of(Tensor& t) { return static_cast<std::byte*>(t.raw()); }

bool int_index_type(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

// Copies `bytes` bytes; the common element-sized blocks without a call.
inline void copy_block(std::byte* dst, const std::byte* src, size_t bytes) {
  switch (bytes) {
    case 4:
      std::memcpy(dst, src, 4);
      return;
    case 8:
      std::memcpy(dst, src, 8);
      return;
    case 12:
      std::memcpy(dst, src, 12);
      return;
    case 16:
      std::memcpy(dst, src, 16);
      return;
    default:
      std::memcpy(dst, src, bytes);
  }
}

// ---- Gather: out = x[..., indices, ...] along `axis`.

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const NodeInfo& info)
      : who_(info.node.describe()), axis_(info.node.attr_int("axis", 0)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& ind = io.in(1);
    const bool nhwc = x.layout() == Layout::kNHWC;
    if (ind.layout() != Layout::kPlain || (nhwc && (x.rank() != 4 || ind.rank() != 1))) {
      fail(ErrorKind::kRuntime, who_,
           ": indices must be plain, and channels-last data 4-D with 1-D indices");
    }
    if (!nhwc && x.layout() != Layout::kPlain) {
      fail(ErrorKind::kRuntime, who_, ": data in an unsupported layout");
    }
    if (!int_index_type(ind.dtype())) {
      fail(ErrorKind::kRuntime, who_, ": indices have type ", dtype_name(ind.dtype()));
    }
    const size_t axis = static_cast<size_t>(checked_axis(axis_, x.rank(), who_));
    const int64_t d = x.shape()[axis];
    std::vector<int64_t> ids = ind.to_int64_vector();
    for (int64_t& v : ids) {
      const int64_t r = v < 0 ? v + d : v;
      if (r < 0 || r >= d) {
        fail(ErrorKind::kRuntime, who_, ": index ", v, " is out of range for a dim of ", d);
      }
      v = r;
    }
    Dims out(x.shape().begin(), x.shape().begin() + static_cast<int64_t>(axis));
    out.insert(out.end(), ind.shape().begin(), ind.shape().end());
    out.insert(out.end(), x.shape().begin() + static_cast<int64_t>(axis) + 1, x.shape().end());
    Tensor& y = io.output(0, x.dtype(), out, x.layout());
    // Channels-last (1-D indices keep the rank): the same gather over the stored dims.
    const Dims stored = storage_dims(x.shape(), x.layout());
    const size_t saxis = storage_axis(axis, x.rank(), x.layout());
    const int64_t outer = numel_of(stored, 0, saxis);
    const int64_t inner = numel_of(stored, saxis + 1, stored.size());
    const int64_t n = static_cast<int64_t>(ids.size());
    const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
    const std::byte* src = bytes_of(x);
    std::byte* dst = bytes_of(y);
    if (inner == 1) {
      // Single elements along the innermost dim (a channels-last channel permutation, an
      // embedding column pick): a row of picks per outer index.
      auto rows = [&](auto elem) {
        using T = decltype(elem);
        const T* ps = reinterpret_cast<const T*>(src);
        T* pd = reinterpret_cast<T*>(dst);
        parallel_blocks(outer, y.numel(), [&](int64_t o0, int64_t o1) {
          for (int64_t o = o0; o < o1; ++o) {
            const T* row = ps + o * d;
            T* out = pd + o * n;
            for (int64_t j = 0; j < n; ++j) out[j] = row[ids[static_cast<size_t>(j)]];
          }
        });
      };
      switch (block) {
        case 1:
          return rows(uint8_t{});
        case 2:
          return rows(uint16_t{});
        case 4:
          return rows(uint32_t{});
        case 8:
          return rows(uint64_t{});
        default:
          break;
      }
    }
    parallel_blocks(outer * n, y.numel(), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / n, id = ids[static_cast<size_t>(t % n)];
        copy_block(dst + static_cast<size_t>(t) * block,
                   src + static_cast<size_t>(o * d + id) * block, block);
      }
    });
  }

 private:
  std::string who_;
  int64_t axis_;
};

bool gather_accepts(const NodeInfo& info) {
  if (!info.node.domain().empty() || info.node.num_inputs() != 2 || !info.has_input(0) ||
      !info.has_input(1) || !copyable_elem_size(dtype_size(info.input_dtype(0))) ||
      !int_index_type(info.input_dtype(1)) || !single_output(info.node) ||
      input_layout(info, 1) != Layout::kPlain) {
    return false;
  }
  if (input_layout(info, 0) == Layout::kPlain) return true;
  // Channels-last data: 4-D, with 1-D indices (a channel permutation keeps the layout).
  std::optional<Dims> x = info.input_shape(0), i = info.input_shape(1);
  return input_layout(info, 0) == Layout::kNHWC && x && x->size() == 4 && i && i->size() == 1;
}

Layout gather_output_layout(const NodeInfo& info, size_t) { return input_layout(info, 0); }

// ---- Concat along `axis`.

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const NodeInfo& info)
      : who_(info.node.describe()), axis_(info.node.attr_int("axis", 0)) {}

  void run(KernelIO& io) override {
    const size_t nin = io.inputs.size();
    const Tensor& first = io.in(0);
    const Layout layout = first.layout();
    if (layout == Layout::kNHWC && !channels_last_rank(first.rank())) {
      fail(ErrorKind::kRuntime, who_, ": channels-last input 0 must have rank 3 to 5");
    }
    const size_t axis = static_cast<size_t>(checked_axis(axis_, first.rank(), who_));
    Dims out = first.shape();
    out[axis] = 0;
    for (size_t i = 0; i < nin; ++i) {
      const Tensor& t = io.in(i);
      if (t.dtype() != first.dtype() || t.rank() != first.rank() || t.layout() != layout) {
        fail(ErrorKind::kRuntime, who_, ": input ", i,
             " differs in type, rank or layout from input 0");
      }
      for (size_t d = 0; d < out.size(); ++d) {
        if (d != axis && t.shape()[d] != first.shape()[d]) {
          fail(ErrorKind::kRuntime, who_, ": input ", i, " has shape ", dims_str(t.shape()),
               ", input 0 has ", dims_str(first.shape()));
        }
      }
      out[axis] += t.shape()[axis];
    }
    Tensor& y = io.output(0, first.dtype(), out, layout);
    if (y.numel() == 0) return;
    // Channels-last storage is the plain storage of [N, spatial..., C]: concatenate those dims.
    const Dims stored = storage_dims(out, layout);
    const size_t saxis = storage_axis(axis, out.size(), layout);
    const size_t es = dtype_size(first.dtype());
    const int64_t outer = numel_of(stored, 0, saxis);
    const int64_t inner = numel_of(stored, saxis + 1, stored.size());
    const size_t row = static_cast<size_t>(stored[saxis] * inner) * es;
    std::vector<size_t> block(nin), offset(nin);
    size_t biggest = 0;
    for (size_t i = 0, off = 0; i < nin; ++i) {
      block[i] = static_cast<size_t>(io.in(i).shape()[axis] * inner) * es;
      offset[i] = off;
      off += block[i];
      biggest = std::max(biggest, block[i]);
    }
    std::byte* dst = bytes_of(y);
    // An input whose storage is its part of the output already (the plan's Concat in place: its
    // kernel wrote it there) is not copied; nothing else reads it.
    std::vector<char> placed(nin);
    for (size_t i = 0; i < nin; ++i) placed[i] = bytes_of(io.in(i)) == dst + offset[i] ? 1 : 0;
    if (biggest <= 32) {
      // Blocks of a few elements (torch.stack of coordinates along a new last dim: [..., 1]
      // pieces of a grid or of boxes): rows of the output in parallel, each block a copy
      // of a word or two rather than a task of its own.
      parallel_blocks(outer, y.numel(), [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          std::byte* out = dst + static_cast<size_t>(o) * row;
          for (size_t i = 0; i < nin; ++i) {
            if (placed[i]) continue;
            copy_block(out + offset[i], bytes_of(io.in(i)) + static_cast<size_t>(o) * block[i],
                       block[i]);
          }
        }
      });
      return;
    }
    // Tasks: (outer row, input, piece); pieces only when there are few large blocks.
    const int64_t threads = omp_get_max_threads();
    const int64_t blocks = outer * static_cast<int64_t>(nin);
    int64_t pieces = 1;
    if (blocks < 4 * threads) {
      pieces = std::clamp<int64_t>((4 * threads + blocks - 1) / blocks, 1,
                                   std::max<int64_t>(1, static_cast<int64_t>(biggest >> 16)));
    }
    parallel_tasks(blocks * pieces, y.numel(), [&](int64_t t) {
      const int64_t p = t % pieces, b = t / pieces;
      const size_t i = static_cast<size_t>(b % static_cast<int64_t>(nin));
      const int64_t o = b / static_cast<int64_t>(nin);
      const size_t piece =
          (block[i] + static_cast<size_t>(pieces) - 1) / static_cast<size_t>(pieces);
      const size_t lo = std::min(block[i], static_cast<size_t>(p) * piece);
      const size_t hi = std::min(block[i], lo + piece);
      if (lo < hi && !placed[i]) {
        std::memcpy(dst + static_cast<size_t>(o) * row + offset[i] + lo,
                    bytes_of(io.in(i)) + static_cast<size_t>(o) * block[i] + lo, hi - lo);
      }
    });
  }

 private:
  std::string who_;
  int64_t axis_;
};

bool concat_accepts(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() < 1 || !n.has_attr("axis") || !single_output(n)) {
    return false;
  }
  const DType t = info.input_dtype(0);
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (!info.has_input(i) || info.input_dtype(i) != t) return false;
  }
  try {
    n.attr_int("axis", 0);
  } catch (const Error&) {
    return false;
  }
  if (!copyable_elem_size(dtype_size(t))) return false;
  if (info.all_inputs_in(Layout::kPlain)) return true;
  if (!info.all_inputs_in(Layout::kNHWC)) return false;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    std::optional<Dims> s = info.input_shape(i);
    if (!s || !channels_last_rank(s->size())) return false;
  }
  return true;
}

// Concat's output is stored like its inputs (all in one layout, or the planner makes them plain).
Layout concat_output_layout(const NodeInfo& info, size_t) { return input_layout(info, 0); }

// ---- Cast

bool cast_type(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt32 || t == DType::kInt64 ||
         t == DType::kBool;
}

template <typename F>
void with_cast_type(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    default:
      return f(bool{});
  }
}

// float32 to and from float16 / bfloat16: the casts at the inputs and outputs of a model stored
// in half precision, which runs in float32 inside.
bool half_pair(DType from, DType to) {
  return (from == DType::kFloat32 && dtype_is_half(to)) ||
         (dtype_is_half(from) && to == DType::kFloat32);
}

template <typename H>
void cast_half(const Tensor& x, Tensor& y, bool widen) {
  parallel_range(x.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
    if (widen) {
      const H* src = x.data<H>();
      float* dst = y.data<float>();
      for (int64_t i = lo; i < hi; ++i) dst[i] = half_to_float(src[i]);
    } else {
      const float* src = x.data<float>();
      H* dst = y.data<H>();
      for (int64_t i = lo; i < hi; ++i) dst[i] = to_half<H>(src[i]);
    }
  });
}

DType cast_target(const Node& n) {
  const int64_t to = n.attr_int("to", 0);
  return to > 0 && to <= 16 ? static_cast<DType>(to) : DType::kUndefined;
}

class CastKernel : public Kernel {
 public:
  explicit CastKernel(const NodeInfo& info)
      : who_(info.node.describe()), to_(cast_target(info.node)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    if (half_pair(x.dtype(), to_)) {
      Tensor& y = io.output(0, to_, x.shape(), x.layout());
      const DType h = x.dtype() == DType::kFloat32 ? to_ : x.dtype();
      if (h == DType::kFloat16) {
        cast_half<Float16>(x, y, x.dtype() != DType::kFloat32);
      } else {
        cast_half<BFloat16>(x, y, x.dtype() != DType::kFloat32);
      }
      return;
    }
    if (!cast_type(x.dtype())) {
      fail(ErrorKind::kRuntime, who_, ": input type ", dtype_name(x.dtype()), " is not supported");
    }
    Tensor& y = io.output(0, to_, x.shape(), x.layout());
    if (x.dtype() == to_) {
      if (y.raw() != x.raw()) std::memcpy(y.raw(), x.raw(), x.nbytes());
      return;
    }
    with_cast_type(x.dtype(), [&](auto from_tag) {
      using From = decltype(from_tag);
      with_cast_type(to_, [&](auto to_tag) {
        using To = decltype(to_tag);
        const From* src = x.data<From>();
        To* dst = y.data<To>();
        parallel_range(x.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) dst[i] = convert_value<To, From>(src[i]);
        });
      });
    });
  }

 private:
  std::string who_;
  DType to_;
};

bool cast_accepts(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 1 || !info.has_input(0) || !single_output(n)) {
    return false;
  }
  try {
    const DType from = info.input_dtype(0), to = cast_target(n);
    return (cast_type(to) && cast_type(from)) || half_pair(from, to);
  } catch (const Error&) {
    return false;
  }
}

Layout cast_output_layout(const NodeInfo& info, size_t) { return input_layout(info, 0); }

template <typename K>
std::unique_ptr<Kernel> make(const NodeInfo& info) {
  return std::make_unique<K>(info);
}

}  // namespace

void append_gather_kernels(FactoryTable& t) {
  t.emplace_back("Gather", KernelFactory{"cpu.gather", gather_accepts, gather_output_layout,
                                         make<GatherKernel>, nullptr});
  t.emplace_back("Concat", KernelFactory{.name = "cpu.concat",
                                         .accepts = concat_accepts,
                                         .output_layout = concat_output_layout,
                                         .create = make<ConcatKernel>,
                                         .assembles_in_place = true});
  t.emplace_back("Cast", KernelFactory{"cpu.cast", cast_accepts, cast_output_layout,
                                       make<CastKernel>, nullptr});
}

}  // namespace nnfuse::cpu
