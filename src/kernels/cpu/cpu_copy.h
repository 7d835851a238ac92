// Strided copies for the data-movement kernels (Transpose, Slice, Split, Expand, and reductions
// that need their axes moved): dst, contiguous in C order over `dims`, receives
// src[offset + sum(i_k * strides[k])]. Dims are merged where the source steps through them as
// one; then contiguous runs are memcpy'd, broadcast runs (stride 0) filled, transposes done in
// cache tiles (when some dim other than the last has source stride 1), anything else gathered.
// Multithreaded over the outer dims.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/tensor.h"

namespace nnfuse::cpu {

// Element sizes 1, 2, 4 and 8 bytes are supported; src and dst must not overlap.
void strided_copy(const std::byte* src, const Dims& dims, const Dims& strides, std::byte* dst,
                  size_t elem_size);

// True for the element sizes strided_copy handles.
inline bool copyable_elem_size(size_t es) { return es == 1 || es == 2 || es == 4 || es == 8; }

}  // namespace nnfuse::cpu
