#include "ops/infer_util.h"

#include <algorithm>

namespace nnfuse::ops {

namespace {

const Shape& unknown_shape() {
  static const Shape s = Shape::unknown();
  return s;
}

// The broadcast of two dims; false when both are known and differ and neither is 1.
bool broadcast_dim(const Dim& a, const Dim& b, Dim* out) {
  if (a.known() && b.known()) {
    if (a.value != b.value && a.value != 1 && b.value != 1) return false;
    *out = a.value == 1 ? b : a;
  } else if (a.known() && a.value != 1) {
    *out = a;
  } else if (b.known() && b.value != 1) {
    *out = b;
  } else if (!a.known() && !b.known() && a.param == b.param && !a.param.empty()) {
    *out = a;
  } else {
    *out = Dim{};
  }
  return true;
}

}  // namespace

const Shape& input_shape(const Node& n, size_t i) {
  const Value* v = n.input(i);
  return v ? v->shape() : unknown_shape();
}

OutputType like_input(const Node& n, size_t i) {
  const Value* v = n.input(i);
  return v ? OutputType{v->dtype(), v->shape()} : OutputType{};
}

std::string broadcast_shape(const Shape& a, const Shape& b, Shape* out) {
  *out = Shape::unknown();
  if (!a.has_rank || !b.has_rank) return "";
  const size_t r = std::max(a.dims.size(), b.dims.size());
  out->has_rank = true;
  out->dims.assign(r, Dim{});
  for (size_t k = 0; k < r; ++k) {
    const Dim one{1, ""};
    const Dim& da = k < r - a.dims.size() ? one : a.dims[k - (r - a.dims.size())];
    const Dim& db = k < r - b.dims.size() ? one : b.dims[k - (r - b.dims.size())];
    if (!broadcast_dim(da, db, &out->dims[k])) {
      *out = Shape::unknown();
      return "shapes " + a.str() + " and " + b.str() + " do not broadcast";
    }
  }
  return "";
}

std::string matmul_shape(const Shape& a, const Shape& b, Shape* out) {
  *out = Shape::unknown();
  if (!a.has_rank || !b.has_rank) return "";
  if (a.dims.empty() || b.dims.empty()) return "a MatMul operand is a scalar";
  std::vector<Dim> ad = a.dims, bd = b.dims;
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), Dim{1, ""});
  if (b_vec) bd.push_back(Dim{1, ""});
  const Dim &k1 = ad.back(), &k2 = bd[bd.size() - 2];
  if (k1.known() && k2.known() && k1.value != k2.value) {
    return "inner dims " + std::to_string(k1.value) + " and " + std::to_string(k2.value) +
           " differ";
  }
  Shape ba{true, std::vector<Dim>(ad.begin(), ad.end() - 2)};
  Shape bb{true, std::vector<Dim>(bd.begin(), bd.end() - 2)};
  if (std::string why = broadcast_shape(ba, bb, out); !why.empty()) return why;
  if (!a_vec) out->dims.push_back(ad[ad.size() - 2]);
  if (!b_vec) out->dims.push_back(bd.back());
  return "";
}

Shape with_last_dim(const Shape& s, int64_t d) {
  Shape r = s;
  if (r.has_rank && !r.dims.empty()) r.dims.back() = d >= 0 ? Dim{d, ""} : Dim{};
  return r;
}

int64_t dim_of(const Shape& s, int64_t i) {
  if (!s.has_rank) return -1;
  const int64_t r = static_cast<int64_t>(s.dims.size());
  if (i < 0) i += r;
  if (i < 0 || i >= r) return -1;
  return s.dims[i].known() ? s.dims[i].value : -1;
}

std::optional<Dims> known_dims(const Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

}  // namespace nnfuse::ops
