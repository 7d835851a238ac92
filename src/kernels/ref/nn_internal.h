// Private to the reference NN kernels (nn.cc, conv.cc, pool.cc, matmul.cc, norm.cc): the
// sliding-window geometry shared by Conv, ConvTranspose and the pools, and each file's table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse::ref {

// Attribute values and dims beyond this are refused, so the geometry arithmetic (products of
// a few such values) cannot overflow 64 bits.
constexpr int64_t kMaxGeometryValue = int64_t{1} << 30;

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// "" or the reason the node's auto_pad value is not understood.
std::string auto_pad_reason(const Node& node);
// The auto_pad attribute (default NOTSET); throws on an unknown value.
AutoPad read_auto_pad(const Node& node);

// Floor division and ceiling division for b > 0, correct for negative a.
int64_t floor_div(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);

// Reads an int-list attribute with `n` values (all `fallback` when absent); throws unless it
// has exactly n values, each within +-kMaxGeometryValue and, when `positive`, at least 1.
Dims spatial_attr(const Node& node, const std::string& name, size_t n, int64_t fallback,
                  bool positive);

// Per spatial dim of a sliding window. For Conv and the pools, window o covers the input
// positions o * stride - pad_begin + k * dilation (k in [0, kernel)); ConvTranspose scatters
// input position i to output positions i * stride - pad_begin + k * dilation.
struct WindowGeometry {
  Dims in, out, kernel, strides, dilations, pad_begin, pad_end;
  size_t rank() const { return in.size(); }
};

// Geometry of Conv and the pools: strides, dilations and pads (explicit, or from auto_pad as
// SAME = ceil(in / stride) outputs with the extra padding at the end for SAME_UPPER) and the
// output sizes, floored, or ceiled with ceil_mode where the last window must start inside the
// input or its leading padding (as PyTorch and the ONNX reference do). Throws on bad values.
WindowGeometry window_geometry(const Node& node, const Dims& in, const Dims& kernel,
                               bool ceil_mode);

// The valid (position, target) pairs of a window op, grouped so the innermost loop runs over
// the last spatial dim: for each kernel tap, rows of the iterated tensor (`iter`) whose last-dim
// positions p in [lo, hi) touch target element target_off + p * stride_last.
// Conv and pools iterate the output and read the input; ConvTranspose iterates the input and
// writes the output.
struct WindowPlan {
  struct Row {
    int64_t iter_off, target_off;
  };
  struct Tap {
    int64_t k;  // flat index of the tap in the kernel, C order
    int64_t lo, hi;
    size_t row_begin, row_end;
  };
  std::vector<Tap> taps;  // in C order of the kernel index; taps touching nothing are left out
  std::vector<Row> rows;
  int64_t stride_last = 1;
};
WindowPlan plan_window(const Dims& iter, const Dims& target, const WindowGeometry& g);

// "" or a reason unless inputs [first, first + count) are float32 or float64.
std::string float_inputs_reason(const Node& node, size_t first = 0, size_t count = SIZE_MAX);
// Throws unless input i (when present) has the dtype `want`.
void check_input_dtype(const KernelContext& ctx, size_t i, DType want);

void append_conv_kernels(std::vector<RefKernelEntry>& t);    // Conv, ConvTranspose
void append_pool_kernels(std::vector<RefKernelEntry>& t);    // MaxPool, AveragePool, Global*
void append_matmul_kernels(std::vector<RefKernelEntry>& t);  // MatMul, Gemm
void append_norm_kernels(std::vector<RefKernelEntry>& t);    // BatchNorm, LayerNorm, ...

}  // namespace nnfuse::ref
