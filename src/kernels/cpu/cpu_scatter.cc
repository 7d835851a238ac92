// ScatterElements when the indices span the data on every dim but the axis (torchvision's
// multi-scale RoI pooling merges its levels so: the rows of each level's result scattered into
// the pooled tensor by an index expanded over channels and bins; a mixture-of-experts layer sums
// each expert's rows back into the tokens with scatter_add). The data is copied once, then every
// (outer, inner) column takes its updates in index order, columns in parallel: a destination is
// only ever written from its own column, so a later duplicate index wins, and a reduction (add,
// mul, max, min: float32, int32 and int64 data) combines them in the reference kernel's order.
// Other shapes run the reference kernel.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "kernels/cpu/cpu_copy.h"
#include "kernels/cpu/cpu_internal.h"

namespace nnfuse::cpu {
namespace {

// Elements of a column piece one task writes: long enough to stream, short enough to share out.
constexpr int64_t kColumnPiece = 2048;

// The data types a reduction runs on here.
bool reducible(DType t) { return t == DType::kFloat32 || t == DType::kInt32 || t == DType::kInt64; }

class ScatterElementsKernel : public Kernel {
 public:
  explicit ScatterElementsKernel(const NodeInfo& info)
      : node_(info.node),
        opset_(info.opset),
        who_(info.node.describe()),
        axis_(info.node.attr_int("axis", 0)),
        reduction_(reduction_of(info.node.attr_string("reduction", "none"))) {}

  enum class Reduction { kNone, kAdd, kMul, kMax, kMin, kUnknown };
  static Reduction reduction_of(const std::string& r) {
    if (r == "none") return Reduction::kNone;
    if (r == "add") return Reduction::kAdd;
    if (r == "mul") return Reduction::kMul;
    if (r == "max") return Reduction::kMax;
    if (r == "min") return Reduction::kMin;
    return Reduction::kUnknown;
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& ind = io.in(1);
    const Tensor& upd = io.in(2);
    if (!fits(x, ind, upd)) return run_reference(node_, opset_, io);
    const int64_t rank = x.rank();
    const size_t axis = static_cast<size_t>(checked_axis(axis_, rank, who_));
    Tensor& y = io.output(0, x.dtype(), x.shape());
    if (y.raw() != x.raw() && x.nbytes() > 0) {
      const auto* src = static_cast<const std::byte*>(x.raw());
      auto* dst = static_cast<std::byte*>(y.raw());
      parallel_range(static_cast<int64_t>(x.nbytes()), kParallelGrain * 4,
                     [&](int64_t b0, int64_t b1) {
                       std::memcpy(dst + b0, src + b0, static_cast<size_t>(b1 - b0));
                     });
    }
    const Dims& s = x.shape();
    const int64_t outer = numel_of(s, 0, axis), d = s[axis];
    const int64_t inner = numel_of(s, axis + 1, s.size()), n = ind.dim(static_cast<int64_t>(axis));
    if (outer == 0 || inner == 0 || n == 0) return;
    const int64_t pieces = (inner + kColumnPiece - 1) / kColumnPiece;
    std::atomic<int64_t> bad_at{-1};
    auto scatter = [&](auto elem, auto index) {
      using T = decltype(elem);
      using I = decltype(index);
      const T* pu = static_cast<const T*>(upd.raw());
      const I* pi = static_cast<const I*>(ind.raw());
      T* py = static_cast<T*>(y.raw());
      parallel_tasks(outer * pieces, outer * n * inner, [&](int64_t task) {
        const int64_t o = task / pieces, j0 = task % pieces * kColumnPiece;
        const int64_t j1 = std::min(inner, j0 + kColumnPiece);
        T* out = py + o * d * inner;
        for (int64_t t = 0; t < n; ++t) {
          const int64_t row = (o * n + t) * inner;
          for (int64_t j = j0; j < j1; ++j) {
            int64_t v = static_cast<int64_t>(pi[row + j]);
            if (v < 0) v += d;
            if (v < 0 || v >= d) {
              int64_t none = -1;
              bad_at.compare_exchange_strong(none, row + j);
              continue;
            }
            T& dst = out[v * inner + j];
            const T u = pu[row + j];
            switch (reduction_) {
              case Reduction::kAdd:
                dst = static_cast<T>(dst + u);
                break;
              case Reduction::kMul:
                dst = static_cast<T>(dst * u);
                break;
              case Reduction::kMax:
                dst = std::max(dst, u);
                break;
              case Reduction::kMin:
                dst = std::min(dst, u);
                break;
              default:
                dst = u;
                break;
            }
          }
        }
      });
    };
    auto with_index = [&](auto elem) {
      if (ind.dtype() == DType::kInt64) {
        scatter(elem, int64_t{});
      } else {
        scatter(elem, int32_t{});
      }
    };
    if (reduction_ != Reduction::kNone) {  // typed arithmetic: float32, int32, int64 (fits)
      if (x.dtype() == DType::kFloat32) {
        with_index(float{});
      } else if (x.dtype() == DType::kInt32) {
        with_index(int32_t{});
      } else {
        with_index(int64_t{});
      }
    } else {
      switch_by_size(with_index, x.dtype());
    }
    if (const int64_t at = bad_at.load(); at >= 0) {
      fail(ErrorKind::kRuntime, who_, ": index ", ind.int_at(at), " is out of range for a dim of ",
           d);
    }
  }

 private:
  template <typename F>
  static void switch_by_size(F&& with_index, DType dt) {
    switch (dtype_size(dt)) {
      case 1:
        with_index(uint8_t{});
        break;
      case 2:
        with_index(uint16_t{});
        break;
      case 4:
        with_index(uint32_t{});
        break;
      default:
        with_index(uint64_t{});
        break;
    }
  }

  // Plain tensors of one rank, indices the updates' shape and equal to the data on every dim but
  // the axis.
  bool fits(const Tensor& x, const Tensor& ind, const Tensor& upd) const {
    if (x.layout() != Layout::kPlain || ind.layout() != Layout::kPlain ||
        upd.layout() != Layout::kPlain || x.rank() == 0 || ind.shape() != upd.shape() ||
        ind.rank() != x.rank() || upd.dtype() != x.dtype() ||
        !copyable_elem_size(dtype_size(x.dtype())) ||
        (ind.dtype() != DType::kInt64 && ind.dtype() != DType::kInt32) ||
        (reduction_ != Reduction::kNone && !reducible(x.dtype()))) {
      return false;
    }
    const std::optional<int64_t> axis = axis_in(axis_, x.rank());
    if (!axis) return false;
    for (int64_t k = 0; k < x.rank(); ++k) {
      if (k != *axis && ind.dim(k) != x.dim(k)) return false;
    }
    return true;
  }

  const Node& node_;
  int64_t opset_;
  std::string who_;
  int64_t axis_;
  Reduction reduction_;
};

std::string scatter_elements_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 3 || !single_output(n)) return "not a plain node";
  for (size_t i = 0; i < 3; ++i) {
    if (!info.has_input(i)) return input_label(info, i) + " is missing";
    if (input_layout(info, i) != Layout::kPlain) return input_label(info, i) + " is not plain";
  }
  const std::string reduction = n.attr_string("reduction", "none");
  if (ScatterElementsKernel::reduction_of(reduction) ==
      ScatterElementsKernel::Reduction::kUnknown) {
    return "reduction '" + reduction + "'";
  }
  if (reduction != "none" && !reducible(info.input_dtype(0))) {
    return "a reduction over " + dtype_name(info.input_dtype(0));
  }
  if (!copyable_elem_size(dtype_size(info.input_dtype(0)))) {
    return "elements of " + dtype_name(info.input_dtype(0));
  }
  const DType it = info.input_dtype(1);
  if (it != DType::kInt64 && it != DType::kInt32) return "indices of " + dtype_name(it);
  return "";
}

std::unique_ptr<Kernel> make_scatter_elements(const NodeInfo& info) {
  return std::make_unique<ScatterElementsKernel>(info);
}

}  // namespace

void append_scatter_kernels(FactoryTable& t) {
  t.emplace_back(
      "ScatterElements",
      KernelFactory{"cpu.scatter_elements", accepts_unless_declined<scatter_elements_declines>,
                    nullptr, make_scatter_elements, in_place_output0, scatter_elements_declines});
}

}  // namespace nnfuse::cpu
