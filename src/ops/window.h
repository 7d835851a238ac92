// The sliding-window attributes of Conv, ConvTranspose and the pools, typed, and the geometry
// they give: a fused op carries those of each of its parts, the parts' under a prefix
// ("pool_" for FusedConvPool's pool, "skip_" for a FusedConv's skip convolution, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/def.h"

namespace nnfuse::ops {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// A convolution's own attributes as its node holds them: each absent one stays absent when
// written again (so a fused node says what the model said).
struct ConvAttrs {
  std::optional<std::string> auto_pad = {};
  std::optional<Dims> dilations = {}, kernel_shape = {}, pads = {}, strides = {};
  std::optional<int64_t> group = {};

  // Those of `n` (a Conv, or a fused node's part under `prefix`).
  static ConvAttrs of(const Node& n, const std::string& prefix = "");
  void write(Attrs& attrs, const std::string& prefix = "") const;
  bool operator==(const ConvAttrs&) const = default;
};

// A pool's attributes (MaxPool's, AveragePool's), likewise.
struct PoolAttrs {
  std::optional<std::string> auto_pad = {};
  std::optional<int64_t> ceil_mode = {}, count_include_pad = {}, storage_order = {};
  std::optional<Dims> dilations = {}, kernel_shape = {}, pads = {}, strides = {};

  static PoolAttrs of(const Node& n, const std::string& prefix = "");
  void write(Attrs& attrs, const std::string& prefix = "") const;
};

// The output extent of one spatial dim (ONNX's Conv and pool geometry): floored, or ceiled with
// ceil_mode where the last window must start inside the input or its leading padding; SAME_*
// gives ceil(in / stride). -1 when `in` is unknown (< 0) or the values make no window.
int64_t window_extent(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                      int64_t pad_begin, int64_t pad_end, AutoPad auto_pad, bool ceil_mode);

// The output shape of a convolution or pool window over `x` (N, C, spatial...) with `kernel`
// spatial extents: N, `channels` (-1: x's), then window_extent per spatial dim. Unknown where
// the input is; "" or why the attributes do not fit x's rank.
std::string window_output(const Shape& x, int64_t channels, const Dims& kernel,
                          const std::optional<std::string>& auto_pad,
                          const std::optional<Dims>& strides, const std::optional<Dims>& dilations,
                          const std::optional<Dims>& pads, bool ceil_mode, Shape* out);

// The output of the convolution (attributes `a`) of x by a weight of shape w ([M, C/group, k...]).
std::string conv_output(const Shape& x, const Shape& w, const ConvAttrs& a, Shape* out);
// The output of the pool (attributes `a`) of x.
std::string pool_output(const Shape& x, const PoolAttrs& a, Shape* out);

}  // namespace nnfuse::ops
