// The normalizations of nnfuse's domain, over the last axis of E elements unless said otherwise:
//   LayerNormalization(X, Scale, B?)         ONNX's (opset 17), written in nnfuse's domain for
//                                            models of older opsets
//   RMSNorm(X, Gamma?; epsilon)              = X / sqrt(mean(X^2) + epsilon) * Gamma
//   SkipLayerNorm(X, Skip, Gamma, Beta?, Bias?; epsilon) -> Y, S?
//       S = (X + Bias) + Skip (Skip broadcasts to X's shape without growing it),
//       Y = LayerNorm(S) * Gamma + Beta
//   GroupNorm(X, Gamma, Beta, T?, TW?, TB?; num_groups, epsilon, t_activation, act)
//       X [N, C, spatial...] in num_groups groups of consecutive channels; x' = x + a[n, c] with
//       the addend a = T ([N or 1, C]) or T [N, K] x TW [K, C] + TB (t_activation "SiLU": T's
//       SiLU first), y = act((x' - mean) / sqrt(var + epsilon) * Gamma[c] + Beta[c]) per
//       (image, group); InstanceNormalization is num_groups = C
//   EmbedLayerNorm(Gamma, Beta?, Addend?, Table_1, Ids_1, ..., Table_n, Ids_n; epsilon) -> Y, S?
//       S = Addend + sum_k Gather(Table_k, Ids_k, axis 0) (shape Ids.shape + [E]),
//       Y = LayerNormalization(S, Gamma, Beta; axis -1, epsilon)
// Gamma, Beta and Bias hold one value per normalized element.
#pragma once

#include "ops/activation.h"

namespace nnfuse::ops {

namespace skip_layer_norm {
inline constexpr size_t kX = 0, kSkip = 1, kGamma = 2, kBeta = 3, kBias = 4;
}
namespace group_norm {
inline constexpr size_t kX = 0, kGamma = 1, kBeta = 2, kT = 3, kTW = 4, kTB = 5;
}
namespace embed_layer_norm {
inline constexpr size_t kGamma = 0, kBeta = 1, kAddend = 2, kFirstTable = 3;
}

// LayerNormalization over the last axis (axis -1), in ONNX's domain or, with `own_domain` (a
// model of an opset before 17), nnfuse's.
struct LayerNorm {
  Value* x = nullptr;
  Value* scale = nullptr;
  Value* bias = nullptr;
  float epsilon = 1e-5f;
  bool own_domain = false;
  NodeSpec spec() const;
};

struct RMSNorm {
  Value* x = nullptr;
  Value* gamma = nullptr;
  float epsilon = 1e-5f;
  NodeSpec spec() const;
};

struct SkipLayerNorm {
  Value* x = nullptr;
  Value* skip = nullptr;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  Value* bias = nullptr;
  float epsilon = 1e-5f;
  NodeSpec spec() const;
};

struct GroupNorm {
  Value* x = nullptr;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  Value* t = nullptr;
  Value* tw = nullptr;
  Value* tb = nullptr;
  int64_t num_groups = 1;
  float epsilon = 1e-5f;
  bool t_silu = false;  // t_activation = "SiLU"
  Activation act = {};
  NodeSpec spec() const;
};

struct EmbedLayerNorm {
  Value* gamma = nullptr;
  Value* beta = nullptr;
  Value* addend = nullptr;
  std::vector<Value*> tables_and_ids;  // Table_1, Ids_1, ..., Table_n, Ids_n
  float epsilon = 1e-5f;
  NodeSpec spec() const;
};

// Why a GroupNorm's t_activation is not one the kernels apply ("" or "SiLU"), "" when it is.
std::string t_activation_reason(const Node& n);
// Whether the node takes T's SiLU first (t_activation = "SiLU").
bool t_silu(const Node& n);

void append_norm_defs(std::vector<OpDef>& t);

}  // namespace nnfuse::ops
