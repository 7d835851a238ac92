#include "ops/activation.h"

#include <limits>
#include <map>

#include "ir/builder.h"
#include "ir/error.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

struct Named {
  const char* name;
  ActivationKind kind;
};
constexpr Named kNames[] = {
    {"", ActivationKind::kNone},
    {"Relu", ActivationKind::kRelu},
    {"LeakyRelu", ActivationKind::kLeakyRelu},
    {"Clip", ActivationKind::kClip},
    {"Sigmoid", ActivationKind::kSigmoid},
    {"Tanh", ActivationKind::kTanh},
    {"HardSigmoid", ActivationKind::kHardSigmoid},
    {"HardSwish", ActivationKind::kHardSwish},
    {"SiLU", ActivationKind::kSiLU},
    {"Gelu", ActivationKind::kGelu},
    {"GeluTanh", ActivationKind::kGeluTanh},
    {"Swish", ActivationKind::kSwish},
    {"QuantizeDequantize", ActivationKind::kQuantize},
};

}  // namespace

const char* activation_name(ActivationKind kind) {
  for (const Named& n : kNames) {
    if (n.kind == kind) return n.name;
  }
  return "";
}

std::optional<ActivationKind> activation_kind(const std::string& name) {
  for (const Named& n : kNames) {
    if (name == n.name) return n.kind;
  }
  return std::nullopt;
}

Activation Activation::of(ActivationKind kind) {
  Activation a;
  a.kind = kind;
  switch (kind) {
    case ActivationKind::kLeakyRelu:
      a.alpha = 0.01f;
      break;
    case ActivationKind::kClip:
      a.alpha = -std::numeric_limits<float>::infinity();
      a.beta = std::numeric_limits<float>::infinity();
      break;
    case ActivationKind::kHardSigmoid:
      a.alpha = 0.2f;
      a.beta = 0.5f;
      break;
    case ActivationKind::kSwish:
    case ActivationKind::kQuantize:  // uint8, zero point 0
      a.alpha = 1.0f;
      break;
    default:
      break;
  }
  return a;
}

void Activation::write(Attrs& attrs) const {
  attrs["activation"] = attr_string(activation_name(kind));
  attrs["activation_alpha"] = attr_float(alpha);
  attrs["activation_beta"] = attr_float(beta);
}

Activation read_activation(const Node& node) {
  const std::string name = node.attr_string("activation", "");
  const auto kind = activation_kind(name);
  if (!kind) fail(ErrorKind::kUnsupported, node.describe(), ": unknown activation '", name, "'");
  Activation a = Activation::of(*kind);
  a.alpha = node.attr_float("activation_alpha", a.alpha);
  a.beta = node.attr_float("activation_beta", a.beta);
  return a;
}

std::string activation_reason(const Node& node) {
  try {
    read_activation(node);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

bool has_activation(const Node& node) { return !node.attr_string("activation", "").empty(); }

NodeSpec GeluBuilder::spec() const {
  return {Op::kGelu, {x}, {{"approximate", attr_string(tanh ? "tanh" : "none")}}, kFusedDomain};
}

NodeSpec SwishBuilder::spec() const {
  return {Op::kSwish, {x}, {{"alpha", attr_float(alpha)}}, kFusedDomain};
}

Activation standalone_activation(const Node& node) {
  if (node.is(Op::kSwish)) {
    Activation a = Activation::of(ActivationKind::kSwish);
    a.alpha = node.attr_float("alpha", 1.0f);
    return a;
  }
  const bool tanh = node.attr_string("approximate", "none") == "tanh";
  return Activation::of(tanh ? ActivationKind::kGeluTanh : ActivationKind::kGelu);
}

namespace {

std::string infer_unary(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, like_input(n, 0));
  return "";
}

}  // namespace

void append_activation_defs(std::vector<OpDef>& t) {
  t.push_back({.op = Op::kGelu,
               .summary = "GELU of X (ONNX opset 20's Gelu, written in nnfuse's domain for "
                          "models of older opsets): erf form, or tanh with approximate = tanh",
               .inputs = {{"X"}},
               .outputs = {{"Y"}},
               .attrs = {{"approximate", Attribute::Kind::kString, "none"}},
               .traits = {.op_class = OpClass::kElementwise, .expensive = true},
               .infer = infer_unary,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "Gelu (com.microsoft), or FastGelu for the tanh form"}});
  t.push_back({.op = Op::kSwish,
               .summary = "X * sigmoid(alpha * X) (SiLU for alpha 1)",
               .inputs = {{"X"}},
               .outputs = {{"Y"}},
               .attrs = {{"alpha", Attribute::Kind::kFloat, "1"}},
               .traits = {.op_class = OpClass::kElementwise, .expensive = true},
               .infer = infer_unary,
               .ort = {.kind = OrtForm::Kind::kLowering, .summary = "QuickGelu (com.microsoft)"}});
}

}  // namespace nnfuse::ops
