// ScaledConvFusionPass: a squeeze-and-excitation block's channel scale and the 1x1 projection
// after it, Conv(X * S, W, B) with S one value per channel ([N or 1, C, 1, 1], computed at run
// time: the excitation), become ScaledConv(X, S, W, B) (ai.nnfuse), which folds S into the
// weights once per image instead of writing X * S out and reading it back (EfficientNet's and
// MobileNetV3's MBConv blocks, RegNetY's). A FusedConv keeps its residual Sum and activation.
#include "ops/conv.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

// Folding pays from this many pixels per output channel (measured on EfficientNet-B0's blocks:
// 112x112 to 28x28 images with 16 to 40 outputs gain; 14x14 with 80 and 7x7 with 320 lose).
constexpr int64_t kPixelsPerOutput = 4;

// "" when the Conv's geometry takes a folded scale (an unpadded, unstrided, ungrouped 1x1) and
// folding pays, else why not.
std::string conv_takes_scale(const Node& cn, const Tensor& w, const Dims& xs) {
  if (w.rank() != 4 || w.dim(2) != 1 || w.dim(3) != 1 || cn.attr_int("group", 1) != 1) {
    return "the Conv is not an ungrouped 1x1 convolution";
  }
  // Cost: the Mul writes and reads back H*W*C values; folding writes C*O scaled weights (and
  // the product repacks them). It pays where the image is large against the outputs.
  if (xs[2] * xs[3] < kPixelsPerOutput * w.dim(0)) {
    return "does not pay: " + std::to_string(xs[2] * xs[3]) + " pixels against " +
           std::to_string(w.dim(0)) + " output channels (folding the scale into the weights " +
           "costs more than the Mul below " + std::to_string(kPixelsPerOutput) +
           " pixels per output channel)";
  }
  for (const char* attr : {"strides", "dilations"}) {
    for (int64_t v : cn.attr_ints(attr, {})) {
      if (v != 1) return "the Conv has " + std::string(attr) + " other than 1";
    }
  }
  for (int64_t v : cn.attr_ints("pads", {})) {
    if (v != 0) return "the Conv is padded";
  }
  if (cn.num_inputs() > 2 && cn.input(2) && !pattern::constant_value(cn.input(2))) {
    return "the Conv's bias is not a constant";
  }
  return "";
}

// The Mul's operands as X (of the conv's input shape) and S (one value per channel, [N or 1, C,
// 1, 1], computed at run time); "" or why they are not that.
std::string split_channel_scale(const RuleMatch& m, Value** x, Value** s) {
  Value *a = m["a"], *b = m["b"];
  if (!a->shape().fully_known() || !b->shape().fully_known())
    return "the Mul's shapes are not static";
  const Shape& prod = m.node("mul")->output(0)->shape();
  *x = prod.fully_known() && a->shape().static_dims() == prod.static_dims() ? a : b;
  *s = *x == a ? b : a;
  const Dims xs = (*x)->shape().static_dims(), ss = (*s)->shape().static_dims();
  if (xs.size() != 4 || ss.size() != 4 || ss[1] != xs[1] || ss[2] != 1 || ss[3] != 1 ||
      (ss[0] != 1 && ss[0] != xs[0]) || xs == ss) {
    return "the Mul is not X times one value per channel";
  }
  if (pattern::constant_value(*s)) return "the scale is a constant (it belongs in the weights)";
  if ((*x)->dtype() != DType::kFloat32 || (*s)->dtype() != DType::kFloat32) return "not float32";
  return "";
}

Rule scaled_conv() {
  using namespace pattern;
  Pat mul = op("Mul", {any("a"), any("b")}).named("mul");
  Pat conv = any_of({op_in(kFusedDomain, "FusedConv", {mul, constant("w")}, false),
                     op("Conv", {mul, constant("w")}, false)})
                 .named("conv");
  return {.name = "ScaledConvFusionPass",
          .description =
              "Folds a per-channel scale (squeeze-and-excitation) into the 1x1 Conv "
              "that reads it",
          .ops = {"Mul", "Conv"},
          .patterns = {{"", conv}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            Node* cn = m.root();
            Value *x = nullptr, *sc = nullptr;
            if (std::string why = split_channel_scale(m, &x, &sc); !why.empty()) return why;
            const Dims xs = x->shape().static_dims();
            if (std::string why = conv_takes_scale(*cn, *m.constant("w"), xs); !why.empty()) {
              return why;
            }
            const ops::FusedConv c = ops::FusedConv::of(*cn);
            return m.fuse(ops::ScaledConv{x, sc, c.w, c.b, c.sum, c.conv, c.act}.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_scaled_conv_pass() { return make_rule_pass(scaled_conv()); }

}  // namespace nnfuse
