// Compile-time values: initializers and the outputs of Constant nodes, and their elements read
// as numbers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ops/op_math.h"
#include "pattern/pattern.h"
#include "pattern/pattern_internal.h"

namespace nnfuse::pattern {

namespace {

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// Tensors made from a Constant node's scalar/list attributes. Callers keep the returned
// pointer, so entries are never erased; a node freed and another allocated at its address
// with other attributes adds an entry instead of changing one. Constant nodes are few.
const Tensor* cached(const Node* n, Tensor t) {
  static std::mutex mu;
  static std::map<const Node*, std::vector<std::unique_ptr<Tensor>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& entries = cache[n];
  for (const auto& e : entries) {
    if (same_tensor(*e, t)) return e.get();
  }
  entries.push_back(std::make_unique<Tensor>(std::move(t)));
  return entries.back().get();
}

float half_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  float r;
  if (exp == 0) {
    r = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    r = mant ? NAN : INFINITY;
  } else {
    r = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  }
  return (h & 0x8000) ? -r : r;
}

}  // namespace

const Tensor* constant_value(const Value* v) {
  if (!v) return nullptr;
  if (v->is_constant()) return &v->constant();
  const Node* n = v->producer();
  if (!n || !n->is(Op::kConstant)) return nullptr;
  if (n->num_outputs() < 1 || n->output(0) != v) return nullptr;
  const Attribute* a = nullptr;
  if ((a = n->find_attr("value"))) {
    if (a->kind != Attribute::Kind::kTensor || !a->t.defined()) return nullptr;
    return &a->t;
  }
  if ((a = n->find_attr("value_float")) && a->kind == Attribute::Kind::kFloat) {
    return cached(n, Tensor::scalar<float>(a->f));
  }
  if ((a = n->find_attr("value_floats")) && a->kind == Attribute::Kind::kFloats) {
    return cached(n,
                  Tensor::from_vector<float>({static_cast<int64_t>(a->floats.size())}, a->floats));
  }
  if ((a = n->find_attr("value_int")) && a->kind == Attribute::Kind::kInt) {
    return cached(n, Tensor::scalar<int64_t>(a->i));
  }
  if ((a = n->find_attr("value_ints")) && a->kind == Attribute::Kind::kInts) {
    return cached(n, Tensor::from_vector<int64_t>({static_cast<int64_t>(a->ints.size())}, a->ints));
  }
  return nullptr;  // sparse_value, strings: not usable as numbers
}

std::optional<SliceRange> slice_range(const Node* n) {
  if (!n || !n->is(Op::kSlice) || n->num_inputs() < 3) {
    return std::nullopt;
  }
  const Value* x = n->input(0);
  if (!x || !x->shape().fully_known()) return std::nullopt;
  const Dims in = x->shape().static_dims();
  const Tensor *st = constant_value(n->input(1)), *en = constant_value(n->input(2));
  const Tensor* ax = n->num_inputs() > 3 && n->input(3) ? constant_value(n->input(3)) : nullptr;
  const Tensor* sp = n->num_inputs() > 4 && n->input(4) ? constant_value(n->input(4)) : nullptr;
  if (!st || !en || st->numel() != 1 || en->numel() != 1 || !dtype_is_integer(st->dtype()) ||
      !dtype_is_integer(en->dtype())) {
    return std::nullopt;
  }
  if (n->num_inputs() > 3 && n->input(3) && (!ax || ax->numel() != 1)) return std::nullopt;
  if (n->num_inputs() > 4 && n->input(4) && (!sp || sp->numel() != 1 || sp->int_at(0) != 1)) {
    return std::nullopt;
  }
  const auto rank = static_cast<int64_t>(in.size());
  int64_t axis = ax ? ax->int_at(0) : 0;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  const int64_t d = in[static_cast<size_t>(axis)];
  const SliceAxis a = slice_axis(d, st->int_at(0), en->int_at(0), 1);
  return SliceRange{n->input(0), axis, a.start, a.start + a.len};
}

std::optional<double> element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
    case DType::kFloat64:
      return t.double_at(i);
    case DType::kFloat16:
      return half_to_float(static_cast<const uint16_t*>(t.raw())[i]);
    case DType::kBFloat16: {
      uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(t.raw())[i]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kBool:
      return static_cast<double>(t.int_at(i));
    default:
      return std::nullopt;
  }
}

}  // namespace nnfuse::pattern
