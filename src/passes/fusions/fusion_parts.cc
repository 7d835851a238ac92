// The tensors a horizontal fusion joins or finds cut (fusion_util.h): the equal parts of one
// value, and constant matrices side by side.
#include "ir/builder.h"
#include "passes/fusions/fusion_util.h"

namespace nnfuse {

std::optional<EqualParts> equal_parts(const std::vector<Value*>& parts) {
  Node* first = parts.empty() ? nullptr : parts[0]->producer();
  const std::optional<Dims> d = first ? static_shape(first->input(0)) : std::nullopt;
  const auto k = static_cast<int64_t>(parts.size());
  if (!d || d->empty() || d->back() % k != 0) return std::nullopt;
  const int64_t w = d->back() / k, last = static_cast<int64_t>(d->size()) - 1;
  if (first->is(Op::kSplit) && first->num_outputs() == parts.size()) {
    const int64_t axis = first->attr_int("axis", 0);
    if (axis != -1 && axis != last) return std::nullopt;
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::optional<Dims> o = static_shape(first->output(i));
      if (first->output(i) != parts[i] || !o || o->empty() || o->back() != w) return std::nullopt;
    }
    return EqualParts{first->input(0), {first}};
  }
  EqualParts r{first->input(0), {}};
  for (int64_t i = 0; i < k; ++i) {
    Node* n = parts[static_cast<size_t>(i)]->producer();
    const std::optional<pattern::SliceRange> s = pattern::slice_range(n);
    if (!s || s->src != r.whole || s->axis != last || s->start != i * w || s->end != (i + 1) * w) {
      return std::nullopt;
    }
    r.nodes.push_back(n);
  }
  return r;
}

Tensor float_vector(const std::vector<double>& v) {
  Tensor t(DType::kFloat32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  return t;
}

Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  const int64_t rows = parts[0]->dim(0);
  int64_t cols = 0;
  for (const Tensor* t : parts) cols += t->dim(1);
  Tensor r(DType::kFloat32, {rows, cols});
  float* d = r.data<float>();
  int64_t at = 0;
  for (const Tensor* t : parts) {
    const float* s = t->data<float>();
    const int64_t c = t->dim(1);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < c; ++j) d[i * cols + at + j] = s[i * c + j];
    }
    at += c;
  }
  return r;
}

}  // namespace nnfuse
