// GatedFFNFusionPass: a gated FFN's gate and up projections of one input, the gate's
// activation and their product, as SwiGLU (silu(x Wg) * (x Wu)), GeGLU (gelu(x W1 + b1) *
// (x W2 + b2), erf or tanh GELU) and the bilinear GLU write them, become one dense layer with
// the weights packed side by side whose epilogue computes act(gate) * up:
//   Mul(act(FusedMatMul(x, Wg, bg)), FusedMatMul(x, Wu, bu))   (either order; MatMul without bias)
//   == FusedGatedMatMul(x, [Wg | Wu], [bg | bu]; activation)
// The activation is the gate's epilogue (MatMulBiasAddFusionPass) or a Gelu or Swish node of
// its own (GeluFusionPass). The product [.., 2N] never leaves the kernel.
//
// GatedFFNChunkFusionPass: the same written as one projection cut in halves, F.glu's and
// chunk(2)'s form: h = FusedMatMul(x, W [K, 2N], b); a, c = the halves of h (a Split in two or
// two Slices of the last axis); Mul(act(a), c) with act a Gelu, Swish or Sigmoid node (F.glu:
// c * sigmoid(a) of the second half as the gate) == FusedGatedMatMul(x, W, b; activation), the
// weight's halves swapped when the gate is the second.
#include <algorithm>

#include "ir/builder.h"
#include "ops/dense.h"
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

// The gate's activation: its dense layer's epilogue, or its own node's (a Swish of alpha 1 is a
// SiLU).
ops::Activation gate_activation(const RuleMatch& m) {
  using K = ops::ActivationKind;
  const Node* act = m.node("act");
  if (!act) return ops::read_activation(*m.node(kFactor[gate_of(m)].p));
  if (act->is(Op::kSigmoid)) return ops::Activation::of(K::kSigmoid);
  ops::Activation a = ops::standalone_activation(*act);
  if (a.kind == K::kSwish && a.alpha == 1.0f) a = {K::kSiLU, 1.0f, 0.0f};
  return a;
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
        ops::FusedGatedMatMul gated{m["x"], w, b};
        gated.act = gate_activation(m);
        return m.fuse(gated.spec());
      }};
}

// The halves of one value along its last axis that `a` and `c` are (equal_parts, in either
// order): the value, whether `a` is the second half, and the nodes that cut it.
struct Halves {
  Value* whole = nullptr;
  bool gate_second = false;
  std::vector<Node*> nodes;
};
std::optional<Halves> halves_of(Value* a, Value* c) {
  for (bool second : {false, true}) {
    if (auto p = second ? equal_parts({c, a}) : equal_parts({a, c})) {
      return Halves{p->whole, second, p->nodes};
    }
  }
  return std::nullopt;
}

// The activation-free dense layer writing v, with a float32 [K, 2N] constant weight and a
// constant bias of its width (or none); else nullptr.
Node* dense_of(Value* v) {
  Node* p = v->producer();
  const bool dense = p && (p->is(Op::kMatMul) || (p->is(Op::kFusedMatMul) && !has_activation(p)));
  const Tensor* w = dense && p->num_inputs() > 1 ? pattern::constant_value(p->input(1)) : nullptr;
  if (!w || w->rank() != 2 || w->dtype() != DType::kFloat32) return nullptr;
  if (p->num_inputs() > 2 && p->input(2)) {
    const Tensor* b = pattern::constant_value(p->input(2));
    if (!b || b->numel() != w->dim(1) || b->dtype() != DType::kFloat32) return nullptr;
  }
  return p;
}

// W [K, 2N] (or a bias [2N]) with its column halves swapped.
Tensor swap_halves(const Tensor& t) {
  const int64_t cols = t.shape().back(), rows = t.numel() / cols, n = cols / 2;
  Tensor r(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < rows; ++i) {
    const float* from = t.data<float>() + i * cols;
    float* to = r.data<float>() + i * cols;
    std::copy(from + n, from + cols, to);
    std::copy(from, from + n, to + n);
  }
  return r;
}

Rule gated_ffn_chunk() {
  using namespace pattern;
  Pat a = any("a");
  Pat gate = any_of({op_in(kFusedDomain, "Gelu", {a}, false).named("act"),
                     op_in(kFusedDomain, "Swish", {a}, false).named("act"),
                     op("Sigmoid", {a}).named("act")});
  return {.name = "GatedFFNChunkFusionPass",
          .description =
              "Fuses a gated FFN written as one projection cut in halves (F.glu, "
              "chunk(2)) into one dense layer whose epilogue computes act(gate) * up",
          .ops = {"MatMul", "Split", "Sigmoid", "Mul"},
          .patterns = {{"", op("Mul", {gate, any("c")})}},
          .guards = {guard::float32({"c"})},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const std::optional<Halves> h = halves_of(m["a"], m["c"]);
            Node* p = h ? dense_of(h->whole) : nullptr;
            if (!p) return "the gate and up values are not the halves of one dense layer's output";
            const Tensor* w = pattern::constant_value(p->input(1));
            const Tensor* b =
                p->num_inputs() > 2 && p->input(2) ? pattern::constant_value(p->input(2)) : nullptr;
            ops::FusedGatedMatMul gated{p->input(0), nullptr, nullptr};
            gated.act = gate_activation(m);
            const std::string stem = p->name() + "_gated";
            Value* wv = h->gate_second ? m.add_constant(stem + "_w", swap_halves(*w)) : p->input(1);
            Value* bv = b && h->gate_second ? m.add_constant(stem + "_b", swap_halves(*b))
                        : b                 ? p->input(2)
                                            : nullptr;
            std::vector<Node*> nodes = {m.root(), m.node("act"), p};
            nodes.insert(nodes.end(), h->nodes.begin(), h->nodes.end());
            gated.w = wv;
            gated.bias = bv;
            return m.fuse_nodes(nodes, gated.spec(), {m.root()->output(0)});
          }};
}

}  // namespace

std::unique_ptr<Pass> make_gated_ffn_pass() { return make_rule_pass(gated_ffn()); }

std::unique_ptr<Pass> make_gated_ffn_chunk_pass() { return make_rule_pass(gated_ffn_chunk()); }

}  // namespace nnfuse
