// GatedFFNFusionPass: a gated FFN's gate and up projections of one input, the gate's
// activation and their product, as SwiGLU (silu(x Wg) * (x Wu)), GeGLU (gelu(x W1 + b1) *
// (x W2 + b2), erf or tanh GELU) and the bilinear GLU write them, become one dense layer with
// the weights packed side by side whose epilogue computes act(gate) * up:
//   Mul(act(FusedMatMul(x, Wg, bg)), FusedMatMul(x, Wu, bu))   (either order; MatMul without bias)
//   == FusedGatedMatMul(x, [Wg | Wu], [bg | bu]; activation)
// The activation is the gate's epilogue (MatMulBiasAddFusionPass) or a Gelu or Swish node of
// its own (GeluFusionPass). The product [.., 2N] never leaves the kernel.
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::Pat;

// The pattern's names for factor 0 and factor 1 of the product: the dense layer's node, its
// weight and its bias.
struct Names {
  const char *p, *w, *b;
};
constexpr Names kFactor[2] = {{"p0", "w0", "b0"}, {"p1", "w1", "b1"}};

// A dense layer of x with a constant weight: MatMul(x, w) or FusedMatMul(x, w[, b]).
Pat dense(const Pat& x, int i) {
  using namespace pattern;
  const Names& f = kFactor[i];
  return any_of(
      {op_in(kFusedDomain, "FusedMatMul", {x, constant(f.w), optional(any(f.b))}, false).named(f.p),
       op("MatMul", {x, constant(f.w)}).named(f.p)});
}

// Factor 0: a dense layer (its epilogue activation, if any, is the gate's), or a Gelu or Swish
// node after one (the gate).
Pat factor(const Pat& x) {
  using namespace pattern;
  return any_of({op_in(kFusedDomain, "Gelu", {dense(x, 0)}, false).named("act"),
                 op_in(kFusedDomain, "Swish", {dense(x, 0)}, false).named("act"), dense(x, 0)});
}

bool has_activation(const Node* n) { return !n->attr_string("activation", "").empty(); }

// Which factor is the gate: the one with an activation (0 when neither has: a bilinear GLU).
int gate_of(const RuleMatch& m) { return !m.node("act") && has_activation(m.node("p1")) ? 1 : 0; }

// "" when both weights are [K, N] alike and only the gate has an activation, one.
std::string gated_pair(const RuleMatch& m) {
  const Tensor *w0 = m.constant("w0"), *w1 = m.constant("w1");
  if (w0->shape() != w1->shape()) {
    return "the gate and up weights " + dims_str(w0->shape()) + " and " + dims_str(w1->shape()) +
           " differ in shape";
  }
  const int g = gate_of(m);
  if ((m.node("act") && has_activation(m.node(kFactor[g].p))) ||
      has_activation(m.node(kFactor[1 - g].p))) {
    return "both factors apply an activation";
  }
  return "";
}

// The gate's activation as the fused node's attributes.
std::map<std::string, Attribute> gate_activation(const RuleMatch& m) {
  std::map<std::string, Attribute> attrs;
  const Node* act = m.node("act");
  if (!act) {
    for (const char* k : {"activation", "activation_alpha", "activation_beta"}) {
      if (const Attribute* a = m.node(kFactor[gate_of(m)].p)->find_attr(k)) attrs[k] = *a;
    }
  } else if (act->op_type() == "Gelu") {
    const bool tanh = act->attr_string("approximate", "none") == "tanh";
    attrs["activation"] = attr_string(tanh ? "GeluTanh" : "Gelu");
  } else {
    const float alpha = act->attr_float("alpha", 1.0f);
    set_activation_attrs(attrs, {alpha == 1.0f ? "SiLU" : "Swish", alpha, 0.0f});
  }
  return attrs;
}

Rule gated_ffn() {
  using namespace pattern;
  Pat x = any("x");
  return {
      .name = "GatedFFNFusionPass",
      .description =
          "Fuses a gated FFN's gate and up projections, the gate's activation and their "
          "product (SwiGLU, GeGLU) into one dense layer with packed weights",
      .ops = {"MatMul", "MatMul", "Sigmoid", "Mul", "Mul"},
      .patterns = {{"", op("Mul", {factor(x), dense(x, 1)})}},
      .guards = {guard::float32({"x"}), guard::matrix("w0"), guard::matrix("w1"), gated_pair,
                 guard::per_feature({"b0", "b1"}, width::columns("w0"))},
      .rewrite = [](const RuleMatch& m) -> std::string {
        const Names &g = kFactor[gate_of(m)], &u = kFactor[1 - gate_of(m)];
        const int64_t n = m.constant("w0")->dim(1);
        const std::string stem = m.node(g.p)->name() + "_gated";
        Value* w = m.add_constant(stem + "_w", concat_columns({m.constant(g.w), m.constant(u.w)}));
        const Tensor bg = m.feature_values(g.b, n, 0.0f).reshaped({1, n}),
                     bu = m.feature_values(u.b, n, 0.0f).reshaped({1, n});
        Value* b = m["b0"] || m["b1"]
                       ? m.add_constant(stem + "_b", concat_columns({&bg, &bu}).reshaped({2 * n}))
                       : nullptr;
        return m.fuse("FusedGatedMatMul", {m["x"], w, b}, gate_activation(m));
      }};
}

}  // namespace

std::unique_ptr<Pass> make_gated_ffn_pass() { return make_rule_pass(gated_ffn()); }

}  // namespace nnfuse
