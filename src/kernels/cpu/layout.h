// Conversions between plain (NCHW) and channels-last (NHWC) storage of 4-D tensors.
#pragma once

#include "ir/tensor.h"

namespace nnfuse {

// Returns `t` stored in layout `l` (the same tensor when it already is). Only 4-D tensors can
// be NHWC. Parallel over the outer dims.
Tensor to_layout(const Tensor& t, Layout l);
// Writes `src` into `dst` (same logical shape and dtype) converting the layout.
void convert_layout(const Tensor& src, Tensor& dst);

}  // namespace nnfuse
