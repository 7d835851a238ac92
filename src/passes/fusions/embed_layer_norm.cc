// EmbedLayerNormFusionPass: a transformer's embedding block, the word, position and token-type
// lookups summed and normalized, becomes one kernel that gathers each row, adds and normalizes
// it while it is in cache:
//   LayerNormalization(addend + Gather(T_1, ids_1) + ... + Gather(T_n, ids_n), gamma, beta)
//     == EmbedLayerNorm(gamma, beta, addend, T_1, ids_1, ..., T_n, ids_n)
// for any tree of Adds over the Gathers (axis 0, constant tables [V, E], ids of one shape) and
// at most one constant addend (e.g. the position embeddings, already gathered by constant
// folding), with the LayerNorm over the last axis (ONNX's at opset >= 17, or the one the
// LayerNorm fusion makes in domain ai.nnfuse). The sum is the fused node's second output when
// something else reads it.
#include <algorithm>
#include <map>
#include <set>

#include "ops/norm.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/norm_util.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;

// True when two ids shapes are surely equal: every dim known and equal, or the same symbol.
bool same_ids_shape(const Value& a, const Value& b) {
  if (&a == &b) return true;
  const Shape& x = a.shape();
  const Shape& y = b.shape();
  if (!x.has_rank || !y.has_rank || x.dims.size() != y.dims.size()) return false;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    const Dim& p = x.dims[i];
    const Dim& q = y.dims[i];
    const bool ok = (p.known() && q.known() && p.value == q.value) ||
                    (!p.known() && !q.known() && !p.param.empty() && p.param == q.param);
    if (!ok) return false;
  }
  return true;
}

// "" when a constant of shape `s` broadcasts to `out` without growing it.
std::string broadcast_reason(const Dims& s, const Shape& out) {
  if (s.size() > out.dims.size()) return "has more dims than the output " + out.str();
  for (size_t i = 0; i < s.size(); ++i) {
    const Dim& d = out.dims[out.dims.size() - s.size() + i];
    if (s[i] != 1 && !(d.known() && d.value == s[i])) {
      return "does not broadcast to the output " + out.str();
    }
  }
  return "";
}

// The lookups' (table, ids) pairs, left to right, and the width E of the tables; else why.
std::string lookups(const std::vector<const Node*>& gathers, std::vector<Value*>& pairs,
                    int64_t& e) {
  const Value* ids0 = nullptr;
  for (const Node* gather : gathers) {
    const Tensor* table = pattern::constant_value(gather->input(0));
    Value* ids = gather->input(1);
    const std::string who = "Gather '" + gather->name() + "'";
    if (!table) return "the table of " + who + " is not a constant";
    if (table->rank() != 2 || table->dtype() != DType::kFloat32) {
      return "the table of " + who + " is " + dtype_name(table->dtype()) +
             dims_str(table->shape()) + ", not a float32 matrix";
    }
    const int64_t axis = gather->attr_int("axis", 0);
    if (axis != 0 && axis != -2) return who + " is along axis " + std::to_string(axis) + ", not 0";
    if (ids->dtype() != DType::kInt64 && ids->dtype() != DType::kInt32) {
      return "the ids of " + who + " are not int64 or int32";
    }
    if (e >= 0 && table->dim(1) != e) {
      return "the tables have different widths (" + std::to_string(e) + " and " +
             std::to_string(table->dim(1)) + ")";
    }
    e = table->dim(1);
    if (ids0 && !same_ids_shape(*ids0, *ids)) {
      return "the ids of " + who + " " + ids->shape().str() +
             " may differ in shape from the first ids " + ids0->shape().str();
    }
    if (!ids0) ids0 = ids;
    pairs.push_back(gather->input(0));
    pairs.push_back(ids);
  }
  return "";
}

// "" when the sum has at most one constant term, a float32 tensor broadcasting to `out`.
std::string addend_reason(const std::vector<Value*>& constants, const Shape& out) {
  if (constants.size() > 1) return "the sum has more than one constant term";
  if (constants.empty()) return "";
  const Tensor* a = pattern::constant_value(constants[0]);
  if (a->dtype() != DType::kFloat32) return "the constant addend is not float32";
  std::string why = broadcast_reason(a->shape(), out);
  return why.empty() ? "" : "the constant addend " + dims_str(a->shape()) + " " + why;
}

// The embedding block a match is: the lookups' (table, ids) pairs, the tables' width E and the
// constant addend (nullptr: none); `why` is "" when it can run as one kernel.
struct Embedding {
  std::vector<Value*> pairs;
  int64_t e = -1;
  Value* addend = nullptr;
  std::string why;
};
Embedding embedding(const RuleMatch& m) {
  Embedding emb;
  std::vector<const Node*> gathers;
  std::vector<Value*> constants;
  for (const Match& l : m.match.repeats("sum")) {
    if (l.node("gather")) gathers.push_back(l.node("gather"));
    if (l.value("addend")) constants.push_back(l.value("addend"));
  }
  emb.addend = constants.empty() ? nullptr : constants[0];
  if (emb.why = lookups(gathers, emb.pairs, emb.e); !emb.why.empty()) return emb;
  Shape out = gathers[0]->input(1)->shape();
  if (!out.has_rank) return emb.why = "the ids' rank is unknown", emb;
  out.dims.push_back(Dim{emb.e, ""});
  emb.why = norm::layer_norm_reason(*m.node("ln"), out.dims.size());
  if (emb.why.empty()) emb.why = addend_reason(constants, out);
  return emb;
}

Rule embed_layer_norm() {
  using namespace pattern;
  // Any tree of Adds whose leaves are Gathers or constants.
  Pat leaf = any_of({op("Gather", {any("table"), any("ids")}).named("gather"), constant("addend")});
  Pat sum = tree("sum", "Add", leaf);
  Width e = [](const RuleMatch& m) { return embedding(m).e; };
  return {.name = "EmbedLayerNormFusionPass",
          .description =
              "Fuses embedding lookups (Gathers), their sum and the LayerNorm after them "
              "into one kernel",
          .ops = {"Gather", "Add", "LayerNormalization"},
          .patterns = {{"", norm::layer_norm_of(sum)}},
          .guards = {guard::float32({"ln"}), [](const RuleMatch& m) { return embedding(m).why; },
                     guard::per_feature({"gamma", "beta"}, e, "", true)},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Embedding emb = embedding(m);
            const ops::EmbedLayerNorm e{m.feature("gamma", emb.e), m.feature("beta", emb.e),
                                        emb.addend, emb.pairs, norm::epsilon_of(*m.node("ln"))};
            return m.fuse(e.spec(), m.outputs({"ln"}, {"sum"}));
          },
          // No lookup: not an embedding block.
          .applies = some_leaf("sum", "gather")};
}

}  // namespace

std::unique_ptr<Pass> make_embed_layer_norm_pass() { return make_rule_pass(embed_layer_norm()); }

}  // namespace nnfuse
