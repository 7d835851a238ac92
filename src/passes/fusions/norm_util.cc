#include "passes/fusions/norm_util.h"

#include <algorithm>

#include "ir/builder.h"
#include "pattern/pattern.h"
#include "pattern/rewriter.h"

namespace nnfuse::norm {

int64_t feature_count(const Value* x, const std::vector<const Value*>& params) {
  const Shape& s = x->shape();
  if (s.has_rank && !s.dims.empty() && s.dims.back().known()) return s.dims.back().value;
  for (const Value* p : params) {
    const Tensor* t = p ? pattern::constant_value(p) : nullptr;
    if (t && t->numel() > 1) return t->numel();
  }
  return -1;
}

std::string feature_reason(const Value* v, int64_t e, const Value* x, const char* what) {
  const Tensor* t = pattern::constant_value(v);
  if (!t) return std::string(what) + " " + quoted(v->name()) + " is not a constant";
  if (!is_float_type(t->dtype())) {
    return std::string(what) + " " + quoted(v->name()) + " is " + dtype_name(t->dtype());
  }
  bool leading_ones = true;
  for (int64_t i = 0; i + 1 < t->rank(); ++i) leading_ones &= t->dim(i) == 1;
  const bool rank_ok =
      x->shape().has_rank && t->rank() <= static_cast<int64_t>(x->shape().dims.size());
  if (e < 0 || !leading_ones || !rank_ok || (t->numel() != e && t->numel() != 1)) {
    return std::string(what) + " " + quoted(v->name()) + " of shape " + dims_str(t->shape()) +
           " is not one value per feature of the last axis (" +
           (e < 0 ? std::string("?") : std::to_string(e)) + ")";
  }
  return "";
}

std::string layer_norm_reason(const Node& ln, int64_t rank) {
  for (size_t k = 1; k < ln.num_outputs(); ++k) {
    const Value* o = ln.output(k);
    if (o && (!o->uses().empty() || o->is_graph_output())) {
      return ln.describe() + "'s Mean or InvStdDev output " + quoted(o->name()) + " is used";
    }
  }
  if (ln.attr_int("stash_type", 1) != 1) return ln.describe() + " has stash_type != 1";
  const int64_t axis = ln.attr_int("axis", -1);
  if (axis != -1 && !(rank > 0 && axis == rank - 1)) {
    return ln.describe() + " normalizes from axis " + std::to_string(axis) +
           ", not over the last axis only";
  }
  return "";
}

float epsilon_of(const Node& ln) { return ln.attr_float("epsilon", 1e-5f); }

pattern::Pat layer_norm_of(const pattern::Pat& x) {
  using namespace pattern;
  auto ln = [&](const std::string& domain) {
    return op_in(domain, "LayerNormalization", {x, any("gamma"), optional(any("beta"))}, false)
        .named("ln");
  };
  return any_of({ln(""), ln(kFusedDomain)});
}

}  // namespace nnfuse::norm
