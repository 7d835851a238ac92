// Tensor: a dense, C-ordered n-d array with shared storage. Copies share the buffer (cheap
// to pass around); clone() makes a deep copy. Views (reshaped) share storage too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nnfuse/dtype.h"
#include "nnfuse/error.h"

namespace nnfuse {

using Dims = std::vector<int64_t>;

// Physical order of a tensor's elements. shape() is always the logical (ONNX) shape; a tensor
// in kNHWC stores its channels last: N, H, W, C order for a logical [N, C, H, W], and likewise
// N, W, C for [N, C, W] and N, D, H, W, C for [N, C, D, H, W] (ranks 3 to 5).
enum class Layout : uint8_t { kPlain, kNHWC };
const char* layout_name(Layout l);

// Product of dims; throws kInvalidModel if a dim is negative or the product (or its size in
// bytes for elem_size > 0) overflows 64 bits.
int64_t checked_numel(std::span<const int64_t> dims, size_t elem_size = 1);
// "[2, 3, 4]"
std::string dims_str(std::span<const int64_t> dims);
// C-order strides in elements.
Dims contiguous_strides(std::span<const int64_t> dims);

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-initialised storage.
  Tensor(DType dtype, Dims shape);
  // Allocates storage left uninitialised, for a caller that writes every byte at once (the
  // importer copying weights): large tensors then skip a pass over their memory.
  static Tensor uninitialized(DType dtype, Dims shape);

  template <typename T>
  static Tensor from_vector(Dims shape, const std::vector<T>& values) {
    Tensor t(DTypeOf<T>::value, std::move(shape));
    if (static_cast<int64_t>(values.size()) != t.numel()) {
      throw Error(ErrorKind::kRuntime, "from_vector: " + std::to_string(values.size()) +
                                           " values for shape " + dims_str(t.shape()));
    }
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor scalar(T v) {
    return from_vector<T>({}, {v});
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Dims& shape() const { return shape_; }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return buf_.get() + offset_; }
  const void* raw() const { return buf_.get() + offset_; }

  // Typed access; throws if T does not match the dtype.
  template <typename T>
  T* data() {
    check_type(DTypeOf<T>::value);
    return reinterpret_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    check_type(DTypeOf<T>::value);
    return reinterpret_cast<const T*>(raw());
  }

  // A tensor over memory the caller owns (`data`, numel(shape) elements of `dtype`): neither
  // copied nor freed, so it must outlive every use of the tensor. Inputs passed this way are
  // read in place.
  static Tensor borrow(DType dtype, Dims shape, void* data);
  // A tensor over existing storage at `offset` bytes: arena slots and views.
  static Tensor over(std::shared_ptr<std::byte[]> base, size_t offset, DType dtype, Dims shape,
                     Layout layout = Layout::kPlain);

  Layout layout() const { return layout_; }
  void set_layout(Layout l) { layout_ = l; }

  // Same storage, another shape with the same element count.
  Tensor reshaped(Dims shape) const;
  // Same storage read as `shape` in `layout` (same element count): for a caller that knows
  // the bytes are in that order (an NHWC [N, C, H, W] is a plain [N, H, W, C]).
  Tensor relaid(Dims shape, Layout layout) const;
  Tensor clone() const;
  // Reads element i of an integer tensor as int64 (for shape-like inputs).
  int64_t int_at(int64_t i) const;
  // All elements of an integer tensor as int64.
  std::vector<int64_t> to_int64_vector() const;
  // Element i of a float (float32/64, float16, bfloat16), integer or bool tensor as double.
  double double_at(int64_t i) const;

 private:
  Tensor(DType dtype, Dims shape, bool zero);
  void check_type(DType t) const;

  DType dtype_ = DType::kUndefined;
  Dims shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte[]> buf_;
  size_t offset_ = 0;
  Layout layout_ = Layout::kPlain;
};

}  // namespace nnfuse
