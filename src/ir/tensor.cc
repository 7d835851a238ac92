#include "ir/tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ir/buffer_pool.h"
#include "ir/half.h"

namespace nnfuse {

int64_t checked_numel(std::span<const int64_t> dims, size_t elem_size) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      fail(ErrorKind::kInvalidModel, "negative dimension ", d, " in shape ", dims_str(dims));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      fail(ErrorKind::kInvalidModel, "shape ", dims_str(dims),
           " has more elements than fit in 64 bits");
    }
    n *= d;
  }
  if (elem_size > 1 && n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(elem_size)) {
    fail(ErrorKind::kInvalidModel, "shape ", dims_str(dims),
         " needs more bytes than fit in 64 bits");
  }
  return n;
}

std::string dims_str(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Dims contiguous_strides(std::span<const int64_t> dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

Tensor::Tensor(DType dtype, Dims shape) : Tensor(dtype, std::move(shape), true) {}

Tensor Tensor::uninitialized(DType dtype, Dims shape) {
  return Tensor(dtype, std::move(shape), false);
}

Tensor::Tensor(DType dtype, Dims shape, bool zero) : dtype_(dtype), shape_(std::move(shape)) {
  size_t es = dtype_size(dtype);
  if (es == 0)
    fail(ErrorKind::kUnsupported, "tensors of type ", dtype_name(dtype), " are not supported");
  numel_ = checked_numel(shape_, es);
  size_t bytes = static_cast<size_t>(numel_) * es;
  // Refuse absurd sizes with an error rather than letting operator new abort the process.
  constexpr size_t kMaxBytes = size_t{1} << 40;
  if (bytes > kMaxBytes) {
    fail(ErrorKind::kInvalidModel, "tensor of shape ", dims_str(shape_), " (", bytes,
         " bytes) is too large to allocate");
  }
  buf_ = tensor_bytes(bytes, zero);
}

std::shared_ptr<std::byte[]> aligned_bytes(size_t bytes, size_t alignment) {
  // Past a tebibyte the request is refused as operator new would refuse it, without asking the
  // allocator (a sanitizer's allocator aborts on such sizes instead of throwing).
  if (bytes > (size_t{1} << 40)) throw std::bad_alloc();
  if (bytes >= kHugePageBytes) alignment = std::max(alignment, kHugePageBytes);
  std::byte* p = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t(alignment)));
#if defined(MADV_HUGEPAGE)
  // Where transparent huge pages are enabled on request (the usual `madvise` setting), ask for
  // them: a product streaming tens of MiB of weights or activations then misses the TLB once
  // per 2 MiB instead of once per 4 KiB (a LLaMA-style prefill and a GeGLU stack ran 2-3%
  // faster). The advice covers the whole 2 MiB pages inside the buffer; refusal is harmless.
  if (bytes >= kHugePageBytes) madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return std::shared_ptr<std::byte[]>(
      p, [alignment](std::byte* q) { ::operator delete[](q, std::align_val_t(alignment)); });
}

const char* layout_name(Layout l) { return l == Layout::kNHWC ? "nhwc" : "plain"; }

Tensor Tensor::over(std::shared_ptr<std::byte[]> base, size_t offset, DType dtype, Dims shape,
                    Layout layout) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = checked_numel(t.shape_, dtype_size(dtype));
  t.buf_ = std::move(base);
  t.offset_ = offset;
  t.layout_ = layout;
  return t;
}

Tensor Tensor::borrow(DType dtype, Dims shape, void* data) {
  if (!data && checked_numel(shape, dtype_size(dtype)) > 0) {
    fail(ErrorKind::kInvalidArgument, "Tensor::borrow: no data for a tensor of shape ",
         dims_str(shape));
  }
  // An aliasing shared_ptr: shares ownership of nothing, points at the caller's memory.
  std::shared_ptr<std::byte[]> base(std::shared_ptr<std::byte[]>(), static_cast<std::byte*>(data));
  return over(std::move(base), 0, dtype, std::move(shape));
}

Tensor Tensor::reshaped(Dims shape) const {
  int64_t n = checked_numel(shape);
  NNFUSE_CHECK(n == numel_, "cannot view ", numel_, " elements as shape ", dims_str(shape));
  NNFUSE_CHECK(layout_ == Layout::kPlain, "cannot reshape a tensor in ", layout_name(layout_),
               " layout");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::relaid(Dims shape, Layout layout) const {
  int64_t n = checked_numel(shape);
  NNFUSE_CHECK(n == numel_, "cannot view ", numel_, " elements as shape ", dims_str(shape));
  NNFUSE_CHECK(layout != Layout::kNHWC || channels_last_rank(shape.size()),
               "a channels-last view needs rank 3 to 5, not ", dims_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.layout_ = layout;
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  t.layout_ = layout_;
  return t;
}

void Tensor::check_type(DType t) const {
  if (t != dtype_) {
    fail(ErrorKind::kInternal, "tensor of type ", dtype_name(dtype_), " accessed as ",
         dtype_name(t));
  }
}

int64_t Tensor::int_at(int64_t i) const {
  NNFUSE_CHECK(i >= 0 && i < numel_, "index ", i, " out of range for ", numel_, " elements");
  switch (dtype_) {
    case DType::kInt64:
      return data<int64_t>()[i];
    case DType::kInt32:
      return data<int32_t>()[i];
    case DType::kInt16:
      return reinterpret_cast<const int16_t*>(raw())[i];
    case DType::kInt8:
      return data<int8_t>()[i];
    case DType::kUInt8:
      return data<uint8_t>()[i];
    case DType::kUInt16:
      return reinterpret_cast<const uint16_t*>(raw())[i];
    case DType::kUInt32:
      return data<uint32_t>()[i];
    case DType::kUInt64:
      return static_cast<int64_t>(data<uint64_t>()[i]);
    case DType::kBool:
      return data<bool>()[i] ? 1 : 0;
    default:
      fail(ErrorKind::kRuntime, "expected an integer tensor, got ", dtype_name(dtype_));
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = int_at(i);
  return v;
}

double Tensor::double_at(int64_t i) const {
  NNFUSE_CHECK(i >= 0 && i < numel_, "index ", i, " out of range for ", numel_, " elements");
  if (dtype_ == DType::kFloat32) return data<float>()[i];
  if (dtype_ == DType::kFloat64) return data<double>()[i];
  if (dtype_ == DType::kFloat16) return half_to_double(data<Float16>()[i]);
  if (dtype_ == DType::kBFloat16) return half_to_double(data<BFloat16>()[i]);
  return static_cast<double>(int_at(i));
}

}  // namespace nnfuse
