// The epilogue activation of nnfuse's fused ops (FusedConv, FusedMatMul, FusedGemm, ...), stored
// in the attributes `activation` (its name, "" for none), `activation_alpha` and
// `activation_beta`; and the standalone activations the GELU fusion makes:
//   Gelu(X)  (ai.nnfuse; attribute approximate = "none" | "tanh": ONNX opset-20 Gelu)
//   Swish(X) (ai.nnfuse; attribute alpha, default 1) = X * sigmoid(alpha * X)
// The reference kernels apply an Activation with ref::apply_activation; the fast kernels map it
// onto oneDNN eltwise post-ops or their own vector code.
#pragma once

#include <optional>
#include <string>

#include "ops/def.h"

namespace nnfuse::ops {

enum class ActivationKind {
  kNone,
  kRelu,
  kLeakyRelu,    // x >= 0 ? x : alpha * x
  kClip,         // min(max(x, alpha), beta)
  kSigmoid,      //
  kTanh,         //
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, x / 6 + 1 / 2))
  kSiLU,         // x * sigmoid(x)
  kGelu,         // x / 2 * (1 + erf(x / sqrt(2)))
  kGeluTanh,     // x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  kSwish,        // x * sigmoid(alpha * x)
  // QuantizeLinear then DequantizeLinear to an 8-bit grid of scale alpha (> 0) whose lowest
  // step is beta (the type's least value less the zero point, an integer in [-255, 0]):
  // alpha * clamp(round_half_even(x / alpha), beta, beta + 255), x / alpha in float32, NaN -> 0.
  kQuantize,
};

// kQuantize's value: QuantizeLinear's float32 division, rounding half to even and saturation,
// then DequantizeLinear's product (exact: an integer of 9 bits times a float32).
inline float quantize_dequantize(float x, float scale, float lo) {
  float q = __builtin_rintf(x / scale);
  q = q < lo ? lo : q;
  q = q > lo + 255.0f ? lo + 255.0f : q;
  return q == q ? q * scale : 0.0f;  // NaN quantizes to the zero point
}

struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0.0f, beta = 0.0f;

  // `kind` with its parameters at the ONNX op's defaults (LeakyRelu 0.01; HardSigmoid 0.2 and
  // 0.5; Clip unbounded; Swish 1).
  static Activation of(ActivationKind kind);
  // Writes activation, activation_alpha and activation_beta.
  void write(Attrs& attrs) const;
  bool operator==(const Activation&) const = default;
};

// The attribute value naming `kind` ("Relu", "SiLU", "GeluTanh"; "" for kNone), and back
// (nullopt for an unknown name).
const char* activation_name(ActivationKind kind);
std::optional<ActivationKind> activation_kind(const std::string& name);

// Reads the node's activation attributes; absent parameters take the kind's defaults
// (Activation::of). Throws kUnsupported naming the node for an unknown activation name (and an
// error for parameters of the wrong kind).
Activation read_activation(const Node& node);
// "" when read_activation accepts the node's attributes, else the reason.
std::string activation_reason(const Node& node);
// Whether the node applies an epilogue activation (its `activation` attribute names one).
bool has_activation(const Node& node);

// The standalone activations of nnfuse's domain.
struct GeluBuilder {
  Value* x = nullptr;
  bool tanh = false;  // approximate = "tanh"
  NodeSpec spec() const;
};
struct SwishBuilder {
  Value* x = nullptr;
  float alpha = 1.0f;
  NodeSpec spec() const;
};
// The activation a standalone Gelu or Swish node (either domain's Gelu) applies.
Activation standalone_activation(const Node& node);

void append_activation_defs(std::vector<OpDef>& t);

}  // namespace nnfuse::ops
