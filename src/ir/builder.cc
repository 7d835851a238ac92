#include "ir/builder.h"

namespace nnfuse {

Attribute attr_string(std::string s) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(s);
  return a;
}

Attribute attr_float(float f) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = f;
  return a;
}

Attribute attr_int(int64_t i) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = i;
  return a;
}

Attribute attr_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

Attribute attr_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}

Attribute attr_tensor(Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::kTensor;
  a.t = std::move(t);
  return a;
}

Tensor shape_tensor(const Dims& d) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(d.size())});
  for (size_t i = 0; i < d.size(); ++i) t.data<int64_t>()[i] = d[i];
  return t;
}

Node* producer_of(const Value* v, Op op) {
  Node* n = v ? v->producer() : nullptr;
  return n && n->is(op) ? n : nullptr;
}

std::optional<Dims> static_shape(const Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

}  // namespace nnfuse
