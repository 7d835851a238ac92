// Conversions between plain (NCHW) and channels-last (NHWC) storage of tensors of rank 3 to 5.
#pragma once

#include "ir/tensor.h"

namespace nnfuse {

// Returns `t` stored in layout `l` (the same tensor when it already is). Only tensors of rank 3
// to 5 can be channels-last. Parallel over the outer dims.
Tensor to_layout(const Tensor& t, Layout l);
// Writes `src` into `dst` (same logical shape and dtype) converting the layout.
void convert_layout(const Tensor& src, Tensor& dst);

// The stored order of a tensor's dims: [N, H, W, C] for an NHWC [N, C, H, W] (the spatial dims,
// then C, for ranks 3 and 5); the dims themselves for plain tensors (and other ranks). Permutes any
// per-dim list alike (a shape, strides).
Dims storage_dims(const Dims& logical, Layout layout);
// Where logical axis `axis` of a rank-`rank` tensor is stored: for NHWC, N 0, C 3, H 1, W 2
// (C last, each spatial dim one earlier, for ranks 3 and 5).
size_t storage_axis(size_t axis, size_t rank, Layout layout);

}  // namespace nnfuse
