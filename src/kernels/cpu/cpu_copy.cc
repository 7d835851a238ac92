#include "kernels/cpu/cpu_copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

// Element types that may alias the tensors' float/int storage.
struct __attribute__((may_alias)) E1 {
  uint8_t v;
};
struct __attribute__((may_alias)) E2 {
  uint16_t v;
};
struct __attribute__((may_alias)) E4 {
  uint32_t v;
};
struct __attribute__((may_alias)) E8 {
  uint64_t v;
};

// Tile edge for transposes: 8 strided lines at a time stay clear of L1 set conflicts even at
// power-of-two strides (16 or 32 are twice slower on [1024, 1024]).
constexpr int64_t kTile = 8;
// Rows of the transposed dim handled by one task.
constexpr int64_t kTaskRows = 32;

// Walks the outer dims `od` (strides `os` in the source, `ds` in the destination) over rows
// [r0, r1), calling f(src_offset, dst_offset) for each.
template <typename F>
void walk_rows(const Dims& od, const Dims& os, const Dims& ds, int64_t r0, int64_t r1, F&& f) {
  const size_t n = od.size();
  std::vector<int64_t> idx(n, 0);
  int64_t so = 0, d_off = 0, r = r0;
  for (size_t d = n; d-- > 0;) {
    idx[d] = r % od[d];
    r /= od[d];
    so += idx[d] * os[d];
    d_off += idx[d] * ds[d];
  }
  for (int64_t row = r0; row < r1; ++row) {
    f(so, d_off);
    for (size_t d = n; d-- > 0;) {
      so += os[d];
      d_off += ds[d];
      if (++idx[d] < od[d]) break;
      so -= os[d] * od[d];
      d_off -= ds[d] * od[d];
      idx[d] = 0;
    }
  }
}

// dst[i] = src[i * stride] for i in [0, n).
template <typename T>
void gather_run(const T* src, int64_t stride, T* dst, int64_t n) {
  if (stride == 0) {
    std::fill(dst, dst + n, src[0]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
}

// dst[a * dst_a + b] = src[a + b * src_b] for a < na, b < nb, in cache tiles.
template <typename T>
void transpose_2d(const T* src, int64_t src_b, T* dst, int64_t dst_a, int64_t na, int64_t nb) {
  for (int64_t b0 = 0; b0 < nb; b0 += kTile) {
    const int64_t b1 = std::min(nb, b0 + kTile);
    for (int64_t a0 = 0; a0 < na; a0 += kTile) {
      const int64_t a1 = std::min(na, a0 + kTile);
      for (int64_t a = a0; a < a1; ++a) {
        T* d = dst + a * dst_a;
        const T* s = src + a;
        for (int64_t b = b0; b < b1; ++b) d[b] = s[b * src_b];
      }
    }
  }
}

template <typename T>
void copy_typed(const std::byte* src_bytes, const Dims& dims, const Dims& strides,
                std::byte* dst_bytes) {
  const T* src = reinterpret_cast<const T*>(src_bytes);
  T* dst = reinterpret_cast<T*>(dst_bytes);
  const size_t r = dims.size();
  const int64_t inner = dims[r - 1], inner_stride = strides[r - 1];
  int64_t numel = 1;
  for (int64_t d : dims) numel *= d;
  const Dims dst_strides = contiguous_strides(dims);

  // A transpose: the source's contiguous dim is not the destination's last.
  size_t q = r;
  if (inner_stride != 1 && inner_stride != 0) {
    for (size_t i = 0; i + 1 < r; ++i) {
      if (strides[i] == 1) q = i;
    }
  }
  if (q < r) {
    Dims od, os, ds;
    for (size_t i = 0; i + 1 < r; ++i) {
      if (i == q) continue;
      od.push_back(dims[i]);
      os.push_back(strides[i]);
      ds.push_back(dst_strides[i]);
    }
    int64_t outer = 1;
    for (int64_t d : od) outer *= d;
    // Tasks: outer rows times blocks of the q dim.
    const int64_t nq = dims[q], q_blocks = (nq + kTaskRows - 1) / kTaskRows;
    const int64_t dq = dst_strides[q];
    parallel_tasks(outer * q_blocks, numel * 2, [&](int64_t t) {
      const int64_t row = t / q_blocks, a0 = t % q_blocks * kTaskRows;
      walk_rows(od, os, ds, row, row + 1, [&](int64_t so, int64_t d_off) {
        transpose_2d(src + so + a0, inner_stride, dst + d_off + a0 * dq, dq,
                     std::min(kTaskRows, nq - a0), inner);
      });
    });
    return;
  }

  // Rows of the last dim: contiguous, broadcast or strided.
  const Dims od(dims.begin(), dims.end() - 1), os(strides.begin(), strides.end() - 1);
  const Dims ds(dst_strides.begin(), dst_strides.end() - 1);
  const int64_t rows = numel / inner;
  // Long rows with few of them: split each row into pieces.
  const int64_t threads = omp_get_max_threads();
  int64_t pieces = 1;
  if (rows < 4 * threads) {
    pieces =
        std::clamp<int64_t>((4 * threads + rows - 1) / rows, 1, std::max<int64_t>(1, inner / 8192));
  }
  const int64_t piece = (inner + pieces - 1) / pieces;
  parallel_blocks(rows * pieces, numel, [&](int64_t t0, int64_t t1) {
    const int64_t r0 = t0 / pieces, r1 = (t1 + pieces - 1) / pieces;
    walk_rows(od, os, ds, r0, r1, [&](int64_t so, int64_t d_off) {
      // This block's pieces of the row: tasks [t0, t1) within [row, row + 1) * pieces.
      const int64_t row = d_off / inner;
      const int64_t p0 = std::max<int64_t>(0, t0 - row * pieces);
      const int64_t p1 = std::min<int64_t>(pieces, t1 - row * pieces);
      const int64_t b = p0 * piece, e = std::min(inner, p1 * piece);
      if (b >= e) return;
      if (inner_stride == 1) {
        std::memcpy(dst + d_off + b, src + so + b, static_cast<size_t>(e - b) * sizeof(T));
      } else {
        gather_run(src + so + b * inner_stride, inner_stride, dst + d_off + b, e - b);
      }
    });
  });
}

}  // namespace

void strided_copy(const std::byte* src, const Dims& dims_in, const Dims& strides_in, std::byte* dst,
                  size_t es) {
  // Drop extent-1 dims and merge a dim into the one inside it when the source steps through
  // both as one.
  Dims dims, strides;
  for (size_t i = dims_in.size(); i-- > 0;) {
    if (dims_in[i] == 0) return;
    if (dims_in[i] == 1) continue;
    if (!dims.empty() && strides_in[i] == strides.back() * dims.back()) {
      dims.back() *= dims_in[i];
      continue;
    }
    dims.push_back(dims_in[i]);
    strides.push_back(strides_in[i]);
  }
  if (dims.empty()) {
    std::memcpy(dst, src, es);
    return;
  }
  std::reverse(dims.begin(), dims.end());
  std::reverse(strides.begin(), strides.end());
  switch (es) {
    case 1:
      return copy_typed<E1>(src, dims, strides, dst);
    case 2:
      return copy_typed<E2>(src, dims, strides, dst);
    case 4:
      return copy_typed<E4>(src, dims, strides, dst);
    case 8:
      return copy_typed<E8>(src, dims, strides, dst);
    default:
      fail(ErrorKind::kInternal, "strided_copy: element size ", es, " is not supported");
  }
}

}  // namespace nnfuse::cpu
