// MatMulSkipLayerNormFusionPass: a transformer's output projection, residual and LayerNorm
//   SkipLayerNorm(FusedMatMul(a, W, b), r, gamma, beta, bias2)   (either input order)
//   == FusedMatMulLayerNorm(a, W, b + bias2, r, gamma, beta; epsilon)
// The product runs with the residual as a sum post-op and each row is normalized right after,
// in the same kernel. Only an activation-free FusedMatMul of a constant 2-D weight qualifies,
// with a residual of exactly the product's shape and the normalized sum not needed elsewhere.
//
// LayerNormMatMulFusionPass (CANN's LayerNormMatMul), a pre-norm block's LayerNorm or RMSNorm
// into the dense layer that reads it:
//   FusedMatMul(LayerNormalization(x, gamma, beta), W, b, act)
//   == FusedLayerNormMatMul(x, W, b, gamma, beta; epsilon, act)
//   FusedMatMul(RMSNorm(x, gamma), W, b, act) == FusedLayerNormMatMul(x, W, b, gamma; norm "rms")
//   FusedGatedMatMul(norm(x), W, b) == FusedGatedMatMul(x, W, b, gamma, beta; epsilon, norm)
// It pays only where the dense layer is the norm's sole reader: then the normalized rows
// never go through the activation arena. In a post-LN block (BERT) the LayerNorm's output is
// also the next residual, so it must be written anyway and the match is declined. It runs
// before SkipLayerNormFusionPass: in a pre-norm block the residual Add then goes into the
// dense layer before it (FusedMatMulResidual) and the norm into the one after, two kernels
// where a SkipLayerNorm between them would make three.
#include "ir/builder.h"
#include "ops/dense.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/norm_util.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

Rule matmul_skip_layer_norm() {
  using namespace pattern;
  Pat mm = op_in(kFusedDomain, "FusedMatMul", {any("a"), any("w"), optional(any("bias"))}, false)
               .named("mm");
  auto sln = [](Pat x, Pat r) {
    return op_in(kFusedDomain, "SkipLayerNorm",
                 {x, r, any("gamma"), optional(any("beta")), optional(any("bias2"))}, false)
        .named("sln");
  };
  return {
      .name = "MatMulSkipLayerNormFusionPass",
      .description = "Fuses a dense layer with the residual Add and LayerNorm after it",
      .ops = {"MatMul", "Add", "Add", "LayerNormalization"},
      .patterns = {{"", any_of({sln(mm, any("res")), sln(any("res"), mm)})}},
      .guards = {guard::no_activation("mm"), guard::same_shape("res", "mm"),
                 guard::float32({"res"}), guard::unused_output("sln", 1), guard::matrix("w"),
                 guard::per_feature({"bias", "gamma", "beta", "bias2"}, width::columns("w"))},
      .rewrite = [](const RuleMatch& m) -> std::string {
        const int64_t n = m.constant("w")->dim(1);
        Tensor bias = m.feature_values("bias", n, 0.0f);
        const Tensor b2 = m.feature_values("bias2", n, 0.0f);
        for (int64_t j = 0; j < n; ++j) bias.data<float>()[j] += b2.data<float>()[j];
        Value* b = m.add_constant(m["mm"]->name() + "_bias", std::move(bias));
        return m.fuse(ops::FusedMatMulLayerNorm{m["a"], m["w"], b, m["res"], m.feature("gamma", n),
                                                m.feature("beta", n), norm::epsilon_of(*m.root())}
                          .spec());
      }};
}

// A dense layer reading y as its A with no prologue yet (the first such reader): a FusedMatMul
// or a bias-free MatMul by a constant matrix (which become a FusedLayerNormMatMul), or a
// FusedGatedMatMul (which takes the norm's parameters as inputs 3 and 4).
Node* matmul_reader(const Value& y) {
  for (const Use& u : y.uses()) {
    const Node& n = *u.node;
    if (u.input_index != 0) continue;
    if (n.is(Op::kFusedMatMul) || (n.is(Op::kFusedGatedMatMul) && !ops::gated_has_norm(n))) {
      return u.node;
    }
  }
  for (const Use& u : y.uses()) {  // a bias-free MatMul by a constant matrix (an LM head)
    const Node& n = *u.node;
    const Tensor* w = n.num_inputs() == 2 ? pattern::constant_value(n.input(1)) : nullptr;
    if (u.input_index == 0 && n.is(Op::kMatMul) && w && w->rank() == 2 &&
        w->dtype() == DType::kFloat32) {
      return u.node;
    }
  }
  return nullptr;
}

// The norm of a match and the dense layer reading it as one node; "" or why not.
std::string fuse_norm_into_dense(const RuleMatch& m) {
  Node* mm = matmul_reader(*m["ln"]);
  const Shape& xs = m["x"]->shape();
  if (xs.dims.size() < 2 || !xs.dims.back().known()) {
    return "the norm's input is not a matrix of a known width";
  }
  const int64_t k = xs.dims.back().value;
  const bool rms = m.node("ln")->is(Op::kRMSNorm);
  const ops::NormPrologue norm{rms ? ops::NormKind::kRms : ops::NormKind::kLayer,
                               norm::epsilon_of(*m.node("ln"))};
  Value* gamma = m.feature("gamma", k, 1.0f, m.node("ln")->name() + "_gamma_ones");
  Value* beta = rms ? nullptr : m.feature("beta", k);
  if (mm->is(Op::kFusedGatedMatMul)) {
    ops::FusedGatedMatMul gated = ops::FusedGatedMatMul::of(*mm);
    gated.x = m["x"];
    gated.gamma = gamma;
    gated.beta = beta;
    gated.norm = norm;
    return m.fuse_nodes({m.node("ln"), mm}, gated.spec(), {mm->output(0)});
  }
  const ops::FusedMatMul dense = ops::FusedMatMul::of(*mm);
  return m.fuse_nodes(
      {m.node("ln"), mm},
      ops::FusedLayerNormMatMul{m["x"], dense.b, dense.bias, gamma, beta, norm, dense.act}.spec(),
      {mm->output(0)});
}

Rule layer_norm_matmul() {
  using namespace pattern;
  Pat rms = op_in(kFusedDomain, "RMSNorm", {any("x"), optional(any("gamma"))}, false).named("ln");
  return {
      .name = "LayerNormMatMulFusionPass",
      .description = "Fuses a LayerNorm or RMSNorm into the dense layer that is its only reader",
      .ops = {"LayerNormalization", "MatMul"},
      .patterns = {{"", any_of({norm::layer_norm_of(any("x")), rms})
                            .where([](const Value& y) { return matmul_reader(y) != nullptr; },
                                   "read by a dense layer")}},
      .guards = {guard::read_once("ln"), guard::layer_norm("ln", "x"), guard::float32({"x"}),
                 guard::per_feature({"gamma", "beta"}, width::features("x"), "x")},
      .rewrite = fuse_norm_into_dense};
}

}  // namespace

std::unique_ptr<Pass> make_layer_norm_matmul_pass() { return make_rule_pass(layer_norm_matmul()); }

std::unique_ptr<Pass> make_matmul_layer_norm_pass() {
  return make_rule_pass(matmul_skip_layer_norm());
}

}  // namespace nnfuse
