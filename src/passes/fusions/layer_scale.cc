// LayerScaleFusionPass: a constant per-channel scale after a dense layer, seen through the
// Transpose that moves the layer's output channels back to dim 1 (ConvNeXt's layer scale,
// gamma [C, 1, 1] times permute(Linear(x)) with the channels last in the Linear), folds into
// the layer's weights and bias:
//   Mul(Transpose(FusedMatMul(x, W, b), perm), g) == Transpose(FusedMatMul(x, W g, b g), perm)
// when g varies only along the axis the layer's last dim moves to, and the layer has no
// activation (the scale would not commute with it).
#include "ops/dense.h"
#include "ops/onnx_ops.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

// "" when g is a float32 constant of one value per channel of the static product [.., n] after
// the Transpose: [n] on the axis the channels land on, right-aligned, 1 elsewhere.
std::string channel_scale(const RuleMatch& m) {
  const Tensor& g = *m.constant("g");
  const std::vector<int64_t> perm = m.node("tr")->attr_ints("perm", {});
  const Shape& y = m["mm"]->shape();
  const int64_t n = m.constant("w")->dim(1);
  if (g.dtype() != DType::kFloat32 || !y.fully_known())
    return "not a float32 scale of a static product";
  const Dims ys = y.static_dims();
  if (perm.size() != ys.size() || ys.back() != n) {
    return "the Transpose's perm does not match the product";
  }
  size_t axis = perm.size();
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] == static_cast<int64_t>(ys.size()) - 1) axis = i;
  }
  const Dims& gs = g.shape();
  bool fits = gs.size() <= perm.size() && g.numel() == n;
  for (size_t i = 0; fits && i < gs.size(); ++i) {
    fits = gs[i] == (perm.size() - gs.size() + i == axis ? n : 1);
  }
  return fits ? "" : "the scale is not one value per output channel";
}

// t (whose last dim has n elements) with column j multiplied by g[j].
Tensor scaled_columns(const Tensor& t, const float* g, int64_t n) {
  Tensor r(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = t.data<float>()[i] * g[i % n];
  return r;
}

Rule layer_scale() {
  using namespace pattern;
  Pat mm =
      op_in(kFusedDomain, "FusedMatMul", {any("x"), constant("w"), optional(any("bias"))}, false)
          .named("mm");
  Pat tr = op("Transpose", {mm}).named("tr");
  return {.name = "LayerScaleFusionPass",
          .description =
              "Folds a constant per-channel scale after a dense layer (through a "
              "Transpose) into its weights",
          .ops = {"MatMul", "Add", "Transpose", "Mul"},
          .patterns = {{"", op("Mul", {tr, constant("g")}).named("mul")}},
          .guards = {guard::no_activation("mm"), guard::matrix("w"),
                     guard::per_feature({"bias"}, width::columns("w")), channel_scale},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Tensor* w = m.constant("w");
            const int64_t n = w->dim(1);
            const float* g = m.constant("g")->data<float>();
            // The scaled product, then the same Transpose: two nodes in place of the three.
            const std::string stem = m.node("mm")->name() + "_scaled";
            Value* wv = m.add_constant(stem + "_w", scaled_columns(*w, g, n));
            Value* bv = m["bias"]
                            ? m.add_constant(stem + "_b",
                                             scaled_columns(m.feature_values("bias", n, 0), g, n))
                            : nullptr;
            ops::FusedMatMul mm = ops::FusedMatMul::of(*m.node("mm"));
            mm.b = wv;
            mm.bias = bv;
            Value* scaled = m.op(mm.spec(), stem, m["mm"]);
            ops::Transpose tr = ops::Transpose::of(*m.node("tr"));
            tr.x = scaled;
            return m.fuse(tr.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_layer_scale_pass() { return make_rule_pass(layer_scale()); }

}  // namespace nnfuse
