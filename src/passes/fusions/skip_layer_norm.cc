// SkipLayerNormFusionPass: LayerNormalization((a [+ bias]) + b)
//   == SkipLayerNorm(a, b, gamma, beta, bias) (ai.nnfuse), output 1 the sum itself when it has
//   other consumers (the next residual).
#include "ops/norm.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/norm_util.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using norm::feature_count;
using norm::feature_reason;

constexpr DType kFloat = DType::kFloat32;

bool is_plain_add(const Node* n) {
  return n && n->is(Op::kAdd) && n->num_inputs() == 2 && n->input(0) && n->input(1);
}

bool same_dim(const Dim& a, const Dim& b) {
  return (a.known() && b.known() && a.value == b.value) || (!a.param.empty() && a.param == b.param);
}

// True when a tensor of shape `skip` provably broadcasts to shape `x` without growing it.
bool broadcasts_to(const Shape& skip, const Shape& x) {
  if (!skip.has_rank || !x.has_rank || skip.dims.size() > x.dims.size()) return false;
  const size_t off = x.dims.size() - skip.dims.size();
  for (size_t i = 0; i < skip.dims.size(); ++i) {
    const Dim& s = skip.dims[i];
    if (!same_dim(s, x.dims[off + i]) && !(s.known() && s.value == 1)) return false;
  }
  return true;
}

// A bias Add on one operand of the sum, Add(h, bias) with bias a float32 constant of one value
// per feature used only here, is absorbed: the sum is then (h + bias) + other, as the kernel
// adds. Returns the bias (nullptr: none) and the operand it was on; ops[k] becomes h.
Value* absorb_bias(Value* ops[2], int& biased, int64_t e, const Value* sum,
                   std::vector<Node*>& nodes) {
  for (int k = 0; k < 2; ++k) {
    Node* b = ops[k]->producer();
    if (!is_plain_add(b) || ops[k]->uses().size() != 1 || ops[k]->is_graph_output()) continue;
    for (size_t j = 0; j < 2; ++j) {
      Value* c = b->input(j);
      Value* h = b->input(1 - j);
      const Tensor* t = pattern::constant_value(c);
      if (t && t->dtype() == kFloat && t->numel() == e && h->dtype() == kFloat &&
          !pattern::constant_value(h) && feature_reason(c, e, sum, "bias").empty()) {
        biased = k;
        ops[k] = h;
        nodes.insert(nodes.begin(), b);
        return c;
      }
    }
  }
  return nullptr;
}

// The residual sum of a match: its operands X (of the sum's shape, the biased one first) and
// Skip (broadcasting to it), the absorbed bias and the nodes to fuse; `why` says when neither
// operand provably is X.
struct Residual {
  Value *x, *skip, *bias;
  std::vector<Node*> nodes;
  std::string why;
};
Residual residual(const RuleMatch& m) {
  Value* sum = m["add"];
  Residual r{nullptr, nullptr, nullptr, m.match.nodes(), ""};
  Value* ops[2] = {m["a"], m["b"]};
  int biased = -1;
  r.bias = absorb_bias(ops, biased, feature_count(sum, {}), sum, r.nodes);
  const Shape& xs = sum->shape();
  auto fits = [&](int i) {
    return broadcasts_to(ops[i]->shape(), xs) && broadcasts_to(xs, ops[i]->shape()) &&
           broadcasts_to(ops[1 - i]->shape(), xs);
  };
  const int k = biased < 0 ? 0 : biased, x = fits(k) ? k : fits(1 - k) ? 1 - k : -1;
  if (x < 0) {
    r.why = "cannot show that one operand of " + m.node("add")->describe() + " (" +
            ops[0]->shape().str() + ", " + ops[1]->shape().str() +
            ") has the sum's shape and the other broadcasts to it";
  } else {
    r.x = ops[x];
    r.skip = ops[1 - x];
  }
  return r;
}

Rule skip_layer_norm() {
  using namespace pattern;
  Pat add = op("Add", {any("a"), any("b")}).named("add");
  return {.name = "SkipLayerNormFusionPass",
          .description =
              "Fuses a residual Add (and a bias Add) into the LayerNormalization after it "
              "as SkipLayerNorm",
          .ops = {"Add", "LayerNormalization"},
          .patterns = {{"", norm::layer_norm_of(add)}},
          .guards = {guard::layer_norm("ln", "add"), guard::float32({"a", "b", "add", "ln"}),
                     guard::not_constant({"a", "b"}),
                     guard::per_feature({"gamma", "beta"}, width::features("add"), "add", true)},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Residual r = residual(m);
            if (!r.why.empty()) return r.why;
            const int64_t e = feature_count(m["add"], {});
            const ops::SkipLayerNorm sln{r.x,
                                         r.skip,
                                         m.feature("gamma", e),
                                         m.feature("beta", e),
                                         r.bias,
                                         norm::epsilon_of(*m.node("ln"))};
            return m.fuse_nodes(r.nodes, sln.spec(), m.outputs({"ln"}, {"add"}));
          }};
}

}  // namespace

std::unique_ptr<Pass> make_skip_layer_norm_pass() { return make_rule_pass(skip_layer_norm()); }

}  // namespace nnfuse
