// Helpers shared by the reference kernels: type dispatch, broadcasting, axes.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "kernels/ref/ref_kernels.h"
#include "ops/op_math.h"

namespace nnfuse::ref {

// Calls f(T{}) with T the C++ type of `t`. Supports float32/64 and all integer types, plus
// bool when with_bool; other types throw kUnsupported naming `what`.
template <typename F>
void dispatch(DType t, const std::string& what, F&& f, bool with_bool = false) {
  switch (t) {
    case DType::kFloat32:
      f(float{});
      return;
    case DType::kFloat64:
      f(double{});
      return;
    case DType::kInt8:
      f(int8_t{});
      return;
    case DType::kUInt8:
      f(uint8_t{});
      return;
    case DType::kInt16:
      f(int16_t{});
      return;
    case DType::kUInt16:
      f(uint16_t{});
      return;
    case DType::kInt32:
      f(int32_t{});
      return;
    case DType::kUInt32:
      f(uint32_t{});
      return;
    case DType::kInt64:
      f(int64_t{});
      return;
    case DType::kUInt64:
      f(uint64_t{});
      return;
    case DType::kBool:
      if (with_bool) {
        f(bool{});
        return;
      }
      break;
    default:
      break;
  }
  fail(ErrorKind::kUnsupported, what, ": element type ", dtype_name(t), " is not supported");
}

// Calls f(T{}) for float32 and float64 only.
template <typename F>
void dispatch_float(DType t, const std::string& what, F&& f) {
  if (t == DType::kFloat32) return f(float{});
  if (t == DType::kFloat64) return f(double{});
  fail(ErrorKind::kUnsupported, what, ": element type ", dtype_name(t), " is not supported");
}

// Numpy-style broadcast of two shapes; throws naming the node when incompatible.
Dims broadcast_shapes(const Dims& a, const Dims& b, const Node& node);
// Strides of `in` (right-aligned to `out`'s rank) with 0 on broadcast dims, for indexing
// an input while iterating the output in C order.
Dims broadcast_strides(const Dims& in, const Dims& out);
// Normalizes a possibly negative axis into [0, rank); throws naming the node.
int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node);

// Walks every index of `shape` in C order, keeping one offset per stride vector.
// Usage: for (BroadcastIter it(shape, {sa, sb}); !it.done(); it.next()) f(it.offset(0), ...)
class BroadcastIter {
 public:
  BroadcastIter(const Dims& shape, std::vector<Dims> strides);
  bool done() const { return done_; }
  void next();
  int64_t offset(size_t k) const { return offsets_[k]; }
  int64_t linear() const { return linear_; }

 private:
  Dims shape_, index_;
  std::vector<Dims> strides_;
  std::vector<int64_t> offsets_;
  int64_t linear_ = 0;
  bool done_ = false;
};

// float32, float64 and every integer type (not bool): the element types most ops take.
const std::vector<DType>& numeric_types();
// Common support checks: "" or a reason.
std::string require_input_types(const Node& node, const std::vector<DType>& allowed,
                                size_t first = 0, size_t count = SIZE_MAX);

// Pad's modes, and the source index along a dim of length d for padded position `src` (already
// shifted by the leading pad), or -1 for the constant: shared by the reference and fast kernels.
enum class PadMode { kConstant, kReflect, kEdge, kWrap };
std::optional<PadMode> pad_mode(const std::string& s);
int64_t pad_source(int64_t src, int64_t d, PadMode mode);

}  // namespace nnfuse::ref
