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

Rule layer_scale() {
  using namespace pattern;
  Pat mm = op_in(kFusedDomain, "FusedMatMul", {any("x"), constant("w")}, false).named("mm");
  Pat tr = op("Transpose", {mm}).named("tr");
  return {.name = "LayerScaleFusionPass",
          .description =
              "Folds a constant per-channel scale after a dense layer (through a "
              "Transpose) into its weights",
          .ops = {"MatMul", "Add", "Transpose", "Mul"},
          .patterns = {{"", op("Mul", {tr, constant("g")}).named("mul")}},
          .rewrite = [](const RuleMatch& rm) -> std::string {
            const Match& m = rm.match;
            Graph& g = rm.g;
            Node* mn = m.node("mm");
            Node* tn = m.node("tr");
            if (!mn->attr_string("activation", "").empty()) {
              return std::string("the dense layer has an activation");
            }
            const Tensor* w = constant_value(m.value("w"));
            const Tensor* gv = constant_value(m.value("g"));
            const Value* y = mn->output(0);
            if (w->dtype() != DType::kFloat32 || gv->dtype() != DType::kFloat32 || w->rank() != 2 ||
                !y->shape().fully_known()) {
              return std::string("not a float32 2-D weight of a static product");
            }
            const int64_t n = w->dim(1);
            const Dims ys = y->shape().static_dims();
            const std::vector<int64_t> perm = tn->attr_ints("perm", {});
            if (perm.size() != ys.size() || ys.back() != n) {
              return std::string("the Transpose's perm does not match the product");
            }
            // The output axis the product's channels (its last dim) land on.
            size_t axis = perm.size();
            for (size_t i = 0; i < perm.size(); ++i) {
              if (perm[i] == static_cast<int64_t>(ys.size()) - 1) axis = i;
            }
            // g right-aligned to the output's rank: [n] at `axis`, 1 elsewhere.
            const Dims gs = gv->shape();
            const size_t r = perm.size();
            if (gs.size() > r || gv->numel() != n) {
              return std::string("the scale is not one value per output channel");
            }
            for (size_t i = 0; i < gs.size(); ++i) {
              const size_t at = r - gs.size() + i;
              if (gs[i] != (at == axis ? n : 1)) {
                return std::string("the scale is not one value per output channel");
              }
            }
            if (std::string why = pattern::check_replaceable(g, m.nodes(), {m.root()->output(0)});
                !why.empty()) {
              return why;
            }
            Tensor w2(DType::kFloat32, w->shape());
            const float* pg = gv->data<float>();
            for (int64_t k = 0; k < w->dim(0); ++k) {
              for (int64_t j = 0; j < n; ++j)
                w2.data<float>()[k * n + j] = w->data<float>()[k * n + j] * pg[j];
            }
            const Tensor* b =
                mn->num_inputs() > 2 && mn->input(2) ? constant_value(mn->input(2)) : nullptr;
            if (mn->num_inputs() > 2 && mn->input(2) &&
                (!b || b->dtype() != DType::kFloat32 || b->numel() != n)) {
              return std::string("the bias is not a constant of the output channels");
            }
            std::vector<Value*> ins = {m.value("x"),
                                       add_constant(g, mn->name() + "_scaled_w", std::move(w2))};
            if (b) {
              Tensor b2(DType::kFloat32, b->shape());
              for (int64_t j = 0; j < n; ++j) b2.data<float>()[j] = b->data<float>()[j] * pg[j];
              ins.push_back(add_constant(g, mn->name() + "_scaled_b", std::move(b2)));
            }
            // The scaled product, then the same Transpose, as two nodes in place of the three.
            Value* scaled =
                g.add_value(g.unique_node_name(mn->name() + "_scaled"), y->dtype(), y->shape());
            Node* nm = g.add_node("FusedMatMul", g.unique_node_name(mn->name() + "_scaled"), ins,
                                  {scaled}, kFusedDomain);
            for (const auto& [k, a] : mn->attrs()) nm->set_attr(k, a);
            std::map<std::string, Attribute> tattrs = tn->attrs();
            return rm.fuse("Transpose", {scaled}, tattrs, "");
          }};
}

}  // namespace

std::unique_ptr<Pass> make_layer_scale_pass() { return make_rule_pass(layer_scale()); }

}  // namespace nnfuse
