#include "kernels/ref/util.h"

#include <algorithm>

namespace nnfuse::ref {

Dims broadcast_shapes(const Dims& a, const Dims& b, const Node& node) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      fail(ErrorKind::kRuntime, node.describe(), ": shapes ", dims_str(a), " and ", dims_str(b),
           " cannot be broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Dims broadcast_strides(const Dims& in, const Dims& out) {
  Dims s(out.size(), 0);
  Dims cs = contiguous_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : cs[i];
  return s;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node) {
  if (axis < -rank || axis >= rank) {
    fail(ErrorKind::kRuntime, node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

BroadcastIter::BroadcastIter(const Dims& shape, std::vector<Dims> strides)
    : shape_(shape),
      index_(shape.size(), 0),
      strides_(std::move(strides)),
      offsets_(strides_.size(), 0) {
  for (int64_t d : shape_) {
    if (d == 0) done_ = true;
  }
}

void BroadcastIter::next() {
  ++linear_;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (++index_[i] < shape_[i]) {
      for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += strides_[k][i];
      return;
    }
    index_[i] = 0;
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] -= strides_[k][i] * (shape_[i] - 1);
  }
  done_ = true;
}

const std::vector<DType>& numeric_types() {
  static const std::vector<DType> v = {
      DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kUInt8, DType::kInt16,
      DType::kUInt16,  DType::kInt32,   DType::kUInt32, DType::kInt64, DType::kUInt64};
  return v;
}

std::string require_input_types(const Node& node, const std::vector<DType>& allowed, size_t first,
                                size_t count) {
  size_t end = std::min(node.num_inputs(), count == SIZE_MAX ? SIZE_MAX : first + count);
  for (size_t i = first; i < end; ++i) {
    const Value* v = node.input(i);
    if (!v || v->dtype() == DType::kUndefined) continue;
    if (std::find(allowed.begin(), allowed.end(), v->dtype()) == allowed.end()) {
      return "input " + std::to_string(i) + " of type " + dtype_name(v->dtype()) +
             " is not supported";
    }
  }
  return "";
}

}  // namespace nnfuse::ref
