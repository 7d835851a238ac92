// Conv epilogues, run by the conv kernel as oneDNN post-ops:
//   ConvAddFusionPass:        act(Conv(x, W, B) + r) == FusedConv(x, W, B, Sum=r, act)
//                             (either Add operand order; act optional; r of the conv's shape)
//   ConvActivationFusionPass: act(Conv(x, W, B)) == FusedConv(x, W, B, act)
//   ConvSkipConvFusionPass:   FusedConv(x, W, B, Sum=Conv(x2, W2, B2), act)
//                             == FusedConv(x, W, B, -, x2, W2, B2, act, skip_*)
//                             (the residual a second conv computes, as a ResBlock's projected
//                             skip connection or a ResNet's downsampling branch: one kernel
//                             runs both convs, the second's result written into the output
//                             for the first's sum post-op; ops/conv.h)
#include "ops/conv.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

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

Rule conv_add_act() {
  // The conv must feed only the Add, so with two convs the matcher picks the one that does.
  Pat conv = conv_pattern().where(
      [](const Value& v) { return v.uses().size() == 1 && !v.is_graph_output(); },
      "the Conv's output has other consumers");
  Pat add = pattern::op("Add", {conv, pattern::any("res")}).named("add");
  return {.name = "ConvAddFusionPass",
          .description = "Fuses a residual Add (and an activation after it) into the Conv",
          .ops = {"Conv", "Add", "Relu"},
          .patterns = with_activations(add, true),
          .guards = {guard::same_shape("res", "conv"), guard::float32({"res"})},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* conv = m.node("conv");
            if (std::string why = conv_ok(*conv); !why.empty()) return why;
            ops::FusedConv c = ops::FusedConv::of(*conv);
            if (std::string why = m.activation(&c.act); !why.empty()) return why;
            c.sum = m["res"];
            return m.fuse(c.spec());
          }};
}

Rule conv_act() {
  return {.name = "ConvActivationFusionPass",
          .description = "Fuses the activation that follows a Conv into it",
          .ops = {"Conv", "Relu"},
          .patterns = with_activations(conv_pattern()),
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* conv = m.node("conv");
            if (std::string why = conv_ok(*conv); !why.empty()) return why;
            ops::FusedConv c = ops::FusedConv::of(*conv);
            if (std::string why = m.activation(&c.act); !why.empty()) return why;
            return m.fuse(c.spec());
          }};
}

Rule conv_skip_conv() {
  using pattern::constant, pattern::optional, pattern::any;
  Pat skip =
      pattern::op("Conv", {any("x2"), constant("w2"), optional(constant("b2"))}).named("skip");
  Pat conv =
      pattern::op_in(kFusedDomain, "FusedConv", {any("x"), constant("w"), optional(any("b")), skip})
          .named("conv");
  return {.name = "ConvSkipConvFusionPass",
          .description =
              "Runs the Conv that computes a fused Conv's residual (a projected skip "
              "connection) in the same kernel",
          .ops = {"Conv", "Conv", "Add"},
          .patterns = {{"", conv}},
          .guards = {guard::read_once("skip"), guard::float32({"x2"})},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* skip = m.node("skip");
            if (std::string why = conv_ok(*skip); !why.empty()) return why;
            ops::FusedConv c = ops::FusedConv::of(*m.node("conv"));
            c.sum = nullptr;
            c.skip = ops::FusedConv::Skip{m["x2"], m["w2"], m["b2"], ops::ConvAttrs::of(*skip)};
            return m.fuse(c.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_conv_skip_conv_pass() { return make_rule_pass(conv_skip_conv()); }
std::unique_ptr<Pass> make_conv_add_act_pass() { return make_rule_pass(conv_add_act()); }
std::unique_ptr<Pass> make_conv_act_pass() { return make_rule_pass(conv_act()); }

}  // namespace nnfuse
