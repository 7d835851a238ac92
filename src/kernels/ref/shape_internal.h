// Private helpers of the data-movement reference kernels (shape.cc, index.cc, misc.cc,
// resize.cc). These kernels move elements as raw bytes, so one kernel serves every dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse::ref {

inline const std::byte* bytes(const Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
inline std::byte* bytes(Tensor& t) { return static_cast<std::byte*>(t.raw()); }

// Copies `n` elements of `es` bytes from element `si` of src to element `di` of dst.
inline void copy_elems(Tensor& dst, int64_t di, const Tensor& src, int64_t si, int64_t n = 1) {
  size_t es = dtype_size(src.dtype());
  if (n > 0) {
    std::memcpy(bytes(dst) + static_cast<size_t>(di) * es,
                bytes(src) + static_cast<size_t>(si) * es, static_cast<size_t>(n) * es);
  }
}

// dst (contiguous over `shape`) = src[base + sum(i_k * strides[k])]: the innermost dim a run at
// a time when its stride is 1 (one memcpy per row), else element by element.
inline void copy_strided(Tensor& dst, const Tensor& src, const Dims& shape, const Dims& strides,
                         int64_t base) {
  if (shape.empty() || strides.back() != 1) {
    for (BroadcastIter it(shape, {strides}); !it.done(); it.next()) {
      copy_elems(dst, it.linear(), src, base + it.offset(0));
    }
    return;
  }
  const int64_t row = shape.back();
  const Dims outer(shape.begin(), shape.end() - 1),
      outer_strides(strides.begin(), strides.end() - 1);
  for (BroadcastIter it(outer, {outer_strides}); !it.done(); it.next()) {
    copy_elems(dst, it.linear() * row, src, base + it.offset(0), row);
  }
}

// Advances a C-order multi-index over `shape`; false once it wraps around.
inline bool next_index(Dims& idx, const Dims& shape) {
  for (size_t i = shape.size(); i-- > 0;) {
    if (++idx[i] < shape[i]) return true;
    idx[i] = 0;
  }
  return false;
}

// a * b, or a runtime error naming the node when it overflows.
inline int64_t checked_mul(int64_t a, int64_t b, const Node& node) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    fail(ErrorKind::kRuntime, node.describe(), ": size ", a, " * ", b, " overflows");
  }
  return r;
}
inline int64_t checked_add(int64_t a, int64_t b, const Node& node) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    fail(ErrorKind::kRuntime, node.describe(), ": size ", a, " + ", b, " overflows");
  }
  return r;
}

// Product of dims [begin, end).
inline int64_t dims_product(const Dims& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < d.size(); ++i) p *= d[i];
  return p;
}

// "" when input `i` (if present with a known type) has a fixed element size, i.e. can be
// moved as bytes.
std::string require_fixed_size(const Node& node, size_t i);
// "" when input `i` (if present) is int32 or int64 (shape-like inputs).
std::string require_int_input(const Node& node, size_t i);

// Family tables of the files split from shape.cc and misc.cc.
void append_index_kernels(std::vector<RefKernelEntry>& t);   // index.cc: Gather, Scatter...
void append_resize_kernels(std::vector<RefKernelEntry>& t);  // resize.cc

}  // namespace nnfuse::ref
