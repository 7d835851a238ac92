// LayerScaleFusionPass: a constant per-channel scale after a dense layer, seen through the
// Transpose that moves the layer's output channels back to dim 1 (ConvNeXt's layer scale,
// gamma [C, 1, 1] times permute(Linear(x)) with the channels last in the Linear), folds into
// the layer's weights and bias:
//   Mul(Transpose(FusedMatMul(x, W, b), perm), g) == Transpose(FusedMatMul(x, W g, b g), perm)
// when g varies only along the axis the layer's last dim moves to, and the layer has no
// activation (the scale would not commute with it).
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

// "" when g is one value per channel of the product [.., n] after the Transpose `perm`: [n] on
// the axis the channels land on, right-aligned, 1 elsewhere.
std::string scale_fits(const std::vector<int64_t>& perm, const Dims& ys, const Tensor& g,
                       int64_t n) {
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
  return {
      .name = "LayerScaleFusionPass",
      .description =
          "Folds a constant per-channel scale after a dense layer (through a "
          "Transpose) into its weights",
      .ops = {"MatMul", "Add", "Transpose", "Mul"},
      .patterns = {{"", op("Mul", {tr, constant("g")}).named("mul")}},
      .guards = {guard::no_activation("mm")},
      .rewrite = [](const RuleMatch& m) -> std::string {
        const Tensor *w = m.constant("w"), *gv = m.constant("g");
        const Value* y = m["mm"];
        if (w->dtype() != DType::kFloat32 || gv->dtype() != DType::kFloat32 || w->rank() != 2 ||
            !y->shape().fully_known()) {
          return "not a float32 2-D weight of a static product";
        }
        const int64_t n = w->dim(1);
        const Tensor* b = m["bias"] ? m.constant("bias") : nullptr;
        if (m["bias"] && (!b || b->dtype() != DType::kFloat32 || b->numel() != n)) {
          return "the bias is not a constant of the output channels";
        }
        std::string why =
            scale_fits(m.node("tr")->attr_ints("perm", {}), y->shape().static_dims(), *gv, n);
        if (why.empty())
          why = pattern::check_replaceable(m.g, m.match.nodes(), {m.root()->output(0)});
        if (!why.empty()) return why;
        // The scaled product, then the same Transpose: two nodes in place of the three.
        const float* g = gv->data<float>();
        const std::string stem = y->producer()->name() + "_scaled";
        std::vector<Value*> ins = {m["x"], m.add_constant(stem + "_w", scaled_columns(*w, g, n))};
        if (b) ins.push_back(m.add_constant(stem + "_b", scaled_columns(*b, g, n)));
        Value* scaled = m.op("FusedMatMul", stem, ins, y, m.node("mm")->attrs());
        return m.fuse("Transpose", {scaled}, m.node("tr")->attrs(), "");
      }};
}

}  // namespace

std::unique_ptr<Pass> make_layer_scale_pass() { return make_rule_pass(layer_scale()); }

}  // namespace nnfuse
