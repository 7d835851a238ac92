// SpatialTransposeViewPass: a conv's feature map flattened to tokens, and tokens folded back into
// a feature map (a UNet's spatial attention, ViT's and Swin's patch embedding), written so that on
// the convs' channels-last storage both are views:
//   Transpose(Reshape(x [N, C, H, W] -> [N, C, H*W]), [0, 2, 1])
//     == Reshape(Transpose(x, [0, 2, 3, 1]) -> [N, H*W, C])
//   Reshape(Transpose(y [N, H*W, C], [0, 2, 1]) -> [N, C, H, W])
//     == Transpose(Reshape(y -> [N, H, W, C]), [0, 3, 1, 2])
// The planner runs a Transpose between the two storage orders of a 4-D tensor as a view (an NHWC
// x is the plain [N, H, W, C] it is stored as; a plain [N, H, W, C] is an NHWC [N, C, H, W]), and
// a Reshape of a plain tensor as a view, where the written form needed a reorder into NCHW and a
// transpose kernel each way. On plain tensors the rewrite costs what it replaces (one transpose).
#include "ir/builder.h"
#include "ops/onnx_ops.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::Pat;

Pat transpose_021(Pat in) {
  return pattern::op("Transpose", {std::move(in)})
      .where_node(
          [](const Node& n) {
            return n.attr_ints("perm", {}) == std::vector<int64_t>{0, 2, 1};
          },
          "perm [0, 2, 1]")
      .named("t");
}

// The static dims of the value `name`, or empty.
Dims match_dims(const RuleMatch& m, const std::string& name) {
  const Value* v = m[name];
  return v && v->shape().fully_known() ? v->shape().static_dims() : Dims{};
}

// Transpose(Reshape(x [N, C, H, W] -> [N, C, H * W]), [0, 2, 1]) -> Reshape(Transpose(x)).
Rule flatten_to_tokens() {
  using namespace pattern;
  Pat flat = op("Reshape", {any("x"), constant()}).named("r");
  return {.name = "SpatialTransposeViewPass",
          .description =
              "Writes a feature map flattened to tokens (Reshape, Transpose) and tokens folded "
              "back (Transpose, Reshape) in the order that is a view on channels-last storage",
          .ops = {"Reshape", "Transpose"},
          .patterns = {{"", transpose_021(flat)}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Dims x = match_dims(m, "x");
            const Dims y = m.root()->output(0)->shape().fully_known()
                               ? m.root()->output(0)->shape().static_dims()
                               : Dims{};
            if (x.size() != 4 || y != Dims{x[0], x[2] * x[3], x[1]}) {
              return "not a [N, C, H, W] feature map flattened to [N, H*W, C]";
            }
            const Node* r = m.node("r");
            Value* t =
                m.op(ops::Transpose{m["x"], Dims{0, 2, 3, 1}}.spec(), r->name() + "_channels_last",
                     m["x"]->dtype(), Shape::of({x[0], x[2], x[3], x[1]}), m.match.nodes());
            return m.fuse(
                ops::Reshape{t, m.add_constant(r->name() + "_tokens", shape_tensor(y))}.spec());
          }};
}

// Reshape(Transpose(y [N, H*W, C], [0, 2, 1]) -> [N, C, H, W]) -> Transpose(Reshape(y)).
Rule tokens_to_map() {
  using namespace pattern;
  Pat fold = op("Reshape", {transpose_021(any("y")), constant()}).named("r");
  return {
      .name = "SpatialTransposeViewPass",
      .patterns = {{"", fold}},
      .rewrite = [](const RuleMatch& m) -> std::string {
        const Dims y = match_dims(m, "y");
        const Value* out = m.root()->output(0);
        const Dims x = out->shape().fully_known() ? out->shape().static_dims() : Dims{};
        if (x.size() != 4 || y != Dims{x[0], x[2] * x[3], x[1]}) {
          return "not [N, H*W, C] tokens folded into a [N, C, H, W] feature map";
        }
        const Node* r = m.node("r");
        const Dims nhwc = {x[0], x[2], x[3], x[1]};
        Value* v = m.op(
            ops::Reshape{m["y"], m.add_constant(r->name() + "_nhwc", shape_tensor(nhwc))}.spec(),
            r->name() + "_rows", m["y"]->dtype(), Shape::of(nhwc), m.match.nodes());
        return m.fuse(ops::Transpose{v, Dims{0, 3, 1, 2}}.spec());
      }};
}

}  // namespace

std::unique_ptr<Pass> make_spatial_view_pass() {
  return make_rule_pass(std::vector<Rule>{flatten_to_tokens(), tokens_to_map()});
}

}  // namespace nnfuse
