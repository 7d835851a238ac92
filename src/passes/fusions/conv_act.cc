// Conv epilogues, run by the conv kernel as oneDNN post-ops:
//   ConvAddFusionPass:        act(Conv(x, W, B) + r) == FusedConv(x, W, B, Sum=r, act)
//                             (either Add operand order; act optional; r of the conv's shape)
//   ConvActivationFusionPass: act(Conv(x, W, B)) == FusedConv(x, W, B, act)
#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

Pat conv_pattern() {
  return pattern::op("Conv", {pattern::any("x"), pattern::constant("w")}, false).named("conv");
}

// Common checks of the conv being fused; "" when it can take an epilogue.
std::string conv_ok(const Node& conv) {
  if (conv.input(0)->dtype() != DType::kFloat32) return "the Conv is not float32";
  if (conv.num_inputs() > 2 && conv.input(2) && !pattern::constant_value(conv.input(2))) {
    return "the Conv bias is not a constant";
  }
  return "";
}

std::vector<Value*> conv_inputs(const Match& m) {
  Node* c = m.node("conv");
  return {m.value("x"), m.value("w"), c->num_inputs() > 2 ? c->input(2) : nullptr};
}

class ConvAddActFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ConvAddFusionPass",
                            "Fuses a residual Add (and an activation after it) into the Conv", true,
                            true};
    return i;
  }
  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    // The conv must feed only the Add, so with two convs the matcher picks the one that does.
    Pat conv = conv_pattern().where(
        [](const Value& v) { return v.uses().size() == 1 && !v.is_graph_output(); },
        "the Conv's output has other consumers");
    Pat add = op("Add", {conv, any("res")}).named("add");
    std::vector<ActivationPattern> pats = activation_patterns(add);
    pats.push_back({"", add});
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, pats,
                [&](const std::string& act_name, const Match& m) -> std::string {
                  Node* conv = m.node("conv");
                  if (std::string why = conv_ok(*conv); !why.empty()) return std::string(why);
                  Value* res = m.value("res");
                  Value* cout = conv->output(0);
                  if (!cout->shape().fully_known() || res->shape() != cout->shape() ||
                      res->dtype() != DType::kFloat32) {
                    return std::string("the residual " + res->shape().str() +
                                       " is not of the Conv's shape " + cout->shape().str() +
                                       " (broadcasting Adds are not fused)");
                  }
                  std::map<std::string, Attribute> attrs = conv->attrs();
                  std::string why;
                  const auto a = activation_from_match(act_name, m, &why);  // "" is none
                  if (!a) return why;
                  set_activation_attrs(attrs, *a);
                  std::vector<Value*> ins = conv_inputs(m);
                  ins.push_back(res);
                  return apply_fusion(g, ctx, pass, m.nodes(), "FusedConv", kFusedDomain, ins,
                                      {m.root()->output(0)}, attrs);
                });
  }
};

class ConvActFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ConvActivationFusionPass",
                            "Fuses the activation that follows a Conv into it", true, true};
    return i;
  }
  void run(Graph& g, PassContext& ctx) override {
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, activation_patterns(conv_pattern()),
                [&](const std::string& act_name, const Match& m) -> std::string {
                  Node* conv = m.node("conv");
                  if (std::string why = conv_ok(*conv); !why.empty()) return std::string(why);
                  std::string why;
                  auto a = activation_from_match(act_name, m, &why);
                  if (!a) return std::string(why);
                  std::map<std::string, Attribute> attrs = conv->attrs();
                  set_activation_attrs(attrs, *a);
                  return apply_fusion(g, ctx, pass, m.nodes(), "FusedConv", kFusedDomain,
                                      conv_inputs(m), {m.root()->output(0)}, attrs);
                });
  }
};

}  // namespace

std::unique_ptr<Pass> make_conv_add_act_pass() { return std::make_unique<ConvAddActFusion>(); }
std::unique_ptr<Pass> make_conv_act_pass() { return std::make_unique<ConvActFusion>(); }

}  // namespace nnfuse
