#include "kernels/cpu/layout.h"

#include <cstring>

#include "ir/error.h"
#include "kernels/cpu/onednn_common.h"

namespace nnfuse {

namespace {

// oneDNN's reorder between NCHW and NHWC, for the element types it has: a jit kernel over both
// threads. On [1, 128, 32, 32] it takes 40-60 us where the blocked transpose below took ~1 ms
// (single-threaded for one image, and its column writes, a row of the destination apart, fall in
// one L1 set when that row is 4 KiB). False when oneDNN does not take the type.
bool onednn_convert(const Tensor& src, Tensor& dst) {
  using dnnl::memory;
  memory::data_type dt;
  switch (src.dtype()) {
    case DType::kFloat32:
      dt = memory::data_type::f32;
      break;
    case DType::kInt32:
      dt = memory::data_type::s32;
      break;
    case DType::kInt8:
      dt = memory::data_type::s8;
      break;
    case DType::kUInt8:
      dt = memory::data_type::u8;
      break;
    default:
      return false;
  }
  const size_t r = src.shape().size();
  auto tag = [r](Layout l) {
    return l == Layout::kNHWC ? onednn::channels_last_tag(r) : onednn::plain_tag(r);
  };
  try {
    const memory::dims dims = onednn::to_dims(src.shape());
    memory from(memory::desc(dims, dt, tag(src.layout())), onednn::engine(), onednn::handle(src));
    memory to(memory::desc(dims, dt, tag(dst.layout())), onednn::engine(), dst.raw());
    onednn::execute(onednn::make_reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

// Copies a [A, B] matrix of `es`-byte elements to [B, A], blocked for cache reuse.
void transpose_bytes(const std::byte* src, std::byte* dst, int64_t a, int64_t b, size_t es) {
  constexpr int64_t kBlock = 32;
  for (int64_t i0 = 0; i0 < a; i0 += kBlock) {
    for (int64_t j0 = 0; j0 < b; j0 += kBlock) {
      int64_t i1 = std::min(a, i0 + kBlock), j1 = std::min(b, j0 + kBlock);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) {
          std::memcpy(dst + (j * a + i) * es, src + (i * b + j) * es, es);
        }
      }
    }
  }
}

template <typename T>
void transpose_typed(const T* src, T* dst, int64_t a, int64_t b) {
  constexpr int64_t kBlock = 32;
  for (int64_t i0 = 0; i0 < a; i0 += kBlock) {
    for (int64_t j0 = 0; j0 < b; j0 += kBlock) {
      int64_t i1 = std::min(a, i0 + kBlock), j1 = std::min(b, j0 + kBlock);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) dst[j * a + i] = src[i * b + j];
      }
    }
  }
}

}  // namespace

void convert_layout(const Tensor& src, Tensor& dst) {
  NNFUSE_CHECK(src.shape() == dst.shape() && src.dtype() == dst.dtype(),
               "layout conversion between different tensors");
  if (src.layout() == dst.layout()) {
    std::memcpy(dst.raw(), src.raw(), src.nbytes());
    return;
  }
  NNFUSE_CHECK(channels_last_rank(src.rank()), "only tensors of rank 3 to 5 are channels-last");
  if (src.numel() > 0 && onednn_convert(src, dst)) return;
  int64_t n = src.dim(0), c = src.dim(1), hw = 1;
  for (int64_t i = 2; i < src.rank(); ++i) hw *= src.dim(i);
  size_t es = dtype_size(src.dtype());
  // plain -> NHWC transposes each image's [C, HW] to [HW, C]; NHWC -> plain the reverse.
  bool to_nhwc = dst.layout() == Layout::kNHWC;
  int64_t rows = to_nhwc ? c : hw, cols = to_nhwc ? hw : c;
  const auto* s = static_cast<const std::byte*>(src.raw());
  auto* d = static_cast<std::byte*>(dst.raw());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    size_t off = static_cast<size_t>(i * c * hw) * es;
    if (es == 4) {
      transpose_typed(reinterpret_cast<const float*>(s + off), reinterpret_cast<float*>(d + off),
                      rows, cols);
    } else {
      transpose_bytes(s + off, d + off, rows, cols, es);
    }
  }
}

Tensor to_layout(const Tensor& t, Layout l) {
  if (t.layout() == l) return t;
  Tensor out(t.dtype(), t.shape());
  out.set_layout(l);
  convert_layout(t, out);
  return out;
}

Dims storage_dims(const Dims& logical, Layout layout) {
  if (layout != Layout::kNHWC || !channels_last_rank(logical.size())) return logical;
  Dims d = {logical[0]};
  d.insert(d.end(), logical.begin() + 2, logical.end());
  d.push_back(logical[1]);
  return d;
}

size_t storage_axis(size_t axis, size_t rank, Layout layout) {
  if (layout != Layout::kNHWC || !channels_last_rank(rank) || axis >= rank || axis == 0) {
    return axis;
  }
  return axis == 1 ? rank - 1 : axis - 1;
}

}  // namespace nnfuse
