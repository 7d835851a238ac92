// ConvQuantizeFusionPass: the quantization a statically quantized (QDQ) model states after a
// convolution, as the conv's epilogue:
//   DequantizeLinear(QuantizeLinear(Conv(x, W, B), s, z), s, z)
//   == FusedConv(x, W, B; activation QuantizeDequantize, alpha s, beta qmin - z)
// (a FusedConv with a residual sum or a skip convolution and no activation of its own too).
// Unfused, the conv writes float32, the QuantizeLinear reads it and writes 8 bits, and the
// DequantizeLinear reads those and writes float32 again; fused, the conv's kernel rounds each
// output to the 8-bit grid as it writes it (oneDNN post-ops: a division by s, round half to
// even, clip, a product by s; ops/activation.h: kQuantize), with the same float32 steps, so no
// number changes. Where the CPU has no int8 instructions faster than its float32 FMAs, this
// float32 conv is the quickest exact form of the QDQ model's conv.
#include <cmath>
#include <optional>

#include "ops/conv.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::Pat;

// One float32 value > 0 (a per-tensor scale), or nullopt.
std::optional<float> one_scale(const Tensor* t) {
  if (!t || t->dtype() != DType::kFloat32 || t->numel() != 1) return std::nullopt;
  const float s = t->data<float>()[0];
  if (!(s > 0.0f) || !std::isfinite(s)) return std::nullopt;
  return s;
}

std::string fuse_conv_quantize(const RuleMatch& m) {
  const Node* conv = m.node("conv");
  if (conv->input(0)->dtype() != DType::kFloat32) return std::string("the conv is not float32");
  if (conv->num_inputs() > 2 && conv->input(2) && !pattern::constant_value(conv->input(2))) {
    return std::string("the conv's bias is not a constant");
  }
  ops::FusedConv c = ops::FusedConv::of(*conv);
  if (c.act.kind != ops::ActivationKind::kNone) {
    return std::string("the FusedConv applies an activation already");
  }
  const Node* q = m.node("q");
  if (q->attr_int("block_size", 0) != 0) return std::string("the quantization is blocked");
  const auto qs = one_scale(m.constant("q_scale")), ds = one_scale(m.constant("dq_scale"));
  if (!qs || !ds) return std::string("a scale is not one positive float32 value");
  if (*qs != *ds) return std::string("the DequantizeLinear's scale is not the QuantizeLinear's");
  const Tensor* qz = m.constant("q_zero");
  const Tensor* dz = m.constant("dq_zero");
  const DType type = qz ? qz->dtype() : DType::kUInt8;
  if (type != DType::kUInt8 && type != DType::kInt8) {
    return std::string("the quantized type ") + dtype_name(type) + " is not 8-bit";
  }
  if (q->output(0)->dtype() != type) return std::string("the QuantizeLinear's output type differs");
  const double zq = qz ? (qz->numel() == 1 ? qz->double_at(0) : 1e9) : 0.0;
  const double zd = dz ? (dz->numel() == 1 ? dz->double_at(0) : 1e9) : 0.0;
  if (zq == 1e9 || zd == 1e9) return std::string("a zero point is not one value");
  if (zq != zd) return std::string("the DequantizeLinear's zero point is not the QuantizeLinear's");
  c.act.kind = ops::ActivationKind::kQuantize;
  c.act.alpha = *qs;
  c.act.beta = static_cast<float>((type == DType::kUInt8 ? 0.0 : -128.0) - zq);
  return m.fuse(c.spec());
}

std::vector<ActivationPattern> conv_quantize_patterns() {
  using namespace pattern;
  auto around = [](Pat conv) {
    Pat q =
        op("QuantizeLinear", {conv, constant("q_scale"), optional(constant("q_zero"))}).named("q");
    return op("DequantizeLinear", {q, constant("dq_scale"), optional(constant("dq_zero"))})
        .named("dq");
  };
  return {
      {"Conv", around(op("Conv", {any("x"), constant("w")}, false).named("conv"))},
      {"FusedConv",
       around(op_in(kFusedDomain, "FusedConv", {any("x"), constant("w")}, false).named("conv"))},
  };
}

Rule conv_quantize() {
  return {.name = "ConvQuantizeFusionPass",
          .description =
              "Fuses the QuantizeLinear/DequantizeLinear pair after a Conv into it: the conv "
              "rounds its outputs to the 8-bit grid as it writes them",
          .ops = {"Conv", "QuantizeLinear", "DequantizeLinear"},
          .patterns = conv_quantize_patterns(),
          .rewrite = fuse_conv_quantize};
}

}  // namespace

std::unique_ptr<Pass> make_conv_quantize_pass() { return make_rule_pass(conv_quantize()); }

}  // namespace nnfuse
